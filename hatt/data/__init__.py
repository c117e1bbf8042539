"""Corpora (IMDB, your own folders and tables), text preprocessing (TensorFlow string ops),
vectorizing and tf.data pipelines.

This package (with :mod:`hatt.export`) is where hatt uses TensorFlow directly.
"""

from hatt.data.corpus import DataNotFoundError, Split, TextCorpus
from hatt.data.imdb import Imdb, load_imdb
from hatt.data.pipeline import (
    encode,
    make_dataset,
    pack_sentences,
    padding_share,
    unpack_sentences,
)
from hatt.data.readers.files import TextFile, read_texts
from hatt.data.readers.load import load_corpus, read_documents
from hatt.data.stats import format_statistics, statistics
from hatt.data.text import tokenize
from hatt.data.vectorize import OOV_ID, PAD_ID, Vectorizer

__all__ = [
    "OOV_ID",
    "PAD_ID",
    "DataNotFoundError",
    "Imdb",
    "Split",
    "TextCorpus",
    "TextFile",
    "Vectorizer",
    "encode",
    "format_statistics",
    "load_corpus",
    "read_documents",
    "load_imdb",
    "make_dataset",
    "pack_sentences",
    "padding_share",
    "read_texts",
    "statistics",
    "tokenize",
    "unpack_sentences",
]
