import json
from pathlib import Path

import numpy as np
import pytest

from tests._scripts import load_experiment


@pytest.fixture
def run_all(tmp_path, monkeypatch):
    module = load_experiment("run_all")
    monkeypatch.setattr(module, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(module, "EXPERIMENTS", tmp_path)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    (tmp_path / "results").mkdir()
    return module


def write_member(tmp_path, name, probabilities, labels, ids):
    paths = {}
    for split in ("validation", "test"):
        path = tmp_path / f"{name}_{split}.npz"
        np.savez(
            path,
            probabilities=np.array(probabilities, "float32"),
            labels=np.array(labels, "int8"),
            ids=np.array(ids),
        )
        paths[f"{split}_probabilities"] = str(path)
    metrics = {
        "model": name,
        "test_accuracy": 0.5,
        "validation_accuracy": 0.5,
        "epochs": 3,
        "train_seconds": 120.0,
        "parameters": 1000,
        "seed": 1337,
        "command": f"hatt train {name}",
        **paths,
    }
    (tmp_path / "results" / f"{name}.json").write_text(json.dumps(metrics))
    return metrics


def test_ensemble_averages_probabilities_and_tables_are_written(tmp_path, run_all):
    labels, ids = [1, 0, 1, 0], ["a", "b", "c", "d"]
    # each member is right on 3 of 4; their mean is right on all 4
    write_member(tmp_path, "cnn", [0.9, 0.4, 0.4, 0.1], labels, ids)
    write_member(tmp_path, "rnn", [0.4, 0.1, 0.9, 0.3], labels, ids)
    write_member(tmp_path, "transformer", [0.8, 0.2, 0.7, 0.6], labels, ids)
    write_member(tmp_path, "han", [0.7, 0.45, 0.8, 0.2], labels, ids)
    (tmp_path / "README.md").write_text(
        "intro\n<!-- results:start -->\nold\n<!-- results:end -->\nend\n"
    )
    rows = run_all.collect()
    assert rows[-1]["model"].startswith("ensemble")
    assert rows[-1]["test_accuracy"] == 1.0 and rows[-1]["parameters"] == 4000
    # with the NB-LR baseline (its paths relative to the repository) a second row appears
    nb = write_member(tmp_path, "nb_lr", [0.6, 0.4, 0.6, 0.4], labels, ids)
    for split in ("validation", "test"):
        nb[f"{split}_probabilities"] = Path(nb[f"{split}_probabilities"]).name
    (tmp_path / "results" / "baseline_nb_lr.json").write_text(json.dumps(nb))
    (tmp_path / "results" / "nb_lr.json").unlink()
    rows = run_all.collect()
    assert [r["model"] for r in rows[-2:]] == [
        "ensemble (cnn + rnn + transformer + han)",
        "ensemble (cnn + rnn + transformer + han + nb_lr)",
    ]
    assert rows[-1]["parameters"] == 5000
    run_all.write_tables(rows)
    results = (tmp_path / "RESULTS.md").read_text()
    assert "| cnn | 50.00 % | 50.00 % | 3 | 2.0 | 1,000 | `hatt train cnn` |" in results
    readme = (tmp_path / "README.md").read_text()
    assert "old" not in readme and "| ensemble" in readme and readme.endswith("end\n")


def test_misaligned_members_are_refused(tmp_path, run_all):
    members = [
        write_member(tmp_path, "cnn", [0.9, 0.1], [1, 0], ["a", "b"]),
        write_member(tmp_path, "rnn", [0.9, 0.1], [1, 0], ["b", "a"]),
    ]
    with pytest.raises(ValueError, match="same order"):
        run_all.ensemble(members)


def test_unknown_names_are_rejected(run_all):
    with pytest.raises(SystemExit):
        run_all.main(["--only", "bert", "--table-only"])


def write_separate_member(tmp_path, name, deep, channel, labels, ids):
    """A family fit with ngram_fit="separate": its parts' logits beside its probabilities."""
    metrics = write_member(tmp_path, name, 1 / (1 + np.exp(-(deep + channel))), labels, ids)
    for split in ("validation", "test"):
        path = metrics[f"{split}_probabilities"]
        data = dict(np.load(path))
        np.savez(path, **data, deep_logits=deep, channel_logits=channel)
    metrics["ngram_channel"] = {
        "fit": "separate",
        "mix": {"deep": 0.5, "channel": 1.0, "bias": 0.0},
        **{
            f"{part}_{split}_accuracy": value
            for part, value in (("deep", 0.8), ("channel", 0.9), ("mixed", 0.925))
            for split in ("validation", "test")
        },
    }
    (tmp_path / "results" / f"{name}.json").write_text(json.dumps(metrics))
    return metrics


def test_stacked_ensemble_weighs_the_parts_on_validation(tmp_path, run_all):
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    labels = np.arange(200) % 2
    ids = [f"r{i}" for i in range(200)]
    sign = 2 * labels - 1
    informative = sign * 2.0 + rng.normal(0, 1, 200)  # the CNN's deep part carries the signal
    members = [
        write_separate_member(
            tmp_path, "cnn", informative, sign * 0.5 + rng.normal(0, 2, 200), labels, ids
        )
    ]
    for name in ("rnn", "transformer", "han"):
        members.append(write_member(tmp_path, name, rng.uniform(0.2, 0.8, 200), labels, ids))
    nb = write_member(tmp_path, "nb_lr", rng.uniform(0.2, 0.8, 200), labels, ids)
    (tmp_path / "results" / "baseline_nb_lr.json").write_text(json.dumps(nb))
    (tmp_path / "results" / "nb_lr.json").unlink()
    rows = run_all.collect()
    stacked = rows[-1]
    assert stacked["model"].startswith("stacked ensemble")
    assert list(stacked["weights"]) == [
        "cnn.deep",
        "cnn.channel",
        "rnn",
        "transformer",
        "han",
        "nb_lr",
    ]
    # the regression fit on validation (here the same reviews as test) is sklearn's
    x = np.load(members[0]["validation_probabilities"])
    features = [x["deep_logits"], x["channel_logits"]]
    for m in [*members[1:], nb]:
        p = np.clip(
            np.load(m["validation_probabilities"])["probabilities"].astype(float), 1e-7, 1 - 1e-7
        )
        features.append(np.log(p) - np.log1p(-p))
    reference = LogisticRegression(C=1.0, max_iter=1000).fit(np.stack(features, 1), labels)
    np.testing.assert_allclose(list(stacked["weights"].values()), reference.coef_[0], rtol=1e-4)
    assert stacked["weights"]["cnn.deep"] == max(stacked["weights"].values())
    assert stacked["test_accuracy"] == np.mean(reference.predict(np.stack(features, 1)) == labels)
    assert 0.8 <= stacked["validation_accuracy"] <= 1.0  # cross-validated, not in-sample
    (tmp_path / "README.md").write_text("no table here\n")
    run_all.write_tables(rows)
    results = (tmp_path / "RESULTS.md").read_text()
    assert "| cnn | 80.00 (80.00) | 90.00 (90.00) | 92.50 (92.50) | 0.500 | 1.000 |" in results
