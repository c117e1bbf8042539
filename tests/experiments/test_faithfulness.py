"""experiments/faithfulness.py end to end: tiny trained models on a planted aclImdb folder."""

import importlib
import json
import shutil

import pytest

from tests._planted import write_planted_imdb


@pytest.fixture(scope="module")
def faithfulness():
    return importlib.import_module("experiments.faithfulness")


@pytest.fixture(scope="module")
def measured(faithfulness, tiny, exported, tmp_path_factory):
    """One measured table for the module: cnn and han from --runs, rnn given by path, no
    transformer at all; ``(report, argv, folder)``."""
    tmp_path = tmp_path_factory.mktemp("faithfulness")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
        data = write_planted_imdb(tmp_path / "corpus", n_train=4, n_test=30)
        runs = tmp_path / "runs"
        for family in ("cnn", "han"):
            shutil.copytree(tiny[family].run_dir, runs / family)
        rnn = exported["rnn"]  # saved_models/rnn: its model.keras; a version folder has none
        paths = [str(rnn.path), str(rnn.saved_model), str(tmp_path / "nowhere")]
        argv = [
            "--runs", str(runs), "--model", *paths,
            "--data", str(data), "--reviews", "12", "--draws", "2", "--steps", "8",
            "--out", str(tmp_path / "results"),
        ]  # fmt: skip
        return faithfulness.main(argv), argv, tmp_path


def test_every_family_and_method_is_measured_and_what_is_missing_is_skipped(measured, exported):
    report, _, tmp_path = measured
    rnn = exported["rnn"]
    saved = json.loads((tmp_path / "results" / "faithfulness.json").read_text())
    assert saved == json.loads(json.dumps(report))
    assert list(saved["models"]) == ["cnn", "rnn", "han"] and saved["reviews"] == 12
    assert "no model at" in saved["skipped"]["transformer"]
    assert "no model at" in saved["skipped"][str(tmp_path / "nowhere")]
    assert "is a SavedModel" in saved["skipped"][str(rnn.saved_model)]
    assert saved["models"]["rnn"]["source"] == str(rnn.path / "model.keras")

    methods = {f: m["faithfulness"]["methods"] for f, m in saved["models"].items()}
    assert methods == {
        # max pooling, a channel; total (deep IG + the channel's share) is measured too
        "cnn": ["total", "gradient_x_input", "integrated_gradients", "ngram"],
        "rnn": ["attention", "total", "gradient_x_input", "integrated_gradients"],
        "han": ["attention", "total", "gradient_x_input", "integrated_gradients", "ngram"],
    }
    assert list(saved["models"]["cnn"]["faithfulness"]["lacking_methods"]) == ["attention"]
    for family, model in saved["models"].items():
        faith = model["faithfulness"]
        assert faith["ks"] == [5, 10, 20] and faith["steps"] == 8
        assert set(faith["by_method"]) == {*faith["methods"], "random"}
        # The planted word decides every review: the best method's top 10 % holds it.
        best = faith["by_method"][faith["best_method"]]["by_k"]["10"]
        assert best["comprehensiveness"] > 0.2, family
        assert faith["best_ratio"] > 3, family
        assert faith["ig_completeness_error"]["reviews"] == 12
    assert saved["models"]["cnn"]["uniform"] == {
        "skipped": "no attention (pools without ContextAttention)"
    }
    for family in ("rnn", "han"):
        check = saved["models"][family]["uniform"]
        assert check["reviews"] == 30 and check["learned_accuracy"] > 0.9
    assert saved["models"]["han"]["uniform"]["attention_layers"] == [
        "word_attention",
        "sentence_attention",
    ]

    table = (tmp_path / "results" / "faithfulness.md").read_text()
    assert "python -m experiments.faithfulness --runs" in table
    assert "| cnn | random |" in table and "| han | attention |" in table.replace("**", "")
    assert "| cnn | – | – | – | – | – | skipped: no attention" in table
    assert table.count("\n| han |") == 5 + 1 + 1 + 1  # methods and random; summary; uniform


def test_families_measured_in_separate_runs_share_one_table(
    faithfulness, measured, tmp_path, monkeypatch, capsys
):
    """A run keeps what an earlier run measured with the same settings (the module's table:
    cnn, rnn, han) and replaces only its own; other settings or --fresh start over."""
    _, argv, measured_in = measured
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "results"
    shutil.copytree(measured_in / "results", out)
    first = json.loads((out / "faithfulness.json").read_text())
    common = [*argv[: argv.index("--model")], *argv[argv.index("--data") : -1], str(out)]

    def run(*extra):
        faithfulness.main([*common, *extra])
        return json.loads((out / "faithfulness.json").read_text())

    second = run("--families", "cnn")
    assert list(second["models"]) == ["cnn", "rnn", "han"]  # the others kept, in family order
    assert second["models"]["rnn"] == first["models"]["rnn"]
    assert second["models"]["han"] == first["models"]["han"]
    assert "--families cnn" in second["models"]["cnn"]["command"]
    assert "--families" not in second["models"]["rnn"]["command"]
    table = (out / "faithfulness.md").read_text()
    commands = "Commands: cnn: `python -m experiments.faithfulness"
    assert commands in table and "; rnn, han: `python -m experiments.faithfulness" in table
    assert "| cnn | random |" in table and "| rnn | random |" in table

    # --fresh, or other settings: the earlier models go (runs that measure no model: the
    # transformer has none)
    capsys.readouterr()
    fresh = run("--families", "transformer", "--fresh")
    assert fresh["models"] == {} and fresh["steps"] == first["steps"]
    assert "replacing cnn, rnn, han (--fresh)" in capsys.readouterr().err
    shutil.rmtree(out)
    shutil.copytree(measured_in / "results", out)
    other_steps = run("--families", "transformer", "--steps", "2")
    assert other_steps["models"] == {} and other_steps["steps"] == 2
    assert "replacing cnn, rnn, han (other steps)" in capsys.readouterr().err
