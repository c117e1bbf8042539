"""Properties every model family must have: shapes, padding, attention, learning."""

from types import SimpleNamespace

import numpy as np
import pytest

import hatt
from tests.conftest import PerFamily

from ._model_test import (
    SMALL,
    batch_for,
    build_small,
    check_attention,
    check_forward,
    check_learns_planted_word,
    pad_more,
    to_numpy,
)

FAMILIES = list(hatt.models.FAMILIES)


@pytest.fixture(scope="module")
def built():
    """``{family: run}``: one untrained small model a family, built and run once for the
    tests that only read it (an eager HAN call costs seconds): the model, its batch, the
    probabilities in inference and training mode, and those of the batch padded further."""

    def make(family):
        model, ids = build_small(family), batch_for(family)
        return SimpleNamespace(
            model=model,
            ids=ids,
            probability=check_forward(model, ids),
            training=to_numpy(model(ids, training=True)),
            padded=to_numpy(model(pad_more(family, ids), training=False)),
        )

    return PerFamily(make)


@pytest.mark.parametrize("family", FAMILIES)
def test_forward_on_padding_and_empty_review(family, built):
    run = built[family]  # check_forward checked the inference call
    # In training mode (dropout on) the empty review is still finite.
    assert np.isfinite(run.training).all()
    assert run.probability.shape == (4, 1)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_sublayer_is_named_by_the_builder(family, built):
    model = built[family].model
    names = [layer.name for layer in model.layers]
    assert len(names) == len(set(names))
    for name in names:
        # Keras' automatic names end in a counter (`dense_3`); ours never do, except conv widths.
        assert not name.startswith(("dense", "bidirectional", "input_layer")), name
    assert model.get_layer("probability").output.shape == (None, 1)


@pytest.mark.parametrize("family", FAMILIES)
def test_padding_invariance(family, built):
    """check_padding_invariance's comparison, on the calls made once."""
    np.testing.assert_allclose(built[family].padded, built[family].probability, atol=1e-5, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_attention_model(family, built):
    check_attention(family, built[family].model, built[family].ids)


@pytest.mark.parametrize("family", FAMILIES)
def test_training_step_with_an_empty_review_stays_finite(family):
    model = build_small(family)
    ids = batch_for(family)
    # eagerly: the step's math, without tracing a train function for one step (a HAN's
    # trace costs many times its step); test_learns_planted_word trains in graph mode
    model.compile(optimizer="sgd", loss="binary_crossentropy", run_eagerly=True)
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
    """With `ngram`, probability = sigmoid(deep logit + NgramLogit(ids))."""
    import keras

    model = build_small(family, ngram={"buckets": 64, "reduction": "mean"})
    ids = batch_for(family)
    wide = model.get_layer("ngram_logit")
    wide.embeddings.assign(np.linspace(-2, 2, wide.num_features).astype("float32"))
    probability = check_forward(model, ids)
    logit = keras.Model(model.inputs, model.get_layer("logit").output)(ids)
    expected = 1 / (1 + np.exp(-(to_numpy(logit) + to_numpy(wide(ids)))))
    np.testing.assert_allclose(probability, expected, rtol=1e-5, atol=1e-6)
    padded = to_numpy(model(pad_more(family, ids), training=False))  # padding invariance
    np.testing.assert_allclose(padded, probability, atol=1e-5, rtol=0)
    check_attention(family, model, ids)
    path = tmp_path / "wide.keras"
    model.save(path)
    np.testing.assert_allclose(to_numpy(keras.saving.load_model(path)(ids)), probability, atol=1e-6)


def test_ngram_channel_bad_arguments():
    for channel, name in (
        ({"buckets": -1}, "ngram.buckets"),
        ({"buckets": 0}, "ngram.buckets"),
        ({"l2": -1.0}, "ngram.l2"),
        ({"reduction": "max"}, "ngram.reduction"),
        ({"binary": 1}, "ngram.binary"),
        ("yes", "ngram"),
    ):
        with pytest.raises(ValueError, match=name):
            build_small("cnn", ngram=channel)


@pytest.mark.parametrize("family", FAMILIES)
def test_builders_end_at_the_document_vector_and_take_no_head_arguments(family):
    """The family builders return the backbone; the head is composed once by `build`."""
    import inspect

    builder = getattr(hatt.models, f"build_{family}")
    assert not [p for p in inspect.signature(builder).parameters if p.startswith("ngram")]
    backbone = builder(vocabulary_size=40, **SMALL[family])
    assert len(backbone.output.shape) == 2  # [batch, d]
    assert "probability" not in {layer.name for layer in backbone.layers}


@pytest.mark.parametrize("family", FAMILIES)
def test_many_classes_give_a_softmax_over_num_classes(family, tmp_path):
    import keras

    model = build_small(family, num_classes=5)
    ids = batch_for(family)
    probabilities = to_numpy(model(ids))
    assert probabilities.shape == (4, 5)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    logits = to_numpy(keras.Model(model.inputs, model.get_layer("logit").output)(ids))
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(probabilities, expected / expected.sum(-1, keepdims=True), atol=1e-5)
    assert hatt.models.head.num_classes_of(model) == 5
    path = tmp_path / "five.keras"
    model.save(path)
    np.testing.assert_allclose(
        to_numpy(keras.saving.load_model(path)(ids)), probabilities, atol=1e-6
    )


def test_head_rejects_bad_num_classes():
    for value in (1, 0, 2.0, True, "3"):
        with pytest.raises(ValueError, match="num_classes"):
            build_small("cnn", num_classes=value)
        with pytest.raises(ValueError, match="num_classes"):
            build_small("cnn", num_classes=value, ngram={"buckets": 8})
