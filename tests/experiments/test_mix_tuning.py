"""experiments/mix_tuning.py: the tuning reviews, the criterion and its report, on made-up runs."""

import importlib
import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def mix_tuning():
    return importlib.import_module("experiments.mix_tuning")


def write_run(root, deep_signal, seed=0, n=100, tuning=2000):
    """A finished run: validation logits and the tuning reviews' (its "test" file)."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    for split, size in (("validation", n), ("test", tuning)):
        labels = rng.integers(0, 2, size)
        sign = 2 * labels - 1
        arrays = {
            "labels": labels,
            "channel_logits": 1.0 * sign + rng.normal(0, 1.5, size),
            "deep_logits": deep_signal * sign + rng.normal(0, 1.5, size),
        }
        np.savez(root / f"{split}_probabilities.npz", **arrays)
    (root / "metrics.json").write_text("{}")
    return root


def test_tuning_reviews_are_outside_the_draw_and_stratified(mix_tuning):
    labels = np.array(["neg"] * 300 + ["pos"] * 100)
    excluded = set(range(0, 400, 3))
    picked = mix_tuning.tuning_indices(labels, excluded, 80, draw=1, seed=1337)
    assert len(set(picked.tolist())) == 80
    assert not excluded & set(picked.tolist())
    assert (labels[picked] == "pos").sum() == 20  # the classes' shares kept
    again = mix_tuning.tuning_indices(labels, excluded, 80, draw=1, seed=1337)
    other = mix_tuning.tuning_indices(labels, excluded, 80, draw=2, seed=1337)
    assert np.array_equal(picked, again) and not np.array_equal(picked, other)
    with pytest.raises(ValueError, match="tuning-size"):
        mix_tuning.tuning_indices(labels, excluded, 300, draw=1, seed=1337)


def test_the_criterion_is_mean_tuning_accuracy_ties_to_todays_rule(mix_tuning):
    rules = [*mix_tuning.mix_rule.RULES, "channel", mix_tuning.mix_rule.TODAY]
    today = mix_tuning.mix_rule.TODAY
    n = len(rules)

    def runs(accuracies):
        return [
            {
                "tuning": {
                    rule: {"accuracy": acc, "log_loss": 0.3, "deep_kept": True}
                    for rule, acc in zip(rules, run, strict=True)
                }
            }
            for run in accuracies
        ]

    # each run weighs the same: "0 SE" has the best mean though "always" wins one run
    mean, chosen = mix_tuning.choose(
        runs(
            [[0.90, 0.86, 0.85, 0.84, 0.84, 0.84, 0.84], [0.70, 0.80, 0.79, 0.78, 0.78, 0.78, 0.7]]
        )
    )
    assert chosen == "0 SE" and mean["0 SE"]["accuracy"] == pytest.approx(0.83)
    # a tie goes to today's rule, else to the tied rule nearest it
    i = rules.index(today)
    _, chosen = mix_tuning.choose(runs([[0.85 if abs(k - i) <= 1 else 0.80 for k in range(n)]]))
    assert chosen == today
    others = sorted((k for k in range(n) if k != i), key=lambda k: (abs(k - i), k))
    near, far = others[0], others[-1]
    _, chosen = mix_tuning.choose(runs([[0.86 if k in (near, far) else 0.80 for k in range(n)]]))
    assert chosen == rules[near]
    # today's rule not among those judged: a tie goes to the first listed
    among = ["0.5 SE", "2 SE", "0 SE"]  # 0.80, 0.86, 0.86
    _, chosen = mix_tuning.choose(runs([[0.80, 0.86, 0.80, 0.80, 0.86, 0.86, 0.80]]), among)
    assert chosen == "2 SE"


def test_report_scores_each_rule_on_the_tuning_reviews(tmp_path, mix_tuning):
    root = tmp_path / "runs"
    strong = write_run(root / "polarity" / "n01000-d1" / "han", deep_signal=2.0, seed=1)
    useless = write_run(root / "polarity" / "n00500-d1" / "cnn", deep_signal=0.0, seed=2)
    (root / "polarity" / "n00500-d1" / "rnn").mkdir()  # unfinished: not read
    out = tmp_path / "out"
    mix_tuning.main(["--report-only", "--runs", str(root), "--out", str(out), "--repeats", "1"])
    result = json.loads((out / "tuning.json").read_text())
    assert [run["run_dir"] for run in result["runs"]] == [str(useless), str(strong)]
    by_run = {run["run_dir"]: run["tuning"] for run in result["runs"]}
    # a strong deep part helps on the tuning reviews; the channel alone never keeps it
    assert by_run[str(strong)]["always"]["accuracy"] > by_run[str(strong)]["channel"]["accuracy"]
    assert not by_run[str(strong)]["channel"]["deep_kept"]
    assert by_run[str(strong)]["always"]["deep_kept"]
    # the mean is over runs and the chosen rule has the best mean
    mean = result["mean"]
    for rule, scores in mean.items():
        expected = np.mean([tuning[rule]["accuracy"] for tuning in by_run.values()])
        assert scores["accuracy"] == pytest.approx(expected)
    assert mean[result["chosen"]]["accuracy"] >= max(m["accuracy"] for m in mean.values()) - 1e-4
    table = (out / "tuning.md").read_text()
    assert f"**{result['chosen']}**" in table and str(strong) in table


def test_a_second_question_is_judged_on_its_draws_among_its_rules(tmp_path, mix_tuning):
    root = tmp_path / "runs"
    write_run(root / "polarity" / "n00500-d1" / "cnn", deep_signal=0.0, seed=2)
    fresh = [
        write_run(root / "polarity" / "n00500-d3" / family, deep_signal=1.0, seed=seed)
        for seed, family in enumerate(["cnn", "han"], 5)
    ]
    record = {
        f"{part}_{split}_accuracy": value
        for (part, split), value in zip(
            [
                ("deep", "validation"),
                ("deep", "test"),
                ("channel", "validation"),
                ("channel", "test"),
            ],
            [0.70, 0.60, 0.80, 0.82],
            strict=True,
        )
    }
    (fresh[0] / "ngram_channel.json").write_text(json.dumps(record))
    out = tmp_path / "out"
    argv = ["--report-only", "--runs", str(root), "--out", str(out), "--repeats", "1"]
    mix_tuning.main(
        [*argv, "--judge-draws", "3", "--rules", "always", "anchored", "--name", "anchored"]
    )
    assert not (out / "tuning.json").exists()
    result = json.loads((out / "anchored.json").read_text())
    assert [run["run_dir"] for run in result["runs"]] == [str(run) for run in fresh]
    assert result["among"] == ["always", "anchored"]
    mean = result["mean"]
    best = max(("always", "anchored"), key=lambda rule: mean[rule]["accuracy"])
    tie = abs(mean["always"]["accuracy"] - mean["anchored"]["accuracy"]) <= mix_tuning.TIE
    assert result["chosen"] == ("always" if tie else best)
    table = (out / "anchored.md").read_text()
    assert "| rule | from scratch (2) |" in table  # the means by kind of run
    # each part alone, validation against tuning reviews, from the runs' channel records
    assert "| polarity/cnn | 1 | 70.0 % | 60.0 % | 80.0 % | 82.0 % |" in table
    assert "--judge-draws 3 --rules always anchored --name anchored" in table
    assert "among always, anchored" in table


def test_baselines_run_once_a_drawn_table_and_stand_beside_hatt(tmp_path, mix_tuning, monkeypatch):
    root = tmp_path / "runs"
    data = root / "polarity" / "data"
    data.mkdir(parents=True)
    for name in ("n00500-d1", "n00500-d2", "d1-tuning", "d2-tuning"):
        (data / f"{name}.jsonl").write_text("")
    runs = [
        write_run(root / "polarity" / f"n00500-d{draw}" / "cnn", deep_signal=0.5, seed=draw)
        for draw in (1, 2)
    ]
    calls = []

    def fake_cell(name, tables, test_tokens, seed, tuning):
        assert tuning == "validation"  # as the table's recorded cells were tuned
        calls.append((name, tables["train"].name, tables["test"].name))
        draw = int(tables["train"].stem.split("-d")[1])
        return {"test_accuracy": {"nb_lr": 0.6, "tfidf_lr": 0.5}[name] + 0.1 * draw}

    monkeypatch.setattr(mix_tuning.harness, "baseline_cell", fake_cell)
    out = tmp_path / "out"
    argv = ["--report-only", "--baselines", "--runs", str(root), "--out", str(out)]
    mix_tuning.main([*argv, "--repeats", "1"])
    assert sorted(calls) == [
        ("nb_lr", "n00500-d1.jsonl", "d1-tuning.jsonl"),
        ("nb_lr", "n00500-d2.jsonl", "d2-tuning.jsonl"),
        ("tfidf_lr", "n00500-d1.jsonl", "d1-tuning.jsonl"),
        ("tfidf_lr", "n00500-d2.jsonl", "d2-tuning.jsonl"),
    ]
    mix_tuning.main([*argv, "--repeats", "1"])
    assert len(calls) == 4  # a finished baseline is kept
    result = json.loads((out / "tuning.json").read_text())
    hatt = np.mean([run["tuning"]["anchored"]["accuracy"] for run in result["runs"]])
    assert len(result["runs"]) == len(runs)
    nb_lr, tfidf = np.mean([0.7, 0.8]), np.mean([0.6, 0.7])
    gap = f"{100 * (hatt - nb_lr):+.2f}"
    row = (
        f"| polarity 500 | cnn | 2 | {100 * hatt:.2f} % | {100 * nb_lr:.2f} % | "
        f"{100 * tfidf:.2f} % | {f'**{gap}**' if hatt < nb_lr else gap} |"
    )
    table = (out / "tuning.md").read_text()
    assert row in table
    # the command it names fits the baselines again, for the task they were fit for
    assert "python -m experiments.mix_tuning --report-only --baselines --task polarity" in table
