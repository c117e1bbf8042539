"""IMDB movie reviews (Maas et al. 2011) from raw text: the binary task and the star ratings.

Three sources, tried in this order:

1. ``source=`` (``--data PATH`` on the command line): an ``aclImdb`` folder
   (or the folder holding it), or a ``.tar.gz`` of one. A tarball is
   extracted once into the cache folder (``$HATT_CACHE``, default
   ``~/.cache/hatt``), with a progress bar, and re-used afterwards.
2. The environment variable ``HATT_IMDB``, holding such a path.
3. ``tensorflow_datasets.load("imdb_reviews")``, which downloads the data
   when there is a network.

Two label sets (``labels=``): ``"binary"`` (the folders ``neg/`` and
``pos/``: classes ``negative``, ``positive``) and ``"rating"`` (the star
rating in each file name ``<id>_<rating>.txt``: 8 classes, ``"1"`` to ``"4"``
and ``"7"`` to ``"10"``; the files only, not tensorflow-datasets).

The validation split is carved out of ``train`` (stratified by the labels,
seeded) and is disjoint from what remains of it; ``test`` is only for the
final figure.

IMDB's ``train/`` and ``test/`` hold different movies, but within ``train/``
a movie has up to 30 reviews, and the review ids come grouped by movie
(``experiments/validation_leak.py``: consecutive ids share rare names 243x
more often than random pairs). A validation split of random reviews therefore
shares movies with the training reviews and rewards memorising cast names,
which the test split does not. By default the validation split is made of
whole blocks of consecutive ids (``validation_split="blocks"``), so it is
close to movie-disjoint, like the test split.

The corpus container and the carving of splits are :mod:`hatt.data.corpus`'s,
the archive cache and the folder reader :mod:`hatt.data.readers`'
(:func:`hatt.data.load_corpus` reads other corpora with them too).
"""

import dataclasses
import os
from pathlib import Path

import numpy as np

from hatt.data.corpus import (
    BINARY_CLASSES,
    DEFAULT_VALIDATION,
    Carving,
    DataNotFoundError,
    RawCorpus,
    Split,
    TextCorpus,
    assemble,
)
from hatt.data.readers.archive import extract_archive
from hatt.data.readers.folder import class_folders, document_files, read_files
from hatt.data.readers.read_log import ReadLog
from hatt.data.readers.tfds import read_tfds, tfds_available

ENV_VAR = "HATT_IMDB"
TFDS_IMDB = "tfds:imdb_reviews"
IMDB_HOST = "ai.stanford.edu"  # where tensorflow-datasets downloads imdb_reviews from
_FOLDERS = {"neg": "negative", "pos": "positive"}  # label folder -> binary class name


def _how_to_provide(reason):
    return (
        f"Could not load IMDB: {reason}\n"
        "Provide the data in one of three ways:\n"
        "  1. pass a path: load_imdb('/path/to/aclImdb') or `hatt ... --data /path/to/aclImdb`"
        " (an aclImdb folder or a .tar.gz of one, e.g. aclImdb_v1.tar.gz);\n"
        f"  2. set the environment variable {ENV_VAR}=/path/to/aclImdb (folder or .tar.gz);\n"
        "  3. with a network, let tensorflow-datasets download it: "
        "tfds.load('imdb_reviews') (pip install tensorflow-datasets)."
    )


@dataclasses.dataclass(repr=False)
class Imdb(TextCorpus):
    """IMDB's splits: a :class:`hatt.data.TextCorpus` whose classes default to the binary task.

    ``Imdb(train, validation, test, source)`` is the binary corpus (label 1 =
    positive); the ratings corpus has ``class_names`` ``("1", ..., "10")``.
    """

    class_names: tuple = BINARY_CLASSES


# === Reading the files ==============================================================


def find_root(folder, strict=False):
    """The ``aclImdb`` folder at or just below ``folder`` (or None).

    Any folder with ``train/`` and ``test/`` is one; with ``strict``, only one
    whose splits hold the class folders ``neg/`` and ``pos/`` and no others
    (``unsup/`` aside): a folder with other classes is a user's corpus.
    """
    folder = Path(folder)
    for candidate in (folder, folder / "aclImdb"):
        splits = [candidate / "train", candidate / "test"]
        if not all(s.is_dir() for s in splits):
            continue
        if not strict or all({p.name for p in class_folders(s)} == set(_FOLDERS) for s in splits):
            return candidate
    return None


def is_imdb(root):
    """Whether a folder :func:`find_root` accepted is IMDB itself, not a user's corpus of
    the same layout: it is named ``aclImdb`` or holds IMDB's ``imdb.vocab``."""
    root = Path(root)
    return root.name == "aclImdb" or (root / "imdb.vocab").is_file()


def _extract(tarball, progress=True):
    """Extract ``tarball`` once into the cache and return the aclImdb root."""
    try:
        target = extract_archive(tarball, progress)
    except DataNotFoundError as error:
        raise DataNotFoundError(
            _how_to_provide(f"{tarball} is not a readable .tar.gz ({error.__cause__}).")
        ) from error
    root = find_root(target)
    if root is None:
        raise DataNotFoundError(
            _how_to_provide(f"{tarball} holds no aclImdb/train and aclImdb/test folders.")
        )
    return root


def _rating(path):
    """The star rating in an IMDB file name ``<id>_<rating>.txt``."""
    parts = path.stem.split("_")
    if len(parts) != 2 or not parts[1].isdigit():
        raise ValueError(
            "Expected IMDB file names <id>_<rating>.txt with labels='rating' (the rating is "
            f"read from the name). Received: {str(path)!r}"
        )
    return str(int(parts[1]))


def _read_split(root, split, labels, log, progress=True):
    """One split's reviews, their labels as class names (binary or rating)."""
    files = []
    for name in _FOLDERS:
        folder = Path(root) / split / name
        if not folder.is_dir():
            raise DataNotFoundError(_how_to_provide(f"missing folder {folder}."))
        # In the order of the numeric review id, never the file system's.
        files.extend((path, name) for path in document_files(folder))
    texts, kept = read_files([path for path, _ in files], log, progress, unit="review")
    kept = [files[i] for i in kept]
    names = [_rating(p) if labels == "rating" else _FOLDERS[name] for p, name in kept]
    ids = [f"{split}/{name}/{path.stem}" for path, name in kept]
    return Split(texts, np.array(names, dtype=object), ids)


def _given_source(source):
    """``source``, or ``$HATT_IMDB`` when none is given (``None``: tensorflow-datasets)."""
    if source is None and os.environ.get(ENV_VAR):
        return os.environ[ENV_VAR]
    return source


def _checked_local(source):
    """A local source as a :class:`~pathlib.Path`: an existing ``.tar.gz`` or a folder
    :func:`find_root` accepts (its files are not read)."""
    path = Path(source).expanduser()
    if not path.exists():
        raise DataNotFoundError(_how_to_provide(f"the path {str(path)!r} does not exist."))
    if path.is_dir() and find_root(path) is None:
        raise DataNotFoundError(
            _how_to_provide(
                f"{str(path)!r} is not an aclImdb folder (expected train/ and test/ in it)."
            )
        )
    return path


def _load_local(path, labels, progress, log):
    path = _checked_local(path)
    root = _extract(path, progress=progress) if path.is_file() else find_root(path)
    if progress:
        print(f"Reading IMDB reviews from {root}")
    train = _read_split(root, "train", labels, log, progress)
    test = _read_split(root, "test", labels, log, progress)
    return RawCorpus(train, test, str(root), BINARY_CLASSES if labels == "binary" else None)


def _load_tfds(log):
    """imdb_reviews from tensorflow-datasets (binary labels only; fails fast offline)."""
    raw = read_tfds("imdb_reviews", log, host=IMDB_HOST, port=80)
    for split in (raw.train, raw.test):
        split.labels = np.array([_FOLDERS[name] for name in split.labels], dtype=object)
    return RawCorpus(raw.train, raw.test, raw.source, BINARY_CLASSES)


def read_imdb(source=None, *, labels="binary", progress=True, log=None):
    """IMDB's train and test reviews as read, their labels class names (see :func:`load_imdb`).

    ``source`` as in :func:`load_imdb`, or ``"tfds:imdb_reviews"`` for
    tensorflow-datasets only.
    """
    log = ReadLog() if log is None else log
    source = _given_source(source)
    if source is not None and str(source) != TFDS_IMDB:
        return _load_local(source, labels, progress, log)
    if labels == "rating":
        raise ValueError(
            "Expected IMDB's files with labels='rating' (the ratings are in their names; "
            "tensorflow-datasets' imdb_reviews has only the binary labels): give "
            f"--data /path/to/aclImdb (folder or .tar.gz) or set {ENV_VAR}."
        )
    try:
        return _load_tfds(log)
    except Exception as error:  # no network, no tfds cache, ...
        given = (
            "tensorflow-datasets"
            if source
            else (f"no source was given, {ENV_VAR} is not set, and tensorflow-datasets")
        )
        raise DataNotFoundError(
            _how_to_provide(
                f"{given} failed ({type(error).__name__}: {str(error).splitlines()[0][:200]})."
            )
        ) from error


def locate(source=None):
    """Where :func:`read_imdb` would read IMDB from, found without reading it.

    Args:
        source: as in :func:`load_imdb` (``None``: ``$HATT_IMDB``, then tensorflow-datasets).

    Returns:
        The local folder or ``.tar.gz`` (a :class:`~pathlib.Path`), or ``"tfds:imdb_reviews"``
        when tensorflow-datasets has it prepared or can download it.

    Raises:
        DataNotFoundError: no source works; the message names the three ways to provide it.
    """
    source = _given_source(source)
    if source is not None and str(source) != TFDS_IMDB:
        return _checked_local(source)
    if tfds_available("imdb_reviews", host=IMDB_HOST, port=80):
        return TFDS_IMDB
    given = "tensorflow-datasets" if source else f"{ENV_VAR} is not set, and tensorflow-datasets"
    raise DataNotFoundError(
        _how_to_provide(f"{given} has no imdb_reviews prepared and cannot download it.")
    )


def load_imdb(
    source=None,
    *,
    labels="binary",
    validation_size=DEFAULT_VALIDATION,
    validation_split="blocks",
    seed=1337,
    limit=None,
    progress=True,
):
    """Load IMDB as raw texts with train / validation / test splits.

    Args:
        source: path to an ``aclImdb`` folder (or its parent) or to a
            ``.tar.gz`` of one. ``None`` tries ``$HATT_IMDB``, then
            tensorflow-datasets.
        labels: ``"binary"`` (negative / positive) or ``"rating"`` (the 8
            star ratings, from the file names; not with tensorflow-datasets).
        validation_size: reviews carved out of ``train`` for validation
            (stratified, seeded; disjoint from the rest of train): an int, a
            float in ``(0, 1)`` (a share), or ``None`` (10 %, at most 2,500).
        validation_split: ``"blocks"`` (default): whole blocks of
            ``hatt.data.corpus.BLOCK_SIZE`` consecutive review ids, so that validation and
            train share few movies, as test and train share none;
            ``"random"``: single reviews at random. Sources without review
            ids (tensorflow-datasets) always use ``"random"``.
        seed: seed of the validation split and of ``limit`` subsets.
        limit: if given, every split keeps at most this many reviews, a
            stratified seeded subset (for quick runs and tests).
        progress: show progress bars while extracting and reading.

    Returns:
        An :class:`Imdb` (a :class:`hatt.data.TextCorpus`) with ``.train``,
        ``.validation`` and ``.test`` :class:`Split` objects (``.texts`` list
        of str, ``.labels`` int64 NumPy array: 1 = positive, or the index of
        the rating in ``.class_names``), ``.class_names`` and ``.source``.

    Raises:
        DataNotFoundError: no source works; the message names the three ways
            to provide the data.
        ValueError: ``labels``, ``validation_size`` or ``limit`` is out of range.
    """
    if labels not in ("binary", "rating"):
        raise ValueError(f"Expected labels to be 'binary' or 'rating'. Received: labels={labels!r}")
    carving = Carving(None, validation_size, validation_split, seed=seed, limit=limit)
    carving.check()
    log = ReadLog()
    raw = read_imdb(source, labels=labels, progress=progress, log=log)
    return assemble(raw, log=log, carving=carving, corpus_class=Imdb)
