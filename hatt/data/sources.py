"""A labeled corpus from your own documents, or from IMDB: :func:`load_corpus`.

Sources (``source=``, ``--data`` on the command line):

- a **folder per class**, Keras' ``text_dataset_from_directory`` convention:
  ``DIR/train/CLASS/*`` (and ``DIR/test/CLASS/*`` when present), or
  ``DIR/CLASS/*`` with the test split carved out; or a ``.tar.gz`` / ``.tgz`` /
  ``.zip`` of such a folder, extracted once into the cache folder;
- a **table**: ``.csv``, ``.tsv`` or ``.jsonl`` (each optionally ``.gz``) with
  a text and a label column, and optionally a separate test table;
- **tensorflow-datasets** by name: ``"tfds:ag_news_subset"``;
- **IMDB** (``None``, an ``aclImdb`` folder or tarball): see
  :mod:`hatt.data.imdb`, which builds on this module.

Every source is read into documents whose labels are still class names
(:class:`RawCorpus`); :func:`assemble` then orders the classes, carves the
test split (when the source has none) and the validation split, both
stratified and seeded, and applies ``limit``. What reading skipped or
repaired is counted (:class:`ReadLog`), printed on standard error and kept in
``TextCorpus.report``: nothing is dropped silently.
"""

import contextlib
import csv
import dataclasses
import gzip
import hashlib
import io
import json
import math
import os
import re
import shutil
import sys
import tarfile
import tempfile
import zipfile
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

from hatt.data.files import REPLACEMENT, NotTextError, decode_text

CACHE_ENV_VAR = "HATT_CACHE"
BINARY_CLASSES = ("negative", "positive")  # IMDB's classes, label 1 = positive
SPLITS = ("train", "validation", "test")
TFDS_PREFIX = "tfds:"
TFDS_HOST = "storage.googleapis.com"  # tensorflow-datasets' bucket: the offline probe
TABLE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tar.xz", ".zip")
VALIDATION_SPLITS = ("blocks", "random")
BLOCK_SIZE = 100  # consecutive review ids per validation block (a movie has <= 30 reviews)
DEFAULT_VALIDATION = 2500  # the most documents the default validation split takes


class DataNotFoundError(FileNotFoundError):
    """No usable data source was found (the message says how to give one)."""


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


# === The corpus =====================================================================


@dataclasses.dataclass
class Split:
    """One split of a corpus: raw texts, labels (indices into the class names) and ids.

    ``ids`` name each document's origin (``"train/pos/123_9"`` for an IMDB
    file, ``"train/sports/a.txt"`` for a folder, ``"train/line17"`` for a
    table's record starting on line 17, ``"train/17"`` for tensorflow-datasets);
    corpora have duplicate texts, so ids, not texts, tell documents apart.
    """

    texts: list
    labels: np.ndarray
    ids: list = dataclasses.field(default_factory=list)

    def __len__(self):
        return len(self.texts)

    def subset(self, indices):
        indices = np.asarray(indices, dtype=np.int64)
        ids = [self.ids[i] for i in indices] if self.ids else []
        return Split([self.texts[i] for i in indices], self.labels[indices], ids)


def count_classes(labels, num_classes):
    """Documents per class: ``labels`` (class indices) counted into ``num_classes`` bins."""
    labels = np.asarray(labels, dtype=np.int64)
    return np.bincount(labels, minlength=num_classes)[:num_classes]


@dataclasses.dataclass
class TextCorpus:
    """The three splits of a labeled corpus, its class names, and what reading it skipped.

    Labels are ``int64`` indices into ``class_names``. ``report`` is
    ``{"skipped": {reason: documents}, "invalid_utf8": documents repaired,
    "warnings": [...]}`` (see :class:`ReadLog`).
    """

    train: Split
    validation: Split
    test: Split
    source: str
    class_names: tuple
    report: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self.class_names = tuple(str(name) for name in self.class_names)
        if len(set(self.class_names)) != len(self.class_names):
            raise ValueError(
                f"Expected distinct class names. Received: class_names={self.class_names}"
            )
        for name in SPLITS:
            labels = np.asarray(getattr(self, name).labels)
            if labels.size and (labels.min() < 0 or labels.max() >= self.num_classes):
                raise ValueError(
                    f"Expected the {name} labels to be class indices in "
                    f"[0, {self.num_classes}) for class_names={self.class_names}. "
                    f"Received labels from {labels.min()} to {labels.max()}."
                )

    @property
    def num_classes(self):
        return len(self.class_names)

    def class_counts(self, split):
        """Documents per class in ``split`` (``"train"``, ``"validation"`` or ``"test"``)."""
        return count_classes(getattr(self, split).labels, self.num_classes)

    def __repr__(self):
        return (
            f"{type(self).__name__}(train={len(self.train)}, validation={len(self.validation)}, "
            f"test={len(self.test)}, classes={self.num_classes}, source={self.source!r})"
        )


@dataclasses.dataclass
class RawCorpus:
    """Documents as read, their labels still class names (str), before carving splits.

    ``test`` is ``None`` when the source has no test split; ``order`` is the
    class order the source defines (IMDB's, a tensorflow-datasets ClassLabel's),
    ``None`` to sort the names.
    """

    train: Split
    test: Split | None
    source: str
    order: tuple | None = None


# === What reading skipped ===========================================================

NOT_TEXT = "not text"
EMPTY_TEXT = "empty text"
EMPTY_LABEL = "empty label"
SHORT_ROW = "too few fields"
OUTSIDE = "outside the class folders"
_SKIP_MESSAGES = {
    NOT_TEXT: "Skipped {n} file(s) that are not UTF-8 text",
    EMPTY_TEXT: "Skipped {n} document(s) with an empty text",
    EMPTY_LABEL: "Skipped {n} document(s) with an empty label",
    SHORT_ROW: "Skipped {n} row(s) with too few fields (no text or no label)",
    OUTSIDE: "Skipped {n} file(s) outside the class folders",
}
_EXAMPLES = 3  # places named per reason in the printed summary


class ReadLog:
    """What reading a source skipped or repaired, and where (nothing is dropped silently).

    Reading records each skipped document with its reason and place (a file,
    or a table's line); :meth:`print_summary` writes one line per reason on
    standard error, and :meth:`as_dict` is the corpus's ``report``.
    """

    def __init__(self):
        self.skipped = {}  # reason -> places
        self.repaired = []  # places of documents whose invalid UTF-8 was replaced
        self.warnings = []

    def skip(self, reason, where):
        self.skipped.setdefault(reason, []).append(where)

    def repair(self, where):
        self.repaired.append(where)

    def warn(self, message):
        self.warnings.append(message)

    def summary_lines(self):
        lines = [
            _SKIP_MESSAGES[reason].format(n=len(places)) + ": " + _examples(places)
            for reason, places in self.skipped.items()
        ]
        if self.repaired:
            lines.append(
                f"Replaced invalid UTF-8 bytes with U+FFFD in {len(self.repaired)} "
                f"document(s): {_examples(self.repaired)}"
            )
        return lines + [f"Warning: {message}" for message in self.warnings]

    def print_summary(self):
        for line in self.summary_lines():
            print(line, file=sys.stderr)

    def as_dict(self):
        return {
            "skipped": {reason: len(places) for reason, places in self.skipped.items()},
            "invalid_utf8": len(self.repaired),
            "warnings": list(self.warnings),
        }


def _examples(places):
    shown = ", ".join(str(p) for p in places[:_EXAMPLES])
    return shown + (f" and {len(places) - _EXAMPLES} more" if len(places) > _EXAMPLES else "")


_LONE_SURROGATES = re.compile("[\ud800-\udfff]")


def _repair(text):
    """``text`` decoded with ``errors="surrogateescape"``: each undecodable byte as U+FFFD.

    Returns ``(text, whether any byte was replaced)``.
    """
    repaired, count = _LONE_SURROGATES.subn(REPLACEMENT, text)
    return repaired, count > 0


# === Labels and class names =========================================================

_INTEGRAL = re.compile(r"[+-]?\d+(\.0*)?")


def label_name(value):
    """The class name of a label value: JSON ``3``, ``3.0`` and ``"3"`` all name class ``"3"``.

    Strings are stripped; a string holding a whole number (``"3.0"``, as a
    table written from floats holds them) is that number's name; ``None`` and
    blank strings give ``""`` (an empty label).
    """
    if value is None:
        return ""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    text = str(value).strip()
    if _INTEGRAL.fullmatch(text):
        return str(int(text.split(".")[0]))
    return text


def _number(name):
    try:
        value = float(name)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def class_order(names):
    """Class names sorted: numerically when every name is a number (``"10"`` after ``"9"``)."""
    names = set(names)
    numbers = {name: _number(name) for name in names}
    if all(v is not None for v in numbers.values()):
        return tuple(sorted(names, key=lambda name: (numbers[name], name)))
    return tuple(sorted(names))


def _counts_text(counter):
    return ", ".join(f"{name!r} ({n} document(s))" for name, n in counter.most_common())


def _check_training_classes(names, counts, source):
    """Refuse training data with fewer than two classes, or none of a named class."""
    table = ", ".join(f"{name!r} {counts[name]}" for name in names)
    if sum(1 for name in names if counts[name]) < 2:
        raise ValueError(
            "Expected documents of at least two classes to tell apart. Received: fewer than "
            f"two classes in the training data of {source} (documents per class: "
            f"{table or _counts_text(counts)})"
        )
    empty = [name for name in names if not counts[name]]
    if empty:
        raise ValueError(
            f"Expected documents of every class in the training data. Received: none of "
            f"{empty} in {source} (documents per class: {table})"
        )


def encode_labels(raw, classes=None):
    """Class names and the splits of ``raw`` with labels as indices into them.

    The order is ``classes`` when given, else the source's own (``raw.order``),
    else :func:`class_order` of the training labels.

    Returns:
        ``(class_names, train, test)``; ``test`` is ``None`` when ``raw`` has none.

    Raises:
        ValueError: a label is not in ``classes``; the test split holds a
            label that the training data lacks; the training data holds fewer
            than two classes, or none of a class in ``classes``.
    """
    splits = {"train": raw.train, "test": raw.test}
    counts = {name: Counter(s.labels.tolist()) for name, s in splits.items() if s is not None}
    names = classes if classes is not None else raw.order
    if names is None:
        only_test = Counter(
            {k: v for k, v in counts.get("test", Counter()).items() if k not in counts["train"]}
        )
        if only_test:
            raise ValueError(
                "Expected every label of the test split to occur in the training data. "
                f"Received labels only in the test split: {_counts_text(only_test)}"
            )
        names = class_order(counts["train"])
    names = tuple(names)
    unknown = Counter({k: v for c in counts.values() for k, v in c.items() if k not in names})
    if unknown:
        raise ValueError(
            f"Expected every label to be one of classes={list(names)}. "
            f"Received other labels: {_counts_text(unknown)}"
        )
    _check_training_classes(names, counts["train"], raw.source)
    index = {name: i for i, name in enumerate(names)}

    def encode(split):
        labels = np.array([index[label] for label in split.labels.tolist()], dtype=np.int64)
        return Split(split.texts, labels, split.ids)

    return names, encode(raw.train), (None if raw.test is None else encode(raw.test))


# === Carving splits =================================================================


def _short_classes(labels, chosen, num_classes, keep_rest):
    """Classes that ``chosen`` leaves out (or, with ``keep_rest``, takes whole)."""
    counts = count_classes(labels, num_classes)
    got = count_classes(np.asarray(labels)[chosen], num_classes)
    if keep_rest:
        return np.flatnonzero((got == 0) | (got == counts))
    return np.flatnonzero((got == 0) & (counts > 0))


def _strata_error(labels, size, short, *, keep_rest, what, class_names, hint):
    n = len(labels)
    counts = count_classes(labels, len(class_names))
    classes = len(counts) if keep_rest else np.count_nonzero(counts)
    if size < classes or (keep_rest and n - size < classes):
        problem = f"{min(size, n - size)} documents cannot hold {classes} classes"
    else:
        listing = ", ".join(f"{class_names[k]!r} has {counts[k]}" for k in short)
        smallest = max(int(min(counts[k] for k in short)), 1)
        problem = (
            f"too few documents of some classes: {listing} (a class of c documents gets "
            f"about c * {size} / {n} of them; {math.ceil(n / smallest)} out of {n} would "
            f"give a class of {smallest} one)"
        )
    return ValueError(
        f"Expected a stratified {what} of {size} of the {n} documents to hold every class"
        + (" and to leave documents of every class out of it" if keep_rest else "")
        + f". Received: {problem}. {hint}"
    )


def _scikit_learn_can(counts, size, n):
    """Whether scikit-learn's stratified split accepts these class counts and sizes."""
    present = counts[counts > 0]
    return present.min() >= 2 and min(size, n - size) >= len(present)


def stratified_indices(
    labels, size, seed, *, keep_rest=False, what="subset", class_names=None, hint=""
):
    """A seeded, stratified choice of ``size`` indices (sorted) that holds every class.

    Args:
        labels: class indices.
        size: how many to choose (all when ``size >= len(labels)``).
        seed: seed of the choice.
        keep_rest: the documents not chosen must hold every class too
            (carving a split out of another).
        what, class_names, hint: how the error names the choice, the classes,
            and what the user can do.

    Raises:
        ValueError: a class has too few documents to be in the choice (and,
            with ``keep_rest``, out of it); the message gives the numbers.
    """
    from sklearn.model_selection import train_test_split

    labels = np.asarray(labels)
    n = len(labels)
    if size >= n:
        return np.arange(n)
    class_names = class_names or [str(k) for k in range(int(labels.max()) + 1)]
    counts = count_classes(labels, len(class_names))
    chosen = None
    if _scikit_learn_can(counts, size, n):
        chosen = np.sort(
            train_test_split(np.arange(n), train_size=size, stratify=labels, random_state=seed)[0]
        )
    elif not keep_rest and n - size < np.count_nonzero(counts):  # drop a few of the largest
        largest = np.flatnonzero(labels == np.argmax(counts))
        dropped = np.random.default_rng(seed).choice(largest, n - size, replace=False)
        chosen = np.setdiff1d(np.arange(n), dropped)
    if chosen is None:  # the classes that are too small for their share
        rest = n - size if keep_rest else n
        short = [k for k, c in enumerate(counts) if (c or keep_rest) and min(size, rest) * c < n]
    else:
        short = _short_classes(labels, chosen, len(class_names), keep_rest)
    if chosen is None or len(short):
        raise _strata_error(
            labels, size, short, keep_rest=keep_rest, what=what, class_names=class_names, hint=hint
        )
    return chosen


def block_indices(ids, labels, size, seed, block_size=BLOCK_SIZE):
    """Seeded choice of ``size`` indices made of blocks of consecutive ids.

    Per class (stratified), the documents are ordered by their numeric id and
    cut into blocks of ``block_size``; whole blocks are drawn at random until
    the class has its share (the last block drawn is cut short). Returns
    ``None`` when the ids carry no numeric id (``<id>_<anything>``, as IMDB's
    file names do).
    """
    numbers = []
    for review_id in ids:
        head = str(review_id).rsplit("/", 1)[-1].split("_")[0]
        if "_" not in str(review_id) or not head.isdigit():
            return None
        numbers.append(int(head))
    numbers = np.asarray(numbers)
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    chosen = []
    for k, label in enumerate(classes):
        members = np.flatnonzero(labels == label)
        members = members[np.argsort(numbers[members], kind="stable")]
        share = int(round(size * np.mean(labels == label)))
        if k == len(classes) - 1:
            share = size - sum(len(c) for c in chosen)
        blocks = [members[i : i + block_size] for i in range(0, len(members), block_size)]
        picked = []
        for b in rng.permutation(len(blocks)):
            if len(picked) >= share:
                break
            picked.extend(blocks[b][: share - len(picked)])
        chosen.append(np.asarray(picked, dtype=np.int64))
    return np.sort(np.concatenate(chosen))


def carve(split, size, seed, *, how="random", what, class_names, hint=""):
    """``(rest, carved)``: ``size`` documents of ``split`` carved out, stratified, seeded.

    ``how="blocks"`` carves blocks of consecutive numeric ids
    (:func:`block_indices`) when the ids carry them, else single documents.
    Both parts hold every class (else a ``ValueError`` with the numbers).
    """
    if size == 0:
        return split, split.subset([])
    labels = np.asarray(split.labels)
    options = {"what": what, "class_names": class_names, "hint": hint}
    chosen = block_indices(split.ids, labels, size, seed) if how == "blocks" else None
    if chosen is None:
        chosen = stratified_indices(labels, size, seed, keep_rest=True, **options)
    short = _short_classes(labels, chosen, len(class_names), keep_rest=True)
    if len(short):
        raise _strata_error(labels, size, short, keep_rest=True, **options)
    rest = np.setdiff1d(np.arange(len(split)), chosen)
    return split.subset(rest), split.subset(chosen)


def check_size(value, argument, *, allow_none=False):
    """Check a split size: an int ``>= 0`` (documents) or a float in ``(0, 1)`` (a share)."""
    if value is None and allow_none:
        return
    if isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= 0:
        return
    if isinstance(value, float) and 0 < value < 1:
        return
    raise ValueError(
        f"Expected {argument} to be {'None, ' if allow_none else ''}an int >= 0 (documents) "
        f"or a float in (0, 1) (a share). Received: {argument}={value!r}"
    )


def _documents(value, n, num_classes):
    """The documents a size checked by :func:`check_size` means out of ``n``.

    A share is at least one document per class.
    """
    return max(num_classes, round(value * n)) if isinstance(value, float) else int(value)


def default_validation_size(labels, num_classes):
    """10 % of the training documents, at most 2,500, and enough for every class's share.

    The smallest class gets about ``size * smallest / n`` documents, so the
    size grows to ``n / smallest`` when needed (at most half of the documents).
    """
    n = len(labels)
    counts = count_classes(labels, num_classes)
    size = min(DEFAULT_VALIDATION, round(0.1 * n))
    if counts[counts > 0].size:
        size = max(size, math.ceil(n / counts[counts > 0].min()))
    return min(max(size, num_classes), n // 2)


# === Archives =======================================================================


def cache_dir():
    """Folder where archives are extracted (``$HATT_CACHE`` or ``~/.cache/hatt``)."""
    return Path(os.environ.get(CACHE_ENV_VAR) or Path.home() / ".cache" / "hatt")


def is_archive(path):
    """Whether ``path`` is a ``.tar.gz`` / ``.tgz`` / ``.zip`` (by name, else by content)."""
    path = Path(path)
    if path.name.lower().endswith(ARCHIVE_SUFFIXES):
        return True
    return path.is_file() and (zipfile.is_zipfile(path) or tarfile.is_tarfile(path))


def _hidden(name):
    return name.startswith(".") or name == "__MACOSX"


def _wanted(name):
    """Archive members to extract: not hidden, and not IMDB's unlabeled ``unsup/`` folder."""
    parts = name.strip("/").split("/")
    return "unsup" not in parts and not any(_hidden(p) for p in parts)


def _open_archive(path):
    return zipfile.ZipFile(path) if zipfile.is_zipfile(path) else tarfile.open(path, "r:*")


def _members(archive):
    if isinstance(archive, zipfile.ZipFile):
        return [m for m in archive.infolist() if _wanted(m.filename)]
    return [m for m in archive.getmembers() if (m.isfile() or m.isdir()) and _wanted(m.name)]


def _extract_members(path, target, progress):
    import keras

    with _open_archive(path) as archive:
        members = _members(archive)
        bar = keras.utils.Progbar(len(members), unit_name="file") if progress else None
        if progress:
            print(f"Extracting {path} into {target} (once)")
        for i, member in enumerate(members):
            if isinstance(archive, zipfile.ZipFile):
                archive.extract(member, target)  # zipfile drops absolute and ".." parts
            else:
                archive.extract(member, target, filter="data")
            if bar is not None and (i % 500 == 0 or i == len(members) - 1):
                bar.update(i + 1)


def extract_archive(path, progress=True):
    """Extract a ``.tar.gz`` / ``.tgz`` / ``.zip`` once into the cache; return the folder.

    The folder is named after the archive's path, size and modification time,
    and re-used while they do not change. Hidden files, ``__MACOSX`` and
    ``unsup/`` folders are left out.

    The archive is extracted into a temporary folder beside the target and
    renamed into place when complete, so two processes that extract the same
    archive at once (two runs, or the test suite's workers) never read a
    file the other is still writing: the first rename wins and the other's
    copy is removed.

    Raises:
        DataNotFoundError: the archive cannot be read.
    """
    path = Path(path)
    stat = path.stat()
    key = hashlib.sha1(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    target = cache_dir() / f"{path.name.split('.')[0]}-{key.hexdigest()[:10]}"
    if not (target / COMPLETE_MARKER).exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            try:
                _extract_members(path, staging, progress)
            except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
                raise DataNotFoundError(
                    f"{path} is not a readable archive (.tar.gz, .tgz, .zip): {error}"
                ) from error
            (staging / COMPLETE_MARKER).write_text(str(path.resolve()))
            _move_into_place(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


COMPLETE_MARKER = ".complete"


def _move_into_place(staging, target):
    """Rename the finished ``staging`` folder to ``target`` unless another process did first."""
    if target.exists() and not (target / COMPLETE_MARKER).exists():
        # an unfinished extraction of an older hatt (it extracted in place): redo it
        shutil.rmtree(target, ignore_errors=True)
    try:
        staging.rename(target)
    except OSError:
        if not (target / COMPLETE_MARKER).exists():
            raise  # not a lost race: a real error


# === Folders ========================================================================


def class_folders(folder):
    """The class folders in ``folder``: its subfolders, except hidden ones and ``unsup``."""
    return sorted(
        p
        for p in Path(folder).iterdir()
        if p.is_dir() and not _hidden(p.name) and p.name != "unsup"
    )


def _leading_number(path):
    head = path.stem.split("_")[0]
    return int(head) if head.isdigit() else -1


def document_files(folder):
    """The files under ``folder`` (recursively, hidden ones left out), by leading number, then path.

    ``123_9.txt`` comes before ``1000_1.txt``, so the order never depends on
    the file system.
    """
    folder = Path(folder)
    files = [
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(_hidden(part) for part in p.relative_to(folder).parts)
    ]
    return sorted(files, key=lambda p: (_leading_number(p), p.relative_to(folder).as_posix()))


def read_documents(paths, log, progress=True, unit="document"):
    """The texts of ``paths``: ``(texts, indices of the files kept)``.

    A file that is not text (an image dropped in a class folder) or holds only
    white space is skipped, a few invalid UTF-8 bytes are replaced with
    U+FFFD; both are recorded in ``log``.
    """
    import keras

    bar = keras.utils.Progbar(len(paths), unit_name=unit) if progress and paths else None
    texts, kept = [], []
    for i, path in enumerate(paths):
        try:
            text, replaced = decode_text(Path(path).read_bytes(), repr(str(path)))
        except NotTextError:
            log.skip(NOT_TEXT, str(path))
        else:
            if not text.strip():
                log.skip(EMPTY_TEXT, str(path))
            else:
                texts.append(text)
                kept.append(i)
                if replaced:
                    log.repair(str(path))
        if bar is not None and (i % 1000 == 0 or i == len(paths) - 1):
            bar.update(i + 1)
    return texts, kept


def _descend(folder):
    """The folder holding the data: through single wrapping folders (as archives hold)."""
    folder = Path(folder)
    while True:
        entries = [p for p in folder.iterdir() if not _hidden(p.name)]
        if len(entries) != 1 or not entries[0].is_dir() or entries[0].name in ("train", "test"):
            return folder
        if not any(p.is_dir() for p in entries[0].iterdir()):
            return folder  # FOLDER/ONE_CLASS/files: one class, which the class check reports
        folder = entries[0]


def _folder_layout(folder):
    """``(root, train folder, test folder or None)`` of a folder-per-class corpus."""
    root = _descend(folder)
    train, test = root / "train", root / "test"
    if train.is_dir() and class_folders(train):
        return root, train, (test if test.is_dir() and class_folders(test) else None)
    if class_folders(root):
        return root, root, None
    found = sorted(p.name for p in root.iterdir() if not _hidden(p.name))[:10]
    raise ValueError(
        f"Expected a folder with a subfolder per class (DIR/CLASS/*.txt, or "
        f"DIR/train/CLASS/*.txt). Received: {str(root)!r}, which holds no class folders "
        f"(found: {found or 'nothing'})."
    )


def read_class_folders(folder, prefix, log, progress=True):
    """The documents of ``folder/CLASS/...`` as a :class:`Split` with class-name labels.

    Ids are ``prefix`` and the file's path under ``folder``
    (``"train/sports/a.txt"``).
    """
    folder = Path(folder)
    for path in sorted(folder.iterdir()):
        if path.is_file() and not _hidden(path.name):
            log.skip(OUTSIDE, str(path))
    paths, names = [], []
    for class_folder in class_folders(folder):
        files = document_files(class_folder)
        if not files:
            log.warn(f"the class folder {class_folder} holds no files; it is not a class")
        paths.extend(files)
        names.extend([class_folder.name] * len(files))
    texts, kept = read_documents(paths, log, progress)
    if not texts:
        raise ValueError(
            f"Expected documents in the class folders of {str(folder)!r}. Received: none "
            f"({len(paths)} file(s), none of them text)."
        )
    labels = np.array([names[i] for i in kept], dtype=object)
    ids = [prefix + paths[i].relative_to(folder).as_posix() for i in kept]
    return Split(texts, labels, ids)


def read_folder(folder, *, test=None, text_column="text", label_column="label", progress=True, log):
    """A folder-per-class corpus (``test=``: a separate test table or folder)."""
    root, train_folder, test_folder = _folder_layout(folder)
    if test_folder is not None and test is not None:
        raise ValueError(
            f"Expected test=None for a folder with its own test/ split ({test_folder}). "
            f"Received: test={str(test)!r}"
        )
    if progress:
        print(f"Reading documents from {root}")
    prefix = "train/" if train_folder != root else ""
    train = read_class_folders(train_folder, prefix, log, progress)
    if test_folder is not None:
        test_split = read_class_folders(test_folder, "test/", log, progress)
    else:
        test_split = read_test(test, text_column, label_column, progress, log)
    return RawCorpus(train, test_split, str(root))


def read_test(test, text_column, label_column, progress, log):
    """The separate test split ``test=`` names: a table, or a folder (or archive) of classes.

    A folder with a ``test/`` folder of classes gives that one.
    """
    if test is None:
        return None
    path = Path(test).expanduser()
    if not path.exists():
        raise DataNotFoundError(f"Could not load the test split: {str(test)!r} does not exist.")
    if table_format(path):
        return read_table(
            path, text_column=text_column, label_column=label_column, prefix="test", log=log
        )
    folder = _descend(extract_archive(path, progress) if path.is_file() else path)
    if (folder / "test").is_dir() and class_folders(folder / "test"):
        folder = folder / "test"  # a corpus folder given for its test split
    return read_class_folders(folder, "test/", log, progress)


# === Tables =========================================================================


def table_format(path):
    """``"csv"``, ``"tsv"`` or ``"jsonl"`` from the name (``.gz`` allowed), else ``None``."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return TABLE_FORMATS.get(suffixes[-1]) if suffixes else None


def _table_text(path):
    """A table's text: gunzipped, a BOM dropped, undecodable bytes kept as lone surrogates."""
    data = Path(path).read_bytes()
    if Path(path).suffix.lower() == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise ValueError(
                f"Expected {str(path)!r} to be gzip-compressed. Received: {error}"
            ) from None
    decode_text(data, repr(str(path)))  # refuses a file that is not text (NotTextError)
    return data.decode("utf-8-sig", errors="surrogateescape")


@contextlib.contextmanager
def _large_fields():
    """Let the csv module read fields of any size (a 50,000-word review)."""
    old = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _csv_rows(text, delimiter, name):
    """``[(first line, fields)]`` of every record; a malformed one is an error with its line."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows, end = [], 0
    with _large_fields():
        while True:
            start = end + 1
            try:
                fields = next(reader)
            except StopIteration:
                return rows
            except csv.Error as error:
                raise ValueError(_csv_error(name, start, reader.line_num, error)) from None
            end = reader.line_num
            rows.append((start, fields))


def _csv_error(name, start, line, error):
    if "unexpected end of data" in str(error):
        problem = f"the quoted field of the record starting on line {start} is never closed"
    else:
        where = f"line {line}" + (f" (record starting on line {start})" if line != start else "")
        problem = f"{where}: {error}"
    return (
        f"Expected {name!r} to be a valid table. Received: {problem}. A field that starts "
        'with a quote must end with one, and quotes inside it are doubled ("He said ""hi""").'
    )


def _column(columns, wanted, argument, name):
    if wanted in columns:
        return columns.index(wanted)
    other = [d for d in ";|\t," if len(columns) == 1 and d in columns[0]]
    hint = (
        f" (is it delimited by {other[0]!r}? .csv is read with ',', .tsv with tabs)"
        if other
        else ""
    )
    raise ValueError(
        f"Expected {argument}={wanted!r} to name a column of {name!r}. "
        f"Received columns: {columns}{hint}"
    )


def _csv_records(text, delimiter, text_column, label_column, name, log):
    """``(line, text, label)`` of each record of a CSV / TSV table with a header row."""
    rows = _csv_rows(text, delimiter, name)
    rows = [(line, fields) for line, fields in rows if fields]  # blank lines hold nothing
    if not rows:
        raise ValueError(f"Expected a header row in {name!r}. Received: an empty table.")
    columns = [_repair(c.strip())[0] for c in rows[0][1]]
    text_index = _column(columns, text_column, "text_column", name)
    label_index = _column(columns, label_column, "label_column", name)
    records = []
    for line, fields in rows[1:]:
        if len(fields) > len(columns) and any(f.strip() for f in fields[len(columns) :]):
            raise ValueError(
                f"Expected at most {len(columns)} fields a row in {name!r} (its header's). "
                f"Received: {len(fields)} fields on line {line}; quote a field that holds "
                "the delimiter."
            )
        if len(fields) <= max(text_index, label_index):
            log.skip(SHORT_ROW, f"{name} line {line}")
            continue
        records.append((line, fields[text_index], fields[label_index]))
    return records


def _jsonl_records(text, text_column, label_column, name):
    """``(line, text, label)`` of each line of a JSON-lines table (one object a line)."""
    records, keys = [], set()
    for line, content in enumerate(text.split("\n"), start=1):
        if not content.strip():
            continue
        try:
            record = json.loads(content)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"Expected one JSON object a line in {name!r}. Received on line {line}: "
                f"{error.msg} (column {error.colno})."
            ) from None
        if not isinstance(record, dict):
            raise ValueError(
                f"Expected one JSON object a line in {name!r}. Received on line {line}: "
                f"a {type(record).__name__}."
            )
        keys.update(record)
        records.append((line, record.get(text_column), record.get(label_column)))
    columns = sorted(keys)
    for wanted, argument in ((text_column, "text_column"), (label_column, "label_column")):
        if records and wanted not in keys:
            raise ValueError(
                f"Expected {argument}={wanted!r} to name a key of the objects in {name!r}. "
                f"Received keys: {columns}"
            )
    return records


def _text_value(value):
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _records_split(records, prefix, name, log):
    """A :class:`Split` of ``(line, text, label)`` records; empty texts or labels skipped."""
    texts, labels, ids = [], [], []
    for line, text, label in records:
        where = f"{name} line {line}"
        text, replaced = _repair(_text_value(text))
        label = _repair(label_name(label))[0]
        if not text.strip():
            log.skip(EMPTY_TEXT, where)
            continue
        if not label:
            log.skip(EMPTY_LABEL, where)
            continue
        if replaced:
            log.repair(where)
        texts.append(text)
        labels.append(label)
        ids.append(f"{prefix}/line{line}")
    if not texts:
        raise ValueError(f"Expected documents in {name!r}. Received: none with a text and a label.")
    return Split(texts, np.array(labels, dtype=object), ids)


def read_table(path, *, text_column="text", label_column="label", prefix="train", log):
    """The documents of a ``.csv`` / ``.tsv`` / ``.jsonl`` table (optionally ``.gz``).

    Ids are ``prefix`` and the line the record starts on (``"train/line17"``;
    line 1 is a CSV's header).
    """
    path = Path(path)
    kind, name = table_format(path), path.name
    text = _table_text(path)
    if kind == "jsonl":
        records = _jsonl_records(text, text_column, label_column, name)
    else:
        delimiter = "\t" if kind == "tsv" else ","
        records = _csv_records(text, delimiter, text_column, label_column, name, log)
    return _records_split(records, prefix, name, log)


# === tensorflow-datasets ============================================================


def _reachable(host, port=80, timeout=3.0):
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _tfds_builder(tfds, name):
    try:
        return tfds.builder(name)
    except tfds.core.DatasetNotFoundError:
        raise ValueError(
            f"Expected tfds:NAME to name a tensorflow-datasets data set. Received: {name!r} "
            "(tfds.list_builders() lists the names)."
        ) from None


def _tfds_splits(tfds, name, host, port):
    """``{split: dataset}`` of ``(text, label)`` pairs; downloads only with a network."""
    try:  # already downloaded and prepared: no network needed
        return tfds.load(name, as_supervised=True, download=False)
    except Exception:
        # Fail fast offline instead of waiting through tfds' download retries.
        if not _reachable(host, port):
            raise ConnectionError(f"cannot reach {host} to download {name}") from None
        return tfds.load(name, as_supervised=True)


def _tfds_class_names(tfds, info):
    keys = info.supervised_keys
    feature = info.features[keys[1]] if keys else None
    if isinstance(feature, tfds.features.ClassLabel):
        return tuple(feature.names)
    return None


def _tfds_split(tfds, dataset, split, order, log):
    texts, labels, ids = [], [], []
    for i, (text, label) in enumerate(tfds.as_numpy(dataset)):
        where = f"{split}/{i}"
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="surrogateescape")
        text, replaced = _repair(str(text))
        if not text.strip():
            log.skip(EMPTY_TEXT, where)
            continue
        if replaced:
            log.repair(where)
        texts.append(text)
        labels.append(order[int(label)] if order else label_name(label))
        ids.append(where)
    return Split(texts, np.array(labels, dtype=object), ids)


def read_tfds(name, log, *, host=TFDS_HOST, port=443):
    """A tensorflow-datasets data set's train and test splits (test ``None`` when it has none).

    Class names come from the label's ``ClassLabel`` (in its order) when it
    has one. Without a prepared copy and without a network this fails within
    seconds (``ConnectionError``), not after tfds' download retries.
    """
    import tensorflow_datasets as tfds

    builder = _tfds_builder(tfds, name)
    splits = _tfds_splits(tfds, name, host, port)
    if "train" not in splits:
        raise ValueError(
            f"Expected tfds:{name} to have a train split. Received splits: {sorted(splits)}"
        )
    order = _tfds_class_names(tfds, builder.info)
    train = _tfds_split(tfds, splits["train"], "train", order, log)
    test = _tfds_split(tfds, splits["test"], "test", order, log) if "test" in splits else None
    return RawCorpus(train, test, f"tensorflow_datasets:{name}", order)


# === One corpus from any source =====================================================


def check_options(
    *, labels=None, classes=None, validation_size=None, validation_split="blocks", limit=None
):
    """Check the options of :func:`load_corpus` / ``load_imdb`` before reading anything."""
    if labels not in (None, "binary", "rating"):
        raise ValueError(
            f"Expected labels to be None, 'binary' or 'rating'. Received: labels={labels!r}"
        )
    if classes is not None and (
        isinstance(classes, str)
        or len(classes) < 2
        or not all(isinstance(c, str) and c.strip() for c in classes)
        or len(set(classes)) != len(classes)
    ):
        raise ValueError(
            "Expected classes to be None or a list of two or more distinct class names. "
            f"Received: classes={classes!r}"
        )
    check_size(validation_size, "validation_size", allow_none=True)
    if validation_split not in VALIDATION_SPLITS:
        raise ValueError(
            f"Expected validation_split to be one of {VALIDATION_SPLITS}. "
            f"Received: validation_split={validation_split!r}"
        )
    if limit is not None and (
        not isinstance(limit, int | np.integer) or isinstance(limit, bool) or limit < 2
    ):
        raise ValueError(f"Expected limit to be None or an int >= 2. Received: limit={limit!r}")


def _carve_test(train, test_size, seed, class_names):
    size = _documents(test_size, len(train), len(class_names))
    if not 0 < size < len(train):
        raise ValueError(
            f"Expected test_size to leave documents for training ({len(train)} in all). "
            f"Received: test_size={test_size!r}"
        )
    return carve(
        train,
        size,
        seed,
        what="test split",
        class_names=class_names,
        hint="Give a larger test_size, a separate test set (test=, --test), or more documents.",
    )


def _carve_validation(train, validation_size, validation_split, seed, class_names):
    if validation_size is None:
        size = default_validation_size(train.labels, len(class_names))
    else:
        size = _documents(validation_size, len(train), len(class_names))
    if size and size >= len(train) - 1:
        raise ValueError(
            f"Expected validation_size to be smaller than the train split ({len(train)}). "
            f"Received: validation_size={validation_size}"
        )
    return carve(
        train,
        size,
        seed,
        how=validation_split,
        what="validation split",
        class_names=class_names,
        hint="Give another validation_size (--validation-size), or more documents.",
    )


def _limited(split, limit, seed, name, class_names):
    chosen = stratified_indices(
        split.labels,
        limit,
        seed,
        what=f"subset of the {name} split (limit)",
        class_names=class_names,
        hint="Give a larger limit.",
    )
    return split.subset(chosen)


def assemble(
    raw,
    *,
    log,
    classes=None,
    validation_size=None,
    validation_split="blocks",
    test_size=0.2,
    seed=1337,
    limit=None,
    corpus_class=TextCorpus,
):
    """The corpus of ``raw``: classes ordered, test and validation splits carved, ``limit``.

    The test split is carved out of the documents (``test_size``) when the
    source has none; the validation split out of what remains for training.
    Both are stratified and seeded, and hold every class.
    """
    class_names, train, test = encode_labels(raw, classes)
    if test is None:
        train, test = _carve_test(train, test_size, seed, class_names)
    train, validation = _carve_validation(
        train, validation_size, validation_split, seed, class_names
    )
    splits = {"train": train, "validation": validation, "test": test}
    if limit is not None:
        splits = {n: _limited(s, limit, seed, n, class_names) for n, s in splits.items()}
    test_counts = count_classes(splits["test"].labels, len(class_names))
    missing = [name for name, k in zip(class_names, test_counts, strict=True) if not k]
    if missing:
        log.warn(f"the test split holds no documents of the class(es) {missing}")
    log.print_summary()
    return corpus_class(**splits, source=raw.source, class_names=class_names, report=log.as_dict())


def _read_path(source, *, labels, text_column, label_column, test, progress, log):
    """``(RawCorpus, corpus class)`` of a path: a table, an archive or a folder."""
    from hatt.data import imdb  # IMDB builds on this module

    path = Path(source).expanduser()
    if not path.exists():
        raise DataNotFoundError(_how_to_give(f"the path {str(path)!r} does not exist."))
    if table_format(path):
        _refuse_labels(labels, path)
        if progress:
            print(f"Reading documents from {path}")
        train = read_table(path, text_column=text_column, label_column=label_column, log=log)
        test_split = read_test(test, text_column, label_column, progress, log)
        return RawCorpus(train, test_split, str(path)), TextCorpus
    if path.is_file() and not is_archive(path):
        raise ValueError(
            "Expected the data to be a folder, a .csv / .tsv / .jsonl table (optionally .gz) "
            f"or a .tar.gz / .tgz / .zip archive. Received: {str(path)!r}"
        )
    folder = extract_archive(path, progress) if path.is_file() else path
    root = imdb.find_root(folder, strict=True)
    if root is not None:
        _refuse_test(test, "an IMDB folder (it has its own test split)")
        return imdb.read_imdb(
            root, labels=labels or "binary", progress=progress, log=log
        ), imdb.Imdb
    _refuse_labels(labels, path)
    raw = read_folder(
        folder,
        test=test,
        text_column=text_column,
        label_column=label_column,
        progress=progress,
        log=log,
    )
    return raw, TextCorpus


def _refuse_labels(labels, source):
    if labels is not None:
        raise ValueError(
            "Expected labels=None for a corpus other than IMDB: labels='binary' / 'rating' "
            f"picks IMDB's labels and is for IMDB only. Received: labels={labels!r} with "
            f"source={str(source)!r}"
        )


def _refuse_test(test, what):
    if test is not None:
        raise ValueError(f"Expected test=None with {what}. Received: test={str(test)!r}")


def _read_source(source, *, labels, text_column, label_column, test, progress, log):
    """``(RawCorpus, corpus class)`` of any source (see :func:`load_corpus`)."""
    from hatt.data import imdb  # IMDB builds on this module

    if source is None or str(source) == imdb.TFDS_IMDB:
        _refuse_test(test, "IMDB (it has its own test split)")
        return imdb.read_imdb(source, labels=labels or "binary", progress=progress, log=log), (
            imdb.Imdb
        )
    if str(source).startswith(TFDS_PREFIX):
        _refuse_labels(labels, source)
        _refuse_test(test, "tensorflow-datasets")
        return read_tfds(str(source)[len(TFDS_PREFIX) :], log), TextCorpus
    return _read_path(
        source,
        labels=labels,
        text_column=text_column,
        label_column=label_column,
        test=test,
        progress=progress,
        log=log,
    )


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
    check_options(
        labels=labels,
        classes=classes,
        validation_size=validation_size,
        validation_split=validation_split,
        limit=limit,
    )
    check_size(test_size, "test_size")
    log = ReadLog()
    raw, corpus_class = _read_source(
        source,
        labels=labels,
        text_column=text_column,
        label_column=label_column,
        test=test,
        progress=progress,
        log=log,
    )
    return assemble(
        raw,
        log=log,
        classes=classes,
        validation_size=validation_size,
        validation_split=validation_split,
        test_size=test_size,
        seed=seed,
        limit=limit,
        corpus_class=corpus_class,
    )
