import functools
import json

import keras
import numpy as np
import pytest

import hatt
from hatt import cli, training
from hatt.data import Imdb
from tests._planted import planted_split
from tests.data.conftest import write_tiny_imdb


@pytest.fixture(scope="module")
def planted():
    return Imdb(planted_split(160, 0), planted_split(40, 1), planted_split(40, 2), "planted")


# The module's runs of ``training.train``, each trained once on first use and read by
# several tests: the CNN with its NB-initialised channel, stopped early on the validation
# loss (up to 30 epochs, patience 1); the HAN (at 6 sentences of 12 words in ONE packed
# group: every group is a recurrence to trace); and Johnson & Zhang's one-hot CNN under
# LazyAdam with the cosine schedule and its warm-up. The last two train every epoch
# (patience = epochs).
RUNS = {
    "cnn-ngram": {
        "model": "cnn",
        "model_kwargs": {"embedding_dim": 16, "filters": 8},
        "ngram": {"buckets": 64},  # NB-initialised
        "learning_rate": 3e-2,
        "epochs": 30,
        "patience": 1,
        "monitor": "val_loss",
    },
    "han": {
        "model": "han",
        "model_kwargs": {"embedding_dim": 16, "word_units": 8, "sentence_units": 8},
        "max_sentences": 6,
        "max_words": 12,
        "sentence_groups": [12],
        "learning_rate": 1e-2,
        "epochs": 4,
        "patience": 4,
    },
    "one-hot-cosine": {
        "model": "cnn",
        "model_kwargs": {"words": "one_hot", "kernel_sizes": [3], "filters": 8},
        "optimizer": "lazy_adam",
        "learning_rate": 0.02,
        "learning_rate_decay": "cosine",
        "warmup_epochs": 0.5,
        "epochs": 3,
        "patience": 3,
    },
}


@pytest.fixture(scope="module")
def runs(planted, tmp_path_factory):
    """``run(name)``: ``(config, run_dir, metrics)`` of ``training.train`` with
    ``RUNS[name]``, trained on first use."""

    @functools.cache
    def run(name):
        run_dir = tmp_path_factory.mktemp(name)
        config = training.TrainConfig(**RUNS[name], batch_size=16, min_count=1)
        metrics = training.train(config, run_dir, texts=planted, command="test", verbose=0)
        return config, run_dir, metrics

    return run


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNS))
def test_train_writes_the_run_directory_and_learns(runs, planted, name):
    config, run_dir, metrics = runs(name)
    assert set(training.METRIC_KEYS) <= set(metrics)
    assert json.loads((run_dir / "metrics.json").read_text()) == metrics
    assert json.loads((run_dir / "config.json").read_text())["model"] == config.model
    history = training.read_history(run_dir)
    assert list(history[0])[0] == "epoch" and len(history) == metrics["epochs"]
    if config.patience >= config.epochs:  # it cannot stop early: every epoch ran
        assert metrics["epochs"] == config.epochs
    assert metrics["test_accuracy"] >= 0.9 and metrics["hatt_version"] == hatt.__version__
    assert (run_dir / "logs").is_dir()
    # test probabilities in the split's order agree with the reported accuracy
    saved = np.load(run_dir / "test_probabilities.npz")
    assert saved["probabilities"].shape == (len(planted.test),)
    np.testing.assert_array_equal(saved["labels"], planted.test.labels)
    accuracy = np.mean((saved["probabilities"] > 0.5) == planted.test.labels)
    assert accuracy == pytest.approx(metrics["test_accuracy"], abs=1e-6)
    # the saved model reloads and gives the metrics' test accuracy back
    reloaded = keras.saving.load_model(run_dir / "model.keras")
    vectorizer = hatt.data.Vectorizer.load(run_dir / "vectorizer.json")
    test = hatt.data.make_dataset(
        planted.test.texts,
        planted.test.labels,
        vectorizer=vectorizer,
        packed=config.model == "han",
        sentence_groups=config.sentence_groups,
    )
    _, accuracy = reloaded.evaluate(test, verbose=0)
    assert accuracy == pytest.approx(metrics["test_accuracy"])


def test_early_stopping_restores_the_best_epoch(runs):
    config, run_dir, metrics = runs("cnn-ngram")  # patience 1 on the validation loss
    history = training.read_history(run_dir)
    losses = [float(row["val_loss"]) for row in history]
    assert metrics["epochs"] < config.epochs == 30  # stopped early
    assert metrics["best_epoch"] == int(np.argmin(losses)) + 1
    assert metrics["validation_loss"] == pytest.approx(min(losses), rel=1e-4)


def test_triangular_schedule_matches_numpy():
    schedule = training.TriangularSchedule(0.001, 0.006, step_size=4)
    steps = np.arange(20)
    cycle = np.floor(1 + steps / 8)
    x = np.abs(steps / 4 - 2 * cycle + 1)
    expected = 0.001 + 0.005 * np.maximum(0, 1 - x)
    got = np.array([float(schedule(s)) for s in steps])
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert got[4] == pytest.approx(0.006) and got[8] == pytest.approx(0.001)
    momentum = training.TriangularSchedule(0.85, 0.95, 4, inverse=True)
    assert float(momentum(0)) == pytest.approx(0.95) and float(momentum(4)) == pytest.approx(0.85)


def test_cyclical_sgd_follows_its_momentum_and_round_trips(tmp_path):
    optimizer = training.CyclicalSGD(
        learning_rate=training.TriangularSchedule(0.01, 0.1, 2),
        momentum_schedule=training.TriangularSchedule(0.8, 0.9, 2, inverse=True),
    )
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer=optimizer, loss="mse")
    x, y = np.ones((8, 3), "float32"), np.zeros((8, 1), "float32")
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)  # 2 steps
    assert float(optimizer.current_momentum()) == pytest.approx(0.8)
    model.save(tmp_path / "m.keras")
    again = keras.saving.load_model(tmp_path / "m.keras")
    assert isinstance(again.optimizer, training.CyclicalSGD)
    assert (
        again.optimizer.momentum_schedule.get_config() == optimizer.momentum_schedule.get_config()
    )


def test_cosine_schedule_with_warmup_trains_and_ends_at_zero(runs):
    _, run_dir, metrics = runs("one-hot-cosine")  # warm-up for half an epoch, then cosine
    assert metrics["test_accuracy"] > 0.9  # the planted words are found
    model = keras.saving.load_model(run_dir / "model.keras")
    optimizer = model.optimizer
    assert int(optimizer.iterations) > 0
    assert float(optimizer.learning_rate) == pytest.approx(0.0, abs=1e-7)  # the last step's


@pytest.mark.slow
def test_hatt_train_command_end_to_end(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    root = write_tiny_imdb(tmp_path / "corpus")
    config = tmp_path / "cnn.json"
    config.write_text(json.dumps({"model_kwargs": {"embedding_dim": 8, "filters": 4}}))
    argv = [
        "train",
        "cnn",
        "--preset",
        "none",
        "--data",
        str(root),
        "--config",
        str(config),
        "--epochs",
        "2",
        "--set",
        "min_count=1",
        "--set",
        "validation_size=4",
        "--set",
        "batch_size=4",
        "--set",
        "optimizer=clr",  # the cyclical optimizer trains (test_loss finite, below)
        "--run-dir",
        str(tmp_path / "run"),
        "--export-dir",
        str(tmp_path / "saved"),
    ]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "test accuracy" in out and "run directory" in out
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["command"].startswith("hatt train cnn") and metrics["test_size"] == 4
    assert np.isfinite(metrics["test_loss"])
    saved_config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved_config["preset"] is None and saved_config["optimizer"] == "clr"
    assert (tmp_path / "saved" / "cnn" / "model.keras").exists()
    assert (tmp_path / "saved" / "cnn" / "1" / "saved_model.pb").exists()
    assert "exported to" in out and "version 1" in out
    missing_run = tmp_path / "missing-run"
    argv = ["train", "cnn", "--data", str(tmp_path / "missing"), "--run-dir", str(missing_run)]
    assert cli.main(argv) == 2
    assert not missing_run.exists()  # a failed run leaves no run directory


@pytest.mark.parametrize("nesterov", [True, False])
def test_cyclical_sgd_with_a_flat_schedule_equals_keras_sgd(nesterov):
    def fitted(optimizer):
        keras.utils.set_random_seed(0)
        inputs = keras.Input((3,))
        model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
        model.compile(optimizer=optimizer, loss="mse")
        rng = np.random.default_rng(0)
        x, y = rng.normal(size=(16, 3)), rng.normal(size=(16, 2))
        model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        return model.get_weights()

    flat = training.TriangularSchedule(0.9, 0.9, 3)
    ours = fitted(training.CyclicalSGD(0.05, momentum_schedule=flat, nesterov=nesterov))
    theirs = fitted(keras.optimizers.SGD(0.05, momentum=0.9, nesterov=nesterov))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_nb_log_ratios_match_a_direct_count():
    """r = log((p/|p|) / (q/|q|)) over binarized unigram + bigram features (Wang & Manning)."""
    import tensorflow as tf

    from hatt.layers.ngram_logit import ngram_feature_ids

    reviews = [[2, 3, 2, 3], [2, 4], [5, 3, 3], [4, 4, 6]]
    labels = np.array([1, 1, 0, 0])
    vocabulary, buckets = 8, 16
    ratios = training.nb_log_ratios(
        tf.ragged.constant(reviews), labels, vocabulary, buckets, chunk_size=3
    )
    counts = np.zeros((2, vocabulary + buckets))
    for review, label in zip(reviews, labels, strict=True):
        features, mask = ngram_feature_ids(np.array([review]), vocabulary, buckets)
        counts[label, np.unique(np.asarray(features)[np.asarray(mask)])] += 1
    p, q = counts[1] + 1, counts[0] + 1
    expected = np.where(counts.sum(0) > 0, np.log(p / p.sum()) - np.log(q / q.sum()), 0)
    np.testing.assert_allclose(ratios, expected, rtol=1e-5)
    assert ratios[2] > 0 > ratios[6]  # id 2 only in positive reviews, id 6 only in negative ones
    # min_df: features of a single review (id 5, id 6) start at 0
    frequent = training.nb_log_ratios(
        tf.ragged.constant(reviews), labels, vocabulary, buckets, min_df=2
    )
    assert frequent[5] == frequent[6] == 0 and frequent[2] == ratios[2] and frequent[3] == ratios[3]


def test_one_hot_cnn_learns_the_planted_word_with_lazy_adam(runs):
    """Johnson & Zhang's one-hot CNN, its embedding updated row by row (LazyAdam)."""
    _, run_dir, metrics = runs("one-hot-cosine")
    assert metrics["test_accuracy"] >= 0.9
    model = keras.saving.load_model(run_dir / "model.keras")
    assert isinstance(model.optimizer, training.LazyAdam)
    assert model.get_layer("embedding").output_dim == 3 * 8


def test_a_small_class_and_a_dropped_deep_part_are_warnings_at_the_top_of_metrics(tmp_path):
    """metrics.json["warnings"]: a class with a handful of training documents, and the
    mix's decision when the deep part does not add to the channel on held-out reviews."""
    train = planted_split(120, 0)
    keep = np.concatenate(
        [np.flatnonzero(train.labels == 0)[:6], np.flatnonzero(train.labels == 1)]
    )
    train = train.subset(keep)
    corpus = Imdb(train, planted_split(40, 1), planted_split(40, 2), "planted")
    config = training.TrainConfig(
        model="cnn",
        model_kwargs={"embedding_dim": 4, "filters": 2},
        ngram={"buckets": 64, "fit": "separate", "init": "nblr", "C": 1.0},
        epochs=1,
        batch_size=16,
        min_count=1,
        class_weight="none",
    )
    metrics = training.train(config, tmp_path, texts=corpus, verbose=0)
    warnings = metrics["warnings"]
    assert any(w.startswith("The class 'negative' has 6 training document(s)") for w in warnings)
    mix = metrics["ngram_channel"]["mix"]
    if mix["deep"] == 0.0:  # a one-epoch, two-filter deep part: the channel alone, said
        assert any("channel alone" in w for w in warnings)
    assert set(metrics["ngram_channel"].get("warnings", [])) <= set(warnings)
    assert json.loads((tmp_path / "metrics.json").read_text())["warnings"] == warnings
    assert all(f"warning: {w}" in training.summary(metrics, tmp_path) for w in warnings)


class _Counted:
    """A corpus as run_warnings sees it: class names and the training split's counts."""

    def __init__(self, names, counts):
        self.class_names = names
        self._counts = np.asarray(counts)

    def class_counts(self, split):
        assert split == "train"
        return self._counts


@pytest.mark.parametrize(
    "class_weight,says",
    [
        ("balanced", "this run weighs the classes by 1 / frequency (--class-weight balanced)"),
        (None, "this run weighs every class 1; --class-weight balanced weighs them"),
    ],
)
def test_an_unbalanced_run_is_warned_with_the_flag_that_fixes_it(class_weight, says):
    corpus = _Counted(("no", "yes"), [600, 60])
    found = hatt.training.run.loop.run_warnings({}, corpus, class_weight)
    assert len(found) == 1
    assert found[0].startswith("Unbalanced classes: the largest class ('no': 600 documents)")
    assert "10.0x as many as the smallest ('yes': 60)" in found[0]
    assert says in found[0] and "class_weight=" not in found[0]
    assert hatt.training.run.loop.run_warnings({}, _Counted(("no", "yes"), [60, 50]), None) == []


def test_classes_with_few_documents_are_named_a_few_then_counted_in_one_warning():
    # issue 63: a 2,000-class run wrote (and each command printed) 2,000 warnings
    names = tuple(f"c{i}" for i in range(2000))
    found = hatt.training.run.loop.run_warnings({}, _Counted(names, [3] * 2000), "balanced")
    named = [w for w in found if w.startswith("The class ")]
    assert len(named) == hatt.training.run.loop.FEW_NAMED and "'c0' has 3" in named[0]
    assert found[-1].startswith("1,995 more classes have fewer than") and len(found) == 6
