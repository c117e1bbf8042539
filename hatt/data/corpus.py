"""Corpus types (texts, labels, class names), labels, and the carving of splits.

Every source is read (see :mod:`hatt.data.readers`) into documents whose labels
are still class names (:class:`RawCorpus`); :func:`assemble` then orders the
classes, carves the test split (when the source has none) and the validation
split, both stratified and seeded, and applies ``limit``.
"""

import dataclasses
import math
import re
import unicodedata
from collections import Counter

import numpy as np

from hatt.data.text import fingerprints

BINARY_CLASSES = ("negative", "positive")  # IMDB's classes, label 1 = positive
SPLITS = ("train", "validation", "test")
VALIDATION_SPLITS = ("blocks", "random")
BLOCK_SIZE = 100  # consecutive review ids per validation block (a movie has <= 30 reviews)
MAX_TEST_OVERLAP = 0.5  # the share of test documents also in training that is refused
DEFAULT_VALIDATION = 2500  # the most documents the default validation split takes


class DataNotFoundError(FileNotFoundError):
    """No usable data source was found (the message says how to give one)."""


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


# === Labels and class names =========================================================

_INTEGRAL = re.compile(r"[+-]?\d+(\.0*)?")
_DECIMAL = re.compile(r"[+-]?\d{1,15}\.\d{1,15}")  # exactly a float: repr gives it back


def label_name(value):
    """The class name of a label value: JSON ``3``, ``3.0`` and ``"3"`` all name class ``"3"``.

    Strings are stripped; a string holding a whole number (``"3.0"``, as a
    table written from floats holds them) is that number's name, one holding a
    decimal number is the float's (``"1.50"``, ``"1.5"`` and ``1.5`` all name
    ``"1.5"``); text is in Unicode's NFC form (composed and decomposed accents name
    one class); ``None`` and blank strings give ``""`` (an empty label).
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
    # NFC: "été" typed as one code point a letter or as e + a combining accent is one
    # class, as it reads (issue 63: two classes printed alike)
    text = unicodedata.normalize("NFC", str(value).strip())
    if _INTEGRAL.fullmatch(text):
        return str(int(text.split(".")[0]))
    if _DECIMAL.fullmatch(text):  # "1.50" and "1.5" (and the float 1.5) are one class
        return repr(float(text))
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


# === Assembling the splits ==========================================================


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


def _check_test_overlap(splits, log):
    """Count the test documents whose text also occurs in train or validation (after
    cleaning); warn when there are any, refuse at :data:`MAX_TEST_OVERLAP` of the test
    split (``--test`` naming the training data itself, most likely)."""
    test = splits["test"]
    if not len(test):
        return
    seen = fingerprints(list(splits["train"].texts) + list(splits["validation"].texts))
    repeated = int(np.isin(fingerprints(list(test.texts)), seen).sum())
    log.test_in_training = repeated
    if not repeated:
        return
    share = repeated / len(test)
    message = (
        f"{repeated:,} of the {len(test):,} test documents ({share:.1%}) also occur in the "
        "training or validation split (the same text after cleaning)"
    )
    if share >= MAX_TEST_OVERLAP:
        raise ValueError(
            f"Expected a test split of documents the model does not train on. Received: "
            f"{message}. Is --test (test=) the training data itself?"
        )
    log.warn(message + ": the test figures are slightly optimistic")


@dataclasses.dataclass(frozen=True)
class Carving:
    """How :func:`assemble` orders the classes and carves the splits.

    The fields are :func:`hatt.data.load_corpus`'s arguments of these names
    (``test_size`` only matters for a source without a test split of its own).
    """

    classes: tuple | list | None = None
    validation_size: int | float | None = None
    validation_split: str = "blocks"
    test_size: int | float = 0.2
    seed: int = 1337
    limit: int | None = None

    def check(self, labels=None):
        """Raise ``ValueError`` for an option out of range, before anything is read."""
        check_options(
            labels=labels,
            classes=self.classes,
            validation_size=self.validation_size,
            validation_split=self.validation_split,
            limit=self.limit,
        )
        check_size(self.test_size, "test_size")


def assemble(raw, *, log, carving=Carving(), corpus_class=TextCorpus):
    """The corpus of ``raw``: classes ordered, test and validation splits carved, ``limit``.

    The test split is carved out of the documents (``carving.test_size``) when
    the source has none; the validation split out of what remains for training.
    Both are stratified and seeded, and hold every class.
    """
    class_names, train, test = encode_labels(raw, carving.classes)
    seed, limit = carving.seed, carving.limit
    if test is None:
        train, test = _carve_test(train, carving.test_size, seed, class_names)
    train, validation = _carve_validation(
        train, carving.validation_size, carving.validation_split, seed, class_names
    )
    splits = {"train": train, "validation": validation, "test": test}
    if limit is not None:
        splits = {n: _limited(s, limit, seed, n, class_names) for n, s in splits.items()}
    _check_test_overlap(splits, log)
    test_counts = count_classes(splits["test"].labels, len(class_names))
    missing = [name for name, k in zip(class_names, test_counts, strict=True) if not k]
    if missing:
        log.warn(f"the test split holds no documents of the class(es) {missing}")
    log.print_summary()
    return corpus_class(**splits, source=raw.source, class_names=class_names, report=log.as_dict())
