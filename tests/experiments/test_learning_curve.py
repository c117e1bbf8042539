"""experiments/learning_curve.py: the few-labels table and curve from result files alone."""

import importlib
import json

import pytest


@pytest.fixture
def lc(tmp_path, monkeypatch):
    module = importlib.import_module("experiments.learning_curve")
    small, unlabeled, results = tmp_path / "small", tmp_path / "unlabeled", tmp_path
    small.mkdir()
    unlabeled.mkdir()
    monkeypatch.setattr(module, "UNLABELED", unlabeled)
    monkeypatch.setattr(module, "SEEDS", tmp_path / "seeds")  # run_all.py --seed S's rows
    methods = {
        "han": ("HAN", small, results / "han.json"),
        "han_unsup_lm": ("HAN + LM", unlabeled, unlabeled / "full-han_unsup_lm.json"),
        "nb_lr": ("NB-LR", small, results / "baseline_nb_lr.json"),
    }
    monkeypatch.setattr(module, "METHODS", methods)
    monkeypatch.setattr(module, "PLOTTED", tuple(methods))
    return module


def write(path, **row):
    path.write_text(json.dumps(row))


def test_a_full_run_is_recorded_with_its_pretraining_and_tabled_at_25000(lc, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    metrics = {
        "test_accuracy": 0.93,
        "test_macro_f1": 0.929,
        "train_seconds": 951.0,
        "epochs": 7,
        "seed": 1337,
        "ngram_channel": {"deep_test_accuracy": 0.91},
        "language_model": {"epochs": [{"epoch": 1}, {"epoch": 2}], "seconds": 1379.2},
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    (run / "unlabeled.json").write_text(json.dumps({"kept": 49694}))
    path = lc.record_full(run, "han_unsup_lm", command="hatt train han ...")
    row = json.loads(path.read_text())
    assert path.name == "full-han_unsup_lm.json" and row["size"] == 25000
    assert row["deep_test_accuracy"] == 0.91 and row["language_model"]["seconds"] == 1379.2
    assert row["unlabeled"] == {"kept": 49694} and row["command"] == "hatt train han ..."

    small = lc.METHODS["han"][1]
    for draw, (han, nb) in enumerate([(0.85, 0.86), (0.87, 0.84)]):
        write(small / f"n01000-d{draw}-han.json", test_accuracy=han, command="hatt train han")
        write(small / f"n01000-d{draw}-nb_lr.json", test_accuracy=nb)
    write(small / "n01000-d2-han.json", test_accuracy=0.5)  # a draw NB-LR lacks: left out
    write(tmp_path / "han.json", test_accuracy=0.9296)
    summary = lc.collect()
    assert summary[1000]["han"]["test_accuracy"] == pytest.approx((0.86, 0.01414), abs=1e-4)
    assert summary[1000]["han"]["draws"] == [0, 1]
    assert summary[25000]["han_unsup_lm"]["deep_test_accuracy"] == 0.91
    assert "nb_lr" not in summary[25000]  # no whole-split baseline file here

    lc.write_reports(summary, tmp_path / "out", tmp_path / "curve.png")
    table = (tmp_path / "out" / "learning_curve.md").read_text()
    assert "| 1000 | 0, 1 | 86.00 % ± 1.41 |  | 85.00 % ± 1.41 |" in table
    assert "| 25000 | all | 92.96 % | 93.00 % (91.00) |  |" in table
    assert (tmp_path / "curve.png").stat().st_size > 10_000


def test_the_figure_draws_the_plotted_methods_and_the_table_keeps_every_one(
    lc, tmp_path, monkeypatch
):
    lc.METHODS["han_unsup_lm_disc"] = ("HAN + LM, rates", lc.UNLABELED, tmp_path / "x.json")
    monkeypatch.setattr(lc, "PLOTTED", ("han", "han_unsup_lm", "nb_lr"))
    cell = {"test_accuracy": (0.9, 0.0), "deep_test_accuracy": None, "draws": [0], "commands": []}
    summary = {1000: {m: cell for m in ("han", "han_unsup_lm", "han_unsup_lm_disc", "nb_lr")}}
    drawn = []
    monkeypatch.setattr(lc.harness, "plot", lambda by_task, figure: drawn.append(by_task))
    lc.write_reports(summary, tmp_path / "out", tmp_path / "curve.png")
    assert sorted(drawn[0]["polarity"][1000]) == ["HAN", "HAN + LM", "nb_lr"]
    assert "HAN + LM, rates" in (tmp_path / "out" / "learning_curve.md").read_text()


def _run(tmp_path, name, seed, accuracy, deep):
    run = tmp_path / name
    run.mkdir()
    metrics = {
        "test_accuracy": accuracy,
        "test_macro_f1": accuracy,
        "train_seconds": 1.0,
        "seed": seed,
        "command": f"hatt train han --seed {seed}",
        "ngram_channel": {"deep_test_accuracy": deep},
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    return run


def test_other_seeds_are_recorded_apart_and_tabled_over_seeds(lc, tmp_path):
    paths = [
        lc.record_full(_run(tmp_path, f"s{seed}", seed, acc, deep), "han_unsup_lm")
        for seed, acc, deep in [(3, 0.93, 0.91), (1337, 0.94, 0.92), (2, 0.95, 0.93)]
    ]
    names = [path.name for path in paths]
    assert names == [
        "full-han_unsup_lm-seed3.json",
        "full-han_unsup_lm.json",  # the default seed keeps the name every table reads
        "full-han_unsup_lm-seed2.json",
    ]
    # the main table at 25,000 holds seed 1337 only
    assert lc.collect()[25000]["han_unsup_lm"]["test_accuracy"] == (0.94, 0.0)

    # the HAN without unlabeled text: its seed files are run_all.py's, metrics-shaped
    write(tmp_path / "han.json", test_accuracy=0.90, seed=1337, command="hatt train han")
    (tmp_path / "seeds" / "2").mkdir(parents=True)
    write(
        tmp_path / "seeds" / "2" / "han.json",
        test_accuracy=0.92,
        seed=2,
        ngram_channel={"deep_test_accuracy": 0.8},
        command=f"python x.py --results {lc.ROOT}/experiments/results/seeds/2",
    )
    seeds = lc.over_seeds()
    assert list(seeds) == ["han", "han_unsup_lm"]  # NB-LR: one seed, left out
    cell = seeds["han_unsup_lm"]
    assert cell["seeds"] == [1337, 2, 3]  # the default seed first
    assert cell["test_accuracy"] == [0.94, 0.95, 0.93]
    assert cell["mean"] == pytest.approx((0.94, 0.01))
    assert cell["deep_mean"] == pytest.approx((0.92, 0.01))
    assert seeds["han"]["deep_mean"] is None  # seed 1337's file has no deep part
    assert seeds["han"]["commands"][1] == "python x.py --results experiments/results/seeds/2"

    lc.write_reports(lc.collect(), tmp_path / "out", tmp_path / "curve.png", seeds)
    table = (tmp_path / "out" / "learning_curve.md").read_text()
    assert "## 25,000 labels over seeds" in table
    assert (
        "| HAN + LM | 1337, 2, 3 | 94.00 (92.00), 95.00 (93.00), 93.00 (91.00) "
        "| 94.00 % ± 1.00 | 92.00 % ± 1.00 |" in table
    )
    report = json.loads((tmp_path / "out" / "learning_curve.json").read_text())
    assert report["over_seeds"]["han_unsup_lm"]["seeds"] == [1337, 2, 3]
    assert report["by_size"]["25000"]["han_unsup_lm"]["test_accuracy"] == [0.94, 0.0]


def test_no_second_seed_no_seeds_section(lc, tmp_path):
    lc.record_full(_run(tmp_path, "s1337", 1337, 0.94, 0.92), "han_unsup_lm")
    assert lc.over_seeds() == {}
    lc.write_reports(lc.collect(), tmp_path / "out", tmp_path / "curve.png", lc.over_seeds())
    assert "over seeds" not in (tmp_path / "out" / "learning_curve.md").read_text()


def test_draws_only_unlabeled_py_ran_fill_the_small_corpora_methods(lc, tmp_path):
    small, unlabeled = lc.METHODS["han"][1], lc.UNLABELED
    write(small / "n01000-d0-han.json", test_accuracy=0.85)
    write(unlabeled / "n01000-d0-han.json", test_accuracy=0.10)  # small_corpora.py's wins
    write(unlabeled / "n00500-d0-han.json", test_accuracy=0.80)  # only unlabeled.py ran it
    found = lc.draws("han")
    assert found[1000][0]["test_accuracy"] == 0.85
    assert found[500][0]["test_accuracy"] == 0.80


def test_seed_0_is_a_seed_of_its_own(lc, tmp_path):
    lc.record_full(_run(tmp_path, "s1337", 1337, 0.94, 0.92), "han_unsup_lm")
    path = lc.record_full(_run(tmp_path, "s0", 0, 0.50, 0.50), "han_unsup_lm")
    assert path.name == "full-han_unsup_lm-seed0.json"
    rows = lc.full_rows("han_unsup_lm")
    assert list(rows) == [1337, 0]  # not read back as the default seed's row
    assert lc.full_row("han_unsup_lm")["test_accuracy"] == 0.94
