"""Attention layers written with ``keras.ops`` only (no TensorFlow import)."""

from hatt.layers.context_attention import ContextAttention

__all__ = ["ContextAttention"]
