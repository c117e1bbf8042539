"""hatt.training.run.adversarial: adversarial (AT) and virtual adversarial (VAT) training on the
word embeddings (Miyato et al. 2017; issue 36, item 2)."""

import json
import subprocess
import sys
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

import hatt
from hatt.data import Imdb
from hatt.training.run import adversarial
from tests.conftest import planted

# The runs' family: a tiny CNN, whose adversarial train step traces in a third of the
# RNN's time (no recurrence to differentiate through); the perturbations of the RNN and
# the packed HAN are checked on their own above the runs.
TINY_CNN = {
    "max_tokens": 200,
    "min_count": 1,
    "sequence_length": 20,
    "batch_size": 16,
    "learning_rate": 0.02,
    "epochs": 1,
    "patience": 1,
    "embedding_dim": 8,
    "filters": 4,
    "kernel_sizes": (2, 3),
    "ngram": None,
}


def settings(method="at", epsilon=5.0, weight=1.0):
    return types.SimpleNamespace(
        adversarial=method, adversarial_epsilon=epsilon, adversarial_weight=weight
    )


def tiny_model(family="rnn", seed=0, **kwargs):
    keras.utils.set_random_seed(seed)
    options = {"embedding_dim": 6, "dropout": 0.0}
    options.update({"units": 4} if family == "rnn" else {"word_units": 4, "sentence_units": 4})
    model = hatt.models.build(family, vocabulary_size=20, **options, **kwargs)
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model


@pytest.fixture(scope="module")
def corpus():
    return Imdb(planted(80, 0), planted(20, 1), planted(20, 2), "planted")


def test_the_at_perturbation_is_epsilon_along_the_normalised_gradient():
    model = adversarial.enable(tiny_model(), settings(epsilon=2.5))
    ids = np.array([[3, 5, 7, 0, 0], [2, 4, 6, 8, 9], [1, 0, 0, 0, 0]], "int32")
    labels = np.array([[1.0], [0.0], [1.0]], "float32")
    hook = model.adversarial_hook
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        with hook.recording(tape=tape) as clean:
            probabilities = model(ids)
        loss = keras.losses.binary_crossentropy(labels, probabilities)
    found = adversarial.at_perturbation(
        hook.layer, ids, clean, tape.gradient(loss, clean.outputs), 2.5
    )[0].numpy()

    # the reference: d loss / d embedded through the explanation view, in NumPy after
    embedded = tf.constant(model.get_layer("embedding")(ids))
    view = hatt.models.explanation_view(model).logits
    with tf.GradientTape() as reference_tape:
        reference_tape.watch(embedded)
        logits = view([tf.constant(ids), embedded])
        reference_loss = keras.losses.binary_crossentropy(labels, tf.sigmoid(logits))
    gradient = reference_tape.gradient(reference_loss, embedded).numpy()
    sigma = model.get_layer("embedding").embeddings.numpy()[1:].std(axis=0)
    words = (ids != 0)[..., None]
    normalised = gradient * sigma * words
    expected = 2.5 * sigma * normalised / np.linalg.norm(normalised, axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(found, expected, rtol=1e-4, atol=1e-6)
    # epsilon per document in normalised units, nothing on padding
    np.testing.assert_allclose(np.linalg.norm(found / sigma, axis=(1, 2)), 2.5, rtol=1e-4)
    assert not found[~words[..., 0]].any()


def test_the_packed_han_is_perturbed_per_document():
    model = adversarial.enable(tiny_model("han", packed_groups=2), settings(epsilon=3.0))
    ids = tf.ragged.constant([[[2, 3], [4, 5, 6, 7]], [[8], [9, 2, 3, 4, 5], [6, 7]]])
    x = hatt.data.pack_sentences(ids, (2, 5))
    labels = np.array([[1.0], [0.0]], "float32")
    hook = model.adversarial_hook
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        with hook.recording(tape=tape) as clean:
            probabilities = model(x)
        loss = keras.losses.binary_crossentropy(labels, probabilities)
    found = adversarial.at_perturbation(
        hook.layer, x, clean, tape.gradient(loss, clean.outputs), 3.0
    )
    sigma = model.get_layer("word_embedding").embeddings.numpy()[1:].std(axis=0)
    rows = np.concatenate(
        [np.sum((r.numpy() / sigma) ** 2, axis=(1, 2)) for r in sorted_by_group(found, clean, x)]
    )
    index = x["sentence_index"].numpy()
    for document in index:
        slots = document[document > 0] - 1
        np.testing.assert_allclose(np.sqrt(rows[slots].sum()), 3.0, rtol=1e-4)


def sorted_by_group(perturbations, clean, x):
    """The perturbations in the order of the groups (the calls may run in another)."""
    names = [f"words_{k}" for k in range(len(x) - 1)]
    order = [next(k for k, n in enumerate(names) if ids is x[n]) for ids in clean.ids]
    return [perturbations[order.index(k)] for k in range(len(names))]


def test_the_adversarial_term_is_added_to_the_training_loss():
    ids = np.random.default_rng(0).integers(0, 20, (8, 6)).astype("int32")
    labels = np.array([0, 1] * 4, "float32")

    def one_step(config):
        model = tiny_model(seed=3)
        model.run_eagerly = True  # one step: far quicker than tracing it
        if config is not None:
            adversarial.enable(model, config)
        return model.train_on_batch(ids, labels, return_dict=True)["loss"]

    plain = one_step(None)
    assert one_step(settings("at")) > 1.5 * plain
    assert one_step(settings("at", weight=1e-6)) == pytest.approx(plain, rel=1e-4)
    assert one_step(settings("vat", epsilon=20.0)) > plain
    assert one_step(settings("vat", weight=1e-6)) == pytest.approx(plain, rel=1e-4)


_KL = adversarial._kl  # the KL itself, for the recording stand-in below


def test_vat_with_an_unlabeled_batch_takes_its_term_on_those_documents(monkeypatch):
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 20, (8, 6)).astype("int32")
    unlabeled = rng.integers(1, 20, (5, 9)).astype("int32")
    labels = np.array([0, 1] * 4, "float32")
    seen = []
    monkeypatch.setattr(adversarial, "_kl", lambda p, q: seen.append((p, q)) or _KL(p, q))

    def one_step(weight, inputs):
        model = tiny_model(seed=3)
        model.run_eagerly = True
        adversarial.enable(model, settings("vat", epsilon=20.0, weight=weight))
        model.compute_metrics(ids, labels, model(ids), None)  # built, as fit builds it
        before = keras.ops.convert_to_numpy(model(unlabeled))  # eager: no predict to trace
        seen.clear()
        loss = model.train_on_batch(inputs, labels, return_dict=True)["loss"]
        return loss, before

    plain, _ = one_step(1e-6, ids)
    loss, before = one_step(1e-6, {adversarial.LABELED: ids, adversarial.UNLABELED: unlabeled})
    assert loss == pytest.approx(plain, rel=1e-4)  # the labeled loss is the labeled batch's
    # the power iteration's KL and the term's, both on the unlabeled documents
    assert len(seen) == 2
    for p, q in seen:
        np.testing.assert_allclose(p.numpy(), before, atol=1e-6)  # p(u) before the step
        assert q.shape == (5, 1) and not np.allclose(q.numpy(), p.numpy(), atol=1e-7)
    strong, _ = one_step(1.0, {adversarial.LABELED: ids, adversarial.UNLABELED: unlabeled})
    assert strong > plain + 1e-4  # weighted in


def test_the_unlabeled_stream_is_endless_seeded_and_covers_every_document():
    texts = [" ".join(["word"] * (1 + i % 7)) + f" doc{i}" for i in range(23)]
    vectorizer = hatt.data.Vectorizer(max_tokens=100, min_count=1, output_mode="flat")
    vectorizer.adapt(texts)
    ids = hatt.data.encode(texts, vectorizer)
    vocabulary = vectorizer.get_vocabulary()
    doc_of = {vocabulary.index(f"doc{i}"): i for i in range(23)}

    def stream(seed=5):
        dataset = hatt.data.make_dataset(
            None,
            ids=ids,
            vectorizer=vectorizer,
            batch_size=4,
            num_buckets=2,
            shuffle=True,
            repeat=True,
            seed=seed,
        )
        return [b.numpy() for b in dataset.take(40)]

    first, again, other = stream(), stream(), stream(seed=6)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))
    counts = np.zeros(23, int)
    for batch in first:
        for row in batch:
            counts[[doc_of[t] for t in row if t in doc_of]] += 1
    assert counts.sum() == 160 and counts.max() - counts.min() <= 2  # ~7 passes, each whole
    for shuffle in (False, True):  # with or without shuffling, epochs and repeat exclude
        with pytest.raises(ValueError, match="repeat=True without epochs"):
            hatt.data.make_dataset(
                None, ids=ids, vectorizer=vectorizer, repeat=True, epochs=2, shuffle=shuffle
            )
    with pytest.raises(ValueError, match="enough for one batch with repeat=True"):
        hatt.data.make_dataset(None, ids=ids[:0], vectorizer=vectorizer, repeat=True)


@pytest.fixture(scope="module")
def runs(corpus, tmp_path_factory):
    """Tiny CNN runs of ``hatt.TextClassifier.fit``: AT, VAT with balanced class weights,
    and VAT with unlabeled documents (word2vec off: VAT alone reads them) beside that same
    VAT run without them: ``{name: (run_dir, metrics)}``."""
    folder = tmp_path_factory.mktemp("adversarial")
    unlabeled = planted(40, 3).texts
    vat = {"adversarial": "vat", "class_weight": "balanced"}
    out = {}
    for name, options, fit_options in (
        ("at", {"adversarial": "at"}, {}),
        ("vat", vat, {}),
        ("vat_unlabeled", vat, {"unlabeled": unlabeled}),
    ):
        clf = hatt.TextClassifier("cnn", preset=None, **TINY_CNN, **options)
        run_dir = folder / name
        clf.fit(corpus, run_dir=run_dir, verbose=0, **fit_options)
        out[name] = (run_dir, clf.metrics)
    return out


def test_vat_learns_from_the_unlabeled_documents_of_a_run(runs):
    run_dir, metrics = runs["vat_unlabeled"]
    config = json.loads((run_dir / "config.json").read_text())
    assert config["adversarial_unlabeled"] is True and config["word_vectors"] is None
    assert json.loads((run_dir / "unlabeled.json").read_text())["kept"] == 40
    assert np.isfinite(metrics["test_loss"])
    with_them, without = (
        keras.saving.load_model(runs[name][0] / "model.keras").get_weights()
        for name in ("vat_unlabeled", "vat")  # the same settings, without them
    )
    assert any(not np.allclose(a, b) for a, b in zip(with_them, without, strict=True))


def test_vat_settings_and_saved_runs_read_back_as_they_trained():
    with pytest.raises(ValueError, match="adversarial_unlabeled to be a bool"):
        hatt.training.TrainConfig(adversarial="vat", adversarial_unlabeled="yes")
    assert hatt.training.settings.semi.uses_unlabeled(
        hatt.training.TrainConfig(adversarial="vat", unlabeled="u.txt")
    ) == ["vat"]
    saved = hatt.training.TrainConfig(
        adversarial="vat", unlabeled="u.txt", word_vectors="word2vec"
    ).to_dict()
    del saved["adversarial_unlabeled"]  # a run written before the key: VAT on labeled batches
    config = hatt.training.TrainConfig.from_dict(saved, saved=True)
    assert config.adversarial_unlabeled is False
    assert hatt.training.TrainConfig.from_dict(
        {**saved, "unlabeled": None}, saved=True
    ).adversarial_unlabeled


@pytest.mark.parametrize("method", ["at", "vat"])
def test_fit_with_adversarial_training_writes_its_run(runs, method):
    run_dir, metrics = runs[method]
    assert metrics["epochs"] == TINY_CNN["epochs"] and np.isfinite(metrics["test_loss"])
    assert 0 <= metrics["test_accuracy"] <= 1
    history = hatt.training.run.loop.read_history(run_dir)
    assert len(history) == TINY_CNN["epochs"]
    assert all(np.isfinite(float(row["loss"])) for row in history)
    config = json.loads((run_dir / "config.json").read_text())
    assert config["adversarial"] == method and config["adversarial_epsilon"] == 5.0


def test_the_trained_models_reload_in_a_fresh_process_and_predict_the_same(runs, corpus):
    script = (
        "import json, sys, hatt\n"
        "texts = json.loads(sys.argv[1])\n"
        "print(json.dumps([hatt.load(p).predict(texts)[:, 1].tolist() for p in sys.argv[2:]]))\n"
    )
    paths = [str(runs[method][0] / "model.keras") for method in ("at", "vat")]
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(corpus.test.texts), *paths],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    reloaded = json.loads(done.stdout.strip().splitlines()[-1])
    for method, probabilities in zip(("at", "vat"), reloaded, strict=True):
        saved = np.load(runs[method][0] / "test_probabilities.npz")["probabilities"]
        np.testing.assert_allclose(probabilities, saved, atol=1e-5)


def test_an_enabled_model_saves_reloads_and_exports_as_built(tmp_path):
    model = adversarial.enable(tiny_model(), settings("vat"))
    ids = np.array([[3, 5, 7, 0], [2, 4, 6, 8]], "int32")
    model.save(tmp_path / "m.keras")
    reloaded = keras.saving.load_model(tmp_path / "m.keras")
    assert "train_step" not in vars(reloaded)
    built = keras.ops.convert_to_numpy(model(ids))  # eager calls: no predict to trace
    np.testing.assert_allclose(keras.ops.convert_to_numpy(reloaded(ids)), built)
    model.export(tmp_path / "saved", format="tf_saved_model", verbose=False)
    served = tf.saved_model.load(str(tmp_path / "saved"))
    np.testing.assert_allclose(served.serve(ids), built, atol=1e-6)


def test_a_model_without_a_word_embedding_is_refused_before_any_data(tmp_path):
    config = hatt.training.TrainConfig(
        model="cnn", adversarial="at", model_kwargs={"words": "one_hot"}, ngram=None
    )
    with pytest.raises(
        ValueError, match="Expected a model with a word embedding .* for adversarial='at'"
    ):
        hatt.training.run.loop.check_buildable(config)
    with pytest.raises(ValueError, match="one-hot CNN"):
        adversarial.enable(hatt.models.build("cnn", vocabulary_size=9, words="one_hot"), settings())
