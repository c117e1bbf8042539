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


@pytest.mark.parametrize("family", FAMILIES)
def test_ngram_channel_adds_its_logit_and_keeps_the_contracts(family, tmp_path):
    """With `ngram_buckets`, probability = sigmoid(deep logit + NgramLogit(ids))."""
    import keras

    model = build_small(family, ngram_buckets=64, ngram_reduction="mean")
    ids = batch_for(family)
    wide = model.get_layer("ngram_logit")
    wide.embeddings.assign(np.linspace(-2, 2, wide.num_features).astype("float32"))
    probability = check_forward(model, ids)
    logit = keras.Model(model.inputs, model.get_layer("logit").output)(ids)
    expected = 1 / (1 + np.exp(-(to_numpy(logit) + to_numpy(wide(ids)))))
    np.testing.assert_allclose(probability, expected, rtol=1e-5, atol=1e-6)
    check_padding_invariance(family, model, ids)
    check_attention(family, model, ids)
    path = tmp_path / "wide.keras"
    model.save(path)
    np.testing.assert_allclose(to_numpy(keras.saving.load_model(path)(ids)), probability, atol=1e-6)


def test_ngram_channel_bad_arguments():
    for kwargs, name in (
        ({"ngram_buckets": -1}, "ngram_buckets"),
        ({"ngram_l2": -1.0}, "ngram_l2"),
        ({"ngram_reduction": "max"}, "ngram_reduction"),
    ):
        with pytest.raises(ValueError, match=name):
            build_small("cnn", **kwargs)
