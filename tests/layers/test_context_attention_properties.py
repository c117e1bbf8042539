"""Properties of ContextAttention on random shapes, masks and values (TF and torch backends).

For every score function, one or several heads, batch and length 0 included,
masks with fully masked rows, magnitudes up to 1e4 and NaN / inf at masked
steps: outputs, weights and gradients are finite; weights are zero on masked
steps and sum to 1 over the kept steps of rows that have any; rows without a
kept step give zero weights and a zero output; the output is the weighted sum
of the (clean) inputs, and does not depend on what the masked steps hold.
"""

import keras
import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hatt.layers import ContextAttention
from hatt.layers.context_attention import SCORES

from ._layer_test import gradients, to_numpy

# A fixed, reproducible budget (the same examples on every run) that keeps this
# file at a few seconds per backend.
BUDGET = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
POISONS = {"none": None, "nan": np.nan, "inf": np.inf, "-inf": -np.inf}


@st.composite
def cases(draw):
    batch = draw(st.integers(0, 4))
    steps = draw(st.integers(0, 6))
    features = draw(st.integers(1, 4))
    case = {
        "score": draw(st.sampled_from(SCORES)),
        "heads": draw(st.sampled_from([1, 3])),
        "units": draw(st.sampled_from([None, 1, 3])),
        "penalty": draw(st.sampled_from([0.0, 0.5])),
        "scale": draw(st.sampled_from([1.0, 1e4])),
        "seed": draw(st.integers(0, 2**16)),
        "shape": (batch, steps, features),
    }
    use_mask = draw(st.booleans())
    case["mask"] = draw(hnp.arrays(bool, (batch, steps))) if use_mask else None
    case["poison"] = draw(st.sampled_from(list(POISONS))) if use_mask else "none"
    return case


def run(case):
    rng = np.random.default_rng(case["seed"])
    clean = (case["scale"] * rng.standard_normal(case["shape"])).astype("float32")
    mask = case["mask"]
    keep = np.ones(case["shape"][:2], bool) if mask is None else mask
    dirty = clean.copy()
    if POISONS[case["poison"]] is not None:
        dirty[~keep] = POISONS[case["poison"]]
    initializer = keras.initializers.RandomNormal(stddev=1.0, seed=case["seed"])
    layer = ContextAttention(
        units=case["units"],
        score=case["score"],
        heads=case["heads"],
        penalty=case["penalty"],
        kernel_initializer=initializer,
        bias_initializer=initializer,
        context_initializer=initializer,
        score_initializer=initializer,
    )
    return layer, clean, dirty, keep


@BUDGET
@given(cases())
@example(  # NaN at a masked step used to make the row and every kernel gradient NaN
    {
        "score": "additive",
        "heads": 3,
        "units": None,
        "penalty": 0.5,
        "scale": 1.0,
        "seed": 0,
        "shape": (2, 3, 2),
        "mask": np.array([[True, False, True], [False, False, False]]),
        "poison": "nan",
    }
)
@example(  # an empty batch failed in keras.ops.max ("Cannot compute the max of an empty tensor")
    {
        "score": "dot",
        "heads": 1,
        "units": None,
        "penalty": 0.0,
        "scale": 1.0,
        "seed": 0,
        "shape": (0, 4, 3),
        "mask": None,
        "poison": "none",
    }
)
@example(  # so did zero-length inputs
    {
        "score": "general",
        "heads": 3,
        "units": 1,
        "penalty": 0.5,
        "scale": 1e4,
        "seed": 0,
        "shape": (2, 0, 3),
        "mask": np.zeros((2, 0), bool),
        "poison": "none",
    }
)
def test_outputs_weights_and_gradients(case):
    layer, clean, dirty, keep = run(case)
    batch, steps, features = case["shape"]
    heads = case["heads"]
    outputs, weights = layer(dirty, mask=case["mask"], return_attention_scores=True)
    outputs, weights = to_numpy(outputs), to_numpy(weights)
    assert outputs.shape == (batch, heads * features)
    assert weights.shape == ((batch, steps) if heads == 1 else (batch, heads, steps))
    assert np.isfinite(outputs).all() and np.isfinite(weights).all()

    weights = weights.reshape(batch, heads, steps).astype("float64")
    kept = np.broadcast_to(keep[:, None, :], weights.shape)
    assert (weights[~kept] == 0).all()
    assert (weights >= 0).all()
    rows = keep.any(axis=1)
    np.testing.assert_allclose(weights[rows].sum(axis=-1), 1.0, atol=1e-5)
    assert (weights[~rows] == 0).all()
    assert (outputs[~rows] == 0).all()

    # The output is the weighted sum of the clean inputs (masked steps zeroed)...
    zeroed = np.where(keep[:, :, None], clean, 0.0).astype("float64")
    pooled = np.einsum("bht,btd->bhd", weights, zeroed).reshape(batch, heads * features)
    np.testing.assert_allclose(outputs, pooled, rtol=1e-4, atol=1e-4 * case["scale"])
    # ... and whatever the masked steps hold, the layer computes the same.
    np.testing.assert_allclose(
        to_numpy(layer(clean, mask=case["mask"])), outputs, rtol=1e-5, atol=1e-5 * case["scale"]
    )

    # Gradients of a loss on outputs, weights and the penalty: finite everywhere,
    # zero at the masked steps.
    rng = np.random.default_rng(case["seed"] + 1)
    output_coefficients = rng.standard_normal(outputs.shape).astype("float32")
    weight_coefficients = rng.standard_normal((batch, heads, steps)).astype("float32")

    def loss(inputs):
        pooled, attention = layer(inputs, mask=case["mask"], return_attention_scores=True)
        attention = keras.ops.reshape(attention, (batch, heads, steps))
        total = keras.ops.sum(keras.ops.multiply(pooled / case["scale"], output_coefficients))
        total = total + keras.ops.sum(keras.ops.multiply(attention, weight_coefficients))
        return total + sum(layer.losses, 0.0)

    input_grad, *weight_grads = gradients(loss, dirty, layer.trainable_weights)
    assert input_grad.shape == dirty.shape and np.isfinite(input_grad).all()
    assert (input_grad[~keep] == 0).all()
    for grad, variable in zip(weight_grads, layer.trainable_weights, strict=True):
        assert grad.shape == tuple(variable.shape) and np.isfinite(grad).all(), variable.name
