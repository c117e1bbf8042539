"""--init MODEL (issue 36, item 6): a new model starts from a trained one's weights.

The trained model is the session's tiny rnn (tests/conftest.py); the copying, freezing
and rate helpers are tested on models built here; ONE run with --init (``unfrozen``:
gradual unfreezing and discriminative rates, on another task's corpus) serves every
end-to-end check, and its run directory as each resumed test's starting point.
"""

import json
import shutil
import types

import keras
import numpy as np
import pytest

import hatt
from hatt.training.run import resume
from hatt.training.starts import transfer
from tests._fresh_process import run_json_script
from tests.conftest import TINY_KWARGS, planted

TINY = {
    "max_tokens": 120,
    "min_count": 1,
    "sequence_length": 20,
    "batch_size": 16,
    "learning_rate": 0.02,
    "epochs": 1,
    "patience": 1,
    "embedding_dim": TINY_KWARGS["rnn"]["embedding_dim"],  # the trained model's shapes
    "units": TINY_KWARGS["rnn"]["units"],
    "word_vectors": None,
}


@pytest.fixture(scope="module")
def trained(tiny):
    """The trained model's run directory: the session's tiny rnn."""
    return tiny["rnn"].run_dir


@pytest.fixture(scope="module")
def source(trained):
    """The trained model as --init loads it (loaded once for the module's tests)."""
    return transfer.load_source(trained, "rnn")


def _new_model(texts, num_classes):
    vectorizer = hatt.data.Vectorizer(max_tokens=150, min_count=1, sequence_length=20)
    vectorizer.adapt(texts)
    model = hatt.models.build(
        "rnn",
        vocabulary_size=vectorizer.vocabulary_size,
        num_classes=num_classes,
        embedding_dim=TINY["embedding_dim"],
        units=TINY["units"],
        ngram={"buckets": 32},
    )
    return model, vectorizer


def test_layers_words_and_a_same_task_head_are_copied(source):
    texts = planted(60, 5).texts + ["a zyzzogeton appears only here"]
    model, vectorizer = _new_model(texts, 2)
    start = model.get_layer("embedding").get_weights()[0].copy()
    channel = model.get_layer("ngram_logit").get_weights()[0].copy()
    info = transfer.init_from_model(model, vectorizer, source.class_names, source)

    old = source.text_model.classifier
    for name in ("encoder_0", "word_attention", "logit"):
        assert name in info["copied"]
        for mine, theirs in zip(
            model.get_layer(name).get_weights(), old.get_layer(name).get_weights(), strict=True
        ):
            np.testing.assert_array_equal(mine, theirs)
    assert info["head"] == "copied"
    rows = model.get_layer("embedding").get_weights()[0]
    trained_rows = old.get_layer("embedding").get_weights()[0]
    known = {w: i for i, w in enumerate(source.text_model.vectorizer.get_vocabulary())}
    shared = 0
    for i, word in enumerate(vectorizer.get_vocabulary()):
        if i >= 2 and known.get(word, 0) >= 2:
            np.testing.assert_array_equal(rows[i], trained_rows[known[word]])
            shared += 1
        else:  # padding, OOV and words the trained model never saw keep their start
            np.testing.assert_array_equal(rows[i], start[i])
    assert info["embedding_words"] == shared > 0
    assert "zyzzogeton" in vectorizer.get_vocabulary()
    np.testing.assert_array_equal(model.get_layer("ngram_logit").get_weights()[0], channel)


def test_another_task_keeps_its_fresh_head(source):
    model, vectorizer = _new_model(planted(60, 5).texts, 3)
    info = transfer.init_from_model(model, vectorizer, ("a", "b", "c"), source)
    assert "logit" not in info["copied"] and "encoder_0" in info["copied"]
    assert info["head"].startswith("other classes")


def test_word_rows_of_another_width_are_left_not_broadcast(source):
    # issue 63: from_model(..., preset=OTHER) met a NumPy broadcast error where the new
    # embedding had as many rows a word but another width; now that layer starts fresh
    vectorizer = hatt.data.Vectorizer(max_tokens=150, min_count=1, sequence_length=20)
    vectorizer.adapt(planted(60, 5).texts)
    model = hatt.models.build(
        "rnn",
        vocabulary_size=vectorizer.vocabulary_size,
        num_classes=2,
        embedding_dim=TINY["embedding_dim"] + 3,
        units=TINY["units"],
    )
    start = model.get_layer("embedding").get_weights()[0].copy()
    info = transfer.init_from_model(model, vectorizer, source.class_names, source)
    assert info["left"]["embedding"].startswith("other shapes")
    np.testing.assert_array_equal(model.get_layer("embedding").get_weights()[0], start)
    assert info["embedding_words"] == 0


def test_a_bad_init_fails_before_any_data_is_read(trained, tmp_path, monkeypatch):
    from hatt.training.run import datasets as corpus_lib

    def no_data(*args, **kwargs):
        raise AssertionError("the corpus was read before --init was checked")

    monkeypatch.setattr(corpus_lib.Corpus, "open", no_data)
    texts = planted(40, 3)
    with pytest.raises(ValueError, match="Expected init to name a trained hatt model"):
        hatt.TextClassifier("rnn", preset=None, init=str(tmp_path / "nowhere"), **TINY).fit(
            texts.texts, texts.labels, run_dir=tmp_path / "a", verbose=0
        )
    with pytest.raises(ValueError, match="Expected init to be a han model"):
        hatt.TextClassifier("han", preset=None, init=str(trained), word_vectors=None).fit(
            texts.texts, texts.labels, run_dir=tmp_path / "b", verbose=0
        )


def test_an_export_folder_is_a_start_as_its_help_says(exported, tmp_path):
    # issue 63: saved_models/NAME and its SavedModel version were refused ("need the Keras
    # model") although --init's help names them; they give the model.keras beside them
    result = exported["rnn"]
    for path in (result.path, result.saved_model):
        source = transfer.load_source(path, "rnn")
        assert source.kind == "keras" and source.source == result.keras_file
    clf = hatt.TextClassifier.from_model(result.path, preset=None, **TINY)
    assert clf.config.init == str(result.path)
    older = tmp_path / "saved_models" / "m"  # an older version: not the model.keras beside it
    shutil.copytree(result.path, older)
    shutil.copytree(result.saved_model, older / str(result.version + 1))
    with pytest.raises(ValueError, match="newest version's model.keras"):
        transfer.load_source(older / str(result.version), "rnn")


# === Gradual unfreezing and from_model ===============================================

# frozen for 2 of 3 epochs, then at ULMFiT's discriminative rates
UNFREEZE = {
    **TINY,
    "epochs": 3,
    "patience": 5,
    "init_frozen_epochs": 2,
    "discriminative_decay": 2.6,
}
WATCHED = ("embedding", "encoder_0", "word_attention", "logit")


class _Weights(keras.callbacks.Callback):
    """Each finished epoch's weights of the watched layers, ``{epoch: {layer: [arrays]}}``."""

    def __init__(self):
        super().__init__()
        self.epochs = {}

    def on_epoch_end(self, epoch, logs=None):
        self.epochs[epoch] = {
            name: [np.array(w) for w in self.model.get_layer(name).get_weights()]
            for name in WATCHED
        }


LOAD_OPTIMIZER = """
import json, sys
import keras
import hatt  # registers hatt's optimizers
model = keras.saving.load_model(sys.argv[1])
optimizer = model.optimizer
print(json.dumps({"optimizer": type(optimizer).__name__, "layer_rates": optimizer.layer_rates}))
"""


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


# documents with a word the trained model never saw (several: fit keeps some for validation)
ONLY_HERE = [f"A zyzzogeton film, number {i}. The zyzzogeton again." for i in range(6)]


def _other_task(n=90, seed=7):
    """Another task's corpus: bad/good (not the trained model's negative/positive), and
    documents with a word of their own."""
    texts = planted(n, seed)
    labels = [*texts.labels, *[1] * len(ONLY_HERE)]
    return [*texts.texts, *ONLY_HERE], np.array(["bad", "good"])[labels]


def _backed_up_as_of(snapshots):
    """RunBackup.on_epoch_end that also copies the run directory aside after each epoch in
    ``snapshots`` (``{epochs: folder}``): what a run killed right after that epoch's backup
    leaves on disk (nothing of the epoch's later callbacks)."""
    save = resume.RunBackup.on_epoch_end

    def on_epoch_end(self, epoch, logs=None):
        save(self, epoch, logs)
        if epoch + 1 in snapshots:
            shutil.copytree(self.run_dir, snapshots[epoch + 1])

    return on_epoch_end


@pytest.fixture(scope="module")
def unfrozen(trained, tmp_path_factory):
    """ONE uninterrupted run from_model(trained) with init_frozen_epochs=2 of 3 and
    discriminative rates: its weights every epoch, and its run directory as a run stopped
    after epoch 1 (inside the frozen epochs) and after epoch 2 (at their end) left it."""
    watch = _Weights()
    folder = tmp_path_factory.mktemp("unfrozen")
    stopped = {1: folder / "stopped_after_1", 2: folder / "stopped_after_2"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(resume.RunBackup, "on_epoch_end", _backed_up_as_of(stopped))
        clf = hatt.TextClassifier.from_model(trained, preset=None, **UNFREEZE)
        clf.fit(*_other_task(), run_dir=folder / "run", callbacks=[watch], verbose=0)
    return types.SimpleNamespace(
        clf=clf, epochs=watch.epochs, run_dir=folder / "run", stopped=stopped
    )


def test_copied_layers_stay_frozen_for_the_frozen_epochs_then_train(source, unfrozen):
    clf, epochs, run_dir = unfrozen.clf, unfrozen.epochs, unfrozen.run_dir
    trained_model = source.text_model.classifier
    info = json.loads((run_dir / "init.json").read_text())
    assert info["frozen_epochs"] == 2
    assert set(info["frozen_layers"]) == {"embedding", "encoder_0", "word_attention"}
    # the layer below the head 2.6 times slower, each one below it 2.6 times again
    rates = {"word_attention": 1 / 2.6, "encoder_0": 1 / 2.6**2, "embedding": 1 / 2.6**3}
    assert info["layer_rates"] == pytest.approx(rates)
    saved = run_json_script(LOAD_OPTIMIZER, str(run_dir / "model.keras"))  # a fresh process
    assert saved["optimizer"] == "DiscriminativeAdam"
    assert saved["layer_rates"] == pytest.approx(rates)
    assert "logit" not in info["copied"]  # other classes: the fresh head trains throughout
    for name in ("encoder_0", "word_attention"):  # as copied, through both frozen epochs
        trained_weights = trained_model.get_layer(name).get_weights()
        assert _same(epochs[0][name], trained_weights) and _same(epochs[1][name], epochs[0][name])
        assert not _same(epochs[2][name], epochs[1][name]), name  # then they train
    assert _same(epochs[1]["embedding"], epochs[0]["embedding"])
    assert not _same(epochs[2]["embedding"], epochs[1]["embedding"])
    assert not _same(epochs[1]["logit"], epochs[0]["logit"])  # the head trains when frozen
    assert len(clf.history["loss"]) == 3 and clf.metrics["epochs"] == 3
    assert np.isfinite(clf.predict(["A fine film."])).all()


def test_the_run_writes_init_json_and_reads_every_word_of_the_trained_model_and_its_own(
    trained, source, unfrozen
):
    """A small corpus's own vocabulary would leave the trained model's other words OOV."""
    run_dir = unfrozen.run_dir
    info = json.loads((run_dir / "init.json").read_text())
    assert info["source"].startswith(str(trained)) and info["embedding_words"] > 0
    assert info["head"].startswith("other classes")  # bad/good are not negative/positive
    theirs = transfer.source_words(source)
    vectorizer = hatt.data.Vectorizer.load(run_dir / "vectorizer.json")
    words = vectorizer.get_vocabulary(include_special_tokens=False)
    assert words[: len(theirs)] == theirs  # its ids are the trained model's ids
    assert "zyzzogeton" in words[len(theirs) :]  # the corpus's own words after them
    assert len(words) == len(set(words)) and vectorizer.max_tokens >= len(words) + 2
    assert info["embedding_words"] == len(theirs) and info["vocabulary_size"] == len(words) + 2
    assert transfer.joint_vocabulary(["b", "a"], ["a", "c", "b", "d"]) == ["b", "a", "c", "d"]
    assert transfer.source_words(None) is None


@pytest.mark.slow
@pytest.mark.parametrize("stopped_after", [1, 2], ids=["inside", "after"])
def test_a_resumed_run_freezes_as_the_uninterrupted_one(trained, unfrozen, tmp_path, stopped_after):
    """Stopped inside the frozen epochs (after 1 of 2) the resumed run still freezes;
    stopped at their end it trains everything; both end as the uninterrupted run."""
    whole, whole_epochs = unfrozen.clf, unfrozen.epochs
    run_dir = tmp_path / "run"
    shutil.copytree(unfrozen.stopped[stopped_after], run_dir)
    assert not (run_dir / "metrics.json").exists()  # an unfinished run
    watch = _Weights()
    clf = hatt.TextClassifier("rnn", preset=None, init=str(trained), **UNFREEZE)
    clf.fit(*_other_task(), run_dir=run_dir, callbacks=[watch], verbose=0)
    assert sorted(watch.epochs) == list(range(stopped_after, 3))
    if stopped_after == 1:  # epoch 2 (index 1) frozen: the encoder still as copied
        assert _same(watch.epochs[1]["encoder_0"], whole_epochs[0]["encoder_0"])
    assert not _same(watch.epochs[2]["encoder_0"], whole_epochs[1]["encoder_0"])  # then trains
    for name in WATCHED:  # every epoch as the uninterrupted run's
        for epoch, weights in watch.epochs.items():
            for mine, theirs in zip(weights[name], whole_epochs[epoch][name], strict=True):
                np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    assert clf.metrics["resumed_from_epoch"] == stopped_after and clf.metrics["epochs"] == 3
    assert clf.metrics["validation_accuracy"] == pytest.approx(whole.metrics["validation_accuracy"])
    assert [int(r["epoch"]) for r in hatt.training.read_history(run_dir)] == [0, 1, 2]
    assert np.isfinite(clf.predict(["A fine film."])).all()


def test_from_model_takes_the_family_and_starts_from_the_trained_model(trained, unfrozen):
    clf, run_dir = unfrozen.clf, unfrozen.run_dir  # from_model(trained, ...).fit, another task
    assert clf.family == "rnn" and clf.config.init == str(trained)
    info = json.loads((run_dir / "init.json").read_text())
    assert {"embedding", "encoder_0", "word_attention"} <= set(info["copied"])
    assert info["embedding_words"] > 0
    assert clf.class_names == ("bad", "good")
    labels = clf.predict_labels(["A fine film.", "A dull one."])
    assert len(labels) == 2 and set(labels) <= {"bad", "good"}


def test_from_model_without_a_model_there_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="Expected path to name a trained hatt model.*nowhere"):
        hatt.TextClassifier.from_model(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="Expected path to name a trained hatt model.*empty"):
        hatt.TextClassifier.from_model(tmp_path / "empty", init_frozen_epochs=1)


def test_the_head_and_layers_frozen_by_other_settings_are_never_frozen_here(tmp_path):
    model, _ = _new_model(planted(30, 5).texts, 2)
    model.compile(optimizer="adam", loss="binary_crossentropy")
    model.get_layer("embedding").trainable = False  # as word_vectors_trainable=false
    copied = ["embedding", "encoder_0", "word_attention", "logit"]
    (tmp_path / "init.json").write_text(json.dumps({"copied": copied}))
    config = types.SimpleNamespace(init_frozen_epochs=1, discriminative_decay=1.0)
    (unfreezing,) = transfer.fine_tuning(model, config, tmp_path)
    info = json.loads((tmp_path / "init.json").read_text())
    assert info["frozen_layers"] == ["encoder_0", "word_attention"]
    assert "layer_rates" not in info  # discriminative_decay=1: every layer at the run's rate
    assert model.optimizer.built  # on every variable, before any is frozen
    unfreezing.set_model(model)
    before = {id(v) for v in model.trainable_weights}
    unfreezing.on_epoch_begin(0)
    trains = {id(v) for v in model.trainable_weights}
    frozen = {
        id(v) for name in ("encoder_0", "word_attention") for v in model.get_layer(name).weights
    }
    assert trains == before - frozen
    assert {id(v) for v in model.get_layer("logit").weights} <= trains
    assert {id(v) for v in model.get_layer("ngram_logit").weights} <= trains
    unfreezing.on_epoch_begin(1)
    assert {id(v) for v in model.trainable_weights} == before
    assert not model.get_layer("embedding").trainable_weights  # still frozen


# === Discriminative rates ==============================================================


def _one_step(run_dir, decay):
    """Each layer's weights before and after one Adam step of an rnn whose embedding,
    encoder, attention and head were "copied" (init.json), at ``discriminative_decay``."""
    keras.utils.set_random_seed(0)  # the same start and dropout for every decay
    texts = planted(40, 5)
    model, vectorizer = _new_model(texts.texts, 2)
    config = hatt.training.TrainConfig(
        model="rnn", init="trained", discriminative_decay=decay, learning_rate=0.01
    )
    optimizer = hatt.training.create_optimizer(config, 1)
    # eager: the same step, without tracing a train function for one call
    model.compile(optimizer=optimizer, loss="binary_crossentropy", run_eagerly=True)
    copied = ["embedding", "encoder_0", "word_attention", "logit"]
    (run_dir / "init.json").write_text(json.dumps({"copied": copied}))
    assert transfer.fine_tuning(model, config, run_dir) == []  # nothing frozen
    before = {layer.name: layer.get_weights() for layer in model.layers}
    model.train_on_batch(vectorizer(texts.texts[:16]), np.asarray(texts.labels[:16], "float32"))
    return {  # {layer: [(start, end) a weight]}
        layer.name: list(zip(before[layer.name], layer.get_weights(), strict=True))
        for layer in model.layers
    }


def test_one_adam_step_moves_each_started_layer_at_its_rate(tmp_path):
    """Adam's step is linear in its rate (eps is not scaled by it): against the same
    step at decay 1, each started layer's move is its factor times as large, weight by
    weight; the head and the n-gram channel move as they did."""
    (tmp_path / "plain").mkdir(), (tmp_path / "rated").mkdir()
    plain = _one_step(tmp_path / "plain", 1.0)
    rated = _one_step(tmp_path / "rated", 4.0)
    factors = {"word_attention": 1 / 4, "encoder_0": 1 / 16, "embedding": 1 / 64}
    info = json.loads((tmp_path / "rated" / "init.json").read_text())
    assert info["layer_rates"] == factors
    for name, factor in {**factors, "logit": 1.0, "ngram_logit": 1.0}.items():
        pairs = zip(plain[name], rated[name], strict=True)
        for (start, end), (rated_start, rated_end) in pairs:
            np.testing.assert_array_equal(start, rated_start)  # the same model
            moved, rated_moved = end - start, rated_end - rated_start
            assert np.abs(moved).max() > 0, name
            np.testing.assert_allclose(rated_moved, factor * moved, rtol=2e-3, atol=1e-7)


def test_rates_follow_depth_in_a_han_and_side_by_side_layers_share_one():
    han = hatt.models.build("han", num_classes=2, vocabulary_size=50)
    rates = transfer.discriminative_rates(han, ["word_embedding", "word_encoder"], 2.6)
    assert rates == pytest.approx({"word_encoder": 1 / 2.6, "word_embedding": 1 / 2.6**2})
    cnn = hatt.models.build("cnn", num_classes=2, vocabulary_size=50)
    rates = transfer.discriminative_rates(cnn, ["embedding", "conv_3", "conv_4", "conv_5"], 2.0)
    assert rates == {"conv_3": 0.5, "conv_4": 0.5, "conv_5": 0.5, "embedding": 0.25}
    assert transfer.discriminative_rates(cnn, ["embedding"], 1.0) == {}


def test_discriminative_decay_is_checked_before_any_data():
    with pytest.raises(ValueError, match="Expected init .* with discriminative_decay"):
        hatt.training.TrainConfig(model="rnn", discriminative_decay=2.6)
    for bad in (0.5, 0, "fast", True):
        with pytest.raises(ValueError, match="Expected discriminative_decay to be a"):
            hatt.training.TrainConfig(model="rnn", init="m", discriminative_decay=bad)
    config = hatt.training.TrainConfig(model="han", lm_epochs=1, discriminative_decay=2.6)
    assert config.discriminative_decay == 2.6


def test_rates_on_an_optimizer_without_layer_rates_are_a_clear_error(tmp_path):
    model, _ = _new_model(planted(30, 5).texts, 2)
    model.compile(optimizer="adam", loss="binary_crossentropy")  # Keras' own Adam
    (tmp_path / "init.json").write_text(json.dumps({"copied": ["encoder_0", "logit"]}))
    config = types.SimpleNamespace(init_frozen_epochs=0, discriminative_decay=2.0)
    with pytest.raises(ValueError, match="Expected an optimizer with layer rates"):
        transfer.fine_tuning(model, config, tmp_path)
