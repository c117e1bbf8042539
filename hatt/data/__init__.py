"""IMDB loading, text preprocessing (TensorFlow string ops), vectorizing and tf.data pipelines."""

__all__: list[str] = []
