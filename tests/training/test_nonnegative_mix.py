"""The separate fit's two-class mix never gives a part a negative weight (issue 30)."""

import numpy as np
from sklearn.linear_model import LogisticRegression

from hatt.training.ngram import _fit_binary_mix


def _parts(seed, deep_sign):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 400)
    sign = 2 * y - 1
    deep = deep_sign * 0.8 * sign + rng.normal(size=400)
    channel = 1.5 * sign + rng.normal(size=400)
    return deep, channel, y


def test_equals_the_unconstrained_fit_when_that_is_non_negative():
    deep, channel, y = _parts(0, deep_sign=1)
    reference = LogisticRegression(C=1e4, max_iter=1000, tol=1e-10).fit(
        np.stack([deep, channel], 1), y
    )
    assert np.all(reference.coef_ > 0)
    mix = _fit_binary_mix(deep, channel, y)
    np.testing.assert_allclose([mix.deep, mix.channel], reference.coef_[0], rtol=1e-3)
    np.testing.assert_allclose(mix.bias, reference.intercept_[0], rtol=1e-3, atol=1e-3)


def test_a_part_that_points_backwards_gets_weight_zero():
    deep, channel, y = _parts(1, deep_sign=-1)
    reference = LogisticRegression(C=1e4, max_iter=1000).fit(np.stack([deep, channel], 1), y)
    assert reference.coef_[0, 0] < 0  # the unconstrained fit would reverse the deep part
    mix = _fit_binary_mix(deep, channel, y)
    assert mix.deep == 0.0 and mix.channel > 0
