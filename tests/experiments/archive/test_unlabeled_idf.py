"""experiments/unlabeled_idf.py: the IDF of the draw against the IDF of the draw + unlabeled."""

import importlib
import json

import numpy as np
import pytest

from tests._planted import planted_texts, write_planted_imdb


@pytest.fixture(scope="module")
def unlabeled_idf():
    return importlib.import_module("experiments.archive.unlabeled_idf")


def _smooth_idf(documents, vocabulary):
    """scikit-learn's smoothed IDF, counted by hand: ln((1 + n) / (1 + df)) + 1."""
    present = []
    for doc in documents:
        words = doc.split()
        present.append(set(words) | {f"{a} {b}" for a, b in zip(words, words[1:], strict=False)})
    df = np.array([sum(term in terms for terms in present) for term in vocabulary], float)
    return np.log((1 + len(documents)) / (1 + df)) + 1


def test_the_wider_idf_counts_the_unlabeled_documents_over_the_draws_vocabulary(unlabeled_idf):
    train = ["good film", "good plot", "bad film", "bad plot", "good good"]
    unlabeled = ["good", "film film", "a new word", "bad film"]
    features, idfs = unlabeled_idf.idf_pair(train, unlabeled)
    vocabulary = sorted(features.vocabulary_, key=features.vocabulary_.get)
    # min_df 2 keeps the draw's terms in two documents or more; unlabeled words add none
    assert vocabulary == ["bad", "film", "good", "plot"]
    np.testing.assert_allclose(idfs["draw"], _smooth_idf(train, vocabulary))
    np.testing.assert_allclose(idfs["draw + unsup"], _smooth_idf(train + unlabeled, vocabulary))
    assert idfs["draw + unsup"][vocabulary.index("plot")] > idfs["draw"][vocabulary.index("plot")]


def test_main_scores_both_idfs_and_drops_unlabeled_copies_of_tuning_reviews(
    unlabeled_idf, tmp_path
):
    data = write_planted_imdb(tmp_path / "corpus", n_train=120, n_test=4)
    unsup = tmp_path / "unsup"
    unsup.mkdir()
    texts, _ = planted_texts(120, 0)  # the training reviews themselves, and 10 others
    texts += planted_texts(10, 5)[0]
    for i, text in enumerate(texts):
        (unsup / f"{i}_0.txt").write_text(text, encoding="utf-8")
    argv = ["--data", str(data), "--unlabeled", str(unsup), "--tasks", "polarity",
            "--draws", "1", "2", "--size", "40", "--tuning-size", "30", "--out", str(tmp_path / "out")]  # fmt: skip
    unlabeled_idf.main(argv)

    result = json.loads((tmp_path / "out" / "idf.json").read_text())
    read = result["unlabeled_report"]["kept"]
    for draw in ("1", "2"):
        row = result["tasks"]["polarity"][draw]
        assert set(row["accuracy"]) == {"draw", "draw + unsup"}
        assert list(row["accuracy"]["draw"]) == [
            "1.0",
            "2.0",
            "4.0",
            "8.0",
            "16.0",
            "32.0",
            "64.0",
            "128.0",
        ]
        for scores in row["accuracy"].values():
            assert all(0.5 <= value <= 1.0 for value in scores.values())  # planted words decide
        # every tuning review is among the unlabeled texts: each copy is dropped
        assert row["unlabeled_equal_to_tuning"] >= 30
        assert row["unlabeled"] + row["unlabeled_equal_to_tuning"] == read
    table = (tmp_path / "out" / "idf.md").read_text()
    assert "| draw + unsup |" in table and "## polarity" in table
    assert "of 16 (draw, C)" in table
