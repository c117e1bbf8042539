"""experiments/unlabeled_nb.py: NB ratios smoothed by the draw alone or by unlabeled rates."""

import importlib
import json

import numpy as np
import pytest
import scipy.sparse as sp

from hatt.training import log_count_ratios
from tests._planted import planted_texts, write_planted_imdb


@pytest.fixture(scope="module")
def unlabeled_nb():
    return importlib.import_module("experiments.archive.unlabeled_nb")


def test_ratios_without_a_prior_are_nb_lrs_and_the_prior_matches_a_hand_count(unlabeled_nb):
    rng = np.random.default_rng(0)
    present = (rng.random((12, 5)) < 0.5).astype(np.float64)
    positive = np.arange(12) % 2 == 1
    background = rng.random(5)
    got = unlabeled_nb.smoothed_ratios(sp.csr_matrix(present), positive, 0.5, background, 0.0)
    want = log_count_ratios(present, positive.astype(int), alpha=0.5, dtype=np.float64)
    np.testing.assert_allclose(got, want)

    p = present[positive].sum(0) + 0.5 + 7.0 * background  # the prior, counted by hand
    q = present[~positive].sum(0) + 0.5 + 7.0 * background
    got = unlabeled_nb.smoothed_ratios(sp.csr_matrix(present), positive, 0.5, background, 7.0)
    np.testing.assert_allclose(got, np.log(p / p.sum()) - np.log(q / q.sum()))


def test_an_ngram_common_in_unlabeled_text_needs_more_evidence(unlabeled_nb):
    # feature 0 and 1: the same labelled counts (3 positive reviews, 0 negative); feature 0
    # is in every unlabeled review, feature 1 in none
    present = np.zeros((6, 3))
    present[[1, 3, 5], 0] = present[[1, 3, 5], 1] = 1
    present[:, 2] = 1
    positive = np.arange(6) % 2 == 1
    background = np.array([1.0, 0.0, 0.5])
    plain = unlabeled_nb.smoothed_ratios(sp.csr_matrix(present), positive, 1.0, background, 0.0)
    prior = unlabeled_nb.smoothed_ratios(sp.csr_matrix(present), positive, 1.0, background, 10.0)
    assert plain[0] == pytest.approx(plain[1])
    assert prior[1] > 0 and abs(prior[0]) < min(prior[1], plain[0]) / 4  # the common one: ~0


def test_background_rates_count_documents_over_the_draws_vocabulary(unlabeled_nb):
    features = unlabeled_nb.baselines.create_features("nb_lr", min_df=1).fit(["good film", "bad"])
    rates = unlabeled_nb.background_rates(features, ["good good", "film", "new words", "bad film"])
    got = dict(zip(features.get_feature_names_out(), rates, strict=True))
    assert got == pytest.approx({"bad": 0.25, "film": 0.5, "good": 0.25, "good film": 0.0})


def test_main_scores_every_prior_at_every_point_and_refuses_more_classes(unlabeled_nb, tmp_path):
    data = write_planted_imdb(tmp_path / "corpus", n_train=120, n_test=4)
    unsup = tmp_path / "unsup"
    unsup.mkdir()
    texts = planted_texts(120, 0)[0] + planted_texts(10, 5)[0]
    for i, text in enumerate(texts):
        (unsup / f"{i}_0.txt").write_text(text, encoding="utf-8")
    argv = ["--data", str(data), "--unlabeled", str(unsup), "--draws", "1", "2", "--size", "40",
            "--tuning-size", "30", "--priors", "5", "--out", str(tmp_path / "out")]  # fmt: skip
    unlabeled_nb.main(argv)

    result = json.loads((tmp_path / "out" / "nb.json").read_text())
    for draw in ("1", "2"):
        row = result["tasks"]["polarity"][draw]
        assert list(row["accuracy"]) == ["draw", "draw + unsup, μ 5"]
        for scores in row["accuracy"].values():
            assert len(scores) == 28 and "alpha 0.25, C 0.01" in scores
            assert all(0.5 <= value <= 1.0 for value in scores.values())  # planted words decide
        assert row["unlabeled_equal_to_tuning"] >= 30  # tuning reviews among the unlabeled
    table = (tmp_path / "out" / "nb.md").read_text()
    assert "**mean over the grid**" in table and "of 56 (draw, point)" in table
    assert "python -m experiments.archive.unlabeled_nb --data" in table

    with pytest.raises(ValueError, match="two classes"):
        unlabeled_nb.compare_priors(None, None, [], 8, 0)
