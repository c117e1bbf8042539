"""Attention layers written with ``keras.ops`` only (no TensorFlow import)."""

from hatt.layers.context_attention import ContextAttention
from hatt.layers.ngram_logit import NgramLogit
from hatt.layers.position_embedding import PositionEmbedding
from hatt.layers.region_sum import RegionSum
from hatt.layers.sru import SRU
from hatt.layers.transformer_block import TransformerBlock

__all__ = [
    "ContextAttention",
    "NgramLogit",
    "PositionEmbedding",
    "RegionSum",
    "SRU",
    "TransformerBlock",
]
