"""experiments/learning_curve.py: the few-labels table and curve from result files alone."""

import json

import pytest

from tests._scripts import load_experiment


@pytest.fixture
def lc(tmp_path, monkeypatch):
    module = load_experiment("learning_curve")
    small, unlabeled, results = tmp_path / "small", tmp_path / "unlabeled", tmp_path
    small.mkdir()
    unlabeled.mkdir()
    monkeypatch.setattr(module, "UNLABELED", unlabeled)
    methods = {
        "han": ("HAN", small, results / "han.json"),
        "han_unsup_lm": ("HAN + LM", unlabeled, unlabeled / "full-han_unsup_lm.json"),
        "nb_lr": ("NB-LR", small, results / "baseline_nb_lr.json"),
    }
    monkeypatch.setattr(module, "METHODS", methods)
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
