"""IMDB loading, text preprocessing (TensorFlow string ops), vectorizing and tf.data pipelines.

This package (with :mod:`hatt.export`) is where hatt uses TensorFlow directly.
"""

from hatt.data.imdb import DataNotFoundError, Imdb, Split, load_imdb
from hatt.data.pipeline import (
    encode,
    make_dataset,
    pack_sentences,
    padding_share,
    unpack_sentences,
)
from hatt.data.text import tokenize
from hatt.data.vectorize import OOV_ID, PAD_ID, Vectorizer

__all__ = [
    "OOV_ID",
    "PAD_ID",
    "DataNotFoundError",
    "Imdb",
    "Split",
    "Vectorizer",
    "encode",
    "load_imdb",
    "make_dataset",
    "pack_sentences",
    "padding_share",
    "tokenize",
    "unpack_sentences",
]
