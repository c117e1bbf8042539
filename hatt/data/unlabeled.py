"""Unlabeled documents to learn from: a folder, a table, a text file or an archive.

:func:`read_unlabeled` reads the documents of one source, streaming (an archive is
read member by member, a text file line by line), skips and counts empty and
non-text documents, and drops every document equal to a validation or test text
after the tokenizer's cleaning (:func:`hatt.data.text.fingerprints`): a test
review must never reach training, not even without its label.

    >>> texts, report = read_unlabeled("aclImdb_v1_unsup.tar.gz", exclude=test_texts)
    >>> report["excluded"]  # unlabeled texts equal to a test review
    266

Sources, by what ``path`` is (:func:`hatt.data.readers.load.reader_for` tells them
apart, as it does for labelled data and ``hatt predict --file``):

- a folder: every ``.txt`` file under it (recursively, hidden ones skipped);
- a ``.csv`` / ``.tsv`` / ``.jsonl`` table (optionally ``.gz``): the
  ``text_column`` of each row (default ``"text"``), read by the labeled tables'
  reader;
- any other text file: one document a line;
- an archive (``.tar.gz``, ``.zip``, ...): its ``.txt`` members, streamed; for
  IMDB's ``aclImdb_v1_unsup.tar.gz`` (or the labeled archive) only the members
  under ``aclImdb/train/unsup/``.
"""

import os
import time
from pathlib import Path

from hatt.data.imdb import ENV_VAR
from hatt.data.readers.files import NotTextError, decode_text
from hatt.data.readers.folder import TEXT_SUFFIX, files_left_out
from hatt.data.readers.load import reader_for
from hatt.data.readers.read_log import NOT_TEXT, ReadLog, _repair
from hatt.data.readers.tfds import TFDS_PREFIX
from hatt.data.text import fingerprints

CHUNK = 2000  # documents fingerprinted at once


# config.unlabeled when the unlabeled documents were given as a list of str (fit(unlabeled=...))
IN_MEMORY_UNLABELED = "(in memory)"
IMDB_UNLABELED = "imdb:unsup"  # IMDB's own unlabeled split, found beside the labeled data
UNSUP_ARCHIVE = "aclImdb_v1_unsup.tar.gz"


def find_imdb_unsup(imdb_source=None):
    """The path of IMDB's 50,000 unlabeled reviews beside the labeled data.

    Looked for, in order: ``train/unsup/`` inside the aclImdb folder (the original
    release has it), ``aclImdb_v1_unsup.tar.gz`` beside the folder or the labeled
    ``.tar.gz``, and the full release ``aclImdb_v1.tar.gz`` itself (its
    ``aclImdb/train/unsup/`` members).

    Args:
        imdb_source: the labeled IMDB's folder or ``.tar.gz`` (``None``:
            ``$HATT_IMDB``).

    Raises:
        ValueError: no unlabeled split was found (the message lists where it looked).
    """
    source = imdb_source or os.environ.get(ENV_VAR)
    if not source or str(source).startswith(TFDS_PREFIX):
        raise ValueError(
            f"Expected the labeled IMDB as a local folder or .tar.gz (--data or ${ENV_VAR}) to "
            f"find unlabeled={IMDB_UNLABELED!r} beside it. Received: data={source!r}; give "
            f"--unlabeled /path/to/{UNSUP_ARCHIVE} instead"
        )
    source = Path(source).expanduser()
    root = source if source.is_dir() else source.parent
    candidates = [
        root / "train" / "unsup",
        root / "aclImdb" / "train" / "unsup",
        root / UNSUP_ARCHIVE,
        root.parent / UNSUP_ARCHIVE,
    ]
    if source.name == "aclImdb_v1.tar.gz":
        candidates.append(source)
    for candidate in candidates:
        if candidate.exists():
            return candidate
    raise ValueError(
        f"Expected IMDB's unlabeled reviews beside {str(source)!r}. Received: none of "
        + ", ".join(repr(str(c)) for c in candidates)
        + f" exists; give --unlabeled /path/to/{UNSUP_ARCHIVE}"
    )


def _listed_documents(texts):
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(
                f"Expected unlabeled documents to be strings. Received: item {i} of type "
                f"{type(text).__name__} ({text!r:.60})"
            )
        yield f"unlabeled document {i}", text


def _documents(path, text_column=None):
    """``(place, bytes or str)`` of each document of ``path`` (or of a list of str),
    one at a time: read by the reader of its format (:func:`hatt.data.readers.load.reader_for`)."""
    if isinstance(path, list | tuple):
        return _listed_documents(path)
    if not Path(path).expanduser().exists():
        raise ValueError(
            f"Expected unlabeled to name a folder, a table, a text file or an archive. "
            f"Received: unlabeled={str(Path(path).expanduser())!r} (no such file or folder)."
        )
    return reader_for(path).documents(text_column)


# === Reading: decode, skip empty, drop validation / test texts =========================


def _decoded(place, data, log):
    """The document's text, or ``None`` (not text: skipped and counted)."""
    if isinstance(data, str):
        text, replaced = _repair(data)
    else:
        try:
            text, replaced = decode_text(data, repr(place))
        except NotTextError:
            log.skip(NOT_TEXT, place)
            return None
    if replaced:
        log.repair(place)
    return text


class _Counts:
    def __init__(self, limit, max_chars):
        self.read = self.empty = self.excluded = self.repeated = self.chars = 0
        self.seen = set()
        self.limit, self.max_chars = limit, max_chars
        self.stopped = None  # "limit" or "max_chars": the rest of the source was not read

    def full(self, kept):
        """Whether ``kept`` holds all it may (and why, in ``stopped``)."""
        if self.limit is not None and len(kept) >= self.limit:
            self.stopped = "limit"
        elif self.max_chars is not None and self.chars >= self.max_chars:
            self.stopped = "max_chars"
        return self.stopped is not None


def _keep_chunk(chunk, excluded, counts, kept):
    """Append the texts of ``chunk`` that match no excluded fingerprint to ``kept``."""
    for text, fingerprint in zip(chunk, fingerprints(chunk), strict=True):
        if counts.full(kept):
            return
        if int(fingerprint) in excluded:
            counts.excluded += 1
            continue
        counts.repeated += int(fingerprint) in counts.seen
        counts.seen.add(int(fingerprint))
        counts.chars += len(text)
        kept.append(text)


def _check_result(path, counts, kept, log):
    if kept:
        return
    if counts.excluded:
        raise ValueError(
            f"Expected unlabeled documents other than the validation and test texts. Received: "
            f"all {counts.excluded} documents of unlabeled={str(path)!r} equal one of them; "
            "training on them would be training on the test set."
        )
    raise ValueError(
        f"Expected documents in unlabeled={str(path)!r}. Received: {counts.read} read, "
        f"{counts.empty} empty, {sum(len(p) for p in log.skipped.values())} not text"
        + _what_is_read(path)
    )


def _what_is_read(path):
    """Which files of a folder or an archive are read, and (a folder) what was left out."""
    if isinstance(path, list | tuple):
        return "."
    source = Path(path).expanduser()
    if source.is_dir():
        left_out = files_left_out(source)
        said = ", ".join(f"{n} {suffix or '(no extension)'}" for suffix, n in left_out.items())
        skipped = f": {sum(left_out.values())} other files left out by extension ({said})"
        return (
            f". A folder's documents are its {TEXT_SUFFIX} files (hidden ones left out)"
            + (skipped if left_out else "")
            + f"; rename text files to {TEXT_SUFFIX}, or give a table or a text file of one "
            "document a line."
        )
    if reader_for(source).format == "archive":
        return f". An archive's documents are its {TEXT_SUFFIX} members (hidden ones left out)."
    return "."


def read_unlabeled(path, *, text_column=None, exclude=(), limit=None, max_chars=None):
    """The unlabeled documents of ``path`` and what reading them skipped.

    Args:
        path: a folder of ``.txt`` files, a ``.csv`` / ``.tsv`` / ``.jsonl`` table,
            a text file of one document a line, or an archive (see the module);
            or a list of ``str``, the documents themselves.
        text_column: the table's text column (default ``"text"``); tables only.
        exclude: texts that must not be returned: the validation and test texts.
            A document equal to one of them after :func:`hatt.data.text.clean`
            (case, HTML and spacing aside) is dropped and counted.
        limit: keep at most this many documents (``None``: all).
        max_chars: stop once the kept documents hold this many characters
            (``None``: no bound): a source far larger than memory is read as a
            stream up to it, and the report says where it stopped.

    Returns:
        ``(texts, report)``: a list of str, and a dict ``read``, ``empty``,
        ``not_text``, ``invalid_utf8``, ``excluded`` (equal to a validation / test
        text), ``repeated`` (kept texts equal to an earlier kept one), ``kept``,
        ``chars`` (kept), ``stopped`` (``None``, or ``"limit"`` / ``"max_chars"``:
        the rest of the source was not read), ``seconds``.

    Raises:
        ValueError: ``path`` does not exist, holds no document, or only
            documents equal to excluded texts; ``limit`` is not positive.
    """
    for name, value in (("limit", limit), ("max_chars", max_chars)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(
                f"Expected {name} to be a positive integer or None. Received: {value!r}"
            )
    start = time.perf_counter()
    name = IN_MEMORY_UNLABELED if isinstance(path, list | tuple) else str(path)
    source = _documents(path, text_column)
    excluded = {int(f) for f in fingerprints(list(exclude))} if len(exclude) else set()
    log, counts, kept, chunk = ReadLog(), _Counts(limit, max_chars), [], []
    for place, data in source:
        if counts.full(kept):
            break
        counts.read += 1
        text = _decoded(place, data, log)
        if text is None:
            continue
        if not text.strip():
            counts.empty += 1
            continue
        chunk.append(text)
        if len(chunk) >= CHUNK:
            _keep_chunk(chunk, excluded, counts, kept)
            chunk = []
    if chunk:
        _keep_chunk(chunk, excluded, counts, kept)
    _check_result(name, counts, kept, log)
    report = {
        "source": name,
        "read": counts.read,
        "empty": counts.empty,
        "not_text": len(log.skipped.get(NOT_TEXT, [])),
        "invalid_utf8": len(log.repaired),
        "excluded": counts.excluded,
        "repeated": counts.repeated,
        "kept": len(kept),
        "chars": counts.chars,
        "stopped": counts.stopped,
        "seconds": round(time.perf_counter() - start, 2),
    }
    return kept, report


STOPPED = {
    "limit": "the rest of the source was not read: unlabeled_limit",
    "max_chars": "the rest of the source was not read: the memory budget for unlabeled text "
    "(a quarter of the machine's memory; --set unlabeled_limit=N keeps fewer)",
}


def summary(report):
    """One line for the user: what was read, skipped and excluded (and where reading stopped)."""
    stopped = report.get("stopped")
    return (
        f"Unlabeled: {report['kept']} documents kept of {report['read']} read from "
        f"{report['source']} ({report['empty']} empty, {report['not_text']} not text, "
        f"{report['excluded']} equal to a validation/test text and removed, "
        f"{report['invalid_utf8']} with invalid UTF-8 replaced) in {report['seconds']} s"
        + (f"; {STOPPED[stopped]}" if stopped else "")
    )
