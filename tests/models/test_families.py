"""Properties every model family must have: shapes, padding, attention, learning."""

import numpy as np
import pytest

import hatt

from ._model_test import (
    batch_for,
    build_small,
    check_attention,
    check_forward,
    check_learns_planted_word,
    check_padding_invariance,
    to_numpy,
)

FAMILIES = list(hatt.models.FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_forward_on_padding_and_empty_review(family):
    model = build_small(family)
    ids = batch_for(family)
    probability = check_forward(model, ids)
    # In training mode (dropout on) the empty review is still finite.
    assert np.isfinite(to_numpy(model(ids, training=True))).all()
    assert probability.shape == (4, 1)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_sublayer_is_named_by_the_builder(family):
    model = build_small(family)
    names = [layer.name for layer in model.layers]
    assert len(names) == len(set(names))
    for name in names:
        # Keras' automatic names end in a counter (`dense_3`); ours never do, except conv widths.
        assert not name.startswith(("dense", "bidirectional", "input_layer")), name
    assert model.get_layer("probability").output.shape == (None, 1)


@pytest.mark.parametrize("family", FAMILIES)
def test_padding_invariance(family):
    check_padding_invariance(family, build_small(family), batch_for(family))


@pytest.mark.parametrize("family", FAMILIES)
def test_attention_model(family):
    check_attention(family, build_small(family), batch_for(family))


@pytest.mark.parametrize("family", FAMILIES)
def test_training_step_with_an_empty_review_stays_finite(family):
    model = build_small(family)
    ids = batch_for(family)
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    loss = model.train_on_batch(ids, np.array([[1.0], [0.0], [1.0], [0.0]], dtype="float32"))
    assert np.isfinite(loss)
    for variable in model.trainable_variables:
        assert np.isfinite(to_numpy(variable)).all(), variable.path
    check_forward(model, ids)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_learns_planted_word(family):
    check_learns_planted_word(family, build_small(family))
