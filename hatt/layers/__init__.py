"""Attention layers written with ``keras.ops`` only (no TensorFlow import)."""

__all__: list[str] = []
