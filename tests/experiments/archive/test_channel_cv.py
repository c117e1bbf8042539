"""experiments/channel_cv.py: block folds, and a run on a made-up aclImdb folder."""

import importlib
import json

import numpy as np
import pytest

from tests._planted import write_planted_imdb


@pytest.fixture(scope="module")
def channel_cv():
    return importlib.import_module("experiments.archive.channel_cv")


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
    root = write_planted_imdb(tmp_path, n_train=80, n_test=8)
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
    assert (
        "| 30,000 | 800 | 2 | 2^6 | sum | 1 | 1 | 1.0 |"
        in (tmp_path / "results" / "channel_cv.md").read_text()
    )


def test_vocabularies_lengths_and_smoothings_are_compared_under_their_own_name(
    tmp_path, channel_cv
):
    root = write_planted_imdb(tmp_path, n_train=80, n_test=8)
    results = tmp_path / "results"
    report = channel_cv.main(
        [
            "--data", str(root), "--validation-size", "10", "--settings", "2:64", "--C", "1.0",
            "--folds", "3", "--tokens", "50:3", "500:0", "--alpha", "0.5", "1",
            "--name", "sweep", "--results", str(results),
        ]
    )  # fmt: skip
    assert not (results / "channel_cv.json").exists()
    assert json.loads((results / "sweep.json").read_text()) == report
    rows = [(r["max_tokens"], r["length"], r["alpha"]) for r in report["rows"]]
    assert rows == [(50, 3, 0.5), (50, 3, 1.0), (500, None, 0.5), (500, None, 1.0)]
    # three tokens of a review cannot hold the planted word; every token can
    by = {(r["max_tokens"], r["alpha"]): r["cv_accuracy"] for r in report["rows"]}
    assert by[(500, 1.0)] >= 0.9 and by[(500, 1.0)] > by[(50, 1.0)]
    table = (results / "sweep.md").read_text()
    assert "| 500 | all | 2 | 2^6 | sum | 0.5 | 1 | 1.0 |" in table and "| 50 | 3 | 2 |" in table
    with pytest.raises(SystemExit, match="MAX_TOKENS:LENGTH"):
        channel_cv.main(["--data", str(root), "--tokens", "big", "--results", str(results)])


def test_interpolation_is_linear_in_beta_between_nb_and_nb_lr(channel_cv):
    import scipy.sparse as sp

    from hatt.training import fit_nb_logistic, log_count_ratios

    rng = np.random.default_rng(0)
    labels = np.array([0, 1] * 20)
    dense = rng.integers(0, 2, size=(40, 12)).astype(np.float32)
    dense[:, 0] = labels  # feature 0 marks the positives, feature 1 the negatives
    dense[:, 1] = 1 - labels
    counts = sp.csr_matrix(dense)
    fits = {b: channel_cv.nb_logistic(counts, labels, 1.0, 1.0, b) for b in (0.0, 0.5, 1.0)}
    plain = fit_nb_logistic(counts, labels, binary=True, reduction="sum", C=1.0)
    np.testing.assert_allclose(fits[1.0][0], plain[0], rtol=1e-6)  # β = 1 is hatt's fit
    np.testing.assert_allclose(fits[0.5][0], (fits[0.0][0] + fits[1.0][0]) / 2, rtol=1e-5)
    ratios = log_count_ratios(counts, labels, alpha=1.0)
    scale = fits[0.0][0] / ratios  # β = 0: every n-gram weighs its NB ratio, times one number
    np.testing.assert_allclose(scale, scale[0], rtol=1e-5)
    assert scale[0] > 0


def test_betas_are_rows_of_the_table(tmp_path, channel_cv):
    root = write_planted_imdb(tmp_path, n_train=80, n_test=8)
    report = channel_cv.main(
        [
            "--data", str(root), "--validation-size", "10", "--settings", "2:64", "--C", "1.0",
            "--folds", "3", "--beta", "0", "1", "--results", str(tmp_path / "results"),
        ]
    )  # fmt: skip
    assert [r["beta"] for r in report["rows"]] == [0.0, 1.0]
    for row in report["rows"]:
        assert row["cv_accuracy"] >= 0.9  # the planted cue carries NB and NB-LR alike
    assert "| 2^6 | sum | 1 | 0 | 1.0 |" in (tmp_path / "results" / "channel_cv.md").read_text()


def test_reductions_are_compared_and_each_scores_the_fit_hatt_makes_with_it(tmp_path, channel_cv):
    import scipy.sparse as sp

    from hatt.training import fit_nb_logistic

    rng = np.random.default_rng(0)
    counts = sp.lil_matrix(rng.integers(0, 2, size=(60, 40)).astype(np.float32))
    labels = np.array([0, 1] * 30)
    counts[labels == 1, 3] = 1.0  # a planted feature, and review lengths that differ
    counts = counts.tocsr()
    for reduction in ("sum", "sqrt"):
        weights, intercept = channel_cv.nb_logistic(counts, labels, 1.0, 1.0, 1.0, reduction)
        expected = fit_nb_logistic(
            counts, labels, binary=True, reduction=reduction, C=1.0, alpha=1.0
        )
        np.testing.assert_allclose(weights, expected[0])
        assert intercept == pytest.approx(expected[1])
    sums = channel_cv.nb_logistic(counts, labels, 1.0, 1.0)[0]
    assert not np.allclose(sums, channel_cv.nb_logistic(counts, labels, 1.0, 1.0, 1.0, "sqrt")[0])

    root = write_planted_imdb(tmp_path, n_train=80, n_test=8)
    report = channel_cv.main(
        [
            "--data", str(root), "--validation-size", "10", "--settings", "2:64",
            "--C", "1.0", "--folds", "3", "--reduction", "sum", "sqrt",
            "--results", str(tmp_path / "results"),
        ]
    )  # fmt: skip
    assert [r["reduction"] for r in report["rows"]] == ["sum", "sqrt"]
    assert all(r["cv_accuracy"] >= 0.9 for r in report["rows"])
    assert "| 2^6 | sqrt | 1 | 1 | 1.0 |" in (tmp_path / "results" / "channel_cv.md").read_text()
