"""experiments/stack_runs.py: the mean and the stacked ensemble of finished runs, named."""

import importlib
import json

import numpy as np
import pytest


def fake_run(folder, labels, deep, channel, seed=1337):
    """A finished run's files as ``hatt train`` writes them: metrics.json and, per split,
    the probabilities with the deep part's and the channel's logits (validation ids
    drawn by the seed, as a run's validation split is)."""
    folder.mkdir()
    metrics = {"model": "han", "parameters": 10, "seed": seed, "train_seconds": 2.0}
    metrics["class_names"] = ["negative", "positive"]
    for split in ("validation", "test"):
        logits = deep[split] + channel[split]
        path = folder / f"{split}_probabilities.npz"
        np.savez(
            path,
            labels=labels[split],
            ids=np.array(
                [
                    f"{split}/{i}" + (f"/{seed}" if split == "validation" else "")
                    for i in range(len(logits))
                ]
            ),
            probabilities=1 / (1 + np.exp(-logits)),
            deep_logits=deep[split],
            channel_logits=channel[split],
        )
        metrics[f"{split}_probabilities"] = str(path)
    metrics["test_accuracy"] = float(
        np.mean((deep["test"] + channel["test"] > 0) == labels["test"])
    )
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def test_members_are_named_as_given_and_the_stack_weighs_the_informative_part(tmp_path):
    stack_runs = importlib.import_module("experiments.stack_runs")
    rng = np.random.default_rng(0)
    labels = {split: rng.integers(0, 2, n) for split, n in (("validation", 400), ("test", 600))}
    signal = {split: 3.0 * (2 * y - 1) + rng.normal(0, 2, len(y)) for split, y in labels.items()}
    noise = {split: rng.normal(0, 1, len(y)) for split, y in labels.items()}
    good = fake_run(tmp_path / "good", labels, signal, noise)
    weak = fake_run(tmp_path / "weak", labels, noise, noise)
    out = tmp_path / "stacked.json"

    stack_runs.main([f"good={good}", f"weak={weak}", "--out", str(out)])

    rows = json.loads(out.read_text())
    assert set(rows["members"]) == {"good", "weak"}  # two runs of one family, side by side
    weights = rows["stacked"]["weights"]
    assert weights["good.deep"] > 0.5 > abs(weights["weak.deep"])
    assert rows["stacked"]["test_accuracy"] > 0.85 > rows["members"]["weak"]

    def sigmoid(x):
        return 1 / (1 + np.exp(-x))

    mean = (sigmoid(signal["test"] + noise["test"]) + sigmoid(2 * noise["test"])) / 2
    assert rows["mean"]["test_accuracy"] == pytest.approx(np.mean((mean > 0.5) == labels["test"]))
    assert rows["stacked"]["command"].startswith("python -m experiments.stack_runs good=")
    assert "| good |" in out.with_suffix(".md").read_text()


def test_a_missing_run_or_a_bare_path_is_a_clear_error(tmp_path):
    stack_runs = importlib.import_module("experiments.stack_runs")
    with pytest.raises(ValueError, match="Expected NAME=RUN_DIR"):
        stack_runs.main([str(tmp_path), "--out", str(tmp_path / "s.json")])
    with pytest.raises(ValueError, match="a finished run .*nowhere"):
        stack_runs.main([f"x={tmp_path / 'nowhere'}", "--out", str(tmp_path / "s.json")])


def test_runs_of_other_seeds_get_the_test_mean_only(tmp_path):
    stack_runs = importlib.import_module("experiments.stack_runs")
    rng = np.random.default_rng(1)
    labels = {split: rng.integers(0, 2, n) for split, n in (("validation", 100), ("test", 300))}
    logits = [
        {split: 2.0 * (2 * y - 1) + rng.normal(0, 3, len(y)) for split, y in labels.items()}
        for _ in range(3)
    ]
    zero = {split: np.zeros(len(y)) for split, y in labels.items()}
    runs = [
        fake_run(tmp_path / f"s{seed}", labels, deep, zero, seed=seed)
        for seed, deep in zip((1337, 2, 3), logits, strict=True)
    ]
    specs = [f"s{i}={run}" for i, run in enumerate(runs)]
    out = tmp_path / "seeds.json"

    with pytest.raises(ValueError, match="other seeds .*--across-seeds"):
        stack_runs.main([*specs, "--out", str(out)])

    stack_runs.main(["--across-seeds", *specs, "--out", str(out)])
    rows = json.loads(out.read_text())
    assert "stacked" not in rows  # fit on validation splits that differ: not defined
    mean = np.mean([1 / (1 + np.exp(-run["test"])) for run in logits], axis=0)
    assert rows["mean"]["test_accuracy"] == pytest.approx(np.mean((mean > 0.5) == labels["test"]))
    assert "validation_accuracy" not in rows["mean"]
    assert "--across-seeds" in rows["mean"]["command"]
    assert "| ensemble (s0 + s1 + s2) |" in out.with_suffix(".md").read_text()
