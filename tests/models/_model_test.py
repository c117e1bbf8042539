"""Shared data and checks for the model-family tests."""

import json
import textwrap

import keras
import numpy as np

import hatt
from tests._fresh_process import run_json_script

VOCABULARY_SIZE = 40
PLANTED = 7

# Small configurations that train in seconds on a CPU.
SMALL = {
    "cnn": {"embedding_dim": 16, "filters": 16, "dropout": 0.1},
    "rnn": {"embedding_dim": 16, "units": 16, "dropout": 0.1},
    "transformer": {
        "embedding_dim": 16,
        "num_layers": 1,
        "num_heads": 2,
        "intermediate_dim": 32,
        "sequence_length": 64,
        "dropout": 0.0,
    },
    "han": {"embedding_dim": 16, "word_units": 16, "sentence_units": 16, "dropout": 0.1},
}


def build_small(family, **overrides):
    keras.utils.set_random_seed(0)
    kwargs = {"vocabulary_size": VOCABULARY_SIZE, **SMALL[family], **overrides}
    return hatt.models.build(family, **kwargs)


def to_numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


def _words(rng, length, plant):
    """`length` ids in [2, VOCABULARY_SIZE) without the planted id, then maybe plant it."""
    words = rng.integers(2, VOCABULARY_SIZE - 1, size=length)
    words[words >= PLANTED] += 1  # skip the planted id
    if plant:
        words[rng.integers(length)] = PLANTED
    return words


def flat_task(n, max_length=16, seed=0):
    """Right-padded ids `[n, max_length]` and labels: does id 7 occur?"""
    rng = np.random.default_rng(seed)
    ids = np.zeros((n, max_length), dtype="int32")
    labels = rng.integers(0, 2, size=n)
    for i in range(n):
        length = rng.integers(3, max_length + 1)
        ids[i, :length] = _words(rng, length, labels[i])
    return ids, labels.astype("float32")[:, None]


def nested_task(n, max_sentences=4, max_words=6, seed=0):
    """Ids `[n, S, W]` (right-padded words and sentences) and labels: does id 7 occur?"""
    rng = np.random.default_rng(seed)
    ids = np.zeros((n, max_sentences, max_words), dtype="int32")
    labels = rng.integers(0, 2, size=n)
    for i in range(n):
        sentences = rng.integers(1, max_sentences + 1)
        lengths = rng.integers(1, max_words + 1, size=sentences)
        planted_sentence = rng.integers(sentences)
        for s, length in enumerate(lengths):
            ids[i, s, :length] = _words(rng, length, labels[i] and s == planted_sentence)
    return ids, labels.astype("float32")[:, None]


def flat_batch():
    """A batch with padding, an empty review and a one-token review."""
    return np.array(
        [
            [5, 7, 3, 9, 2, 4, 0, 0],
            [0, 0, 0, 0, 0, 0, 0, 0],
            [11, 0, 0, 0, 0, 0, 0, 0],
            [3, 4, 5, 6, 8, 9, 10, 12],
        ],
        dtype="int32",
    )


def nested_batch():
    """`[4, 3, 4]`: padded words and sentences, an empty review, an empty middle sentence."""
    return np.array(
        [
            [[5, 7, 0, 0], [3, 9, 2, 0], [0, 0, 0, 0]],
            [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
            [[11, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
            [[3, 4, 5, 6], [0, 0, 0, 0], [8, 9, 10, 12]],
        ],
        dtype="int32",
    )


def batch_for(family):
    return nested_batch() if family == "han" else flat_batch()


def pad_more(family, ids):
    """The same reviews with extra trailing padding (HAN: words and a whole sentence)."""
    if family == "han":
        return np.pad(ids, ((0, 0), (0, 1), (0, 3)))
    return np.pad(ids, ((0, 0), (0, 5)))


def check_forward(model, ids):
    probability = to_numpy(model(ids, training=False))
    assert probability.shape == (ids.shape[0], 1)
    assert probability.dtype == np.float32
    assert np.isfinite(probability).all()
    assert ((probability >= 0) & (probability <= 1)).all()
    return probability


def check_padding_invariance(family, model, ids):
    before = to_numpy(model(ids, training=False))
    after = to_numpy(model(pad_more(family, ids), training=False))
    np.testing.assert_allclose(after, before, atol=1e-5, rtol=0)


def check_attention(family, model, ids):
    """Keys and shapes; weights sum to 1 over real tokens/sentences, 0 on padding."""
    views = hatt.models.attention_model(model)(ids, training=False)
    views = {k: to_numpy(v) for k, v in views.items()}
    expected = {"probability", "word_attention"}
    if family == "han":
        expected.add("sentence_attention")
    assert set(views) == expected
    np.testing.assert_allclose(
        views["probability"], to_numpy(model(ids, training=False)), atol=1e-6, rtol=0
    )
    word = views["word_attention"]
    assert word.shape == ids.shape
    assert np.isfinite(word).all()
    real = ids != 0
    assert (word[~real] == 0).all()
    # Per review (flat) or per sentence (HAN): 1 where there is a word, else 0.
    np.testing.assert_allclose(word.sum(-1), real.any(-1).astype("float32"), atol=1e-5)
    if family == "han":
        sentence = views["sentence_attention"]
        real_sentences = real.any(-1)
        assert sentence.shape == ids.shape[:2]
        assert (sentence[~real_sentences] == 0).all()
        np.testing.assert_allclose(
            sentence.sum(-1), real_sentences.any(-1).astype("float32"), atol=1e-5
        )
    return views


def check_learns_planted_word(family, model, epochs=3, learning_rate=1e-2):
    """Fit on the planted-word task; held-out accuracy must be clearly above chance."""
    task = nested_task if family == "han" else flat_task
    x, y = task(768, seed=1)
    x_test, y_test = task(256, seed=2)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss="binary_crossentropy",
        metrics=["accuracy"],
    )
    model.fit(x, y, batch_size=32, epochs=epochs, verbose=0)
    # one eager call rather than `evaluate` (which traces a test step for one pass)
    accuracy = np.mean((to_numpy(model(x_test, training=False)) > 0.5) == y_test)
    assert accuracy > 0.8, f"{family}: held-out accuracy {accuracy:.3f}"
    # Trained weights still give clean attention and padding invariance.
    ids = batch_for(family)
    check_attention(family, model, ids)
    check_padding_invariance(family, model, ids)


RELOAD_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import keras
    import hatt  # registers everything; no custom_objects below

    failures = []
    for case in json.loads(sys.argv[1]):
        model = keras.saving.load_model(case["model"])
        ids = np.load(case["ids"])
        views = hatt.models.attention_model(model)(ids, training=False)
        got = {"model": model(ids, training=False), **views}
        for key, path in case["outputs"].items():
            value = np.asarray(keras.ops.convert_to_numpy(got[key]))
            want = np.load(path)
            if value.shape != want.shape or not np.allclose(value, want, atol=1e-6, rtol=0):
                failures.append(f"{case['model']} {key}: shape {value.shape} vs {want.shape}")
    print(json.dumps({"failures": failures}))
    """
)


def assert_reload_in_fresh_process(tmp_path, models):
    """Save each `(name, model, ids)` to `.keras`; reload all in one fresh process.

    The subprocess only runs `import hatt` and must reproduce the model's
    output and its `attention_model` outputs.
    """
    cases = []
    for name, model, ids in models:
        views = hatt.models.attention_model(model)(ids, training=False)
        outputs = {"model": model(ids, training=False), **views}
        case = {"model": str(tmp_path / f"{name}.keras"), "ids": str(tmp_path / f"{name}.npy")}
        model.save(case["model"])
        np.save(case["ids"], ids)
        case["outputs"] = {}
        for key, value in outputs.items():
            case["outputs"][key] = str(tmp_path / f"{name}_{key}.npy")
            np.save(case["outputs"][key], to_numpy(value))
        cases.append(case)
    report = run_json_script(RELOAD_SCRIPT, json.dumps(cases))
    assert report["failures"] == []
