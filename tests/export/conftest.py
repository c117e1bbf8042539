"""Tiny trained models of every family, trained and exported once per session."""

import json

import keras
import numpy as np
import pytest

from hatt import export, training
from hatt.data import Imdb, Split

FAMILIES = ("cnn", "rnn", "transformer", "han")
# The CNN and the HAN with the n-gram channel (as in experiments/configs), the RNN and
# the Transformer without it.
SMALL = {
    "cnn": {"embedding_dim": 8, "filters": 4, "ngram_buckets": 64},
    "rnn": {"embedding_dim": 8, "units": 4},
    "transformer": {"embedding_dim": 8, "num_heads": 2, "intermediate_dim": 8},
    "han": {"embedding_dim": 8, "word_units": 4, "sentence_units": 4, "ngram_buckets": 64},
}
# Small limits so truncation and sentence wrapping happen on the tiny corpus.
LIMITS = {"sequence_length": 16, "max_sentences": 3, "max_words": 5}


def synthetic_corpus(n, seed):
    """Reviews of 1-4 sentences; label 1 iff 'superb' occurs (else 'dreadful')."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        label = i % 2
        sentences = []
        for _ in range(int(rng.integers(1, 5))):
            words = [f"w{rng.integers(40)}" for _ in range(int(rng.integers(2, 9)))]
            sentences.append(" ".join(words).capitalize() + str(rng.choice([".", "!", "?"])))
        cue = "superb" if label else "dreadful"
        position = int(rng.integers(len(sentences)))
        sentences[position] = f"{cue.capitalize()} {sentences[position].lower()}"
        texts.append("<br /><br />".join(sentences) if i % 3 == 0 else " ".join(sentences))
        labels.append(label)
    return Split(texts, np.array(labels))


@pytest.fixture(scope="session")
def tiny_corpus():
    return Imdb(synthetic_corpus(48, 0), synthetic_corpus(8, 1), synthetic_corpus(16, 2), "tiny")


@pytest.fixture(scope="session")
def trained_runs(tmp_path_factory, tiny_corpus):
    """``{family: run_dir}``: two epochs per family (the HAN packed, as by default).

    Built from ``hatt.training``'s own steps (vectorizer, datasets, model) and
    written in the run directory's layout (``config.json``, ``vectorizer.json``,
    ``model.keras``, ``metrics.json``); evaluation and prediction files are
    left out to keep the tests fast (``tests/test_training.py`` covers them).
    """
    root = tmp_path_factory.mktemp("runs")
    runs = {}
    for family in FAMILIES:
        config = training.TrainConfig(
            model=family,
            model_kwargs=SMALL[family],
            epochs=2,
            batch_size=64,  # one batch an epoch: one shape, one trace of the train step
            min_count=1,
            num_buckets=1,
            sentence_groups=[2, LIMITS["max_words"]] if family == "han" else None,
            **LIMITS,
        )
        keras.utils.set_random_seed(config.seed)
        run_dir = root / family
        run_dir.mkdir()
        vectorizer = training.create_vectorizer(config).adapt(tiny_corpus.train.texts)
        train = training.create_datasets(config, tiny_corpus, vectorizer)["train"][1]
        model = training.create_model(config, vectorizer, int(train.cardinality()))
        model.fit(train, epochs=config.epochs, shuffle=False, verbose=0)  # shuffled by hatt.data
        (run_dir / "config.json").write_text(json.dumps(config.to_dict()))
        (run_dir / "metrics.json").write_text(
            json.dumps({"model": family, "epochs": config.epochs})
        )
        vectorizer.save(run_dir / "vectorizer.json")
        model.save(run_dir / "model.keras")
        runs[family] = run_dir
    return runs


@pytest.fixture(scope="session")
def exported(tmp_path_factory, trained_runs):
    """``{family: ExportResult}``: each run exported to ``saved_models/FAMILY``."""
    root = tmp_path_factory.mktemp("saved_models")
    return {family: export.export(run, root / family) for family, run in trained_runs.items()}
