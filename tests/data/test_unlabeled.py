"""read_unlabeled: folders, tables, text files and archives; empty, non-text and test texts."""

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from hatt.data.unlabeled import read_unlabeled, summary

TEST_TEXTS = ["A <b>great</b> film, truly.", "Dull and long."]


def _tar(path, members):
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_folder_recursive_skips_empty_and_test_text(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "one.txt").write_text("I liked it.")
    (tmp_path / "a" / "two.txt").write_text("a   GREAT film,  truly.")  # equals a test text
    (tmp_path / "a" / "b" / "three.txt").write_bytes(b"Caf\xe9 scene was fun.")  # bad UTF-8
    (tmp_path / "a" / "empty.txt").write_text("  \n")
    (tmp_path / ".hidden.txt").write_text("secret")
    (tmp_path / "notes.md").write_text("not a document")
    texts, report = read_unlabeled(tmp_path, exclude=TEST_TEXTS)
    assert sorted(texts) == sorted(["I liked it.", "Caf\ufffd scene was fun."])
    assert report["read"] == 4
    assert (report["empty"], report["excluded"], report["invalid_utf8"]) == (1, 1, 1)
    assert report["kept"] == 2
    assert "1 equal to a validation/test text" in summary(report)


def test_text_file_one_document_a_line_with_limit(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("first doc\n\nsecond doc\r\nDull and long.\nthird doc\n")
    texts, report = read_unlabeled(path, exclude=TEST_TEXTS)
    assert texts == ["first doc", "second doc", "third doc"]
    assert (report["empty"], report["excluded"]) == (1, 1)
    limited, report = read_unlabeled(path, limit=2)
    assert limited == ["first doc", "second doc"]
    assert report["kept"] == 2


def test_tables_csv_and_jsonl(tmp_path):
    (tmp_path / "u.csv").write_text('id,body\n1,"good, very good"\n2,\n3,Dull and long.\n')
    texts, report = read_unlabeled(tmp_path / "u.csv", text_column="body", exclude=TEST_TEXTS)
    assert texts == ["good, very good"]
    assert (report["empty"], report["excluded"]) == (1, 1)
    rows = [{"text": "fine"}, {"text": None}, {"text": "also fine", "x": 1}]
    (tmp_path / "u.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    texts, report = read_unlabeled(tmp_path / "u.jsonl")
    assert texts == ["fine", "also fine"]
    assert report["empty"] == 1
    with pytest.raises(ValueError, match="text_column='missing'"):
        read_unlabeled(tmp_path / "u.csv", text_column="missing")


def test_archive_reads_imdb_unsup_folder_only(tmp_path):
    path = _tar(
        tmp_path / "aclImdb_v1_unsup.tar.gz",
        {
            "aclImdb/train/unsup/0_0.txt": b"An unlabeled review.",
            "aclImdb/train/unsup/1_0.txt": b"Dull and LONG.",
            "aclImdb/test/pos/0_9.txt": b"A test review that must not be read.",
            "aclImdb/README": b"readme",
        },
    )
    texts, report = read_unlabeled(path, exclude=TEST_TEXTS)
    assert texts == ["An unlabeled review."]
    assert (report["read"], report["excluded"]) == (2, 1)
    other = _tar(tmp_path / "mine.tar.gz", {"d/x.txt": b"one", "d/y.txt": b"two"})
    assert read_unlabeled(other)[0] == ["one", "two"]


def test_a_truncated_archive_is_an_error_not_part_of_its_documents(tmp_path):
    """Issue 63: a streamed .tar.gz cut short gave the documents before the cut, silently."""
    path = _tar(tmp_path / "big.tar.gz", {f"d/{i}.txt": f"doc {i}".encode() for i in range(60)})
    assert len(read_unlabeled(path)[0]) == 60
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match="'.*cut.tar.gz' is a truncated or damaged gzip file"):
        read_unlabeled(cut)


def test_archive_is_streamed(tmp_path, monkeypatch):
    """Members are read one at a time from a stream, never extracted all at once."""
    path = _tar(tmp_path / "big.tar.gz", {f"d/{i}.txt": f"doc {i}".encode() for i in range(50)})
    opened = []
    real_open = tarfile.open

    def spy(name, mode="r", *args, **kwargs):
        opened.append(mode)
        return real_open(name, mode, *args, **kwargs)

    monkeypatch.setattr(tarfile, "open", spy)
    texts, _ = read_unlabeled(path, limit=5)
    assert texts == [f"doc {i}" for i in range(5)]
    assert opened and all("|" in mode for mode in opened)


def test_errors_name_the_source(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        read_unlabeled(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="Expected documents"):
        read_unlabeled(tmp_path / "empty")
    (tmp_path / "blank.txt").write_text("\n \n")
    with pytest.raises(ValueError, match="2 empty"):
        read_unlabeled(tmp_path / "blank.txt")
    (tmp_path / "test.txt").write_text("\n".join(TEST_TEXTS))
    with pytest.raises(ValueError, match="training on the test set"):
        read_unlabeled(tmp_path / "test.txt", exclude=TEST_TEXTS)
    with pytest.raises(ValueError, match="limit"):
        read_unlabeled(tmp_path / "test.txt", limit=0)
    with pytest.raises(ValueError, match="text_column"):
        read_unlabeled(tmp_path / "test.txt", text_column="text")


def test_a_folder_without_txt_files_says_what_is_read_and_what_was_left_out(tmp_path):
    """Issue 63: a folder of .png files said only '0 read'."""
    pictures = tmp_path / "pictures"
    (pictures / "more").mkdir(parents=True)
    for name in ("a.png", "b.png", "more/c.png", "notes.md", "README", ".hidden.png"):
        (pictures / name).write_bytes(b"\x89PNG")
    with pytest.raises(ValueError) as caught:
        read_unlabeled(pictures)
    message = str(caught.value)
    assert "0 read" in message and "A folder's documents are its .txt files" in message
    assert "5 other files left out by extension (3 .png, 1 (no extension), 1 .md)" in message
    (pictures / "d.txt").write_text("a review")
    assert read_unlabeled(pictures)[0] == ["a review"]


@pytest.mark.skipif(
    not Path(os.environ.get("HATT_UNSUP", "/nonexistent")).is_file(),
    reason="set HATT_UNSUP to aclImdb_v1_unsup.tar.gz to read the real unlabeled reviews",
)
def test_real_unsup_limit():
    texts, report = read_unlabeled(os.environ["HATT_UNSUP"], limit=100)
    assert len(texts) == 100 and report["read"] >= 100


def test_a_source_larger_than_the_budget_is_read_as_a_stream_up_to_it(tmp_path, monkeypatch):
    import hatt.data.unlabeled as unlabeled_module

    monkeypatch.setattr(unlabeled_module, "CHUNK", 10)  # documents read ahead of the check
    path = tmp_path / "many.txt"
    path.write_text("".join(f"document number {i}\n" for i in range(1000)))
    texts, report = read_unlabeled(path, max_chars=100)
    # it stops at the first document that reaches the budget: nothing beyond is kept
    assert report["stopped"] == "max_chars"
    assert sum(map(len, texts[:-1])) < 100 <= sum(map(len, texts)) == report["chars"]
    assert texts == [f"document number {i}" for i in range(len(texts))]
    assert report["read"] <= len(texts) + 10 and "memory budget" in summary(report)
    limited, report = read_unlabeled(path, limit=3)
    assert len(limited) == 3 and report["stopped"] == "limit"
    whole, report = read_unlabeled(path)
    assert len(whole) == 1000 and report["stopped"] is None and "not read" not in summary(report)
    with pytest.raises(ValueError, match="max_chars"):
        read_unlabeled(path, max_chars=0)


def test_the_unlabeled_budget_is_a_share_of_memory():
    from hatt.training.settings import limits

    assert limits.unlabeled_chars(24 * 2**30) == 6 * 2**30
