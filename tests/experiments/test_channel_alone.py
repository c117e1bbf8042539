"""experiments/channel_alone.py on a planted corpus: each variant is the channel as
`hatt train` fits it, chosen the way its name says, beside a cross-validated baseline."""

import numpy as np

from experiments import channel_alone
from experiments.harness import Pool
from tests._planted import planted_corpus


def pool(n, seed):
    texts, labels = planted_corpus(n, seed, cue_rate=0.6, lean=0.7)
    names = np.array(["negative", "positive"])[np.asarray(labels)]
    return Pool(list(texts), names, [str(i) for i in range(n)])


def test_every_variant_scores_the_held_out_reviews_as_its_name_says():
    draw, held_out = pool(160, 0), pool(120, 1)
    cells = channel_alone.channel_cells("cnn", draw, held_out, ["negative", "positive"], 7)
    assert set(cells) == set(channel_alone.VARIANTS)
    for cell in cells.values():
        assert 0.5 < cell["accuracy"] <= 1.0 and 0.0 < cell["macro_f1"] <= 1.0
    assert cells["validation"]["cv_accuracy"] is None  # chosen on the validation slice
    for variant in ("folds", "folds_wide", "tfidf"):
        assert 0.5 < cells[variant]["cv_accuracy"] <= 1.0
    assert cells["folds_wide"]["C"] in channel_alone.WIDE_C["sqrt"]
    assert cells["tfidf"]["C"] in channel_alone.TFIDF_C
    baseline = channel_alone.baseline_cell(draw, held_out, 7)
    assert baseline["C"] in channel_alone.BASELINE_C and 0.5 < baseline["accuracy"] <= 1.0


def test_held_out_reviews_never_come_from_a_draw():
    labels = np.array(["negative", "positive"] * 50)
    drawn = np.arange(0, 100, 3)
    rows = channel_alone.held_out_rows(labels, drawn, 40, seed=3)
    assert len(rows) == 40 and not set(rows) & set(drawn)
    np.testing.assert_array_equal(rows, channel_alone.held_out_rows(labels, drawn, 40, seed=3))
