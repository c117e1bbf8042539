import importlib
import json
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture
def run_all(tmp_path, monkeypatch):
    module = importlib.import_module("experiments.run_all")
    monkeypatch.setattr(module, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(module, "EXPERIMENTS", tmp_path)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    (tmp_path / "results").mkdir()
    return module


def write_member(tmp_path, name, probabilities, labels, ids, seed=1337):
    """A results file and its arrays; another seed's go to results/seeds/SEED/."""
    paths = {}
    for split in ("validation", "test"):
        path = tmp_path / f"{name}_{seed}_{split}.npz"
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
        "seed": seed,
        "command": f"hatt train {name}",
        **paths,
    }
    results = tmp_path / "results" / ("" if seed == 1337 else f"seeds/{seed}")
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(metrics))
    return metrics


def test_ensemble_averages_probabilities_and_tables_are_written(tmp_path, run_all):
    labels, ids = [1, 0, 1, 0], ["a", "b", "c", "d"]
    # each member is right on 3 of 4; their mean is right on all 4
    write_member(tmp_path, "cnn", [0.9, 0.4, 0.4, 0.1], labels, ids)
    write_member(tmp_path, "rnn", [0.4, 0.1, 0.9, 0.3], labels, ids)
    write_member(tmp_path, "transformer", [0.8, 0.2, 0.7, 0.6], labels, ids)
    han = write_member(tmp_path, "han", [0.7, 0.45, 0.8, 0.2], labels, ids)
    # a family started from word2vec: its vectors' training counts in its minutes
    han["word_vectors"] = {"source": "word2vec", "seconds": 60.0}
    (tmp_path / "results" / "han.json").write_text(json.dumps(han))
    (tmp_path / "README.md").write_text(
        "intro\n<!-- results:start -->\nold\n<!-- results:end -->\nend\n"
    )
    rows = run_all.collect()
    assert rows[-1]["model"].startswith("ensemble")
    assert rows[-1]["test_accuracy"] == 1.0 and rows[-1]["parameters"] == 4000
    assert rows[-1]["train_seconds"] == 4 * 120.0 + 60.0
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
    assert "| han | 50.00 % | 50.00 % | 3 | 3.0 | 1,000 | `hatt train han` |" in results
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
    (tmp_path / "README.md").write_text(
        "<!-- results:start -->\n<!-- results:end -->\nprose\n"
        "<!-- parts:start -->\nold parts\n<!-- parts:end -->\nend\n"
    )
    run_all.write_tables(rows)
    results = (tmp_path / "RESULTS.md").read_text()
    row = "| cnn | 80.00 (80.00) | 90.00 (90.00) | 92.50 (92.50) | 0.500 | 1.000 |"
    assert row in results
    # the README's copy of the parts table is the generated one, its prose kept
    readme = (tmp_path / "README.md").read_text()
    assert row in readme and "old parts" not in readme
    assert "\nprose\n" in readme and readme.endswith("<!-- parts:end -->\nend\n")
    assert readme.count("| model | deep part alone") == 1


# === The IMDB ratings task: its own folder and table, the binary one unchanged ===

STARS = ["1", "5", "9"]


def write_rating_member(tmp_path, name, probabilities, labels, ids, flat=True, **extra):
    """A ratings results file: [N, 3] probabilities saved, figures flat or only under "test"."""
    from hatt.training import classification_metrics, flat_metrics

    folder = tmp_path / "results" / "rating"
    folder.mkdir(exist_ok=True)
    probabilities = np.array(probabilities, "float32")
    paths = {}
    for split in ("validation", "test"):
        path = tmp_path / f"rating_{name}_{split}.npz"
        np.savez(path, probabilities=probabilities, labels=np.array(labels, "int8"), ids=ids)
        paths[f"{split}_probabilities"] = str(path)
    figures = {}
    for split in ("validation", "test"):
        metrics = classification_metrics(labels, probabilities, STARS)
        figures[split] = metrics
        if flat:
            figures.update(flat_metrics(metrics, split))
    row = {
        "model": name,
        "class_names": STARS,
        **figures,
        "epochs": 2,
        "train_seconds": 90.0,
        "parameters": 500,
        "seed": 1337,
        "command": f"hatt train {name} --labels rating",
        **paths,
        **extra,
    }
    file = f"baseline_{name}.json" if name in ("tfidf_lr", "nb_lr") else f"{name}.json"
    (folder / file).write_text(json.dumps(row))
    return row


def test_rating_table_is_written_next_to_the_binary_one(tmp_path, run_all):
    labels, ids = [0, 1, 2, 2], ["a", "b", "c", "d"]
    # cnn: right on 3 of 4 (the last "9" predicted "1": 8 stars off; its median is "5")
    write_rating_member(
        tmp_path,
        "cnn",
        [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8], [0.45, 0.2, 0.35]],
        labels,
        ids,
    )
    # rnn: figures only under "test" / "validation", no flat keys (read all the same)
    write_rating_member(
        tmp_path,
        "rnn",
        [[0.6, 0.3, 0.1], [0.1, 0.8, 0.1], [0.1, 0.5, 0.4], [0.1, 0.1, 0.8]],
        labels,
        ids,
        flat=False,
    )
    for name in ("transformer", "han"):
        write_rating_member(tmp_path, name, [[1 / 3] * 3] * 4, labels, ids)
    write_rating_member(tmp_path, "tfidf_lr", [[0.5, 0.3, 0.2]] * 4, labels, ids, epochs=None)
    write_member(tmp_path, "cnn", [0.9, 0.1], [1, 0], ["a", "b"])  # a binary row
    (tmp_path / "README.md").write_text("<!-- results:start -->\n<!-- results:end -->\n")

    rating_rows = run_all.collect("rating")
    assert [r["model"] for r in rating_rows] == [
        "tfidf_lr",
        "cnn",
        "rnn",
        "transformer",
        "han",
        "ensemble (cnn + rnn + transformer + han)",
    ]  # no nb_lr: no ensemble with it; no stacked ensemble for the ratings
    mean = np.mean(
        [
            [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8], [0.45, 0.2, 0.35]],
            [[0.6, 0.3, 0.1], [0.1, 0.8, 0.1], [0.1, 0.5, 0.4], [0.1, 0.1, 0.8]],
            [[1 / 3] * 3] * 4,
            [[1 / 3] * 3] * 4,
        ],
        axis=0,
    )
    stars = np.array([1.0, 5.0, 9.0])
    ensemble = rating_rows[-1]
    assert ensemble["test_accuracy"] == np.mean(mean.argmax(axis=1) == labels)
    assert ensemble["test_mae"] == pytest.approx(
        np.mean(np.abs(stars[mean.argmax(axis=1)] - stars[labels]))
    )
    assert ensemble["test"]["confusion_matrix"]["classes"] == STARS
    assert ensemble["train_seconds"] == 360.0 and ensemble["epochs"] is None
    saved = json.loads((tmp_path / "results" / "rating" / "ensemble.json").read_text())
    assert saved["test_accuracy"] == ensemble["test_accuracy"]

    run_all.write_tables(run_all.collect("binary"), rating_rows)
    results = (tmp_path / "RESULTS.md").read_text()
    binary_table, rating_part = results.split("## IMDB ratings (8 classes)")
    assert "| cnn | 50.00 % | 50.00 % | 3 | 2.0 | 1,000 | `hatt train cnn` |" in binary_table
    assert "--labels rating" in rating_part and "seed 1337" in rating_part
    # accuracy 3/4, macro-F1 mean of (2/3, 1, 2/3), MAE 8/4 stars, MAE of the median 4/4
    assert (
        "| cnn | 75.00 % | 0.778 | 2.000 | 1.000 | 75.00 % | 2 | 1.5 | 500 "
        "| `hatt train cnn --labels rating` |" in rating_part
    )
    assert "| rnn | 75.00 % | 0.778 | 1.000 | 1.000 | 75.00 % |" in rating_part
    assert "| tfidf_lr | 25.00 % | 0.133 | 5.000 | 3.000 | 25.00 % | – | 1.5 | 500 |" in rating_part
    readme = (tmp_path / "README.md").read_text()
    assert "IMDB ratings" not in readme and "| cnn | 50.00 % |" in readme


def test_one_seed_without_rating_results_leaves_the_tables_as_before(tmp_path, run_all):
    write_member(tmp_path, "cnn", [0.9, 0.1], [1, 0], ["a", "b"])
    (tmp_path / "README.md").write_text("<!-- seeds:start -->\nkept\n<!-- seeds:end -->\n")
    assert run_all.collect("rating") == [] and run_all.other_seeds() == []
    run_all.write_tables(run_all.collect("binary"), run_all.collect("rating"))
    results = (tmp_path / "RESULTS.md").read_text()
    assert "IMDB ratings" not in results and "| cnn | 50.00 % |" in results
    assert "Over seeds" not in results  # one seed: no section, no summary
    assert "kept" in (tmp_path / "README.md").read_text()
    assert not (tmp_path / "results" / "seeds_summary.json").exists()


@pytest.fixture
def commands(run_all, monkeypatch):
    """Record the commands run_all would run; a family's run writes a metrics.json."""
    seen = []

    def fake_run(command):
        seen.append(command)
        if "--run-dir" in command:
            run_dir = Path(command[command.index("--run-dir") + 1])
            run_dir.mkdir(parents=True)
            (run_dir / "metrics.json").write_text(json.dumps({"model": command[3]}))

    monkeypatch.setattr(run_all, "run", fake_run)
    monkeypatch.setattr(run_all, "write_tables", lambda rows, rating_rows=(): None)
    return seen


@pytest.mark.parametrize(
    ("labels", "subfolder", "task_arguments"),
    [("binary", "", []), ("rating", "rating", ["--labels", "rating"])],
)
def test_each_task_runs_in_its_own_folders(
    tmp_path, run_all, commands, labels, subfolder, task_arguments
):
    runs, exports = tmp_path / "runs", tmp_path / "saved_models"
    run_all.main(
        ["--labels", labels, "--only", "nb_lr", "han"]
        + ["--runs", str(runs), "--export-dir", str(exports), "--data", "/d"]
    )
    baseline, family = commands
    assert baseline[1:] == [
        "-m",
        "experiments.baselines",
        "--only",
        "nb_lr",
        *task_arguments,
        "--data",
        "/d",
    ]
    assert family[1:] == [
        "-m",
        "hatt.cli",
        "train",
        "han",
        *task_arguments,
        "--data",
        "/d",
        "--run-dir",
        str(runs / subfolder / "han") if subfolder else str(runs / "han"),
        "--export-dir",
        str(exports / subfolder) if subfolder else str(exports),
        "--restart",
    ]
    saved = json.loads((tmp_path / "results" / subfolder / "han.json").read_text())
    assert saved["command"] == " ".join(["hatt", "train", "han", *task_arguments])


def test_class_names_come_from_the_results_file(run_all):
    metrics = {"model": "cnn", "test": {"confusion_matrix": {"classes": ["1", "10"]}}}
    assert run_all.class_names(metrics, np.zeros((2, 2))) == ["1", "10"]
    assert run_all.class_names({"model": "cnn", "class_names": ["a", "b", "c"]}, None) == [
        "a",
        "b",
        "c",
    ]
    assert run_all.class_names({"model": "old"}, np.zeros(3)) == ("neg", "pos")  # binary
    with pytest.raises(ValueError, match="cnn: its results file names no classes"):
        run_all.class_names({"model": "cnn"}, np.zeros((2, 3)))


def test_another_seed_runs_in_its_own_folders_and_is_not_exported(tmp_path, run_all, commands):
    runs = tmp_path / "runs"
    run_all.main(["--seed", "2", "--only", "nb_lr", "han", "--runs", str(runs)])
    baseline, family = commands
    results = tmp_path / "results" / "seeds" / "2"
    assert baseline[1:] == [
        "-m",
        "experiments.baselines",
        "--only",
        "nb_lr",
        "--seed",
        "2",
        "--results",
        str(results),
        "--runs",
        str(runs / "seeds" / "2" / "baselines"),
    ]
    assert family[4:] == [
        "han",
        "--set",
        "seed=2",
        "--run-dir",
        str(runs / "seeds" / "2" / "han"),
        "--export-dir",
        "",
        "--restart",
    ]
    saved = json.loads((results / "han.json").read_text())
    assert saved["command"] == "hatt train han --set seed=2"
    assert not (tmp_path / "results" / "han.json").exists()  # the headline row is untouched


def test_the_seed_is_chosen_with_its_own_option(run_all):
    with pytest.raises(SystemExit):
        run_all.parse_args(["--set", "seed=2"])


def test_rows_over_seeds_give_mean_and_sample_std(tmp_path, run_all):
    labels, ids = [1, 0, 1, 0], ["a", "b", "c", "d"]
    right = {1337: 4, 2: 3, 3: 2}  # reviews the CNN gets right at each seed
    for seed, n in right.items():
        probabilities = [0.9 if i < n else 0.1 for i in range(4)]
        probabilities = [p if y else 1 - p for p, y in zip(probabilities, labels, strict=True)]
        cnn = write_member(tmp_path, "cnn", probabilities, labels, ids, seed=seed)
        cnn["test_accuracy"] = n / 4
        folder = tmp_path / "results" / ("" if seed == 1337 else f"seeds/{seed}")
        (folder / "cnn.json").write_text(json.dumps(cnn))
        for name in ("rnn", "transformer", "han"):
            write_member(tmp_path, name, [0.8, 0.2, 0.8, 0.2], labels, ids, seed=seed)
    write_member(tmp_path, "nb_lr", [0.6, 0.4, 0.6, 0.4], labels, ids, seed=2)  # one seed only
    seed2 = tmp_path / "results" / "seeds" / "2"
    (seed2 / "nb_lr.json").rename(seed2 / "baseline_nb_lr.json")
    (tmp_path / "results" / "seeds" / "7").mkdir()  # a seed folder with no results: skipped
    (tmp_path / "README.md").write_text(
        "<!-- results:start -->\n<!-- results:end -->\n<!-- seeds:start -->\nold\n"
        "<!-- seeds:end -->\n"
    )
    assert run_all.other_seeds() == [2, 3]
    run_all.write_tables(run_all.collect())

    summary = json.loads((tmp_path / "results" / "seeds_summary.json").read_text())
    assert summary["seeds"] == [1337, 2, 3]
    rows = {r["model"]: r for r in summary["rows"]}
    cnn = rows["cnn"]["test_accuracy"]
    assert cnn["values"] == {"1337": 1.0, "2": 0.75, "3": 0.5}
    assert cnn["mean"] == pytest.approx(0.75)
    assert cnn["std"] == pytest.approx(np.std([1.0, 0.75, 0.5], ddof=1))
    assert rows["nb_lr"]["test_accuracy"]["seeds"] == 1
    # each seed's ensemble is averaged from that seed's own members
    ensemble = rows["ensemble (cnn + rnn + transformer + han)"]["test_accuracy"]
    assert set(ensemble["values"]) == {"1337", "2", "3"}
    assert (tmp_path / "results" / "seeds" / "2" / "ensemble.json").exists()

    results = (tmp_path / "RESULTS.md").read_text()
    assert "## Over seeds" in results
    assert "| cnn | 75.00 ± 25.00 | 100.00 | 75.00 | 50.00 |" in results
    assert "| nb_lr | 50.00 (one seed) | – | 50.00 | – |" in results
    readme = (tmp_path / "README.md").read_text()
    assert "old" not in readme and "| cnn | 75.00 ± 25.00 |" in readme
