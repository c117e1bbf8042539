"""hatt.training.adversarial: adversarial (AT) and virtual adversarial (VAT) training on the
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
from hatt.training import adversarial
from tests.conftest import planted

TINY_RNN = {
    "max_tokens": 200,
    "min_count": 1,
    "sequence_length": 20,
    "batch_size": 16,
    "learning_rate": 0.02,
    "epochs": 2,
    "patience": 2,
    "embedding_dim": 8,
    "units": 4,
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
        if config is not None:
            adversarial.enable(model, config)
        return model.train_on_batch(ids, labels, return_dict=True)["loss"]

    plain = one_step(None)
    assert one_step(settings("at")) > 1.5 * plain
    assert one_step(settings("at", weight=1e-6)) == pytest.approx(plain, rel=1e-4)
    assert one_step(settings("vat", epsilon=20.0)) > plain
    assert one_step(settings("vat", weight=1e-6)) == pytest.approx(plain, rel=1e-4)


def _fit_and_reload(corpus, run_dir, unlabeled=None, **options):
    """Fit a tiny RNN with ``options``; its model.keras reloaded in a fresh process must
    predict what the run saved for the test split."""
    clf = hatt.TextClassifier("rnn", **TINY_RNN, **options)
    metrics = clf.fit(corpus, run_dir=run_dir, verbose=0, unlabeled=unlabeled).metrics
    assert metrics["epochs"] == 2 and np.isfinite(metrics["test_loss"])
    history = hatt.training.loop.read_history(run_dir)
    assert all(np.isfinite(float(row["loss"])) for row in history)
    saved = np.load(run_dir / "test_probabilities.npz")["probabilities"]
    script = (
        "import json, sys, hatt, numpy as np\n"
        "clf = hatt.load(sys.argv[1])\n"
        "print(json.dumps(clf.predict(json.loads(sys.argv[2]))[:, 1].tolist()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(run_dir / "model.keras"), json.dumps(corpus.test.texts)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    reloaded = np.array(json.loads(done.stdout.strip().splitlines()[-1]))
    np.testing.assert_allclose(reloaded, saved, atol=1e-5)
    return metrics


def test_fit_with_adversarial_training_trains_and_reloads_without_it(corpus, tmp_path):
    metrics = _fit_and_reload(corpus, tmp_path / "at", adversarial="at")
    assert metrics["test_accuracy"] > 0.5
    config = json.loads((tmp_path / "at" / "config.json").read_text())
    assert config["adversarial"] == "at" and config["adversarial_epsilon"] == 5.0


def test_fit_with_virtual_adversarial_training_and_unlabeled_documents(corpus, tmp_path):
    _fit_and_reload(
        corpus,
        tmp_path / "vat",
        adversarial="vat",
        unlabeled=[f"An unlabeled review {i} of the film." for i in range(20)],
        class_weight="balanced",
    )


def test_a_model_without_a_word_embedding_is_refused_before_any_data(tmp_path):
    config = hatt.training.TrainConfig(
        model="cnn", adversarial="at", model_kwargs={"words": "one_hot"}, ngram=None
    )
    with pytest.raises(
        ValueError, match="Expected a model with a word embedding .* for adversarial='at'"
    ):
        hatt.training.loop.check_buildable(config)
    with pytest.raises(ValueError, match="one-hot CNN"):
        adversarial.enable(hatt.models.build("cnn", vocabulary_size=9, words="one_hot"), settings())
