"""Tiny trained models of every family for the hatt.inspect tests (trained once per session)."""

import json

import keras
import numpy as np
import pytest

import hatt

FILLER = "the a movie film plot story actor scene it was and of this to watch saw".split()

TINY_KWARGS = {
    "cnn": {"embedding_dim": 8, "kernel_sizes": (2, 3), "filters": 8, "dropout": 0.0},
    "rnn": {"embedding_dim": 8, "units": 8, "dropout": 0.0},
    "transformer": {
        "embedding_dim": 8,
        "num_layers": 1,
        "num_heads": 2,
        "intermediate_dim": 16,
        "dropout": 0.0,
        "sequence_length": 64,
    },
    "han": {"embedding_dim": 8, "word_units": 8, "sentence_units": 8, "dropout": 0.0},
}


def planted_reviews(n, seed):
    """Reviews of filler sentences; positives hold "superb", negatives "dreadful" once."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        label = i % 2
        words = [str(w) for w in rng.choice(FILLER, int(rng.integers(6, 14)))]
        words.insert(int(rng.integers(len(words))), "superb" if label else "dreadful")
        cut = int(rng.integers(2, len(words) - 2))
        texts.append(" ".join(words[:cut]).capitalize() + ". " + " ".join(words[cut:]) + "!")
        labels.append(label)
    return texts, np.array(labels)


@pytest.fixture(scope="session")
def planted():
    return planted_reviews(160, 0)


def train_tiny(family, texts, labels, epochs=6):
    keras.utils.set_random_seed(0)
    vectorizer = hatt.data.Vectorizer(
        max_tokens=100, min_count=1, output_mode="nested" if family == "han" else "flat",
        sequence_length=64,
    )  # fmt: skip
    vectorizer.adapt(texts)
    model = hatt.models.build(
        family, vocabulary_size=vectorizer.vocabulary_size, **TINY_KWARGS[family]
    )
    model.compile(keras.optimizers.Adam(0.02), "binary_crossentropy", metrics=["accuracy"])
    ids = vectorizer(texts)
    model.fit(ids, labels, batch_size=16, epochs=epochs, verbose=0)
    return model, vectorizer


class _Trained(dict):
    """family → (trained model, vectorizer), each trained on first use."""

    def __init__(self, texts, labels):
        super().__init__()
        self.texts, self.labels = texts, labels

    def __missing__(self, family):
        self[family] = train_tiny(family, self.texts, self.labels)
        return self[family]


@pytest.fixture(scope="session")
def tiny_models(planted):
    """family → (trained model, vectorizer); each learns the planted word."""
    return _Trained(*planted)


def save_run(directory, family, model, vectorizer):
    """A run directory as `hatt train` writes it (model.keras, vectorizer.json, config.json)."""
    directory.mkdir(parents=True, exist_ok=True)
    model.save(directory / "model.keras")
    vectorizer.save(directory / "vectorizer.json")
    (directory / "config.json").write_text(json.dumps({"model": family}))
    return directory


@pytest.fixture(scope="session")
def run_dirs(tiny_models, tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return {
        family: save_run(root / family, family, *tiny_models[family])
        for family in ("han", "rnn", "cnn")
    }
