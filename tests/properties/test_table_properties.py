"""Random tables reach the public loader: a corpus or a clear error, never another exception.

Issue 33's property tests: CSV / TSV / JSON-lines tables with random headers
(the text and label columns missing, present or named twice), random cell
types (words, numbers, empty, quotes, delimiters, newlines, control
characters), random quoting and random encodings (UTF-8, UTF-8 with a BOM,
UTF-16, Latin-1, gzip) go through :func:`hatt.data.load_corpus`, which reads
them with :mod:`hatt.data.readers.table`. The answer is a ``ValueError`` (hatt's
own ``NotTextError`` among them) or a ``DataNotFoundError`` with a message, or a
corpus whose splits hold strings and known labels.
"""

import csv
import gzip
import io
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hatt.data import DataNotFoundError, load_corpus

words = st.sampled_from(
    ["good", "bad", "film", "ok", "x", "", " ", "a,b", "a\tb", '"q"', "\n", "é"]
)
cells = st.one_of(
    st.lists(words, min_size=0, max_size=4).map(" ".join),
    st.integers(-5, 5).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.text(max_size=6),
)
headers = st.lists(
    st.sampled_from(["text", "label", "id", "TEXT", " text", ""]), min_size=1, max_size=4
)
json_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False),
    cells,
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.sampled_from(["a"]), st.integers(0, 1), max_size=1),
)
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "latin-1"]


def _delimited(header, rows, delimiter, quoting):
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, quoting=quoting, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(row)
    return out.getvalue()


@st.composite
def tables(draw):
    kind = draw(st.sampled_from(["csv", "tsv", "jsonl"]))
    header = draw(headers)
    n = draw(st.integers(0, 12))
    if kind == "jsonl":
        lines = []
        for _ in range(n):
            obj = {key: draw(json_values) for key in header}
            lines.append(json.dumps(obj) if draw(st.integers(0, 9)) else draw(st.text(max_size=5)))
        text = "\n".join(lines)
    else:
        width = draw(st.integers(max(1, len(header) - 1), len(header) + 1))
        rows = [[draw(cells) for _ in range(width)] for _ in range(n)]
        quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC]))
        try:
            text = _delimited(header, rows, "," if kind == "csv" else "\t", quoting)
        except (csv.Error, ValueError):
            text = "\n".join(",".join(r) for r in [header, *rows])
        if draw(st.booleans()):  # a hand-edited file: a stray quote somewhere
            at = draw(st.integers(0, len(text)))
            text = text[:at] + '"' + text[at:]
    data = text.encode(draw(st.sampled_from(ENCODINGS)), errors="replace")
    gz = draw(st.booleans())
    return kind, (gzip.compress(data) if gz else data), gz


@settings(max_examples=80)
@given(
    table=tables(), columns=st.sampled_from([("text", "label"), ("text", "text"), ("id", "label")])
)
def test_random_tables_give_a_corpus_or_a_clear_error(tmp_path_factory, table, columns):
    kind, data, gz = table
    path = tmp_path_factory.mktemp("table") / (f"reviews.{kind}" + (".gz" if gz else ""))
    path.write_bytes(data)
    text_column, label_column = columns
    try:
        corpus = load_corpus(
            str(path),
            text_column=text_column,
            label_column=label_column,
            validation_size=1,
            test_size=0.34,
            progress=False,
        )
    except (ValueError, DataNotFoundError) as error:
        assert str(error)
    else:
        names = list(corpus.class_names)
        assert len(names) >= 2
        for split in (corpus.train, corpus.validation, corpus.test):
            assert len(split.texts) == len(split.labels)
            assert all(isinstance(t, str) for t in split.texts)
            assert all(0 <= int(label) < len(names) for label in split.labels)
