"""Attention layers written with ``keras.ops`` only (no TensorFlow import)."""

from hatt.layers.context_attention import ContextAttention
from hatt.layers.position_embedding import PositionEmbedding
from hatt.layers.transformer_block import TransformerBlock

__all__ = ["ContextAttention", "PositionEmbedding", "TransformerBlock"]
