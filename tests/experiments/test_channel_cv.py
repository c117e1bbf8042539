"""experiments/channel_cv.py: block folds, and a run on a made-up aclImdb folder."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "channel_cv.py"
FILLER = "the a movie film plot story actor scene it was and of this to watch saw".split()


@pytest.fixture(scope="module")
def channel_cv():
    spec = importlib.util.spec_from_file_location("channel_cv", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_block_folds_are_balanced_contiguous_and_cover_everything(channel_cv):
    labels = np.array([0, 1] * 15)
    ids = [f"train/{'pos' if y else 'neg'}/{100 - i}_7" for i, y in enumerate(labels)]
    folds = channel_cv.block_folds(ids, labels, 3)
    held = np.concatenate([h for _, h in folds])
    assert sorted(held) == list(range(30))  # every review held out exactly once
    numbers = np.array([channel_cv.review_number(i) for i in ids])
    for train, fold in folds:
        assert not set(train) & set(fold) and len(train) + len(fold) == 30
        assert np.bincount(labels[fold]).tolist() == [5, 5]
        for label in (0, 1):  # a fold's reviews of a class are consecutive by id
            own = np.sort(numbers[fold][labels[fold] == label])
            rest = numbers[(labels == label)]
            between = rest[(rest > own[0]) & (rest < own[-1])]
            assert len(between) == len(own) - 2


def test_runs_on_a_made_up_corpus_and_writes_its_files(tmp_path, channel_cv):
    rng = np.random.default_rng(0)
    root = tmp_path / "aclImdb"
    for split, n in (("train", 40), ("test", 4)):
        for label, word in (("pos", "splendid"), ("neg", "dreadful")):
            folder = root / split / label
            folder.mkdir(parents=True)
            for i in range(n):
                words = list(rng.choice(FILLER, size=6))
                words.insert(int(rng.integers(0, 6)), word)
                (folder / f"{i}_5.txt").write_text(" ".join(words) + ".", encoding="utf-8")
    report = channel_cv.main(
        [
            "--data", str(root), "--validation-size", "10", "--settings", "1:16", "2:64",
            "--C", "1.0", "--folds", "3", "--results", str(tmp_path / "results"),
        ]
    )  # fmt: skip
    saved = json.loads((tmp_path / "results" / "channel_cv.json").read_text())
    assert saved == report and [(r["ngram"], r["buckets"]) for r in saved["rows"]] == [
        (1, 16),
        (2, 64),
    ]
    for row in saved["rows"]:
        assert len(row["fold_accuracies"]) == 3 and row["cv_accuracy"] >= 0.9
    assert "| 2 | 2^6 | 1.0 |" in (tmp_path / "results" / "channel_cv.md").read_text()
