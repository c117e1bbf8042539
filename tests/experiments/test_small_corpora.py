"""experiments/small_corpora.py on a planted aclImdb folder (no real IMDB, no real training)."""

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

from experiments import harness
from tests.experiments._draws import fake_hatt, write_imdb


@pytest.fixture(scope="module")
def sc():
    return importlib.import_module("experiments.small_corpora")


@pytest.fixture(scope="module")
def imdb(tmp_path_factory):
    return write_imdb(tmp_path_factory.mktemp("small_corpora"))


# === Arguments ===


def test_bad_sizes_and_draws_are_refused_with_the_value(sc):
    with pytest.raises(ValueError, match="--sizes 1"):
        sc.parse_args(["--sizes", "1"])
    with pytest.raises(ValueError, match="--draws 0"):
        sc.parse_args(["--draws", "0"])


# === Cells and resume ===


def run_main(sc, imdb, out, runs, *extra):
    return sc.main(
        ["--data", str(imdb), "--sizes", "20", "40", "--draws", "2", "--families", "cnn"]
        + ["--baselines", "nb_lr", "--out", str(out), "--runs", str(runs), *extra]
    )


def test_rerun_skips_finished_cells_and_force_redoes_them(sc, imdb, tmp_path, monkeypatch):
    calls, baseline_calls = [], []
    monkeypatch.setattr(harness, "run_hatt", fake_hatt(calls))
    real_baseline = harness.baseline_cell

    def counted_baseline(*args, **kwargs):
        baseline_calls.append(args[0])
        return real_baseline(*args, **kwargs)

    monkeypatch.setattr(harness, "baseline_cell", counted_baseline)
    out, runs = tmp_path / "out", tmp_path / "runs"
    run_main(sc, imdb, out, runs)
    assert len(calls) == 4 and len(baseline_calls) == 4  # 2 sizes x 2 draws
    cells = sorted(p.name for p in (out / "polarity").glob("*.json"))
    assert len(cells) == 8 and "n00040-d1-cnn.json" in cells
    first = (out / "polarity" / "n00020-d0-cnn.json").read_text()

    run_main(sc, imdb, out, runs)  # everything finished: nothing runs
    assert len(calls) == 4 and len(baseline_calls) == 4
    assert (out / "polarity" / "n00020-d0-cnn.json").read_text() == first

    (out / "polarity" / "n00040-d1-nb_lr.json").unlink()  # one cell lost: only it reruns
    run_main(sc, imdb, out, runs)
    assert len(calls) == 4 and baseline_calls[4:] == ["nb_lr"]

    run_main(sc, imdb, out, runs, "--force")
    assert len(calls) == 8 and len(baseline_calls) == 9
    assert all(c[-1] == "--restart" for c in calls[4:])
    assert (out / "small_corpora.md").exists() and (out / "small_corpora.png").exists()


# === Table and curve ===


def planted_cells(rng):
    """Cells of two sizes x three draws x four methods with random figures."""
    cells = []
    for size in (100, 300):
        for draw in range(3):
            for method in ("nb_lr", "tfidf_lr", "cnn", "han"):
                cell = {
                    "task": "polarity",
                    "size": size,
                    "draw": draw,
                    "method": method,
                    "kind": "baseline" if method in ("nb_lr", "tfidf_lr") else "hatt",
                    "test_accuracy": float(rng.uniform(0.6, 0.9)),
                    "test_macro_f1": float(rng.uniform(0.5, 0.9)),
                    "fit_seconds": float(rng.uniform(1, 100)),
                    "wall_seconds": float(rng.uniform(1, 100)),
                }
                if cell["kind"] == "hatt":
                    cell["saved_model_bytes"] = int(rng.integers(1e6, 1e8))
                    cell["keras_bytes"] = int(rng.integers(1e6, 1e8))
                    cell["ngram_channel"] = {"mix": {"deep": float(rng.normal()), "channel": 1.0}}
                else:
                    cell["model_bytes"] = int(rng.integers(1e4, 1e6))
                cells.append(cell)
    return cells


def write_cells(out, cells):
    for cell in cells:
        path = (
            Path(out) / cell["task"] / f"n{cell['size']:05d}-d{cell['draw']}-{cell['method']}.json"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cell))


def test_aggregate_and_table_match_numpy(sc, tmp_path):
    cells = planted_cells(np.random.default_rng(3))
    write_cells(tmp_path, cells)
    summary = sc.aggregate(sc.read_cells(tmp_path))
    table = sc.format_table(summary)
    for size in (100, 300):
        for method in ("nb_lr", "tfidf_lr", "cnn", "han"):
            group = [c for c in cells if c["size"] == size and c["method"] == method]
            row = summary["polarity"][size][method]
            for key in ("test_accuracy", "test_macro_f1", "fit_seconds"):
                values = np.array([c[key] for c in group])
                np.testing.assert_allclose(row[key], (values.mean(), values.std(ddof=1)))
            if method in ("cnn", "han"):  # the mix's deep weight, and its negative draws
                weights = np.array([c["ngram_channel"]["mix"]["deep"] for c in group])
                np.testing.assert_allclose(
                    row["deep_weight"], (weights.mean(), weights.std(ddof=1))
                )
                assert row["negative_deep"] == np.sum(weights < 0)
            accuracy = np.array([c["test_accuracy"] for c in group]) * 100
            text = f"{accuracy.mean():.2f} ± {accuracy.std(ddof=1):.2f}"
            assert f"| {size} | {harness.LABELS.get(method, method)} | 3 | {text} |" in table


def test_goal_compares_each_family_with_the_better_baseline_per_draw(sc, tmp_path):
    cells = planted_cells(np.random.default_rng(5))
    summary = sc.aggregate(cells)
    for size, rows in summary["polarity"].items():
        result = sc.goal(rows)
        accuracy = {
            m: np.array(
                [c["test_accuracy"] for c in cells if c["size"] == size and c["method"] == m]
            )
            for m in rows
        }
        better = np.maximum(accuracy["nb_lr"], accuracy["tfidf_lr"]).mean()
        for family in ("cnn", "han"):
            got = result["families"][family]
            assert got["better_linear"] == pytest.approx(better)
            assert got["at_least"] == (accuracy[family].mean() >= better)
        best = max(("cnn", "han"), key=lambda f: accuracy[f].mean())
        assert result["best_family"] == best
        assert result["best_beats"] == (accuracy[best].mean() > better)
    del summary["polarity"][100]["tfidf_lr"]
    assert sc.goal(summary["polarity"][100]) is None


def test_table_only_works_from_the_json_alone(sc, tmp_path, monkeypatch):
    write_cells(tmp_path, planted_cells(np.random.default_rng(0)))

    def no_data(*args, **kwargs):
        raise AssertionError("--table-only read the data")

    monkeypatch.setattr(harness, "create_dataset", no_data)
    sc.main(["--table-only", "--out", str(tmp_path)])
    table = (tmp_path / "small_corpora.md").read_text()
    assert table.count("| 100 |") == 4 and table.count("| 300 |") == 4
    assert "- 100: best family" in table and "- 300: best family" in table
    png = (tmp_path / "small_corpora.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="--out"):
        sc.main(["--table-only", "--out", str(empty)])


def test_one_draw_shows_its_value_without_a_spread(sc):
    cells = [c for c in planted_cells(np.random.default_rng(1)) if c["draw"] == 0]
    table = sc.format_table(sc.aggregate(cells))
    cnn = next(c for c in cells if c["size"] == 100 and c["method"] == "cnn")
    assert f"| 100 | cnn | 1 | {100 * cnn['test_accuracy']:.2f} | " in table
    assert "± 0.00" not in table


def test_a_multiclass_mix_matrix_shows_no_deep_weight(sc):
    cells = planted_cells(np.random.default_rng(2))
    for cell in cells:
        if cell["kind"] == "hatt":
            cell["ngram_channel"]["mix"]["deep"] = [[0.5, -0.2], [-0.1, 0.4]]
    row = sc.aggregate(cells)["polarity"][100]["cnn"]
    assert row["deep_weight"] is None and row["negative_deep"] == 0
    assert "| – |" in sc.format_table(sc.aggregate(cells))


# === The baselines' two tunings ===


def test_validation_tuned_cells_go_beside_never_over_the_cross_validated(sc, imdb, tmp_path):
    out, runs = tmp_path / "out", tmp_path / "runs"
    common = ["--data", str(imdb), "--sizes", "20", "--draws", "1", "--families"]
    common += ["--baselines", "tfidf_lr", "--out", str(out), "--runs", str(runs)]
    sc.main(common)
    cv_path = out / "polarity" / "n00020-d0-tfidf_lr.json"
    cv_cell = cv_path.read_text()
    assert json.loads(cv_cell)["tuning"] == "cv5"
    assert not (out / sc.TUNING_TABLE_NAME).exists()  # nothing to set beside it yet

    sc.main([*common, "--baseline-tuning", "validation"])
    assert cv_path.read_text() == cv_cell
    old = json.loads((out / "validation_tuned" / "polarity" / cv_path.name).read_text())
    assert old["tuning"] == "validation" and old["validation_size"] > 0
    assert [c["tuning"] for c in sc.read_cells(out)] == ["cv5"]  # the main table's cells
    table = (out / sc.TUNING_TABLE_NAME).read_text()
    assert "| 20 | TF-IDF + LR | 1 |" in table and table.rstrip().endswith("| 0 |")


def test_tuning_table_sets_the_tunings_side_by_side(sc):
    cells = [c for c in planted_cells(np.random.default_rng(4)) if c["kind"] == "baseline"]
    old = [dict(c, tuning="validation") for c in cells if c["draw"] < 2]
    del old[0]["tuning"]  # a cell from before cross-validation: validation-tuned
    new = [dict(c, tuning="cv5", test_accuracy=c["test_accuracy"] + 0.01) for c in cells]
    table = sc.format_tuning_table(new + old)
    rows = {tuple(line.split(" | ")[:2]): line for line in table.splitlines()}
    for size in (100, 300):
        for method, label in (("nb_lr", "NB-LR"), ("tfidf_lr", "TF-IDF + LR")):
            row = rows[(f"| {size}", label)].strip("| ").split(" | ")
            mine = [c for c in new if c["size"] == size and c["method"] == method]
            theirs = [c for c in old if c["size"] == size and c["method"] == method]
            cv = harness.mean_std([c["test_accuracy"] for c in mine])
            validation = harness.mean_std([c["test_accuracy"] for c in theirs])
            assert row[2:4] == ["3", f"{100 * cv[0]:.2f} ± {100 * cv[1]:.2f}"]
            assert row[5:7] == ["2", f"{100 * validation[0]:.2f} ± {100 * validation[1]:.2f}"]
            assert row[8] == "+1.00" and row[10] == "0 1"  # +0.01 on the shared draws 0, 1
