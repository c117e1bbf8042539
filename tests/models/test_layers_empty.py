"""The builders' helper layers on an empty batch and a zero-length input: empty in, empty out."""

import keras
import numpy as np
import pytest

import hatt
from hatt.models.wiring import EncoderMask, MaxOverTime, MeanOverTime

from ._model_test import batch_for, build_small, to_numpy


@pytest.mark.parametrize("shape", [(0, 5, 3), (2, 0, 3)])
def test_max_over_time_on_empty_input(shape):
    inputs = np.zeros(shape, "float32")
    mask = np.ones(shape[:2], bool)
    outputs, weights = MaxOverTime()(inputs, mask=mask, return_attention_scores=True)
    assert to_numpy(outputs).shape == (shape[0], shape[2])
    assert to_numpy(weights).shape == shape[:2]
    assert np.all(to_numpy(outputs) == 0)


def test_max_over_time_keeps_its_values_and_winners():
    rng = np.random.default_rng(0)
    inputs = rng.normal(size=(3, 4, 5)).astype("float32")
    mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], bool)
    outputs, weights = MaxOverTime()(inputs, mask=mask, return_attention_scores=True)
    masked = np.where(mask[:, :, None], inputs, -np.inf)
    expected = np.where(mask.any(1)[:, None], masked.max(1), 0.0)
    np.testing.assert_allclose(to_numpy(outputs), expected, atol=1e-6)
    winners = np.zeros((3, 4))
    for b in range(2):
        for d in range(5):
            winners[b, masked[b, :, d].argmax()] += 1 / 5
    np.testing.assert_allclose(to_numpy(weights), winners, atol=1e-6)


@pytest.mark.parametrize("shape", [(0, 5, 3), (2, 0, 3)])
def test_mean_over_time_on_empty_input(shape):
    outputs = to_numpy(MeanOverTime()(np.zeros(shape, "float32"), mask=np.ones(shape[:2], bool)))
    assert outputs.shape == (shape[0], shape[2]) and np.all(outputs == 0)


def test_mean_over_time_averages_the_kept_steps_only():
    rng = np.random.default_rng(1)
    inputs = rng.normal(size=(3, 4, 5)).astype("float32")
    inputs[0, 3] = np.nan  # a masked step's NaN does not leak
    mask = np.array([[1, 1, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]], bool)
    outputs = to_numpy(MeanOverTime()(np.nan_to_num(inputs, nan=0.0), mask=mask))
    expected = np.stack([inputs[0, :3].mean(0), inputs[1, 1], np.zeros(5)])
    np.testing.assert_allclose(outputs, expected, atol=1e-6)
    unmasked = to_numpy(MeanOverTime()(np.nan_to_num(inputs, nan=0.0)))
    np.testing.assert_allclose(unmasked, np.nan_to_num(inputs, nan=0.0).mean(1), atol=1e-6)


@pytest.mark.parametrize("shape", [(0, 5), (2, 0)])
def test_encoder_mask_on_empty_input(shape):
    assert to_numpy(EncoderMask()(np.ones(shape, bool))).shape == shape


@pytest.mark.parametrize("family", hatt.models.FAMILIES)
def test_every_family_gives_an_empty_result_on_an_empty_batch(family):
    model = build_small(family, ngram={"buckets": 16})
    ids = batch_for(family)[:0]
    probability = to_numpy(model(ids))
    assert probability.shape == (0, 1)
    views = hatt.models.attention_model(model)(keras.ops.convert_to_tensor(ids))
    assert to_numpy(views["word_attention"]).shape[0] == 0
