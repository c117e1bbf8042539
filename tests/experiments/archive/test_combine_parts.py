"""experiments/combine_parts.py on made-up parts: the three combinations and bad runs."""

import importlib
import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def combine_parts():
    return importlib.import_module("experiments.archive.combine_parts")


def write_run(root, deep_signal, seed=0, n=2000, **extra):
    """A run whose channel is informative and whose deep part carries `deep_signal`."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    for split in ("validation", "test"):
        labels = rng.integers(0, 2, n)
        sign = 2 * labels - 1
        channel = 1.5 * sign + rng.normal(0, 1.5, n)
        deep = deep_signal * sign + rng.normal(0, 1.5, n)
        arrays = {"labels": labels, "deep_logits": deep, "channel_logits": channel, **extra}
        np.savez(root / f"{split}_probabilities.npz", **arrays)
    return root


def test_combinations_are_chosen_on_validation_and_scored_on_both(tmp_path, combine_parts):
    useless = write_run(tmp_path / "useless", deep_signal=0.0)
    useful = write_run(tmp_path / "useful", deep_signal=1.5, seed=1)
    results = tmp_path / "results"
    report = combine_parts.main([str(useless), str(useful), "--results", str(results)])
    assert json.loads((results / "combine_parts.json").read_text()) == report
    weak, strong = report["runs"][str(useless)], report["runs"][str(useful)]
    # the likelihood mix weighs an uninformative deep part near 0, an informative one up
    assert abs(weak["likelihood_mix"]["deep"]) < 0.15 < 0.5 < strong["likelihood_mix"]["deep"]
    assert strong["accuracy_weight"] > 0.2
    # two equally informative parts: the mix beats the channel on test
    assert strong["likelihood"]["test_accuracy"] > strong["channel"]["test_accuracy"]
    for row in (weak, strong):
        assert row["likelihood"]["validation_loss"] <= row["channel"]["validation_loss"] + 1e-6
        assert set(row["cv5_validation_accuracy"]) == {"likelihood", "channel"}
        saved = np.load(
            tmp_path / ("useless" if row is weak else "useful") / "test_probabilities.npz"
        )
        channel_test = ((saved["channel_logits"] > 0) == saved["labels"]).mean()
        assert row["channel"]["test_accuracy"] == pytest.approx(channel_test)
    assert str(useful) in (results / "combine_parts.md").read_text()


def test_runs_without_both_parts_are_refused(tmp_path, combine_parts):
    with pytest.raises(SystemExit, match="no validation_probabilities.npz"):
        combine_parts.main([str(tmp_path / "nowhere")])
    joint = tmp_path / "joint"
    joint.mkdir()
    for split in ("validation", "test"):
        np.savez(joint / f"{split}_probabilities.npz", labels=[0, 1], probabilities=[0.2, 0.9])
    with pytest.raises(SystemExit, match="deep_logits"):
        combine_parts.main([str(joint)])
    many = write_run(tmp_path / "many", 1.0)
    for split in ("validation", "test"):
        path = many / f"{split}_probabilities.npz"
        saved = dict(np.load(path))
        saved["deep_logits"] = np.stack([saved["deep_logits"]] * 3, axis=1)
        np.savez(path, **saved)
    with pytest.raises(SystemExit, match="3 classes"):
        combine_parts.main([str(many)])
