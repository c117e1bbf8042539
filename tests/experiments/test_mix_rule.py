"""experiments/mix_rule.py on made-up runs: nested scores, rules, the choice and its files."""

import importlib
import json

import numpy as np
import pytest

from hatt.training import fit_mix, logit_losses


@pytest.fixture(scope="module")
def mix_rule():
    return importlib.import_module("experiments.mix_rule")


def write_run(root, deep_signal, seed=0, n=100):
    """A run with an informative channel and a deep part carrying ``deep_signal``."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    for split, size in (("validation", n), ("test", 2000)):
        labels = rng.integers(0, 2, size)
        sign = 2 * labels - 1
        channel = 1.0 * sign + rng.normal(0, 1.5, size)
        deep = deep_signal * sign + rng.normal(0, 1.5, size)
        arrays = {"labels": labels, "deep_logits": deep, "channel_logits": channel}
        np.savez(root / f"{split}_probabilities.npz", **arrays)
    return root


def test_the_channel_rule_scores_the_channel_as_fit(tmp_path, mix_rule):
    run = write_run(tmp_path / "run", deep_signal=2.0)
    deep, channel, y = mix_rule.load_split(run, "validation")
    scores = mix_rule.nested_scores(deep, channel, y, repeats=2)
    # the channel alone is its own logits (intercept included): every review is held out
    # once a repeat, so the pooled held-out loss is the channel's mean loss
    assert scores["channel"]["held_out_loss"] == pytest.approx(logit_losses(channel, y).mean())
    assert scores["channel"]["deep_kept_share"] == 0.0
    # a strong deep part: keeping it always is better held out than never
    assert scores["always"]["deep_kept_share"] == 1.0
    assert scores["always"]["held_out_loss"] < scores["channel"]["held_out_loss"]
    # a larger margin never keeps the deep part more often
    shares = [scores[rule]["deep_kept_share"] for rule in ("always", "0 SE", "1 SE", "2 SE")]
    assert shares == sorted(shares, reverse=True)


def test_a_useless_deep_part_is_dropped_by_a_margin(tmp_path, mix_rule):
    run = write_run(tmp_path / "run", deep_signal=0.0, seed=3)
    mixes = mix_rule.decide(*mix_rule.load_split(run, "validation"))
    assert mixes["2 SE"].deep == 0.0 and mixes["channel"].deep == 0.0
    assert mixes["1 SE"].deep == 0.0


def test_main_writes_the_choice_and_a_table(tmp_path, mix_rule):
    runs = [write_run(tmp_path / f"r{i}", deep_signal=2.0, seed=i) for i in range(2)]
    out = tmp_path / "out"
    assert mix_rule.main([*map(str, runs), "--repeats", "1", "--out", str(out)]) == 0
    result = json.loads((out / "mix_rule.json").read_text())
    pooled = result["pooled"]
    assert result["chosen"] == min(pooled, key=lambda rule: pooled[rule]["held_out_loss"])
    table = (out / "mix_rule.md").read_text()
    assert f"**{result['chosen']}**" in table and str(runs[1]) in table
    for run in result["runs"]:
        assert 0.5 < run["test"]["always"]["test_accuracy"] <= 1.0


def test_the_anchored_rule_is_the_fit_anchored_at_the_channel_as_fit(tmp_path, mix_rule):
    run = write_run(tmp_path / "run", deep_signal=1.0, seed=4, n=60)
    deep, channel, y = mix_rule.load_split(run, "validation")
    anchored = mix_rule.decide(deep, channel, y)["anchored"]
    expected = fit_mix(deep, channel, y, anchor=0.0)
    assert (anchored.deep, anchored.channel, anchored.bias) == pytest.approx(
        (expected.deep, expected.channel, expected.bias)
    )
    free = mix_rule.decide(deep, channel, y)["always"]
    assert (anchored.channel, anchored.bias) != pytest.approx((free.channel, free.bias))
    assert "anchored" in mix_rule.nested_scores(deep, channel, y, repeats=1)


def test_the_cross_fitted_rules_fit_on_the_cross_fitted_logits(mix_rule):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    sign = 2 * y - 1
    channel = 1.0 * sign + rng.normal(0, 1.5, 200)
    deep = 2.0 * sign + rng.normal(0, 1.0, 200)  # looks strong (chosen on these reviews)
    noise = rng.normal(0, 1.0, 200)  # its cross-fitted logits: no signal
    assert not {"crossfit", "crossfit 1 SE"} & set(mix_rule.decide(deep, channel, y))
    mixes = mix_rule.decide(deep, channel, y, crossfit=noise)
    assert mixes["anchored"].deep > 0.5  # fit on the flattering logits
    expected = fit_mix(noise, channel, y, anchor=0.0)
    assert mixes["crossfit"].deep == pytest.approx(expected.deep)
    assert mixes["crossfit"].channel == pytest.approx(expected.channel)
    assert mixes["crossfit 1 SE"].deep == 0.0  # no held-out gain by 1 SE: the channel alone
    scores = mix_rule.nested_scores(deep, channel, y, repeats=1, crossfit=noise)
    assert {"crossfit", "crossfit 1 SE"} <= set(scores)
    runs = [{"t": {"a": {"x": 1.0}, "b": {"x": 3.0}}}, {"t": {"a": {"x": 2.0}}}]
    assert mix_rule.mean_over_runs(runs, "t") == {"a": {"x": 1.5}}  # rules every run has


def test_the_biases_held_rule_fits_two_weights_above_two_classes_only(mix_rule):
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 150)
    channel, deep = (2 * y - 1) + rng.normal(0, 1.5, 150), rng.normal(0, 1, 150)
    mixes = mix_rule.decide(deep, channel, y)
    assert mixes[mix_rule.BIASES_HELD] is mixes["anchored"]  # two classes: the anchored mix
    y = rng.integers(0, 4, 150)
    channel = np.eye(4)[y] * 2 + rng.normal(0, 1.5, (150, 4)) + [0.5, -0.5, 0.2, 0.0]
    deep = rng.normal(0, 1, (150, 4))
    held = mix_rule.decide(deep, channel, y)[mix_rule.BIASES_HELD]
    # the channel's logits hold its intercept (anchor 0): the biases stay at 0
    np.testing.assert_array_equal(held.bias, np.zeros(4))
    expected = fit_mix(deep, channel, y, anchor=0.0, hold_bias=True)
    assert (held.deep, held.channel) == pytest.approx((expected.deep, expected.channel))
    assert mix_rule.BIASES_HELD in mix_rule.nested_scores(deep, channel, y, repeats=1)
