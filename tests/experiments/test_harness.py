"""experiments/harness.py on a planted aclImdb folder: the draws, the cells, the test tables."""

import json
import shlex

import numpy as np
import pytest

from experiments import harness as harness_module
from tests.experiments._draws import RATINGS, fake_hatt, read_table, write_imdb


@pytest.fixture(scope="module")
def harness():
    return harness_module


@pytest.fixture(scope="module")
def imdb(tmp_path_factory):
    return write_imdb(tmp_path_factory.mktemp("harness"))


# === Draws ===


@pytest.mark.parametrize("task", ["polarity", "rating"])
def test_draws_are_stratified_seeded_and_disjoint_from_test(harness, imdb, tmp_path, task):
    pools = harness.create_dataset(imdb, task)
    labels = pools["train"].labels
    classes, counts = np.unique(labels, return_counts=True)
    for size in (16, 40, 100):
        chosen = harness.draw_indices(labels, size, draw=0, seed=1337)
        assert len(chosen) == len(set(chosen)) == size
        drawn = dict(zip(*np.unique(labels[chosen], return_counts=True), strict=True))
        for name, count in zip(classes, counts, strict=True):  # each class its share, ±1
            assert abs(drawn.get(name, 0) - size * count / len(labels)) < 1
        np.testing.assert_array_equal(chosen, harness.draw_indices(labels, size, draw=0, seed=1337))
        assert not np.array_equal(chosen, harness.draw_indices(labels, size, draw=1, seed=1337))
        assert not np.array_equal(chosen, harness.draw_indices(labels, size, draw=0, seed=7))

    tables = harness.draw_tables(pools, task, 40, 1, 1337, tmp_path)
    train_rows, test_rows = read_table(tables["train"]), read_table(tables["test"])
    chosen = harness.draw_indices(labels, 40, draw=1, seed=1337)
    assert [r["text"] for r in train_rows] == [pools["train"].texts[i] for i in chosen]
    assert [r["label"] for r in train_rows] == list(labels[chosen])
    assert len(test_rows) == len(pools["test"].texts)  # the full test split
    assert not {r["text"] for r in train_rows} & {r["text"] for r in test_rows}
    assert all(r["text"].startswith("train ") for r in train_rows)


def test_task_labels_come_from_the_ratings(harness, imdb):
    polarity, rating = (
        harness.create_dataset(imdb, "polarity"),
        harness.create_dataset(imdb, "rating"),
    )
    for text, stars, side in zip(
        rating["test"].texts, rating["test"].labels, polarity["test"].labels, strict=True
    ):
        assert text.split("stars")[1].startswith(f"{stars}.")
        assert side == ("positive" if int(stars) >= 7 else "negative")
    assert set(rating["train"].labels) == {str(r) for r in RATINGS}


def test_bad_sizes_are_refused_with_the_value(harness, imdb):
    labels = harness.create_dataset(imdb, "polarity")["train"].labels
    with pytest.raises(ValueError, match="size=161"):
        harness.draw_indices(labels, 161, draw=0, seed=1)


# === Cells ===


def test_hatt_cell_runs_the_users_command_and_reads_sizes(harness, imdb, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(harness, "run_hatt", fake_hatt(calls))
    pools = harness.create_dataset(imdb, "polarity")
    tables = harness.draw_tables(pools, "polarity", 40, 0, 1337, tmp_path)
    cell = harness.hatt_cell("cnn", tables, tmp_path / "cell")
    (command,) = calls
    assert command[:6] == ["hatt", "train", "cnn", "--data", str(tables["train"]), "--test"]
    assert set(command[3::2]) == {"--data", "--test", "--run-dir", "--export-dir"}  # no settings
    assert cell["command"] == shlex.join(command)
    assert (cell["saved_model_bytes"], cell["keras_bytes"]) == (1000, 123)
    assert (cell["train_size"], cell["test_size"]) == (40, 48)
    assert cell["test_accuracy"] == pytest.approx(0.54)


def test_baseline_cell_chooses_on_the_draws_validation_slice(harness, imdb, tmp_path):
    pools = harness.create_dataset(imdb, "polarity")
    tables = harness.draw_tables(pools, "polarity", 100, 0, 1337, tmp_path)
    cell = harness.baseline_cell(
        "tfidf_lr", tables, harness.CachedTestTokens(), seed=1337, tuning="validation"
    )
    assert cell["tuning"] == "validation"
    assert [set(row) for row in cell["selection"]] == [{"C", "validation_accuracy"}] * 8
    assert cell["train_size"] + cell["validation_size"] == 100 and cell["validation_size"] > 0
    assert cell["test_size"] == 48
    assert cell["test_accuracy"] == 1.0  # the cue words decide
    assert cell["hyperparameters"]["C"] in [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
    assert cell["model_bytes"] > 0


def test_baseline_cell_cross_validates_on_every_document_of_the_draw(
    harness, imdb, tmp_path, monkeypatch
):
    """The default: 5-fold CV on all 100 documents of the draw (in the table's order, the
    slice hatt would hold out included), then a refit on all of them; the cell says so."""
    from experiments import baselines

    pools = harness.create_dataset(imdb, "polarity")
    tables = harness.draw_tables(pools, "polarity", 100, 0, 1337, tmp_path)
    seen, cross_validate = [], baselines.cross_validate_hyperparameters

    def spy(name, train, **kwargs):
        seen.append((train, kwargs))
        return cross_validate(name, train, **kwargs)

    monkeypatch.setattr(baselines, "cross_validate_hyperparameters", spy)
    cell = harness.baseline_cell("tfidf_lr", tables, harness.CachedTestTokens(), seed=1337)
    ((train, kwargs),) = seen
    table = read_table(tables["train"])
    assert train.texts == baselines.tokenize([row["text"] for row in table], progress=False)
    assert kwargs["folds"] == 5 and kwargs["seed"] == 1337
    assert cell["tuning"] == "cv5" and cell["train_size"] == 100 and cell["validation_size"] == 0
    assert cell["test_size"] == 48 and cell["test_accuracy"] == 1.0
    assert len(cell["selection"]) == 8
    assert all(len(row["fold_accuracies"]) == 5 for row in cell["selection"])
    best = max(cell["selection"], key=lambda row: row["cv_accuracy"])  # the first maximum
    assert cell["hyperparameters"] == {"C": best["C"]}
    json.dumps(cell)  # a cell is written as JSON


def test_baseline_cell_refuses_an_unknown_tuning(harness, imdb, tmp_path):
    with pytest.raises(ValueError, match="tuning='cv10'"):
        harness.baseline_cell("nb_lr", {}, harness.CachedTestTokens(), seed=1, tuning="cv10")


def test_each_test_table_is_tokenized_as_its_own(harness, tmp_path):
    """Tables whose ids are the same line numbers are told apart by their texts (keyed on
    the ids, a second draw's tuning table read the first's)."""
    import hatt

    def write(path, words):
        rows = [{"text": f"A {w} film.", "label": "pn"[i % 2]} for i, w in enumerate(words)]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        return path

    train = write(tmp_path / "train.jsonl", [f"good {i}" for i in range(20)])
    tokens = harness.CachedTestTokens()
    got = []
    for draw, words in enumerate([("good", "bad"), ("fine", "awful"), ("good", "bad")]):
        test = write(tmp_path / f"d{draw}.jsonl", words)
        got.append(tokens(hatt.data.load_corpus(train, test=str(test), progress=False)))
    assert got[0].ids == got[1].ids  # the line numbers
    assert [t.split()[1] for t in got[1].texts] == ["fine", "awful"]
    assert got[2] is got[0]  # the same table again: read once
