"""hatt.models.build_transformer: Transformer blocks with attention pooling."""

import pytest

import hatt

from ._model_test import (
    batch_for,
    build_small,
    check_attention,
    check_forward,
    check_padding_invariance,
)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"position_embedding": "sinusoidal", "num_layers": 2},
        {"norm_first": True, "attention_score": "scaled_dot"},
    ],
)
def test_variants(kwargs):
    model = build_small("transformer", **kwargs)
    ids = batch_for("transformer")
    check_forward(model, ids)
    check_padding_invariance("transformer", model, ids)
    check_attention("transformer", model, ids)


def test_blocks_are_named():
    model = build_small("transformer", num_layers=3)
    for i in range(3):
        assert isinstance(model.get_layer(f"transformer_block_{i}"), hatt.layers.TransformerBlock)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_heads": 0}, "num_heads=0"),
        ({"embedding_dim": 10, "num_heads": 4}, "embedding_dim=10, num_heads=4"),
        ({"intermediate_dim": "64"}, "intermediate_dim='64'"),
        ({"sequence_length": 0}, "sequence_length=0"),
        ({"position_embedding": "rotary"}, "position_embedding='rotary'"),
        ({"norm_first": "yes"}, "norm_first='yes'"),
        ({"num_layers": 0}, "num_layers=0"),
    ],
)
def test_bad_arguments(kwargs, message):
    kwargs = {"vocabulary_size": 30, **kwargs}
    with pytest.raises(ValueError, match=message):
        hatt.models.build_transformer(**kwargs)
