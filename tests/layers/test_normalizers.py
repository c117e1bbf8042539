"""Tests for hatt.layers.normalizers against NumPy references (TensorFlow and torch backends)."""

import keras
import numpy as np
import pytest

from hatt.layers.normalizers import NORMALIZERS, check_normalizer, entmax15, normalize, sparsemax

from ._layer_test import gradients, to_numpy


def np_sparsemax(z):
    """Closed-form sparsemax of a 1-D array (Martins & Astudillo 2016)."""
    s = np.sort(z)[::-1]
    k = np.arange(1, len(z) + 1)
    cs = np.cumsum(s)
    kz = k[1 + k * s > cs].max()
    tau = (cs[kz - 1] - 1) / kz
    return np.maximum(z - tau, 0)


def np_entmax15(z):
    """Entmax-1.5 by bisection on tau: sum max(0, (z - tau)/2)^2 = 1."""
    lo, hi = z.max() - 2.0, z.max()
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.sum(np.maximum(0, (z - mid) / 2) ** 2) > 1:
            lo = mid
        else:
            hi = mid
    return np.maximum(0, (z - (lo + hi) / 2) / 2) ** 2


def np_masked(fn, z, mask):
    out = np.zeros_like(z)
    for idx in np.ndindex(z.shape[:-1]):
        keep = mask[idx]
        if keep.any():
            out[idx + (keep,)] = fn(z[idx][keep])
    return out


def np_softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


REFERENCES = {"softmax": np_softmax, "sparsemax": np_sparsemax, "entmax15": np_entmax15}


def case(seed=0, shape=(4, 7)):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=shape).astype("float32") * 2
    mask = rng.random(shape) > 0.3
    mask[0] = False  # an all-masked row
    mask[1] = True
    return z, mask


@pytest.mark.parametrize("name", NORMALIZERS)
def test_matches_numpy_reference_with_masks(name):
    z, mask = case()
    got = to_numpy(normalize(z, mask, name))
    want = np_masked(REFERENCES[name], z.astype("float64"), mask)
    np.testing.assert_allclose(got, want, atol=2e-5)
    assert np.all(got[~mask] == 0)
    assert np.all(got[0] == 0)
    np.testing.assert_allclose(got[1:].sum(-1), 1, atol=1e-5)


@pytest.mark.parametrize("name", ["sparsemax", "entmax15"])
def test_without_mask_and_sparsity(name):
    z = np.array([[3.0, 1.0, -2.0, 0.5], [0.0, 0.0, 0.0, 0.0]], "float32")
    got = to_numpy(normalize(z, None, name))
    want = np.stack([REFERENCES[name](r.astype("float64")) for r in z])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert got[0, 2] == 0  # a clearly low logit gets exactly zero
    np.testing.assert_allclose(got[1], 0.25, atol=1e-6)


def test_entmax_threshold_equation():
    z, mask = case(seed=3, shape=(6, 9))
    p = to_numpy(entmax15(z, mask))
    for row, keep in zip(range(1, 6), mask[1:], strict=True):
        np.testing.assert_allclose(p[row][keep].sum(), 1, atol=1e-5)
        support = p[row] > 0
        # on the support (z - tau)/2 = sqrt(p): one tau for all its positions
        taus = z[row][support] - 2 * np.sqrt(p[row][support])
        np.testing.assert_allclose(taus, taus[0], atol=1e-4)


@pytest.mark.parametrize("name", NORMALIZERS)
def test_one_token_and_nan_at_masked(name):
    z = np.array([[[1.5]], [[np.nan]]], "float32")
    mask = np.array([[[True]], [[False]]])
    got = to_numpy(normalize(z, mask, name))
    np.testing.assert_array_equal(got, [[[1.0]], [[0.0]]])


@pytest.mark.parametrize("name", ["sparsemax", "entmax15"])
def test_gradients_finite_and_match_finite_differences(name):
    z, mask = case(seed=5, shape=(3, 6))
    z[1, 2] = z[1, 3]  # a tie
    fn = sparsemax if name == "sparsemax" else entmax15
    weight = np.random.default_rng(1).normal(size=z.shape).astype("float32")

    def loss(x):
        return keras.ops.sum(keras.ops.multiply(fn(x, mask), keras.ops.convert_to_tensor(weight)))

    (grad,) = gradients(loss, z, [])
    assert np.all(np.isfinite(grad))
    assert np.all(grad[~mask] == 0)
    eps = 1e-3
    zz = z.astype("float64")
    ref = REFERENCES[name]
    for idx in [(1, 0), (1, 4), (2, 1), (2, 5)]:
        if not mask[idx]:
            continue
        up, down = zz.copy(), zz.copy()
        up[idx] += eps
        down[idx] -= eps
        fd = ((np_masked(ref, up, mask) - np_masked(ref, down, mask)) * weight).sum() / (2 * eps)
        np.testing.assert_allclose(grad[idx], fd, atol=2e-3)


@pytest.mark.parametrize("name", ["sparsemax", "entmax15"])
def test_float16_and_empty_axis(name):
    z, mask = case()
    got = to_numpy(normalize(z.astype("float16"), mask, name))
    assert got.dtype == np.float16
    np.testing.assert_allclose(
        got, np_masked(REFERENCES[name], z.astype("float64"), mask), atol=2e-3
    )
    empty = to_numpy(normalize(np.zeros((2, 0), "float32"), None, name))
    assert empty.shape == (2, 0)


def test_bad_normalizer():
    with pytest.raises(ValueError, match=r"normalizer='relu'"):
        check_normalizer("relu")
