"""The reader of a source (:func:`reader_for`), and a labeled corpus from it: :func:`load_corpus`.

:func:`reader_for` is the one place a source's format is told: labelled data
(:func:`load_corpus`, :func:`read_documents`), unlabeled data
(:func:`hatt.data.unlabeled.read_unlabeled`) and ``hatt predict --file`` all ask it.

Sources (``source=``, ``--data`` on the command line):

- a **folder per class**, Keras' ``text_dataset_from_directory`` convention:
  ``DIR/train/CLASS/*`` (and ``DIR/test/CLASS/*`` when present), or
  ``DIR/CLASS/*`` with the test split carved out; or a ``.tar.gz`` / ``.tgz`` /
  ``.zip`` of such a folder, extracted once into the cache folder;
- a **table**: ``.csv``, ``.tsv`` or ``.jsonl`` (each optionally ``.gz``) with
  a text and a label column, and optionally a separate test table;
- **tensorflow-datasets** by name: ``"tfds:ag_news_subset"``;
- **IMDB** (``None``, an ``aclImdb`` folder or tarball): see
  :mod:`hatt.data.imdb`. A folder is IMDB when it is named ``aclImdb`` or holds
  IMDB's ``imdb.vocab`` (or ``labels=`` asks for IMDB's labels), and hatt says
  so; another folder of the same layout (``train/`` and ``test/`` with ``neg/``
  and ``pos/``) is a user's corpus and keeps its class names.

Every source is read into documents whose labels are still class names
(:class:`RawCorpus`); :func:`assemble` then orders the classes, carves the
test split (when the source has none) and the validation split, both
stratified and seeded, and applies ``limit``. What reading skipped or
repaired is counted (:class:`ReadLog`), printed on standard error and kept in
``TextCorpus.report``: nothing is dropped silently.
"""

import dataclasses
from pathlib import Path

import numpy as np

from hatt import names
from hatt.data import corpus as corpus_lib
from hatt.data import imdb
from hatt.data.readers.archive import archive_texts, extract_archive, is_archive
from hatt.data.readers.files import file_lines
from hatt.data.readers.folder import read_folder, read_test, text_files
from hatt.data.readers.read_log import ReadLog
from hatt.data.readers.table import TABLE_FORMATS, read_table, table_column, table_format
from hatt.data.readers.tfds import TFDS_PREFIX, read_tfds

# What reader_for tells apart: IMDB, tfds:NAME, a folder, a table, an archive, a text file.
FORMATS = ("imdb", "tfds", "folder", "table", "archive", "lines")
LINES = "lines"  # the format= that reads any file as one document a line


def _how_to_give(reason):
    return (
        f"Could not load a corpus: {reason}\n"
        "--data (load_corpus's source) takes one of:\n"
        "  - a folder with a subfolder of text files per class (DIR/CLASS/*.txt, or "
        "DIR/train/CLASS/*.txt and DIR/test/CLASS/*.txt), or a .tar.gz / .tgz / .zip of one;\n"
        "  - a table: .csv, .tsv or .jsonl (optionally .gz) with a text and a label column;\n"
        "  - tfds:NAME, a tensorflow-datasets name (downloaded with a network);\n"
        "  - IMDB: an aclImdb folder or a .tar.gz of one; without --data, the environment "
        "variable HATT_IMDB, then tensorflow-datasets' imdb_reviews."
    )


@dataclasses.dataclass(frozen=True)
class ReadOptions:
    """How a labelled source is read: :func:`load_corpus`'s arguments of these names."""

    labels: str | None = None
    text_column: str = "text"
    label_column: str = "label"
    test: object = None
    progress: bool = True


def _refuse_labels(options, source):
    if options.labels is not None:
        raise ValueError(
            "Expected labels=None for a corpus other than IMDB: labels='binary' / 'rating' "
            f"picks IMDB's labels and is for IMDB only. Received: labels={options.labels!r} "
            f"with source={str(source)!r}"
        )


def _refuse_test(options, what):
    if options.test is not None:
        raise ValueError(f"Expected test=None with {what}. Received: test={str(options.test)!r}")


# === The readers: one a format ======================================================


class Reader:
    """What :func:`reader_for` gives: a source's labelled corpus or its documents one at a time.

    Each format's reader reads the source as each use needs it: :meth:`corpus`
    for labelled data (:func:`load_corpus`, :func:`read_documents`),
    :meth:`documents` for unlabeled data (:func:`hatt.data.unlabeled.read_unlabeled`);
    ``hatt predict --file`` reads a ``"table"`` by its text column and any other
    file one review a line.

    Attributes:
        format: one of :data:`FORMATS`.
        source: the source as given.
        path: the source as a :class:`~pathlib.Path` (``None`` for IMDB and ``tfds:NAME``).
        kind: a table's format (``"csv"``, ``"tsv"``, ``"jsonl"``), else ``None``.
    """

    format = None
    on_disk = True  # a path (IMDB and tensorflow-datasets are found by name: path None)

    def __init__(self, source, kind=None):
        self.source = source
        self.path = Path(source).expanduser() if self.on_disk else None
        self.kind = kind

    def __repr__(self):
        return f"<{type(self).__name__} {self.format} {str(self.source)!r}>"

    def corpus(self, options, log):
        """``(RawCorpus, corpus class)``: the labelled documents, labels still class names."""
        raise ValueError(
            "Expected the data to be a folder, a .csv / .tsv / .jsonl table (optionally .gz) "
            f"or a .tar.gz / .tgz / .zip archive. Received: {str(self.path)!r}"
        )

    def documents(self, text_column=None):
        """``(place, bytes or str)`` of each document, one at a time: unlabeled data.

        ``text_column``: a table's column holding the text (default ``"text"``).
        """
        if text_column is not None and self.format != "table":
            raise ValueError(
                f"Expected text_column only with a table (.csv, .tsv, .jsonl). Received: "
                f"text_column={text_column!r} for unlabeled={str(self.source)!r}."
            )
        return self._documents(text_column or "text")

    def _documents(self, text_column):
        raise ValueError(
            f"Expected unlabeled to name a folder, a table, a text file or an archive. "
            f"Received: unlabeled={str(self.source)!r}."
        )


class _Imdb(Reader):
    format = "imdb"
    on_disk = False

    def corpus(self, options, log):
        _refuse_test(options, "IMDB (it has its own test split)")
        raw = imdb.read_imdb(
            self.source, labels=options.labels or "binary", progress=options.progress, log=log
        )
        return raw, imdb.Imdb


class _Tfds(Reader):
    format = "tfds"
    on_disk = False

    def corpus(self, options, log):
        _refuse_labels(options, self.source)
        _refuse_test(options, "tensorflow-datasets")
        return read_tfds(str(self.source)[len(TFDS_PREFIX) :], log), corpus_lib.TextCorpus


def _folder_corpus(folder, source, options, log):
    """A folder of class folders (IMDB's when it is IMDB's), read as ``source``."""
    root = imdb.find_root(folder, strict=True)
    if root is not None and (options.labels is not None or imdb.is_imdb(root)):
        _refuse_test(options, "an IMDB folder (it has its own test split)")
        labels = options.labels or "binary"
        if options.progress:
            print(
                f"Detected IMDB in {root} (an aclImdb folder: train/ and test/ with neg/ and "
                f"pos/): reading it as IMDB, labels={labels!r}"
            )
        return imdb.read_imdb(root, labels=labels, progress=options.progress, log=log), imdb.Imdb
    _refuse_labels(options, source)
    raw = read_folder(
        folder,
        test=options.test,
        text_column=options.text_column,
        label_column=options.label_column,
        progress=options.progress,
        log=log,
    )
    return raw, corpus_lib.TextCorpus


class _Folder(Reader):
    format = "folder"

    def corpus(self, options, log):
        return _folder_corpus(self.path, self.path, options, log)

    def _documents(self, text_column):
        return text_files(self.path)


class _Archive(Reader):
    format = "archive"

    def corpus(self, options, log):  # the folder it holds, extracted once
        return _folder_corpus(extract_archive(self.path, options.progress), self.path, options, log)

    def _documents(self, text_column):
        return archive_texts(self.path)


class _Table(Reader):
    format = "table"

    def corpus(self, options, log):
        _refuse_labels(options, self.path)
        if options.progress:
            print(f"Reading documents from {self.path}")
        text_column, label_column = options.text_column, options.label_column
        train = read_table(
            self.path, text_column=text_column, label_column=label_column, log=log, kind=self.kind
        )
        test = read_test(options.test, text_column, label_column, options.progress, log)
        return corpus_lib.RawCorpus(train, test, str(self.path)), corpus_lib.TextCorpus

    def _documents(self, text_column):
        return table_column(self.path, text_column, self.kind)


class _Lines(Reader):
    format = LINES

    def _documents(self, text_column):
        return file_lines(self.path)


def reader_for(source, format=None):
    """The reader of ``source``: the one place a source's format is told.

    Labelled data (:func:`load_corpus`, :func:`read_documents`), unlabeled data
    (:func:`hatt.data.unlabeled.read_unlabeled`) and ``hatt predict --file``
    all ask it. By what ``source`` is:

    - ``None`` or ``"tfds:imdb_reviews"``: IMDB (``"imdb"``, :mod:`hatt.data.imdb`);
    - ``"tfds:NAME"``: a tensorflow-datasets data set (``"tfds"``);
    - a folder: ``"folder"`` (labelled: a subfolder per class; unlabeled: every
      ``.txt`` file under it);
    - ``.csv`` / ``.tsv`` / ``.jsonl`` / ``.ndjson`` (optionally ``.gz``): ``"table"``;
    - ``.tar.gz`` / ``.tgz`` / ``.zip`` (by name, else by content): ``"archive"``;
    - ``"-"`` (standard input) or any other file: ``"lines"``, one document a line.

    Whether the path exists is the caller's to check (each says so in its words).

    Args:
        source: a path (str or :class:`~pathlib.Path`), ``"tfds:NAME"`` or ``None``.
        format: ``None`` (from ``source``), or ``"csv"``, ``"tsv"``, ``"jsonl"``
            (a table whatever its name) or ``"lines"`` (``hatt predict --format``).

    Returns:
        A :class:`Reader`; its ``format`` is one of :data:`FORMATS`.

    Raises:
        ValueError: ``format`` is not one of those.

    Example:

    >>> reader_for("reviews.csv").format, reader_for("reviews.tsv.gz").kind
    ('table', 'tsv')
    """
    kinds = tuple(dict.fromkeys(TABLE_FORMATS.values()))
    if format is not None and format not in (*kinds, LINES):
        raise ValueError(
            f"Expected format to be None or one of {(*kinds, LINES)}. Received: format={format!r}"
        )
    if source is None or str(source) == imdb.TFDS_IMDB:
        return _Imdb(source)
    if str(source).startswith(TFDS_PREFIX):
        return _Tfds(source)
    if format is not None:
        return _Lines(source) if format == LINES else _Table(source, kind=format)
    path = Path(source).expanduser()
    if str(source) == "-":
        return _Lines(source)
    if path.is_dir():
        return _Folder(source)
    if table_format(path):
        return _Table(source, kind=table_format(path))
    return _Archive(source) if is_archive(path) else _Lines(source)


def _read_source(source, options, log):
    """``(RawCorpus, corpus class)`` of any labelled source (see :func:`load_corpus`)."""
    reader = reader_for(source)
    if reader.on_disk and not reader.path.exists():
        raise corpus_lib.DataNotFoundError(
            _how_to_give(f"the path {str(reader.path)!r} does not exist.")
        )
    return reader.corpus(options, log)


def load_corpus(
    source=None,
    *,
    labels=None,
    text_column="text",
    label_column="label",
    test=None,
    classes=None,
    validation_size=None,
    validation_split="blocks",
    test_size=0.2,
    seed=1337,
    limit=None,
    progress=True,
):
    """Load a labeled text corpus with train / validation / test splits.

    Args:
        source: where the documents are (see the module docstring):
            ``None`` (IMDB: ``$HATT_IMDB``, then tensorflow-datasets), a folder
            with a subfolder per class (or a ``.tar.gz`` / ``.tgz`` / ``.zip``
            of one), a ``.csv`` / ``.tsv`` / ``.jsonl`` table (optionally
            ``.gz``), ``"tfds:NAME"``, or an ``aclImdb`` folder or tarball.
        labels: IMDB only: ``"binary"`` (the default: negative / positive) or
            ``"rating"`` (8 classes, the star ratings in the file names).
        text_column: a table's column (a JSON key) holding the text.
        label_column: a table's column holding the label (a string or a
            number; ``3``, ``3.0`` and ``"3"`` are class ``"3"``).
        test: a separate test table or folder, for a source without its own
            test split (else the test split is carved out).
        classes: the class names in the order wanted (label ``i`` is
            ``classes[i]``); by default sorted, numerically when every name is
            a number.
        validation_size: documents carved out of the training data for
            validation: an int, a float in ``(0, 1)`` (a share), or ``None``
            (10 %, at most 2,500, and enough for the smallest class).
        validation_split: ``"blocks"``: blocks of consecutive numeric ids
            when the ids carry them (IMDB; see :mod:`hatt.data.imdb`), else
            single documents; ``"random"``: single documents.
        test_size: the share (a float) or number (an int) of documents carved
            out for the test split when the source has none.
        seed: seed of the carved splits and of ``limit``.
        limit: keep at most this many documents per split (a stratified,
            seeded subset; for quick runs).
        progress: progress bars and "Reading ..." lines.

    Returns:
        A :class:`TextCorpus` (:class:`hatt.data.Imdb` for IMDB):
        ``.train``, ``.validation``, ``.test`` (:class:`Split`: texts, int64
        labels, ids), ``.class_names``, ``.source`` and ``.report`` (what
        reading skipped or repaired, also printed on standard error).

    Raises:
        DataNotFoundError: the source does not exist (the message lists what
            ``--data`` takes).
        ValueError: an option is out of range, or the data cannot make a
            corpus: a missing column, a malformed row (with its line), one
            class only, a class too small for the stratified splits (with the
            numbers), a label not in ``classes``.
        ConnectionError: ``tfds:NAME`` is not downloaded and there is no network.

    Example:

    >>> corpus = hatt.data.load_corpus("reviews.csv", label_column="stars")
    >>> corpus.class_names, corpus.num_classes, len(corpus.train)
    """
    carving = corpus_lib.Carving(classes, validation_size, validation_split, test_size, seed, limit)
    carving.check(labels)
    log = ReadLog()
    options = ReadOptions(labels, text_column, label_column, test, progress)
    raw, corpus_class = _read_source(source, options, log)
    return corpus_lib.assemble(raw, log=log, carving=carving, corpus_class=corpus_class)


SPLIT_CHOICES = names.SPLIT_CHOICES


def read_documents(
    source=None,
    *,
    labels=None,
    text_column="text",
    label_column="label",
    test=None,
    split="auto",
    progress=True,
):
    """Every labelled document of a source, as read: for evaluating a trained model.

    The same readers as :func:`load_corpus` (and so ``hatt train --data``), without
    carving anything: a table or a folder of class folders gives all of its
    documents; a source with its own test split (IMDB, ``DIR/train`` and
    ``DIR/test``, ``test=``) gives that test split unless ``split`` says otherwise.

    Args:
        source, labels, text_column, label_column, test: as :func:`load_corpus`.
        split: ``"auto"`` (the test split when the source has one, else every
            document), ``"test"``, ``"train"`` or ``"all"`` (both).
        progress: progress bars and "Reading ..." lines.

    Returns:
        ``(split, report)``: a :class:`Split` whose ``labels`` are the class
        names as read (str; ``3``, ``3.0`` and ``"3"`` are ``"3"``), and what
        reading skipped or repaired (``ReadLog`` counts, also printed).

    Raises:
        DataNotFoundError, ValueError: as :func:`load_corpus`; ``split="test"``
            for a source without a test split; no documents.
    """
    if split not in SPLIT_CHOICES:
        raise ValueError(f"Expected split to be one of {SPLIT_CHOICES}. Received: split={split!r}")
    log = ReadLog()
    options = ReadOptions(labels, text_column, label_column, test, progress)
    raw, _ = _read_source(source, options, log)
    has_test = raw.test is not None and len(raw.test) > 0
    if split == "test" and not has_test:
        raise ValueError(
            f"{raw.source} has no test split of its own (no test/ folder, no --test): "
            "evaluate every document with --split all."
        )
    if split == "auto":
        split = "test" if has_test else "all"
    parts = {"test": [raw.test], "train": [raw.train], "all": [raw.train, raw.test]}[split]
    parts = [part for part in parts if part is not None and len(part)]
    if not parts:
        raise ValueError(f"{raw.source} holds no labelled documents to evaluate.")
    documents = corpus_lib.Split(
        [t for part in parts for t in part.texts],
        np.concatenate([np.asarray(part.labels, dtype=object) for part in parts]),
        [i for part in parts for i in part.ids],
    )
    log.print_summary()
    return documents, log.as_dict()
