"""The separate fit's mix (hatt.training.channel.mix): non-negative weights, one per part, and the
deep part kept only when it adds to the channel on held-out reviews (issue 30)."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.special import softmax
from sklearn.linear_model import LogisticRegression

from hatt.training.channel import mix as mix_lib
from hatt.training.channel.mix import choose_mix, fit_mix, held_out_check


def _parts(seed, deep_sign, n=400, deep_strength=0.8):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    sign = 2 * y - 1
    deep = deep_sign * deep_strength * sign + rng.normal(size=n)
    channel = 1.5 * sign + rng.normal(size=n)
    return deep, channel, y


def _classes(seed, n=300, classes=3, deep_strength=1.0):
    """``[N, C]`` logits of two parts that each see the true class through noise."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    onehot = np.eye(classes)[y]
    deep = deep_strength * 2.0 * onehot + rng.normal(size=(n, classes))
    channel = 2.0 * onehot + rng.normal(size=(n, classes))
    return deep, channel, y


def test_equals_the_unconstrained_fit_when_that_is_non_negative():
    deep, channel, y = _parts(0, deep_sign=1)
    reference = LogisticRegression(C=mix_lib.MIX_C, max_iter=1000, tol=1e-10).fit(
        np.stack([deep, channel], 1), y
    )
    assert np.all(reference.coef_ > 0)
    mix = fit_mix(deep, channel, y)
    np.testing.assert_allclose([mix.deep, mix.channel], reference.coef_[0], rtol=1e-3)
    np.testing.assert_allclose(mix.bias, reference.intercept_[0], rtol=1e-3, atol=1e-3)


def test_a_part_that_points_backwards_gets_weight_zero():
    deep, channel, y = _parts(1, deep_sign=-1)
    reference = LogisticRegression(C=1e4, max_iter=1000).fit(np.stack([deep, channel], 1), y)
    assert reference.coef_[0, 0] < 0  # the unconstrained fit would reverse the deep part
    mix = fit_mix(deep, channel, y)
    assert mix.deep == 0.0 and mix.channel > 0


def test_the_softmax_mix_gradient_matches_finite_differences():
    deep, channel, y = _classes(2, n=60)
    loss, dz = mix_lib._loss_and_gradient(deep + 0.3 * channel, y)
    reference = -np.log(softmax(deep + 0.3 * channel, axis=1)[np.arange(len(y)), y]).sum()
    assert loss == pytest.approx(reference, rel=1e-10)

    def total(z_flat):
        return mix_lib._loss_and_gradient(z_flat.reshape(deep.shape), y)[0]

    numeric = approx_fprime((deep + 0.3 * channel).ravel(), total, 1e-6)
    np.testing.assert_allclose(dz.ravel(), numeric, rtol=1e-4, atol=1e-5)


def test_above_two_classes_one_weight_a_part_and_a_bias_a_class():
    deep, channel, y = _classes(3)
    mix = fit_mix(deep, channel, y)
    assert mix.deep > 0 and mix.channel > 0 and np.shape(mix.bias) == (3,)

    # the optimum: no other (a, b, c) of the family has a lower penalized loss
    def penalized(a, b, c):
        loss = mix_lib._loss_and_gradient(a * deep + b * channel + c, y)[0]
        return mix_lib.MIX_C * loss + 0.5 * (a * a + b * b)

    best = penalized(mix.deep, mix.channel, mix.bias)
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = np.maximum(0, [mix.deep, mix.channel] + rng.normal(0, 0.05, 2))
        assert penalized(a, b, mix.bias + rng.normal(0, 0.05, 3)) >= best - 1e-6


def test_a_weak_deep_part_is_kept_with_a_warning_and_an_informative_one_without():
    # A weak deep part that a fit on 80 validation reviews still weighs: kept (the rule
    # chosen on tuning reviews), and the warning says the held-out check found it hurt.
    weak, channel, y = _parts(0, deep_sign=1, n=80, deep_strength=0.1)
    fitted = fit_mix(weak, channel, y, anchor=0.0)
    assert fitted.deep > 0.2
    mix, warnings = choose_mix(weak, channel, y, 2, 0.0)
    assert mix.deep == pytest.approx(fitted.deep) and mix.channel == pytest.approx(fitted.channel)
    assert mix.held_out["keep_deep"] and mix.held_out["folds"] == 5
    assert mix.held_out["difference"] > 0  # it raised the held-out log loss
    assert len(warnings) == 1 and "did not lower the n-gram channel's log loss" in warnings[0]
    assert "5-fold cross-validation on 80 reviews" in warnings[0]
    deep, channel, y = _parts(5, deep_sign=1, n=400, deep_strength=2.0)
    mix, warnings = choose_mix(deep, channel, y, 2, 0.0)
    assert mix.deep > 0 and mix.held_out["keep_deep"] and warnings == []
    assert mix.held_out["mixed_loss"] < mix.held_out["channel_loss"]


def test_a_margin_drops_a_weak_deep_part_for_the_channel_alone(monkeypatch):
    assert mix_lib.keeps_deep(0.5, 0.0, margin=-np.inf)  # always, even with no spread
    assert mix_lib.keeps_deep(-0.05, 0.02, margin=1.0)
    assert not mix_lib.keeps_deep(-0.01, 0.02, margin=1.0)
    monkeypatch.setattr(mix_lib, "KEEP_MARGIN_SE", 1.0)  # the rule before issue 36
    weak, channel, y = _parts(0, deep_sign=1, n=80, deep_strength=0.1)
    mix, warnings = choose_mix(weak, channel - 0.3, y, 2, 0.3)
    # the channel alone, anchored at its own intercept as the fit with the deep part was
    alone = fit_mix(weak, channel - 0.3, y, use_deep=False, anchor=0.3)
    assert mix.deep == 0.0 and (mix.channel, mix.bias) == pytest.approx((alone.channel, alone.bias))
    assert mix.intercept == 0.3 and not mix.held_out["keep_deep"]
    assert warnings and warnings[0].startswith("The deep part is dropped")
    assert "5-fold cross-validation on 80 reviews" in warnings[0]


def test_the_held_out_check_is_the_mean_of_fold_fits_scored_on_their_held_out_reviews():
    deep, channel, y = _classes(6, n=90, deep_strength=0.5)
    check = held_out_check(deep, channel, y, 3, folds=3, seed=0)
    from sklearn.model_selection import StratifiedKFold

    differences = np.zeros(len(y))
    for train, held in StratifiedKFold(3, shuffle=True, random_state=0).split(deep, y):
        losses = []
        for use_deep in (True, False):
            fitted = fit_mix(deep[train], channel[train], y[train], use_deep=use_deep)
            p = softmax(fitted.logits(deep[held], channel[held]), axis=1)
            losses.append(-np.log(p[np.arange(len(held)), y[held]]))
        differences[held] = losses[0] - losses[1]
    assert check["difference"] == pytest.approx(differences.mean(), rel=1e-6)
    se = differences.std(ddof=1) / np.sqrt(len(y))
    assert check["difference_se"] == pytest.approx(se, rel=1e-6)
    assert check["keep_deep"] == mix_lib.keeps_deep(differences.mean(), se)


def test_a_class_with_one_validation_review_skips_the_check_and_keeps_the_fit():
    deep, channel, y = _classes(7, n=40)
    y[:] = np.where(np.arange(40) == 0, 2, y % 2)  # class 2 holds one review
    check = held_out_check(deep, channel, y, 3)
    assert check == {"folds": 0, "reviews": 40, "keep_deep": True}


def test_above_two_classes_the_biases_stay_the_channels_own(monkeypatch):
    """Above two classes the mix holds its biases at the channel's own intercepts (times
    the channel's weight): a few validation reviews a class do not move them; the deep
    part and the channel are weighed (issue 36's fifth question)."""
    monkeypatch.setattr(mix_lib, "KEEP_MARGIN_SE", 1.0)  # a margin that drops noise
    deep, channel, y = _classes(3, n=90, deep_strength=0.0)
    intercept = np.array([0.2, -0.1, 0.0])
    mix, warnings = choose_mix(deep, channel, y, 3, intercept)
    assert mix.deep == 0.0 and warnings
    expected = fit_mix(deep, channel, y, use_deep=False, anchor=intercept, hold_bias=True)
    assert mix.channel == pytest.approx(expected.channel)
    np.testing.assert_allclose(mix.bias, mix.channel * intercept)
    kept, _ = choose_mix(*_classes(3, n=90, deep_strength=2.0), 3, intercept)
    assert kept.deep > 0 and kept.bias == pytest.approx(kept.channel * intercept)
    two, _ = choose_mix(*_parts(3, deep_sign=1, n=90), 2, 0.3)  # two classes: c is fit
    assert two.bias != pytest.approx(two.channel * 0.3)


def _anchored_objective(deep, channel, y, anchor):
    """The anchored fit's objective in NumPy: summed log loss plus
    ½(a² + (b - 1)² + ‖c - b·anchor‖²)."""

    def objective(theta):
        a, b, c = theta[0], theta[1], theta[2:]
        z = a * deep + b * channel + (c[0] if deep.ndim == 1 else c)
        if deep.ndim == 1:
            p = 1 / (1 + np.exp(-z))
            loss = -np.sum(y * np.log(p) + (1 - y) * np.log(1 - p))
        else:
            loss = -np.log(softmax(z, axis=1)[np.arange(len(y)), y]).sum()
        shift = c - b * np.asarray(anchor)
        return loss + 0.5 * (a * a + (b - 1) ** 2 + np.sum(shift * shift))

    return objective


def _anchored_case(classes):
    """(deep, channel, labels, anchor) of 120 reviews with both parts informative."""
    if classes == 2:
        return (*_parts(4, deep_sign=1, n=120), 0.4)
    return (*_classes(4, n=120), np.array([0.3, -0.2, 0.1]))


@pytest.mark.parametrize("classes", [2, 3])
def test_an_anchored_fit_is_the_minimum_of_its_objective(classes):
    deep, channel, y, anchor = _anchored_case(classes)
    mix = fit_mix(deep, channel, y, anchor=anchor)
    theta = np.concatenate([[mix.deep, mix.channel], np.atleast_1d(mix.bias)])
    assert mix.deep > 0 and mix.channel > 0  # interior: the gradient vanishes there
    objective = _anchored_objective(deep, channel, y, anchor)
    gradient = approx_fprime(theta, objective, 1e-7)
    np.testing.assert_allclose(gradient, 0.0, atol=2e-3)
    for step in np.eye(len(theta)) * 0.05:  # and it is a minimum
        assert objective(theta) < objective(theta + step)
        assert objective(theta) < objective(theta - step)


@pytest.mark.parametrize("classes", [2, 3])
def test_a_held_bias_fit_is_the_minimum_over_the_two_weights(classes):
    """hold_bias: c = b·anchor, and (a, b) minimize the anchored objective along that line."""
    deep, channel, y, anchor = _anchored_case(classes)
    mix = fit_mix(deep, channel, y, anchor=anchor, hold_bias=True)
    np.testing.assert_allclose(mix.bias, mix.channel * np.asarray(anchor), rtol=1e-12)
    assert mix.deep > 0 and mix.channel > 0
    full = _anchored_objective(deep, channel, y, anchor)

    def objective(ab):
        return full(np.concatenate([ab, ab[1] * np.atleast_1d(anchor)]))

    ab = np.array([mix.deep, mix.channel])
    np.testing.assert_allclose(approx_fprime(ab, objective, 1e-7), 0.0, atol=2e-3)
    for step in np.eye(2) * 0.05:
        assert objective(ab) < objective(ab + step) and objective(ab) < objective(ab - step)
    # with the bias free the fit reaches a lower objective (it has more to move)
    free = fit_mix(deep, channel, y, anchor=anchor)
    theta = np.concatenate([[free.deep, free.channel], np.atleast_1d(free.bias)])
    assert full(theta) <= objective(ab)
    # without a deep part the held fit only scales the channel: its argmax is the channel's
    alone = fit_mix(deep, channel, y, use_deep=False, anchor=anchor, hold_bias=True)
    np.testing.assert_array_equal(
        alone.logits(deep, channel, anchor).argmax(-1) if classes > 2
        else alone.logits(deep, channel, anchor) > 0,
        (channel + anchor).argmax(-1) if classes > 2 else channel + anchor > 0,
    )  # fmt: skip
    with pytest.raises(ValueError, match="needs an anchor"):
        fit_mix(deep, channel, y, hold_bias=True)


def test_the_anchor_is_the_channel_as_fit_where_the_reviews_say_little():
    """Where the penalty outweighs the reviews (a tiny ``C``), the anchored mix is the
    channel as it was fit (``a = 0``, ``b = 1``, its own intercept); the fit toward 0
    would be no model at all (``b = 0``)."""
    deep, channel, y = _parts(5, deep_sign=1, n=50)
    intercept = 0.5
    anchored = fit_mix(deep, channel - intercept, y, C=1e-5, anchor=intercept)
    assert anchored.deep == pytest.approx(0.0, abs=1e-3)
    assert anchored.channel == pytest.approx(1.0, abs=1e-3)
    assert anchored.bias == pytest.approx(intercept, abs=1e-3)
    free = fit_mix(deep, channel - intercept, y, C=1e-5)
    assert free.channel == pytest.approx(0.0, abs=1e-3)
    # the same fit whether the channel's logits hold the intercept (anchor 0) or not:
    # a·deep + b·(channel - intercept) + c is a·deep + b·channel + (c - b·intercept)
    anchored = fit_mix(deep, channel - intercept, y, anchor=intercept)
    holding = fit_mix(deep, channel, y, anchor=0.0)
    assert holding.deep == pytest.approx(anchored.deep, abs=1e-5)
    assert holding.channel == pytest.approx(anchored.channel, abs=1e-5)
    assert holding.bias == pytest.approx(anchored.bias - anchored.channel * intercept, abs=1e-4)


def test_on_many_reviews_the_anchor_hardly_matters():
    deep, channel, y = _parts(6, deep_sign=1, n=4000)
    anchored, free = fit_mix(deep, channel, y, anchor=0.0), fit_mix(deep, channel, y)
    assert anchored.deep == pytest.approx(free.deep, rel=0.01)
    assert anchored.channel == pytest.approx(free.channel, rel=0.01)


def test_a_mix_moves_its_bias_with_a_refit_channel():
    """The refit's intercept differs from the one the mix was fit beside: the mix keeps
    its place relative to the channel as fit (c moves by b times the difference)."""
    deep, channel, y = _parts(8, deep_sign=1, n=100)
    mix = fit_mix(deep, channel - 0.4, y, anchor=0.4)
    before = mix.logits(deep, channel - 0.4)
    refit_channel = channel - 1.0  # the same channel as fit, its intercept now 1.0
    mix.move_to(1.0)
    assert mix.intercept == 1.0 and mix.bias != pytest.approx(
        fit_mix(deep, channel - 0.4, y, anchor=0.4).bias
    )
    np.testing.assert_allclose(mix.logits(deep, refit_channel), before)
    # the split the mix was fit on (validation) keeps its own fit's intercept
    np.testing.assert_allclose(mix.logits(deep, channel - 0.4, 0.4), before)


# === Class weights (the run's class_weight reaches the mix) ===


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("anchored", [False, True])
def test_a_review_of_weight_k_counts_as_k_copies_of_it(classes, anchored):
    """The weighted fit is the fit of the reviews repeated their weight's number of times."""
    deep, channel, y = _parts(3, 1, n=120) if classes == 2 else _classes(3, n=120)
    weights = np.where(y == 1, 3, 1)  # class 1 weighs three times the others
    fit = {"anchor": 0.2 if classes == 2 else np.array([0.1, -0.2, 0.1])} if anchored else {}
    if anchored and classes == 3:
        fit["hold_bias"] = True
    weighted = fit_mix(deep, channel, y, sample_weight=weights.astype(float), **fit)
    rows = np.repeat(np.arange(len(y)), weights)
    repeated = fit_mix(deep[rows], channel[rows], y[rows], **fit)
    np.testing.assert_allclose(
        [weighted.deep, weighted.channel], [repeated.deep, repeated.channel], rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(weighted.bias, repeated.bias, rtol=1e-5, atol=1e-6)
    plain = fit_mix(deep, channel, y, **fit)
    assert not np.allclose([plain.deep, plain.channel], [weighted.deep, weighted.channel])


def test_the_held_out_check_with_equal_weights_is_the_unweighted_one_and_weights_move_it():
    deep, channel, y = _parts(5, 1, n=200)
    plain = held_out_check(deep, channel, y, 2)
    ones = held_out_check(deep, channel, y, 2, sample_weight=np.ones(len(y)))
    for key in ("mixed_loss", "channel_loss", "difference", "difference_se"):
        assert ones[key] == pytest.approx(plain[key], rel=1e-5, abs=1e-9), key
    weights = np.where(y == 1, 4.0, 1.0)
    weighted = held_out_check(deep, channel, y, 2, sample_weight=weights)
    assert weighted["mixed_loss"] != pytest.approx(plain["mixed_loss"], rel=1e-4)
    # the weighted mean of the per-review differences, each review's from the fold it was held in
    assert weighted["mixed_loss"] - weighted["channel_loss"] == pytest.approx(
        weighted["difference"], rel=1e-6
    )


def test_choose_mix_passes_the_weights_to_the_fit_and_the_check(monkeypatch):
    deep, channel, y = _parts(6, 1, n=150)
    weights = np.where(y == 1, 2.0, 1.0)
    seen = []
    real = mix_lib.held_out_check

    def spy(*args, **kwargs):
        seen.append(kwargs.get("sample_weight"))
        return real(*args, **kwargs)

    monkeypatch.setattr(mix_lib, "held_out_check", spy)
    mix, _ = choose_mix(deep, channel, y, 2, 0.0, sample_weight=weights)
    np.testing.assert_array_equal(seen[0], weights)
    reference = fit_mix(deep, channel, y, anchor=0.0, sample_weight=weights)
    assert (mix.deep, mix.channel) == pytest.approx((reference.deep, reference.channel))
