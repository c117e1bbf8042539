"""hatt.models.build_han: words → sentences → document, with attention at both levels."""

import numpy as np
import pytest

import hatt
from hatt.models._layers import FoldSentences, UnfoldSentences

from ._model_test import (
    build_small,
    check_attention,
    check_forward,
    check_padding_invariance,
    nested_batch,
    to_numpy,
)


def test_fold_and_unfold_round_trip():
    x = np.arange(2 * 3 * 4 * 5, dtype="float32").reshape(2, 3, 4, 5)
    folded = FoldSentences()(x)
    assert tuple(folded.shape) == (6, 4, 5)
    np.testing.assert_array_equal(to_numpy(UnfoldSentences()([folded, x])), x)


def test_no_time_distributed_and_one_word_encoder():
    model = build_small("han")
    kinds = {type(layer).__name__ for layer in model.layers}
    assert "TimeDistributed" not in kinds
    # The word encoder sees [batch * S, W, embedding_dim]: one row per sentence.
    assert model.get_layer("word_encoder").output.shape == (None, None, 32)


def test_empty_sentence_in_the_middle_gets_no_weight():
    model = build_small("han")
    ids = nested_batch()
    views = check_attention("han", model, ids)
    assert views["sentence_attention"][3, 1] == 0
    assert (views["word_attention"][3, 1] == 0).all()


@pytest.mark.parametrize("kwargs", [{"cell": "lstm"}, {"attention_units": 8}])
def test_variants(kwargs):
    model = build_small("han", **kwargs)
    ids = nested_batch()
    check_forward(model, ids)
    check_padding_invariance("han", model, ids)
    check_attention("han", model, ids)


def test_sentence_order_matters_but_padding_does_not():
    """Extra padded sentences at the end change nothing; moving a sentence changes the output."""
    model = build_small("han")
    ids = nested_batch()[:1]
    swapped = ids[:, [1, 0, 2]]
    assert not np.allclose(to_numpy(model(ids)), to_numpy(model(swapped)), atol=1e-7)
    check_padding_invariance("han", model, ids)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"word_units": 0}, "word_units=0"),
        ({"sentence_units": None}, "sentence_units=None"),
        ({"cell": "GRU"}, "cell='GRU'"),
        ({"attention_score": None}, "attention_score=None"),
        ({"dropout": "0.1"}, "dropout='0.1'"),
    ],
)
def test_bad_arguments(kwargs, message):
    kwargs = {"vocabulary_size": 30, **kwargs}
    with pytest.raises(ValueError, match=message):
        hatt.models.build_han(**kwargs)
