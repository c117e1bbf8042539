"""Tables: ``.csv``, ``.tsv`` and ``.jsonl`` (optionally ``.gz``) with a text and a label column."""

import contextlib
import csv
import gzip
import io
import json
import math
import zlib
from pathlib import Path

import numpy as np

from hatt.data.corpus import Split, label_name
from hatt.data.readers.files import damaged_compressed_file, decode_text
from hatt.data.readers.read_log import EMPTY_LABEL, SHORT_ROW, ReadLog, _repair, kept_text

TABLE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


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
            raise ValueError(damaged_compressed_file(path, error)) from None
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


def _check_unique_columns(columns, used, name):
    """A column the corpus reads must be named once in the header (else: which one?)."""
    for wanted in dict.fromkeys(used):
        places = [i + 1 for i, c in enumerate(columns) if c == wanted]
        if len(places) > 1:
            raise ValueError(
                f"Expected the column {wanted!r} to appear once in the header of {name!r}. "
                f"Received: it names columns {places}; rename the others."
            )


def _csv_records(text, delimiter, text_column, label_column, name, log, label_argument):
    """``(line, text, label)`` of each record of a CSV / TSV table with a header row
    (``label_argument``: what the label column is called in an error)."""
    rows = _csv_rows(text, delimiter, name)
    rows = [(line, fields) for line, fields in rows if fields]  # blank lines hold nothing
    if not rows:
        raise ValueError(f"Expected a header row in {name!r}. Received: an empty table.")
    columns = [_repair(c.strip())[0] for c in rows[0][1]]
    _check_unique_columns(columns, (c for c in (text_column, label_column) if c), name)
    text_index = _column(columns, text_column, "text_column", name)
    label_index = None  # an unlabelled table (hatt predict): the text column only
    if label_column is not None:
        label_index = _column(columns, label_column, label_argument, name)
    needed = max(text_index, -1 if label_index is None else label_index)
    records = []
    for line, fields in rows[1:]:
        if len(fields) > len(columns) and any(f.strip() for f in fields[len(columns) :]):
            raise ValueError(
                f"Expected at most {len(columns)} fields a row in {name!r} (its header's). "
                f"Received: {len(fields)} fields on line {line}; quote a field that holds "
                "the delimiter."
            )
        if len(fields) <= needed:
            log.skip(SHORT_ROW, f"{name} line {line}")
            continue
        label = None if label_index is None else fields[label_index]
        records.append((line, fields[text_index], label))
    return records


def _jsonl_records(text, text_column, label_column, name, label_argument):
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
        text_value = record.get(text_column)
        label_value = None if label_column is None else record.get(label_column)
        _check_json_types(text_value, label_value, text_column, label_column, name, line)
        records.append((line, text_value, label_value))
    columns = sorted(keys)
    for wanted, argument in ((text_column, "text_column"), (label_column, label_argument)):
        if records and wanted is not None and wanted not in keys:
            raise ValueError(
                f"Expected {argument}={wanted!r} to name a key of the objects in {name!r}. "
                f"Received keys: {columns}"
            )
    return records


def _check_json_types(text, label, text_column, label_column, name, line):
    """A JSON-lines record's text must be a string (or null: an empty text, skipped and
    counted), its label a string, a finite number or a boolean (or null: an empty
    label); anything else is refused with its line instead of becoming its repr."""
    if text is not None and not isinstance(text, str):
        raise ValueError(
            f"Expected the {text_column!r} field of {name!r} to be a string. Received on "
            f"line {line}: {_json_kind(text)} ({json.dumps(text)[:60]})"
        )
    finite = not isinstance(label, float) or math.isfinite(label)
    if label is not None and (not isinstance(label, str | int | float) or not finite):
        raise ValueError(
            f"Expected the {label_column!r} field of {name!r} to be a string or a number. "
            f"Received on line {line}: {_json_kind(label)} ({json.dumps(label)[:60]})"
        )


def _json_kind(value):
    if isinstance(value, float) and not math.isfinite(value):
        return "a non-finite number"
    kinds = {list: "array", dict: "object", bool: "boolean", int: "number", float: "number"}
    return "a JSON " + kinds.get(type(value), type(value).__name__)


def _text_value(value):
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _records_split(records, prefix, name, log, labelled=True, named=False):
    """A :class:`Split` of ``(line, text, label)`` records; empty texts or labels skipped.

    ``labelled=False`` (a table read for prediction): labels are ``None``; with
    ``named``, the records' third field is their id (``id_column``), as text.
    """
    texts, labels, ids = [], [], []
    spellings = {}  # class name -> the label values read as it
    for line, text, label in records:
        where, text = f"{name} line {line}", _text_value(text)
        if labelled:
            written, label = label, _repair(label_name(label))[0]
            spellings.setdefault(label, set()).add(str(written).strip())
            if not label and text.strip():  # an empty text is counted as such first
                log.skip(EMPTY_LABEL, where)
                continue
        text = kept_text(text, where, log)
        if text is None:
            continue
        texts.append(text)
        labels.append(label if labelled else None)
        ids.append(_text_value(label) if named else f"{prefix}/line{line}")
    if not texts:
        wanted = "a text and a label" if labelled else "a text"
        raise ValueError(f"Expected documents in {name!r}. Received: none with {wanted}.")
    for label, written in sorted(spellings.items()):
        if label and len(written) > 1:
            shown = ", ".join(repr(w) for w in sorted(written)[:5])
            log.warn(f"{name}: the labels {shown} are the same number, read as class {label!r}")
    return Split(texts, np.array(labels, dtype=object), ids)


def _records(path, kind, text_column, label_column, log, label_argument="label_column"):
    """``(line, text, label)`` of each record of the table ``path`` (``kind``: its format;
    ``label_argument``: what the label column is called in an error)."""
    kind, text, name = kind or table_format(path), _table_text(path), path.name
    if kind == "jsonl":
        return _jsonl_records(text, text_column, label_column, name, label_argument)
    delimiter = "\t" if kind == "tsv" else ","
    return _csv_records(text, delimiter, text_column, label_column, name, log, label_argument)


def read_table(
    path,
    *,
    text_column="text",
    label_column="label",
    prefix="train",
    log,
    kind=None,
    id_column=None,
):
    """The documents of a ``.csv`` / ``.tsv`` / ``.jsonl`` table (optionally ``.gz``).

    Ids are ``prefix`` and the line the record starts on (``"train/line17"``;
    line 1 is a CSV's header). ``label_column=None`` reads the texts only (labels
    ``None``: documents to predict); then ``id_column`` names a column whose values
    are the ids instead, as written (a number as its text, an empty field ``""``):
    ``hatt predict --id-column``. ``kind`` (``"csv"``, ``"tsv"``, ``"jsonl"``)
    overrides the format the file name gives.
    """
    path = Path(path)
    if text_column == label_column:
        raise ValueError(
            "Expected text_column and label_column (--text-column, --label-column) to name "
            f"different columns: a model would read its answer. Received: both {text_column!r}"
        )
    if id_column is not None and label_column is not None:
        raise ValueError(
            "Expected id_column only for a table read without labels (label_column=None). "
            f"Received: id_column={id_column!r}, label_column={label_column!r}"
        )
    if id_column is not None:  # the ids ride in the label's place
        records = _records(path, kind, text_column, id_column, log, "id_column")
        return _records_split(records, prefix, path.name, log, labelled=False, named=True)
    records = _records(path, kind, text_column, label_column, log)
    return _records_split(records, prefix, path.name, log, labelled=label_column is not None)


def table_column(path, text_column="text", kind=None):
    """``(place, text)`` of each record of a table's ``text_column``, as written (empty ones too).

    The unlabelled documents of a table (:func:`hatt.data.unlabeled.read_unlabeled`):
    a record without the column gives ``""``, which the caller counts as empty.
    """
    path = Path(path)
    # no label column: the text column twice (every record, the empty ones too)
    for line, value, _ in _records(path, kind, text_column, text_column, ReadLog()):
        yield f"{path.name} line {line}", "" if value is None else str(value)
