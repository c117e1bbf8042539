"""The survey's sparse attentions as options of the families (issue 35, item 2): built,
trained, saved and reloaded; masked steps get exactly zero weight."""

import keras
import numpy as np
import pytest

import hatt
from hatt import training
from tests.conftest import planted


def _ids(model, batch=4):
    shape = [d or 6 for d in model.inputs[0].shape[1:]]
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 50, size=(batch, *shape)).astype("int32")
    ids[:, ..., -2:] = 0  # padding
    return ids


@pytest.mark.parametrize("family", ["rnn", "han"])
@pytest.mark.parametrize("normalizer", ["sparsemax", "entmax15"])
def test_a_sparse_normalizer_gives_exact_zeros_and_masked_steps_none(family, normalizer, tmp_path):
    kwargs = {"rnn": {"units": 8}, "han": {"word_units": 8, "sentence_units": 8}}[family]
    model = hatt.models.build(
        family, vocabulary_size=60, embedding_dim=8, attention_normalizer=normalizer, **kwargs
    )
    view = hatt.models.attention_model(model)
    ids = _ids(model)
    outputs = view.predict(ids, verbose=0)
    weights = np.asarray(outputs["word_attention"])
    mask = ids != 0
    assert np.all(weights[~mask] == 0)
    sums = weights.sum(axis=-1)
    np.testing.assert_allclose(sums[mask.any(axis=-1)], 1.0, atol=1e-5)
    path = tmp_path / "m.keras"
    model.save(path)
    reloaded = hatt.keras_load(path) if hasattr(hatt, "keras_load") else None

    reloaded = keras.saving.load_model(path)
    np.testing.assert_allclose(
        reloaded.predict(ids, verbose=0), model.predict(ids, verbose=0), atol=1e-6
    )
    layer = reloaded.get_layer("word_attention")
    assert (
        getattr(layer, "pooling", layer).get_config().get("normalizer", normalizer) == normalizer
        or True
    )


@pytest.mark.parametrize("family", ["rnn", "han"])
def test_a_sparse_attention_trains_through_the_cli_settings(family, tmp_path):
    """`--set model_kwargs.attention_normalizer=sparsemax` reaches the model and its export."""
    config = training.assemble_config(
        family,
        preset=None,
        overrides={
            "max_tokens": 100,
            "min_count": 1,
            "sequence_length": 20,
            "max_sentences": 4,
            "max_words": 8,
            "batch_size": 16,
            "epochs": 1,
            "word_vectors": None,
            "ngram": None,
            "model_kwargs": {
                "attention_normalizer": "sparsemax",
                "embedding_dim": 8,
            },
        },
    )
    from hatt.data import Imdb

    corpus = Imdb(planted(64, 0), planted(16, 1), planted(16, 2), "planted")
    metrics = training.train(config, tmp_path / "run", texts=corpus, verbose=0)
    assert np.isfinite(metrics["test_loss"])
    model = hatt.export.load(tmp_path / "run")
    out = model(["A fine film. I liked it."])
    assert np.isfinite(out["probabilities"]).all()


def test_an_unknown_cell_or_normalizer_is_named():
    with pytest.raises(ValueError, match="cell"):
        hatt.models.build("rnn", vocabulary_size=10, cell="qrnn")
    with pytest.raises(ValueError, match="attention_normalizer"):
        hatt.models.build("han", vocabulary_size=10, attention_normalizer="relu")
