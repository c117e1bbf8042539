"""hatt.data.load_corpus: folders per class, CSV / TSV / JSONL tables, tfds, IMDB ratings.

Every corpus here is written by the test: planted documents of three classes,
each holding its class name as a cue word (``tests._planted.planted_classes``),
so that a label can be checked against its text.
"""

import csv
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hatt
from hatt import cli
from hatt.data import DataNotFoundError, load_corpus
from hatt.data.readers import archive as archives
from hatt.data.readers import tfds as tfds_reader
from tests._planted import planted_classes

CLASSES = ("business", "science", "sports")
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)) * 4


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))


def documents(n, seed=0, classes=CLASSES):
    """``n`` planted ``(text, class name)`` pairs (classes cycling)."""
    return list(zip(*planted_classes(n, seed, classes), strict=True))


def write_folder(root, docs, split=None):
    """``root[/split]/CLASS/NNN.txt`` for each document; returns ``root``."""
    base = Path(root) / split if split else Path(root)
    for i, (text, name) in enumerate(docs):
        folder = base / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"doc{i:03d}.txt").write_text(text, encoding="utf-8")
    return Path(root)


def write_table(path, rows, header=("text", "label"), delimiter=","):
    """A CSV / TSV table written by Python's csv module (quotes where needed)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter=delimiter)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_jsonl(path, records):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    return path


def words(text):
    return text.lower().replace(".", " ").replace(":", " ").split()


def assert_labels_follow_cues(corpus):
    """Every document holds the cue word of its class (its own name) and no other."""
    for name in ("train", "validation", "test"):
        split = getattr(corpus, name)
        for text, label in zip(split.texts, split.labels, strict=True):
            cues = set(words(text)) & {c.lower() for c in corpus.class_names}
            assert cues == {corpus.class_names[label].lower()}


def all_counts(corpus):
    return sum(corpus.class_counts(name) for name in ("train", "validation", "test"))


# === Folders ========================================================================


def test_folder_with_train_and_test_splits(tmp_path):
    root = write_folder(tmp_path / "news", documents(60), "train")
    write_folder(root, documents(15, seed=1), "test")
    corpus = load_corpus(root, validation_size=6, progress=False)
    assert isinstance(corpus, hatt.data.TextCorpus) and corpus.num_classes == 3
    assert corpus.class_names == CLASSES
    assert (len(corpus.train), len(corpus.validation), len(corpus.test)) == (54, 6, 15)
    assert corpus.class_counts("validation").tolist() == [2, 2, 2]  # stratified
    assert corpus.class_counts("test").tolist() == [5, 5, 5]
    assert corpus.train.labels.dtype == np.int64
    assert_labels_follow_cues(corpus)
    assert all(i.startswith("train/") for i in corpus.train.ids + corpus.validation.ids)
    assert "test/science/doc001.txt" in corpus.test.ids
    assert corpus.report == {
        "skipped": {},
        "invalid_utf8": 0,
        "warnings": [],
        "test_in_training": 0,
    }


def test_flat_folder_carves_a_stratified_seeded_test_split(tmp_path):
    root = write_folder(tmp_path / "news", documents(90))
    corpus = load_corpus(root, test_size=0.2, validation_size=9, progress=False)
    assert (len(corpus.train), len(corpus.validation), len(corpus.test)) == (63, 9, 18)
    assert corpus.class_counts("test").tolist() == [6, 6, 6]
    assert_labels_follow_cues(corpus)
    ids = corpus.train.ids + corpus.validation.ids + corpus.test.ids
    assert len(set(ids)) == 90 and all(i.split("/")[0] in CLASSES for i in ids)
    again = load_corpus(root, test_size=0.2, validation_size=9, progress=False)
    other = load_corpus(root, test_size=0.2, validation_size=9, seed=5, progress=False)
    assert again.test.ids == corpus.test.ids and other.test.ids != corpus.test.ids


def test_hidden_files_unsup_and_stray_files(tmp_path, capsys):
    root = write_folder(tmp_path / "news", documents(30))
    (root / "sports" / ".DS_Store").write_bytes(b"\0\0junk")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main")
    write_folder(root / "unsup", documents(6))  # IMDB's unlabeled reviews: not a class
    (root / "README.md").write_text("Three classes of news.")
    corpus = load_corpus(root, validation_size=3, progress=False)
    assert corpus.class_names == CLASSES and sum(all_counts(corpus)) == 30
    err = capsys.readouterr().err
    assert "Skipped 1 file(s) outside the class folders" in err and "README.md" in err
    assert corpus.report["skipped"] == {"outside the class folders": 1}


def test_a_binary_file_is_skipped_and_bad_bytes_replaced(tmp_path, capsys):
    root = write_folder(tmp_path / "news", documents(30))
    (root / "sports" / "photo.png").write_bytes(PNG)
    (root / "science" / "latin1.txt").write_bytes(b"Science: caf\xe9 na\xefve atoms.")
    corpus = load_corpus(root, validation_size=3, test_size=6, progress=False)
    err = capsys.readouterr().err
    assert "Skipped 1 file(s) that are not UTF-8 text" in err and "photo.png" in err
    assert "Replaced invalid UTF-8 bytes with U+FFFD in 1 document(s)" in err
    assert "latin1.txt" in err
    assert corpus.report["skipped"] == {"not text": 1} and corpus.report["invalid_utf8"] == 1
    texts = corpus.train.texts + corpus.validation.texts + corpus.test.texts
    assert "Science: caf\ufffd na\ufffdve atoms." in texts
    assert sum(all_counts(corpus)) == 31


@pytest.mark.parametrize("kind", ["tar.gz", "tgz", "zip"])
def test_archives_of_a_folder_are_extracted_once(tmp_path, kind):
    root = write_folder(tmp_path / "src" / "news", documents(45), "train")
    write_folder(root, documents(9, seed=1), "test")
    archive = tmp_path / f"news.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(archive, "w") as z:
            for path in sorted(root.rglob("*.txt")):
                z.write(path, Path("news") / path.relative_to(root))
            z.writestr("__MACOSX/news/train/._doc000.txt", b"\0\x05\x16\x07")
    else:
        with tarfile.open(archive, "w:gz") as t:
            t.add(root, arcname="news")
    from_folder = load_corpus(root, validation_size=3, progress=False)
    first = load_corpus(archive, validation_size=3, progress=False)
    extracted = list((tmp_path / "cache").iterdir())
    assert len(extracted) == 1 and (extracted[0] / ".complete").exists()
    stamp = (extracted[0] / ".complete").stat().st_mtime_ns
    second = load_corpus(str(archive), validation_size=3, progress=False)
    assert (extracted[0] / ".complete").stat().st_mtime_ns == stamp
    for corpus in (first, second):
        assert corpus.class_names == CLASSES
        for name in ("train", "validation", "test"):
            assert getattr(corpus, name).ids == getattr(from_folder, name).ids
            assert getattr(corpus, name).texts == getattr(from_folder, name).texts


def test_two_processes_extracting_one_archive_at_once_both_read_it_whole(tmp_path):
    """The test suite's workers (and two runs) may extract the same archive together."""
    root = write_folder(tmp_path / "src" / "news", documents(300), "train")
    archive = tmp_path / "news.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(root, arcname="news")
    script = (
        "import sys; from pathlib import Path; from hatt.data.readers import archive\n"
        "folder = archive.extract_archive(sys.argv[1], progress=False)\n"
        "print(folder, sum(len(p.read_bytes()) for p in Path(folder).rglob('*.txt')))\n"
    )
    env = {**os.environ, "HATT_CACHE": str(tmp_path / "cache")}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(archive)], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outputs = {run.communicate(timeout=120)[0].strip() for run in runs}
    assert all(run.returncode == 0 for run in runs)
    expected = sum(len(p.read_bytes()) for p in root.rglob("*.txt"))
    folder = tmp_path / "cache" / next(iter(outputs)).split()[0].rsplit("/", 1)[-1]
    assert outputs == {f"{folder} {expected}"}  # one folder, every byte, for each of them
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [folder.name]  # no leftovers


def test_an_unfinished_extraction_of_an_older_version_is_redone(tmp_path, monkeypatch):
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    root = write_folder(tmp_path / "src" / "news", documents(12), "train")
    archive = tmp_path / "news.tgz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(root, arcname="news")
    folder = archives.extract_archive(archive, progress=False)
    shutil.rmtree(folder)
    (folder / "news").mkdir(parents=True)  # half-written in place, no marker
    (folder / "news" / "stray.txt").write_text("half")
    again = archives.extract_archive(archive, progress=False)
    assert again == folder and (folder / ".complete").exists()
    assert not (folder / "news" / "stray.txt").exists()
    assert len(list((folder / "news" / "train").rglob("*.txt"))) == 12


def test_a_separate_test_folder_or_archive(tmp_path):
    root = write_folder(tmp_path / "news", documents(30))
    test = write_folder(tmp_path / "held_out", documents(9, seed=3))
    corpus = load_corpus(root, test=test, validation_size=3, progress=False)
    assert (len(corpus.train), len(corpus.validation), len(corpus.test)) == (27, 3, 9)
    assert all(i.startswith("test/") for i in corpus.test.ids)
    assert_labels_follow_cues(corpus)
    other = write_folder(tmp_path / "other", documents(6, seed=4), "test")
    with tarfile.open(tmp_path / "other.tgz", "w:gz") as t:
        t.add(other, arcname="other")
    table = write_table(tmp_path / "news.csv", documents(30))
    corpus = load_corpus(table, test=tmp_path / "other.tgz", validation_size=3, progress=False)
    assert corpus.class_counts("test").tolist() == [2, 2, 2]
    assert "test/sports/doc002.txt" in corpus.test.ids


# === Tables =========================================================================


def test_csv_with_multiline_quoted_fields_extra_columns_and_bom(tmp_path):
    docs = documents(30)
    rows = [(i, f"user{i}", text, name, "x,y") for i, (text, name) in enumerate(docs)]
    rows[4] = (4, "user4", 'A "quoted" line, with commas\nand a second line: sports', "sports", "")
    path = tmp_path / "news.csv"
    with open(path, "w", encoding="utf-8-sig", newline="") as f:  # Excel writes a BOM
        writer = csv.writer(f)
        writer.writerow(["id", "author", "body", "topic", "notes"])
        writer.writerows(rows)
    corpus = load_corpus(
        path, text_column="body", label_column="topic", validation_size=3, progress=False
    )
    assert corpus.class_names == CLASSES and sum(all_counts(corpus)) == 30
    assert_labels_follow_cues(corpus)
    ids = corpus.train.ids + corpus.validation.ids + corpus.test.ids
    texts = corpus.train.texts + corpus.validation.texts + corpus.test.texts
    # the record of row 4 starts on line 6 (the header is line 1) and spans two lines
    multiline = texts[ids.index("train/line6")]
    assert multiline == 'A "quoted" line, with commas\nand a second line: sports'
    assert texts[ids.index("train/line8")] == docs[5][0]  # the line after it


def test_tsv_and_numeric_labels_sort_as_numbers(tmp_path):
    docs = documents(40, classes=("1", "2", "10", "9"))
    path = write_table(tmp_path / "stars.tsv", [(t, c) for t, c in docs], delimiter="\t")
    corpus = load_corpus(path, validation_size=4, progress=False)
    assert corpus.class_names == ("1", "2", "9", "10")
    assert all_counts(corpus).tolist() == [10, 10, 10, 10]
    assert_labels_follow_cues(corpus)


@pytest.mark.parametrize("name", ["news.jsonl", "news.jsonl.gz"])
def test_jsonl_labels_as_numbers_and_strings(tmp_path, name):
    docs = documents(30, classes=("1", "2", "3"))
    labels = {"1": 1, "2": 2.0, "3": "3"}  # JSON 3, 3.0 and "3" are one class each
    records = [{"review": t, "stars": labels[c], "extra": [1, 2]} for t, c in docs]
    records[3]["stars"] = 1.0
    path = write_jsonl(tmp_path / name, records)
    corpus = load_corpus(
        path, text_column="review", label_column="stars", validation_size=3, progress=False
    )
    assert corpus.class_names == ("1", "2", "3")
    assert all_counts(corpus).tolist() == [10, 10, 10]


def test_gzipped_csv_and_a_separate_test_table(tmp_path):
    train = write_table(tmp_path / "train.csv.gz", [(t, c) for t, c in documents(30)])
    test = write_table(tmp_path / "test.csv", [(t, c) for t, c in documents(12, seed=4)])
    corpus = load_corpus(train, test=test, validation_size=3, progress=False)
    assert (len(corpus.train), len(corpus.validation), len(corpus.test)) == (27, 3, 12)
    assert corpus.test.ids[0] == "test/line2"
    assert_labels_follow_cues(corpus)


def test_classes_set_the_order_and_refuse_other_labels(tmp_path):
    path = write_table(tmp_path / "news.csv", [(t, c) for t, c in documents(30)])
    order = ["sports", "business", "science"]
    corpus = load_corpus(path, classes=order, validation_size=3, progress=False)
    assert corpus.class_names == tuple(order)
    assert_labels_follow_cues(corpus)
    with pytest.raises(ValueError, match=r"one of classes=.*'sports' \(10 document"):
        load_corpus(path, classes=["business", "science"], progress=False)


def test_a_50000_word_review_loads(tmp_path):
    rows = [(t, c) for t, c in documents(30)]
    huge = " ".join(["sports"] + [f"w{i % 97}" for i in range(50000)])
    rows.append((huge, "sports"))
    path = write_table(tmp_path / "long.csv", rows)
    corpus = load_corpus(path, validation_size=3, progress=False)
    texts = corpus.train.texts + corpus.validation.texts + corpus.test.texts
    assert huge in texts


# === Split sizes ====================================================================


def test_default_validation_size_and_fractions(tmp_path):
    root = write_folder(tmp_path / "news", documents(300))
    corpus = load_corpus(root, progress=False)  # test 60; validation 10 % of 240
    assert (len(corpus.train), len(corpus.validation), len(corpus.test)) == (216, 24, 60)
    share = load_corpus(root, validation_size=0.25, test_size=30, progress=False)
    assert (len(share.validation), len(share.test)) == (68, 30)
    # a small class: the default validation split grows until it holds one of them
    docs = documents(300) + [(f"rare {i} w1 w2", "rare") for i in range(4)]
    skewed = load_corpus(write_folder(tmp_path / "skewed", docs), progress=False)
    assert skewed.class_counts("validation").min() >= 1 and len(skewed.validation) > 24
    assert skewed.class_counts("test")[skewed.class_names.index("rare")] == 1
    limited = load_corpus(root, limit=12, progress=False)
    for name in ("train", "validation", "test"):
        assert limited.class_counts(name).tolist() == [4, 4, 4]


def test_block_validation_is_used_when_ids_carry_numbers(tmp_path):
    docs = documents(600)
    root = tmp_path / "numbered"
    for i, (text, name) in enumerate(docs):
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / f"{i}_{name}.txt").write_text(text)
    corpus = load_corpus(root, validation_size=60, test_size=0.1, progress=False)
    numbers = np.sort([int(i.split("/")[-1].split("_")[0]) for i in corpus.validation.ids])
    runs = np.split(numbers, np.flatnonzero(np.diff(numbers) > 3) + 1)  # 3 classes interleave
    assert len(runs) <= 6 and corpus.class_counts("validation").tolist() == [20, 20, 20]


# === Bad input ======================================================================


def test_a_missing_column_lists_the_columns_found(tmp_path):
    path = write_table(tmp_path / "a.csv", [("t", "x")], header=("review", "stars", "user"))
    with pytest.raises(ValueError, match=r"text_column='text'.*\['review', 'stars', 'user'\]"):
        load_corpus(path, progress=False)
    path = write_table(tmp_path / "b.csv", [("t", "x")], header=("text", "stars"))
    with pytest.raises(ValueError, match=r"label_column='label'.*columns: \['text', 'stars'\]"):
        load_corpus(path, progress=False)
    path = write_table(tmp_path / "semi.csv", [("t;x",)], header=("text;label",))
    with pytest.raises(ValueError, match=r"\['text;label'\] \(is it delimited by ';'\?"):
        load_corpus(path, progress=False)
    path = write_jsonl(tmp_path / "c.jsonl", [{"body": "t", "y": 1}, {"body": "u", "z": 2}])
    with pytest.raises(ValueError, match=r"text_column='text'.*keys: \['body', 'y', 'z'\]"):
        load_corpus(path, progress=False)


def _rows_then(tmp_path, tail, name="bad.csv"):
    rows = "".join(f'"{t}",{c}\n' for t, c in documents(12))
    path = tmp_path / name
    path.write_text("text,label\n" + rows + tail, encoding="utf-8")
    return path


def test_an_unclosed_quote_names_its_line(tmp_path):
    path = _rows_then(tmp_path, '"never closed, sports\nmore text,sports\n')
    with pytest.raises(ValueError, match="starting on line 14 is never closed"):
        load_corpus(path, progress=False)


def test_a_malformed_row_names_its_line(tmp_path):
    path = _rows_then(tmp_path, '"quoted" then not,sports\n')
    with pytest.raises(ValueError, match=r"line 14: ',' expected after"):
        load_corpus(path, progress=False)
    path = _rows_then(tmp_path, "one,two,sports\n", "wide.csv")
    with pytest.raises(ValueError, match="Received: 3 fields on line 14"):
        load_corpus(path, progress=False)


def test_short_rows_empty_texts_and_labels_are_skipped_and_counted(tmp_path, capsys):
    path = _rows_then(tmp_path, 'lonely field\n"",sports\n"   ",science\nno label,\n')
    corpus = load_corpus(path, validation_size=3, progress=False)
    assert sum(all_counts(corpus)) == 12
    assert corpus.report["skipped"] == {"too few fields": 1, "empty text": 2, "empty label": 1}
    err = capsys.readouterr().err
    assert "Skipped 1 row(s) with too few fields (no text or no label): bad.csv line 14" in err
    assert "Skipped 2 document(s) with an empty text: bad.csv line 15, bad.csv line 16" in err
    assert "Skipped 1 document(s) with an empty label: bad.csv line 17" in err


def test_malformed_jsonl_names_its_line(tmp_path):
    good = [json.dumps({"text": t, "label": c}) for t, c in documents(6)]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([*good, '{"text": "x", "label": ', *good]) + "\n")
    with pytest.raises(ValueError, match="on line 7: Expecting value"):
        load_corpus(path, progress=False)
    path.write_text("\n".join([*good, '["a list"]']) + "\n")
    with pytest.raises(ValueError, match="on line 7: a list"):
        load_corpus(path, progress=False)


def test_invalid_utf8_in_a_table_is_replaced_and_counted(tmp_path, capsys):
    rows = "".join(f'"{t}",{c}\n' for t, c in documents(30))
    path = tmp_path / "latin.csv"
    path.write_bytes(b"text,label\n" + rows.encode() + b'"caf\xe9 business",business\n')
    corpus = load_corpus(path, validation_size=3, progress=False)
    assert corpus.report["invalid_utf8"] == 1
    assert "U+FFFD in 1 document(s): latin.csv line 32" in capsys.readouterr().err
    texts = corpus.train.texts + corpus.validation.texts + corpus.test.texts
    assert "caf\ufffd business" in texts


def test_one_class_only_is_refused(tmp_path):
    path = write_table(tmp_path / "one.csv", [(f"text {i}", "spam") for i in range(10)])
    with pytest.raises(ValueError, match=r"fewer than two classes.*per class: 'spam' 10\)"):
        load_corpus(path, progress=False)
    folder = write_folder(tmp_path / "onefolder", [(f"text {i}", "spam") for i in range(10)])
    with pytest.raises(ValueError, match="at least two classes"):
        load_corpus(folder, progress=False)
    path = write_table(tmp_path / "two.csv", documents(30, classes=("a", "b")))
    with pytest.raises(ValueError, match=r"none of \['c'\] .*'a' 15, 'b' 15, 'c' 0\)"):
        load_corpus(path, classes=["a", "b", "c"], progress=False)


def test_a_class_too_small_for_the_splits_gives_the_numbers(tmp_path):
    docs = documents(60) + [("rare w1", "rare"), ("rare w2", "rare")]
    path = write_table(tmp_path / "skewed.csv", docs)
    with pytest.raises(ValueError, match=r"of 6 of the 62 documents.*'rare' has 2") as info:
        load_corpus(path, test_size=0.1, progress=False)
    assert "31 out of 62 would give a class of 2 one" in str(info.value)
    assert "test_size" in str(info.value)
    test = write_table(tmp_path / "test.csv", documents(9, seed=2) + [("rare w3", "rare")])
    with pytest.raises(ValueError, match=r"validation split of 4 .*'rare' has 2"):
        load_corpus(path, test=test, validation_size=4, progress=False)


def test_test_labels_missing_from_train_are_refused(tmp_path):
    train = write_table(tmp_path / "train.csv", documents(30))
    test = write_table(tmp_path / "test.csv", [*documents(6, seed=1), ("new topic", "weather")])
    with pytest.raises(ValueError, match=r"only in the test split: 'weather' \(1 document"):
        load_corpus(train, test=test, progress=False)


def test_empty_folder_and_folder_without_classes(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no class folders"):
        load_corpus(tmp_path / "empty", progress=False)
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "a.txt").write_text("text")
    with pytest.raises(ValueError, match=r"no class folders \(found: \['a.txt'\]\)"):
        load_corpus(tmp_path / "flat", progress=False)
    (tmp_path / "images" / "cats").mkdir(parents=True)
    (tmp_path / "images" / "dogs").mkdir()
    (tmp_path / "images" / "cats" / "a.png").write_bytes(PNG)
    with pytest.raises(ValueError, match="Expected documents in the class folders"):
        load_corpus(tmp_path / "images", progress=False)


def test_bad_paths_and_options(tmp_path):
    with pytest.raises(DataNotFoundError) as info:
        load_corpus(tmp_path / "nowhere.csv", progress=False)
    assert "nowhere.csv" in str(info.value) and "HATT_IMDB" in str(info.value)
    assert ".jsonl" in str(info.value)
    (tmp_path / "notes.txt").write_text("just text")
    with pytest.raises(ValueError, match=r"\.csv / \.tsv / \.jsonl.*notes\.txt"):
        load_corpus(tmp_path / "notes.txt", progress=False)
    (tmp_path / "image.csv").write_bytes(PNG)
    with pytest.raises(ValueError, match="NUL bytes"):
        load_corpus(tmp_path / "image.csv", progress=False)
    path = write_table(tmp_path / "news.csv", documents(30))
    with pytest.raises(ValueError, match="for IMDB only"):
        load_corpus(path, labels="rating", progress=False)
    for kwargs, name in [
        ({"labels": "stars"}, "labels"),
        ({"classes": ["a"]}, "classes"),
        ({"validation_size": 1.5}, "validation_size"),
        ({"test_size": -1}, "test_size"),
        ({"validation_split": "movies"}, "validation_split"),
        ({"limit": 1}, "limit"),
    ]:
        with pytest.raises(ValueError, match=name):
            load_corpus(path, progress=False, **kwargs)
    root = write_folder(tmp_path / "split", documents(30), "train")
    write_folder(root, documents(6), "test")
    with pytest.raises(ValueError, match="own test/ split"):
        load_corpus(root, test=path, progress=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=600), kind=st.sampled_from(["csv", "tsv", "jsonl"]))
def test_a_table_of_random_bytes_is_a_corpus_or_a_value_error(tmp_path_factory, data, kind):
    path = tmp_path_factory.mktemp("t") / f"x.{kind}"
    header = b"text,label\n" if kind == "csv" else b"text\tlabel\n" if kind == "tsv" else b""
    path.write_bytes(header + data)
    try:
        corpus = load_corpus(path, validation_size=1, test_size=1, progress=False)
    except ValueError as error:
        assert str(error)
    else:
        for split in (corpus.train, corpus.validation, corpus.test):
            assert len(split.texts) == len(split.labels) == len(split.ids)
            assert all(t.strip() and t.encode("utf-8") for t in split.texts)  # no surrogates


# === tensorflow-datasets ============================================================


class _FakeInfo:
    def __init__(self, names):
        import tensorflow_datasets as tfds

        self.supervised_keys = ("description", "label")
        self.features = {"label": tfds.features.ClassLabel(names=names)}


@pytest.fixture
def fake_tfds(monkeypatch):
    """tensorflow-datasets' load / builder replaced: a 4-class data set without a test split."""
    import tensorflow as tf
    import tensorflow_datasets as tfds

    names = ["World", "Sports", "Business", "Sci/Tech"]
    docs = documents(40, classes=tuple(n.lower() for n in names))
    texts = [t.encode() for t, _ in docs]
    labels = [[n.lower() for n in names].index(c) for _, c in docs]
    calls = []

    def load(name, as_supervised, download=True):
        calls.append((name, download))
        return {"train": tf.data.Dataset.from_tensor_slices((texts, labels))}

    class Builder:
        info = _FakeInfo(names)

    monkeypatch.setattr(tfds, "load", load)
    monkeypatch.setattr(tfds, "builder", lambda name: Builder())
    return calls


def test_tfds_by_name_keeps_the_classlabel_order(fake_tfds):
    corpus = load_corpus("tfds:ag_news_subset", validation_size=4, progress=False)
    assert fake_tfds == [("ag_news_subset", False)]
    assert corpus.class_names == ("World", "Sports", "Business", "Sci/Tech")
    assert corpus.source == "tensorflow_datasets:ag_news_subset"
    assert len(corpus.test) == 8 and corpus.class_counts("test").tolist() == [2, 2, 2, 2]
    for split in (corpus.train, corpus.test):
        for text, label in zip(split.texts, split.labels, strict=True):
            assert corpus.class_names[label].lower() in text.lower()


def test_tfds_offline_fails_fast_with_the_clear_error(monkeypatch):
    import tensorflow_datasets as tfds

    def not_downloaded(name, as_supervised, download=True):
        assert not download, "must not try to download offline"
        raise AssertionError("Dataset ag_news_subset: could not find data")

    monkeypatch.setattr(tfds, "load", not_downloaded)
    monkeypatch.setattr(tfds_reader, "_reachable", lambda host, port=80, timeout=3.0: False)
    with pytest.raises(ConnectionError, match="cannot reach storage.googleapis.com"):
        load_corpus("tfds:ag_news_subset", progress=False)
    with pytest.raises(ValueError, match="tensorflow-datasets data set. Received: 'no_such_set'"):
        load_corpus("tfds:no_such_set", progress=False)
    with pytest.raises(ValueError, match="for IMDB only"):
        load_corpus("tfds:ag_news_subset", labels="rating", progress=False)


# === IMDB through load_corpus ========================================================


def test_imdb_folders_keep_the_binary_task(tiny_imdb):
    corpus = load_corpus(tiny_imdb.parent, validation_size=4, progress=False)
    same = hatt.data.load_imdb(tiny_imdb, validation_size=4, progress=False)
    assert isinstance(corpus, hatt.data.Imdb) and corpus.class_names == ("negative", "positive")
    for name in ("train", "validation", "test"):
        assert getattr(corpus, name).ids == getattr(same, name).ids
        np.testing.assert_array_equal(getattr(corpus, name).labels, getattr(same, name).labels)
    with pytest.raises(ValueError, match="own test split"):
        load_corpus(tiny_imdb, test=tiny_imdb / "test", progress=False)


@pytest.fixture
def rated_imdb(tmp_path):
    """An aclImdb folder with 6 train and 3 test reviews of each of the 8 ratings."""
    root = tmp_path / "aclImdb"
    texts, names = planted_classes(8 * 9, 0, ("1", "2", "3", "4", "7", "8", "9", "10"))
    for i, (text, rating) in enumerate(zip(texts, names, strict=True)):
        split = "train" if i < 8 * 6 else "test"
        folder = root / split / ("pos" if int(rating) >= 7 else "neg")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i}_{rating}.txt").write_text(text)
    return root


def test_imdb_ratings_from_the_file_names(rated_imdb, tmp_path):
    corpus = load_corpus(rated_imdb, labels="rating", validation_size=8, progress=False)
    assert corpus.class_names == ("1", "2", "3", "4", "7", "8", "9", "10")
    assert corpus.class_counts("validation").tolist() == [1] * 8
    assert corpus.class_counts("test").tolist() == [3] * 8
    assert_labels_follow_cues(corpus)
    assert corpus.test.ids[0].startswith("test/neg/")
    # the same corpus as load_imdb's
    same = hatt.data.load_imdb(rated_imdb, labels="rating", validation_size=8, progress=False)
    assert same.validation.ids == corpus.validation.ids
    bad = rated_imdb / "train" / "pos" / "999.txt"
    bad.write_text("no rating in the name")
    with pytest.raises(ValueError, match="<id>_<rating>.txt.*999.txt"):
        load_corpus(rated_imdb, labels="rating", progress=False)


def test_imdb_ratings_need_enough_reviews_per_rating(tiny_imdb):
    with pytest.raises(ValueError, match=r"validation split of 4 .*cannot hold 8 classes"):
        load_corpus(tiny_imdb, labels="rating", validation_size=4, progress=False)


# The original data set's ratings (Maas et al. 2011), counted from the file names of
# aclImdb_v1.tar.gz: `ls aclImdb/train/{pos,neg} | sed 's/.*_//' | sort -n | uniq -c`.
IMDB_RATINGS = ("1", "2", "3", "4", "7", "8", "9", "10")
IMDB_TRAIN = [5100, 2284, 2420, 2696, 2496, 3009, 2263, 4732]
IMDB_TEST = [5022, 2302, 2541, 2635, 2307, 2850, 2344, 4999]


@pytest.fixture(scope="module")
def real_ratings(tmp_path_factory):
    import os

    from tests.data.conftest import SHARED_TARBALL

    path = os.environ.get("HATT_IMDB") or (str(SHARED_TARBALL) if SHARED_TARBALL.exists() else "")
    if not path or not Path(path).exists():
        pytest.skip("real IMDB not available: set HATT_IMDB to an aclImdb folder or .tar.gz")
    with pytest.MonkeyPatch.context() as patch:  # HATT_CACHE's extraction, else a fresh one
        if not os.environ.get("HATT_CACHE"):
            patch.setenv("HATT_CACHE", str(tmp_path_factory.mktemp("cache")))
        return load_corpus(path, labels="rating", progress=False)


@pytest.mark.imdb
def test_real_imdb_ratings_have_the_original_counts(real_ratings):
    corpus = real_ratings
    assert corpus.class_names == IMDB_RATINGS
    train = corpus.class_counts("train") + corpus.class_counts("validation")
    assert train.tolist() == IMDB_TRAIN and sum(IMDB_TRAIN) == 25000
    assert corpus.class_counts("test").tolist() == IMDB_TEST and sum(IMDB_TEST) == 25000
    assert len(corpus.validation) == 2500 and corpus.class_counts("validation").min() >= 200
    # the ids of the binary task; ratings 1-4 are the negative reviews
    for split in (corpus.train, corpus.validation, corpus.test):
        ratings = np.array([int(i.rsplit("_", 1)[1]) for i in split.ids])
        np.testing.assert_array_equal(np.array(IMDB_RATINGS, int)[split.labels], ratings)
        assert all(("/neg/" in i) == (r <= 4) for i, r in zip(split.ids, ratings, strict=True))
    ids = set(corpus.train.ids) | set(corpus.validation.ids)
    assert len(ids) == 25000 and not set(corpus.train.ids) & set(corpus.validation.ids)
    # IMDB holds no undecodable or empty review; 123 of its test reviews are also training
    # reviews (the same text after cleaning), which the report counts and says.
    assert corpus.report["skipped"] == {} and corpus.report["invalid_utf8"] == 0
    assert corpus.report["test_in_training"] == 123
    assert corpus.report["warnings"] == [
        "123 of the 25,000 test documents (0.5%) also occur in the training or validation "
        "split (the same text after cleaning): the test figures are slightly optimistic"
    ]


# === Statistics and `hatt data` ======================================================


def test_statistics_count_classes_and_warn_on_imbalance(tmp_path):
    docs = documents(30) + [(f"business w{i} w3.", "business") for i in range(50)]
    path = write_table(tmp_path / "skewed.csv", docs)
    corpus = load_corpus(path, validation_size=6, progress=False)
    stats = hatt.data.statistics(corpus)
    assert stats["class_names"] == list(CLASSES)
    counts = [stats["splits"][n]["classes"] for n in ("train", "validation", "test")]
    assert [sum(c[k] for c in counts) for k in CLASSES] == [60, 10, 10]
    assert "positive" not in stats["splits"]["train"]
    assert len(stats["warnings"]) == 1 and "6.0x as many" in stats["warnings"][0]
    table = hatt.data.format_statistics(stats)
    assert "Warning: the largest class ('business': 60 documents)" in table
    assert "(--class-weight balanced) when the largest has over 1.5x" in table
    row = next(line for line in table.splitlines() if line.startswith("science"))
    assert [int(x) for x in row.split()[1:]] == [
        counts[0]["science"],
        counts[1]["science"],
        counts[2]["science"],
    ]
    balanced = load_corpus(write_table(tmp_path / "b.csv", documents(30)), progress=False)
    assert hatt.data.statistics(balanced)["warnings"] == []


def test_binary_statistics_keep_positive_and_negative(tiny_imdb):
    stats = hatt.data.statistics(hatt.data.load_imdb(tiny_imdb, validation_size=4, progress=False))
    train = stats["splits"]["train"]
    assert train["positive"] == train["classes"]["positive"] == 4 and train["negative"] == 4


def test_hatt_data_on_a_table_with_its_options(tmp_path, capsys):
    docs = [(t, c) for t, c in documents(30)]
    path = write_table(tmp_path / "news.tsv", docs, header=("body", "topic"), delimiter="\t")
    argv = ["data", "--data", str(path), "--text-column", "body", "--label-column", "topic"]
    assert cli.main([*argv, "--classes", "sports,science,business", "--quiet", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["class_names"] == ["sports", "science", "business"]
    assert sum(stats["splits"][n]["reviews"] for n in stats["splits"]) == 30
    assert cli.main([*argv, "--validation-size", "0.1"]) == 0
    table = capsys.readouterr().out
    assert "3 classes from" in table and "words_per_sentence" in table
    assert cli.main([*argv, "--labels", "rating", "--quiet"]) == 2
    assert "for IMDB only" in capsys.readouterr().err
    assert cli.main(["data", "--data", str(path), "--quiet"]) == 2
    assert "Received columns: ['body', 'topic']" in capsys.readouterr().err


def test_data_options_are_load_corpus_arguments(tmp_path):
    parser = cli.build_parser()
    args = parser.parse_args(
        ["data", "--data", "x.csv", "--test", "t.csv", "--classes", "b, a", "--label-column", "y"]
    )
    options = cli.data_options(args)
    # only the flags given: the others keep load_corpus's defaults (or a --config file's)
    assert options == {
        "source": "x.csv",
        "label_column": "y",
        "test": "t.csv",
        "classes": ["b", "a"],
    }
    train = parser.parse_args(["train", "cnn", "--data", "x.csv", "--test", "t.csv"])
    assert cli._config_data_options(train) == {"data": "x.csv", "test_data": "t.csv"}
    args = parser.parse_args(["data", "--classes", "a,,b"])
    with pytest.raises(ValueError, match="--classes"):
        cli.data_options(args)


def test_a_users_neg_pos_folders_keep_their_names_and_imdb_is_said(tmp_path, capsys):
    # IMDB's layout (train/ and test/ holding neg/ and pos/) is not enough to be IMDB.
    docs = documents(40, classes=("neg", "pos"))
    root = write_folder(tmp_path / "polarity", docs[:30], "train")
    write_folder(root, docs[30:], "test")
    corpus = load_corpus(root, validation_size=4, progress=True)
    assert corpus.class_names == ("neg", "pos") and type(corpus).__name__ == "TextCorpus"
    assert len(corpus.test) == 10 and "IMDB" not in capsys.readouterr().out
    # The same folder named aclImdb (or holding imdb.vocab) is IMDB, and hatt says so.
    imdb_root = root.rename(tmp_path / "aclImdb")
    corpus = load_corpus(imdb_root, validation_size=4, progress=True)
    assert corpus.class_names == ("negative", "positive")
    assert "Detected IMDB in" in capsys.readouterr().out
    # Asking for IMDB's labels reads any such folder as IMDB.
    other = imdb_root.rename(tmp_path / "reviews")
    assert load_corpus(other, labels="binary", validation_size=4, progress=False).class_names == (
        "negative",
        "positive",
    )


@pytest.mark.parametrize(
    "record, words",
    [
        ({"text": ["a", "list"], "label": "pos"}, "'text' field of 'bad.jsonl' to be a string"),
        ({"text": {"a": 1}, "label": "pos"}, "line 7: a JSON object"),
        ({"text": 12, "label": "pos"}, "a JSON number (12)"),
        ({"text": "fine", "label": ["x"]}, "'label' field of 'bad.jsonl' to be a string or a"),
        ({"text": "fine", "label": {"k": 1}}, "line 7: a JSON object"),
        ({"text": "fine", "label": float("nan")}, "a non-finite number (NaN)"),
    ],
)
def test_a_jsonl_text_or_label_of_the_wrong_type_is_refused_with_its_line(tmp_path, record, words):
    good = [{"text": text, "label": name} for text, name in documents(6)]
    write_jsonl(tmp_path / "bad.jsonl", [*good, record])
    with pytest.raises(ValueError, match=re.escape(words)):
        load_corpus(tmp_path / "bad.jsonl", progress=False)


def test_numerically_equal_labels_are_one_class_and_said(tmp_path, capsys):
    rows = [(f"review number {i} here", label) for i, label in enumerate(["1.5", "1.50"] * 6)]
    rows += [(f"another review {i}", label) for i, label in enumerate(["5", "5.0"] * 6)]
    write_table(tmp_path / "stars.csv", rows)
    corpus = load_corpus(tmp_path / "stars.csv", validation_size=2, test_size=4, progress=True)
    assert corpus.class_names == ("1.5", "5")
    err = capsys.readouterr().err
    assert "'1.5', '1.50' are the same number, read as class '1.5'" in err
    assert "'5', '5.0' are the same number" in err


def test_a_duplicate_text_header_and_one_column_for_text_and_label_are_refused(tmp_path):
    path = tmp_path / "dup.csv"
    write_table(path, [("a", "b", "pos"), ("c", "d", "neg")], header=("text", "label", "text"))
    with pytest.raises(ValueError, match=r"'text' to appear once .* names columns \[1, 3\]"):
        load_corpus(path, progress=False)
    write_table(path, [(t, n) for t, n in documents(8)])
    with pytest.raises(ValueError, match="a model would read its answer. Received: both 'label'"):
        load_corpus(path, text_column="label", progress=False)


def test_test_documents_that_are_also_training_documents_are_counted_or_refused(tmp_path, capsys):
    docs = documents(40)
    write_table(tmp_path / "train.csv", docs)
    # --test naming the training data itself: every test document is a training one.
    with pytest.raises(ValueError, match=r"40 of the 40 test documents \(100.0%\) also occur"):
        load_corpus(tmp_path / "train.csv", test=tmp_path / "train.csv", progress=False)
    # A few repeated (case, HTML and spacing aside) are counted, said and kept in the report.
    fresh = documents(20, seed=7)
    text, name = docs[3]
    repeated = [(text.upper().replace(" ", "  <br />"), name), *fresh[1:]]
    write_table(tmp_path / "test.csv", repeated)
    corpus = load_corpus(tmp_path / "train.csv", test=tmp_path / "test.csv", validation_size=4)
    assert corpus.report["test_in_training"] == 1
    assert "1 of the 20 test documents (5.0%) also occur" in capsys.readouterr().err


def test_a_label_typed_composed_or_decomposed_names_one_class():
    # issue 63, second pass: "été" in NFC and in NFD became two classes printed alike
    from hatt.data.corpus import label_name

    assert label_name("e\u0301te\u0301") == label_name("\u00e9t\u00e9") == "\u00e9t\u00e9"
