"""Documents and labels given in memory (lists, NumPy, pandas, tf.data), checked and made a corpus.

What :meth:`hatt.TextClassifier.fit` and :class:`hatt.sklearn.HattClassifier`
take from a Python user: the texts as ``str``, each label as the class name the
CLI's readers would give it (:func:`hatt.data.corpus.label_name`), and the
corpus :func:`hatt.data.corpus.assemble` builds from them (the CLI's class order
and seeded, stratified validation split). Bad input is a ``ValueError`` naming
the argument and the index.
"""

import dataclasses
import math
import numbers
import sys
import warnings
from pathlib import Path

import numpy as np

from hatt.data.corpus import (
    Carving,
    RawCorpus,
    Split,
    TextCorpus,
    assemble,
    encode_labels,
    label_name,
)
from hatt.data.readers.read_log import ReadLog, _examples, _repair, kept_text

# the source of a corpus given in memory (fit's x and y), as metrics.json records it
IN_MEMORY_CORPUS = "in-memory documents"


def is_dataset(value):
    return type(value).__module__.startswith("tensorflow") and hasattr(value, "element_spec")


def _as_list(values, argument):
    """A list from a list, tuple, 1-D NumPy array or pandas Series (anything with ``tolist``).

    Raises:
        ValueError: a single string, a table of several columns (a DataFrame: name the
            text column), a mapping or a set (no document order), or something else.
    """
    if isinstance(values, str | bytes):
        raise ValueError(
            f"Expected {argument} to be a list of documents, not a single string. "
            f"Received: {argument}={values[:60]!r}. Wrap it in a list."
        )
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise ValueError(
            f"Expected {argument} to be one-dimensional (one document a row). "
            f"Received: {argument} of shape {values.shape}"
        )
    if hasattr(values, "columns") and hasattr(values, "iloc"):  # a pandas DataFrame
        columns = list(values.columns)
        if len(columns) != 1:
            raise ValueError(
                f"Expected {argument} to be one document a row (a list or a pandas Series). "
                f"Received: a DataFrame with the columns {columns[:10]}; pass its text column, "
                f"e.g. {argument}=df[{str(columns[0]) if columns else 'text'!r}]"
            )
        values = values.iloc[:, 0]
    if isinstance(values, dict | set | frozenset):
        raise ValueError(
            f"Expected {argument} to be a list, a NumPy array or a pandas Series of documents "
            f"(in order). Received: {argument} of type {type(values).__name__}"
        )
    if hasattr(values, "tolist"):
        return values.tolist()
    try:
        return list(values)
    except TypeError:
        raise ValueError(
            f"Expected {argument} to be a list, a NumPy array or a pandas Series. "
            f"Received: {argument} of type {type(values).__name__}"
        ) from None


def _as_text(text, i, argument):
    """Document ``i`` as a ``str`` (``bytes`` decoded as UTF-8), ``None`` when missing."""
    if isinstance(text, bytes):
        return text.decode("utf-8", errors="replace")
    if isinstance(text, str):
        return text
    if _is_missing(text):  # None, NaN, pandas' NA: an empty cell
        return None
    raise ValueError(
        f"Expected {argument} to hold strings. Received: {argument}[{i}]={text!r} "
        f"({type(text).__name__})"
    )


def check_texts(texts, argument="x", allow_empty=False):
    """``texts`` as a list of ``str``, one per document given, for predicting.

    ``bytes`` are decoded as UTF-8; a lone surrogate (not Unicode text) is read as
    U+FFFD, as the readers read an invalid byte; a missing text (``None``, NaN:
    an empty cell) is the empty document (:func:`warn_empty` names them).

    Raises:
        ValueError: a single string, an empty list (unless ``allow_empty``), or an
            item that is not a string (its index and value named).
    """
    texts = _as_list(texts, argument)
    if not texts and not allow_empty:
        raise ValueError(f"Expected {argument} to hold documents. Received: an empty {argument}")
    out = []
    for i, text in enumerate(texts):
        text = _as_text(text, i, argument)
        out.append("" if text is None else _repair(text)[0])
    return out


def warn_empty(texts, argument="x"):
    """A ``UserWarning`` naming the documents of ``texts`` without text, if any.

    Such a document has no words: its probabilities are the model's answer to
    nothing, which a user should not read as a reading of the document.
    """
    empty = [f"{argument}[{i}]" for i, text in enumerate(texts) if not text.strip()]
    if empty:
        warnings.warn(
            f"{len(empty)} document(s) hold no text ({_examples(empty)}): their "
            "probabilities are the model's answer to an empty document, not a reading of it.",
            stacklevel=_outside_hatt(),
        )


def _outside_hatt():
    """The ``stacklevel`` of the first caller outside the hatt package (the user's line),
    for a warning raised here, whichever of hatt's methods led to it."""
    package = str(Path(__file__).resolve().parent.parent)
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def kept_documents(texts, labels, argument="x", label_argument="y", log=None):
    """The documents fit trains on: ``(texts, class names, log)``, empty ones skipped, counted.

    As every corpus reader does (:func:`hatt.data.readers.read_log.kept_text`): a
    missing (``None``, NaN: an empty cell) or blank text is skipped and counted in
    ``log`` by its place (``x[38]``); a lone surrogate is read as U+FFFD and counted
    as repaired. The kept documents' labels must each name a class.

    Raises:
        ValueError: a text that is not a string, or a kept document's missing label.
    """
    log = ReadLog() if log is None else log
    kept_texts, names = [], []
    for i, (text, label) in enumerate(zip(texts, labels, strict=True)):
        text = kept_text(_as_text(text, i, argument) or "", f"{argument}[{i}]", log)
        if text is not None:
            kept_texts.append(text)
            names.append(_label(label, i, label_argument))
    return kept_texts, names, log


def _is_missing(value):
    if value is None:
        return True
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        return math.isnan(float(value))
    return value.__class__.__name__ in ("NAType", "NaTType")  # pandas' missing values


def _label(value, i, argument):
    name = "" if _is_missing(value) else label_name(value)
    if not name:
        raise ValueError(
            f"Expected {argument} to hold a class name or number for every document. "
            f"Received: {argument}[{i}]={value!r}"
        )
    return name


def label_names(labels, argument="y"):
    """The class name of each label (:func:`hatt.data.corpus.label_name`, as the CLI reads them).

    ``3``, ``3.0`` and ``"3"`` are class ``"3"``.

    Raises:
        ValueError: a missing label (``None``, NaN) or an empty one, named by index.
    """
    return [_label(value, i, argument) for i, value in enumerate(_as_list(labels, argument))]


INFINITE_CARDINALITY = -1  # tf.data.INFINITE_CARDINALITY: a dataset that never ends


def _from_dataset(dataset, argument):
    """``(texts, labels)`` of a ``tf.data.Dataset`` of ``(text, label)``, batched or not.

    Raises:
        ValueError: the dataset is infinite (``.repeat()``: read to the end, it would
            never end), or yields something other than pairs.
    """
    if int(dataset.cardinality()) == INFINITE_CARDINALITY:
        raise ValueError(
            f"Expected {argument} to be a finite dataset: its documents are read once, to the "
            f"end. Received an infinite one (.repeat() without a count?); pass "
            f"{argument}.take(N), or the dataset before .repeat() (epochs are the setting's)."
        )
    texts, labels = [], []
    for element in dataset.as_numpy_iterator():
        if not isinstance(element, tuple) or len(element) != 2:
            raise ValueError(
                f"Expected {argument} to yield (text, label) pairs. Received an element of "
                f"{type(element).__name__}: {element!r}"[:300]
            )
        text, label = element
        if np.ndim(text) == 0:
            texts.append(text)
            labels.append(label.item() if hasattr(label, "item") else label)
        else:
            texts.extend(np.asarray(text).reshape(-1).tolist())
            labels.extend(np.asarray(label).reshape(-1).tolist())
    labels = [v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v for v in labels]
    return texts, labels


def check_documents(x, y, argument="x", label_argument="y", log=None):
    """Checked ``(texts, class names)`` of ``fit``'s ``x`` and ``y`` (or a dataset ``x``).

    Documents with a missing or blank text are skipped and counted, as the corpus
    readers skip them (:func:`kept_documents`): into ``log`` (a
    :class:`hatt.data.readers.read_log.ReadLog` whose corpus prints and keeps its
    summary: :func:`in_memory_corpus`), or, without one, printed on standard error.

    Raises:
        ValueError: bad documents or labels, lengths that differ, or no document left.
    """
    if is_dataset(x):
        if y is not None:
            raise ValueError(
                f"Expected {label_argument}=None with a tf.data.Dataset {argument} (it yields "
                f"(text, label) pairs). Received: {label_argument} of type {type(y).__name__}"
            )
        x, y = _from_dataset(x, argument)
    elif y is None:
        raise ValueError(f"Expected labels {label_argument} for the documents {argument}.")
    texts, labels = _as_list(x, argument), _as_list(y, label_argument)
    if not texts:
        raise ValueError(f"Expected {argument} to hold documents. Received: an empty {argument}")
    if len(texts) != len(labels):
        raise ValueError(
            f"Expected one label per document. Received: {len(texts)} documents in {argument} "
            f"and {len(labels)} labels in {label_argument}"
        )
    own = log is None
    texts, names, log = kept_documents(texts, labels, argument, label_argument, log)
    if own:
        log.print_summary()
    if not texts:
        raise ValueError(
            f"Expected {argument} to hold documents with text. Received: {len(labels)} "
            "document(s), every one empty or missing"
        )
    return texts, names


def _split(texts, names, name):
    ids = [f"{name}/{i}" for i in range(len(texts))]
    return Split(list(texts), np.asarray(names, dtype=object), ids)


class _InMemoryLog(ReadLog):
    """:func:`assemble`'s log for documents given in memory.

    They come without a test split by design (fit keeps none), so assemble's
    warning that the (empty) test split lacks classes is dropped.
    """

    def warn(self, message):
        if not message.startswith("the test split holds no documents"):
            super().warn(message)


def in_memory_log():
    """The log of documents given in memory (:func:`check_documents`, :func:`in_memory_corpus`)."""
    return _InMemoryLog()


def in_memory_corpus(texts, names, config, validation=None, log=None):
    """The :class:`hatt.data.TextCorpus` fit trains on; its test split is the validation split.

    Args:
        texts, names: the training documents and their class names.
        config: the :class:`hatt.training.TrainConfig` (``classes``,
            ``validation_size``, ``validation_split``, ``seed``, ``limit``).
        validation: ``(texts, names)`` of the validation split, or ``None`` to
            carve it out of the documents (:func:`hatt.data.corpus.assemble`).
        log: what checking the documents skipped (:func:`in_memory_log`): printed
            once and kept as the corpus's ``report`` (``metrics.json``'s ``read``).
    """
    log = in_memory_log() if log is None else log
    if validation is None:
        empty = Split([], np.asarray([], dtype=object), [])
        carving = Carving(
            config.classes,
            config.validation_size,
            config.validation_split,
            seed=config.seed,
            limit=config.limit,
        )
        raw = RawCorpus(_split(texts, names, "train"), empty, IN_MEMORY_CORPUS)
        corpus = assemble(raw, log=log, carving=carving)
        return dataclasses.replace(corpus, test=corpus.validation)
    unknown = sorted(set(validation[1]) - set(names))
    if unknown:
        raise ValueError(
            "Expected every label of validation_data to occur in the training labels. "
            f"Received labels only in validation_data: {unknown}"
        )
    raw = RawCorpus(
        _split(texts, names, "train"), _split(*validation, "validation"), IN_MEMORY_CORPUS
    )
    class_names, train, validation_split = encode_labels(raw, config.classes)
    log.print_summary()
    return TextCorpus(
        train,
        validation_split,
        validation_split,
        IN_MEMORY_CORPUS,
        class_names,
        report=log.as_dict(),
    )
