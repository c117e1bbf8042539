"""experiments/small_corpora.py on a planted aclImdb folder (no real IMDB, no real training)."""

import json
import shlex
from pathlib import Path

import numpy as np
import pytest

from tests._scripts import load_experiment

RATINGS = (1, 2, 3, 4, 7, 8, 9, 10)


@pytest.fixture(scope="module")
def sc():
    return load_experiment("small_corpora")


def write_imdb(root, n_train=160, n_test=48, seed=0):
    """``root/aclImdb/{train,test}/{pos,neg}/ID_RATING.txt``, every rating, unique texts."""
    rng = np.random.default_rng(seed)
    root = Path(root) / "aclImdb"
    for split, n in (("train", n_train), ("test", n_test)):
        for i in range(n):
            rating = RATINGS[i % len(RATINGS)] if i % 5 else RATINGS[0]  # unbalanced ratings
            folder = root / split / ("pos" if rating >= 7 else "neg")
            folder.mkdir(parents=True, exist_ok=True)
            cue = "superb" if rating >= 7 else "dreadful"
            filler = " ".join(f"w{k}" for k in rng.integers(0, 30, size=8))
            text = f"{split} review {i} {filler} {cue} stars{rating}. It ends."
            (folder / f"{i}_{rating}.txt").write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def imdb(tmp_path_factory):
    return write_imdb(tmp_path_factory.mktemp("small_corpora"))


def read_table(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


# === Draws ===


@pytest.mark.parametrize("task", ["polarity", "rating"])
def test_draws_are_stratified_seeded_and_disjoint_from_test(sc, imdb, tmp_path, task):
    pools = sc.create_dataset(imdb, task)
    labels = pools["train"].labels
    classes, counts = np.unique(labels, return_counts=True)
    for size in (16, 40, 100):
        chosen = sc.draw_indices(labels, size, draw=0, seed=1337)
        assert len(chosen) == len(set(chosen)) == size
        drawn = dict(zip(*np.unique(labels[chosen], return_counts=True), strict=True))
        for name, count in zip(classes, counts, strict=True):  # each class its share, ±1
            assert abs(drawn.get(name, 0) - size * count / len(labels)) < 1
        np.testing.assert_array_equal(chosen, sc.draw_indices(labels, size, draw=0, seed=1337))
        assert not np.array_equal(chosen, sc.draw_indices(labels, size, draw=1, seed=1337))
        assert not np.array_equal(chosen, sc.draw_indices(labels, size, draw=0, seed=7))

    tables = sc.draw_tables(pools, task, 40, 1, 1337, tmp_path)
    train_rows, test_rows = read_table(tables["train"]), read_table(tables["test"])
    chosen = sc.draw_indices(labels, 40, draw=1, seed=1337)
    assert [r["text"] for r in train_rows] == [pools["train"].texts[i] for i in chosen]
    assert [r["label"] for r in train_rows] == list(labels[chosen])
    assert len(test_rows) == len(pools["test"].texts)  # the full test split
    assert not {r["text"] for r in train_rows} & {r["text"] for r in test_rows}
    assert all(r["text"].startswith("train ") for r in train_rows)


def test_task_labels_come_from_the_ratings(sc, imdb):
    polarity, rating = sc.create_dataset(imdb, "polarity"), sc.create_dataset(imdb, "rating")
    for text, stars, side in zip(
        rating["test"].texts, rating["test"].labels, polarity["test"].labels, strict=True
    ):
        assert text.split("stars")[1].startswith(f"{stars}.")
        assert side == ("positive" if int(stars) >= 7 else "negative")
    assert set(rating["train"].labels) == {str(r) for r in RATINGS}


def test_bad_sizes_are_refused_with_the_value(sc, imdb):
    labels = sc.create_dataset(imdb, "polarity")["train"].labels
    with pytest.raises(ValueError, match="size=161"):
        sc.draw_indices(labels, 161, draw=0, seed=1)
    with pytest.raises(ValueError, match="--sizes 1"):
        sc.parse_args(["--sizes", "1"])
    with pytest.raises(ValueError, match="--draws 0"):
        sc.parse_args(["--draws", "0"])


# === Cells and resume ===


def fake_hatt(calls):
    """A stand-in for the `hatt train` process: writes metrics.json and an export."""

    def run(command, log_path):
        calls.append(command)
        args = dict(zip(command[3::2], command[4::2], strict=False))
        family = command[2]
        run_dir, export_dir = Path(args["--run-dir"]), Path(args["--export-dir"]) / family
        run_dir.mkdir(parents=True, exist_ok=True)
        train_size = len(read_table(args["--data"]))
        (export_dir / "1" / "variables").mkdir(parents=True, exist_ok=True)
        (export_dir / "1" / "saved_model.pb").write_bytes(b"x" * 300)
        (export_dir / "1" / "variables" / "v.data").write_bytes(b"x" * 700)
        (export_dir / "model.keras").write_bytes(b"x" * 123)
        metrics = {
            "test": {"accuracy": 0.5 + train_size / 1000, "macro_f1": 0.4},
            "test_size": len(read_table(args["--test"])),
            "train_size": train_size,
            "validation_size": 0,
            "train_seconds": 1.5,
        }
        (run_dir / "metrics.json").write_text(json.dumps(metrics))

    return run


def test_hatt_cell_runs_the_users_command_and_reads_sizes(sc, imdb, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(sc, "run_hatt", fake_hatt(calls))
    pools = sc.create_dataset(imdb, "polarity")
    tables = sc.draw_tables(pools, "polarity", 40, 0, 1337, tmp_path)
    cell = sc.hatt_cell("cnn", tables, tmp_path / "cell")
    (command,) = calls
    assert command[:6] == ["hatt", "train", "cnn", "--data", str(tables["train"]), "--test"]
    assert set(command[3::2]) == {"--data", "--test", "--run-dir", "--export-dir"}  # no settings
    assert cell["command"] == shlex.join(command)
    assert (cell["saved_model_bytes"], cell["keras_bytes"]) == (1000, 123)
    assert (cell["train_size"], cell["test_size"]) == (40, 48)
    assert cell["test_accuracy"] == pytest.approx(0.54)


def test_baseline_cell_chooses_on_the_draws_validation_slice(sc, imdb, tmp_path):
    pools = sc.create_dataset(imdb, "polarity")
    tables = sc.draw_tables(pools, "polarity", 100, 0, 1337, tmp_path)
    cell = sc.baseline_cell("tfidf_lr", tables, sc.CachedTestTokens(), seed=1337)
    assert cell["train_size"] + cell["validation_size"] == 100 and cell["validation_size"] > 0
    assert cell["test_size"] == 48
    assert cell["test_accuracy"] == 1.0  # the cue words decide
    assert cell["hyperparameters"]["C"] in [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
    assert cell["model_bytes"] > 0


def test_each_test_table_is_tokenized_as_its_own(sc, tmp_path):
    """Tables whose ids are the same line numbers are told apart by their texts (keyed on
    the ids, a second draw's tuning table read the first's)."""
    import hatt

    def write(path, words):
        rows = [{"text": f"A {w} film.", "label": "pn"[i % 2]} for i, w in enumerate(words)]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        return path

    train = write(tmp_path / "train.jsonl", [f"good {i}" for i in range(20)])
    tokens = sc.CachedTestTokens()
    got = []
    for draw, words in enumerate([("good", "bad"), ("fine", "awful"), ("good", "bad")]):
        test = write(tmp_path / f"d{draw}.jsonl", words)
        got.append(tokens(hatt.data.load_corpus(train, test=str(test), progress=False)))
    assert got[0].ids == got[1].ids  # the line numbers
    assert [t.split()[1] for t in got[1].texts] == ["fine", "awful"]
    assert got[2] is got[0]  # the same table again: read once


def run_main(sc, imdb, out, runs, *extra):
    return sc.main(
        ["--data", str(imdb), "--sizes", "20", "40", "--draws", "2", "--families", "cnn"]
        + ["--baselines", "nb_lr", "--out", str(out), "--runs", str(runs), *extra]
    )


def test_rerun_skips_finished_cells_and_force_redoes_them(sc, imdb, tmp_path, monkeypatch):
    calls, baseline_calls = [], []
    monkeypatch.setattr(sc, "run_hatt", fake_hatt(calls))
    real_baseline = sc.baseline_cell

    def counted_baseline(*args, **kwargs):
        baseline_calls.append(args[0])
        return real_baseline(*args, **kwargs)

    monkeypatch.setattr(sc, "baseline_cell", counted_baseline)
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
            assert f"| {size} | {sc.LABELS.get(method, method)} | 3 | {text} |" in table


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

    monkeypatch.setattr(sc, "create_dataset", no_data)
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
