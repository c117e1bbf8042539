"""reader_for: the one place a source's format is told (labelled data, unlabeled data and
`hatt predict --file` all ask it)."""

import gzip
import json
import tarfile
import zipfile

import pytest

from hatt.data.readers.load import FORMATS, ReadOptions, reader_for
from hatt.data.readers.read_log import ReadLog


def _csv(path, rows):
    path.write_text("text,label\n" + "".join(f"{t},{c}\n" for t, c in rows))
    return path


ROWS = [(f"good film {i}", "pos") for i in range(6)] + [(f"bad film {i}", "neg") for i in range(6)]


def test_none_and_tfds_imdb_reviews_are_imdb():
    assert reader_for(None).format == "imdb"
    assert reader_for("tfds:imdb_reviews").format == "imdb"
    assert reader_for(None).path is None and not reader_for(None).on_disk


def test_tfds_names_are_tensorflow_datasets():
    reader = reader_for("tfds:ag_news_subset")
    assert (reader.format, reader.path) == ("tfds", None)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.csv", "csv"),
        ("a.CSV", "csv"),
        ("a.tsv", "tsv"),
        ("a.jsonl", "jsonl"),
        ("a.ndjson", "jsonl"),
        ("a.csv.gz", "csv"),
        ("a.jsonl.gz", "jsonl"),
    ],
)
def test_tables_by_name(tmp_path, name, kind):
    reader = reader_for(tmp_path / name)  # a table by its name, there or not
    assert (reader.format, reader.kind) == ("table", kind)


def test_a_folder_is_a_folder_whatever_its_name(tmp_path):
    (tmp_path / "corpus.csv").mkdir()
    assert reader_for(tmp_path / "corpus.csv").format == "folder"
    assert reader_for(str(tmp_path)).format == "folder"


def test_archives_by_name_and_by_content(tmp_path):
    for name in ("a.tar.gz", "a.tgz", "a.zip", "a.tar"):
        assert reader_for(tmp_path / name).format == "archive"
    unnamed = tmp_path / "download"
    with zipfile.ZipFile(unnamed, "w") as archive:
        archive.writestr("x/a.txt", "hello")
    assert reader_for(unnamed).format == "archive"


def test_standard_input_and_other_files_are_one_document_a_line(tmp_path):
    text = tmp_path / "reviews.txt"
    text.write_text("one\ntwo\n")
    assert reader_for("-").format == "lines"
    assert reader_for(text).format == "lines"
    assert reader_for(tmp_path / "notes").format == "lines"  # no such file: its reader says so
    assert list(reader_for(text).documents()) == [
        ("reviews.txt line 1", b"one"),
        ("reviews.txt line 2", b"two"),
    ]


def test_format_names_the_table_kind_or_lines_whatever_the_file_name(tmp_path):
    assert reader_for(tmp_path / "reviews.txt", format="tsv").kind == "tsv"
    assert reader_for(tmp_path / "reviews.csv", format="lines").format == "lines"
    assert reader_for("-", format="csv").kind == "csv"


def test_an_unknown_format_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"Expected format to be None or one of .*format='xml'"):
        reader_for(tmp_path / "reviews.xml", format="xml")


def test_every_reader_format_is_listed(tmp_path):
    (tmp_path / "d").mkdir()
    sources = [None, "tfds:x", tmp_path / "d", tmp_path / "a.csv", tmp_path / "a.zip", "-"]
    assert tuple(reader_for(s).format for s in sources) == FORMATS


def test_a_table_reads_as_a_labelled_corpus_and_as_unlabeled_documents(tmp_path):
    table = _csv(tmp_path / "reviews.csv", ROWS)
    reader = reader_for(table)
    raw, corpus_class = reader.corpus(ReadOptions(progress=False), ReadLog())
    assert corpus_class.__name__ == "TextCorpus"
    assert list(raw.train.texts) == [t for t, _ in ROWS] and set(raw.train.labels) == {"pos", "neg"}
    assert raw.test is None and raw.source == str(table)
    documents = list(reader.documents())
    assert documents[0] == ("reviews.csv line 2", "good film 0") and len(documents) == 12


def test_a_gzipped_jsonl_table_reads_its_text_column(tmp_path):
    path = tmp_path / "reviews.jsonl.gz"
    lines = [json.dumps({"body": t, "stars": c}) for t, c in ROWS]
    path.write_bytes(gzip.compress("\n".join(lines).encode()))
    assert [t for _, t in reader_for(path).documents("body")][:2] == ["good film 0", "good film 1"]


def test_a_folder_reads_its_class_folders_or_every_text_file(tmp_path):
    for i, (text, name) in enumerate(ROWS):
        (tmp_path / "news" / name).mkdir(parents=True, exist_ok=True)
        (tmp_path / "news" / name / f"{i}.txt").write_text(text)
    reader = reader_for(tmp_path / "news")
    raw, _ = reader.corpus(ReadOptions(progress=False), ReadLog())
    assert sorted(set(raw.train.labels)) == ["neg", "pos"] and len(raw.train) == 12
    assert len(list(reader.documents())) == 12


def test_an_archive_reads_as_its_folder_and_streams_its_text_members(tmp_path, monkeypatch):
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    for i, (text, name) in enumerate(ROWS):
        (tmp_path / "news" / name).mkdir(parents=True, exist_ok=True)
        (tmp_path / "news" / name / f"{i}.txt").write_text(text)
    archive = tmp_path / "news.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(tmp_path / "news", arcname="news")
    reader = reader_for(archive)
    raw, _ = reader.corpus(ReadOptions(progress=False), ReadLog())
    assert len(raw.train) == 12 and raw.source.endswith("news")
    assert sorted(name for name, _ in reader.documents())[0].startswith("news/")


def test_what_a_format_cannot_give_is_a_clear_error(tmp_path):
    text = tmp_path / "reviews.txt"
    text.write_text("one\n")
    with pytest.raises(ValueError, match="Expected the data to be a folder, a .csv"):
        reader_for(text).corpus(ReadOptions(progress=False), ReadLog())
    with pytest.raises(ValueError, match="Expected text_column only with a table"):
        reader_for(text).documents("body")
    with pytest.raises(ValueError, match="Expected unlabeled to name a folder"):
        reader_for("tfds:ag_news_subset").documents()
    with pytest.raises(ValueError, match="Expected labels=None for a corpus other than IMDB"):
        reader_for(_csv(tmp_path / "a.csv", ROWS)).corpus(
            ReadOptions(labels="binary", progress=False), ReadLog()
        )


@pytest.mark.parametrize("name", ["reviews.csv.gz", "reviews.jsonl.gz", "reviews.tar.gz"])
def test_a_truncated_gzip_file_is_named_truncated_or_damaged(tmp_path, monkeypatch, name):
    """Issue 63: a truncated .csv.gz was said "Expected ... to be gzip-compressed"."""
    from hatt.data import load_corpus

    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    if name.endswith(".tar.gz"):
        folder = tmp_path / "corpus"
        for text, label in ROWS * 5:
            (folder / label).mkdir(parents=True, exist_ok=True)
            (folder / label / f"{len(list((folder / label).iterdir()))}.txt").write_text(text)
        with tarfile.open(tmp_path / "whole", "w:gz") as archive:
            archive.add(folder, arcname="corpus")
        whole = (tmp_path / "whole").read_bytes()
    elif name.endswith(".csv.gz"):
        whole = gzip.compress(_csv(tmp_path / "t.csv", ROWS * 5).read_bytes())
    else:
        lines = "".join(json.dumps({"text": t, "label": c}) + "\n" for t, c in ROWS * 5)
        whole = gzip.compress(lines.encode())
    (tmp_path / name).write_bytes(whole[: len(whole) * 2 // 3])
    with pytest.raises((ValueError, OSError)) as caught:  # an archive's: DataNotFoundError
        load_corpus(str(tmp_path / name), progress=False)
    assert f"'{tmp_path / name}' is a truncated or damaged gzip file" in str(caught.value)
    (tmp_path / "plain.csv.gz").write_text("text,label\n")
    with pytest.raises(ValueError, match="Expected '.*plain.csv.gz' to be gzip-compressed"):
        load_corpus(str(tmp_path / "plain.csv.gz"), progress=False)
