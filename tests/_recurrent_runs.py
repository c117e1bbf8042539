"""One `hatt train` run per recurrent family, with two CLI settings at once.

``--set model_kwargs.cell=sru`` (tests/models/test_sru_encoders.py) and
``--set model_kwargs.attention_normalizer=sparsemax`` (tests/models/test_survey_options.py)
each have to reach the model that `hatt train` builds, trains in graph mode and saves; one
run of each family with both settings checks both, rather than one run per setting.

:func:`cli_run` trains on first use, once per session: under pytest-xdist the first worker
to ask trains, the others read its run directory (``tests.conftest.made_once``).
"""

from types import SimpleNamespace

from hatt import training
from hatt.data import Imdb
from tests.conftest import PerFamily, made_once, planted, shared_folder

# The settings both modules' runs share; `model_kwargs` on top of these.
OVERRIDES = {
    "max_tokens": 100,
    "min_count": 1,
    "sequence_length": 20,
    "max_sentences": 4,
    "max_words": 8,
    "batch_size": 16,
    "epochs": 1,
    "word_vectors": None,
    "ngram": None,
    "learning_rate": 0.01,
}
RECURRENT_KWARGS = {
    "cell": "sru",
    "attention_normalizer": "sparsemax",
    "embedding_dim": 8,
    "dropout": 0.0,
}


def cli_config(family, model_kwargs):
    """`hatt train FAMILY --preset none --set ...` with :data:`OVERRIDES` and ``model_kwargs``."""
    overrides = {**OVERRIDES, "model_kwargs": model_kwargs}
    return training.assemble_config(family, preset=None, overrides=overrides)


def corpus():
    """The runs' tiny planted corpus (train 48, validation 16, test 16 reviews)."""
    return Imdb(planted(48, 0), planted(16, 1), planted(16, 2), "planted")


def train_run(family, model_kwargs, run_dir):
    """`training.train` of :func:`cli_config` on :func:`corpus`: ``(config, corpus, metrics,
    run_dir)``."""
    config, texts = cli_config(family, model_kwargs), corpus()
    metrics = training.train(config, run_dir, texts=texts, verbose=0)
    return SimpleNamespace(config=config, corpus=texts, metrics=metrics, run_dir=run_dir)


def recurrent_runs(tmp_path_factory):
    """``{"rnn" | "han": run}`` of :data:`RECURRENT_KWARGS`, each trained on first use (by
    the first xdist worker to ask; the others read its run directory)."""
    root = shared_folder(tmp_path_factory, "sru_sparsemax_runs")

    def make(family):
        run = train_run(family, RECURRENT_KWARGS, root / family)
        return run, {"family": family, "metrics": run.metrics}

    def load(facts):
        family = facts["family"]
        return SimpleNamespace(
            config=cli_config(family, RECURRENT_KWARGS),
            corpus=corpus(),
            metrics=facts["metrics"],
            run_dir=root / family,
        )

    return PerFamily(lambda family: made_once(root, family, lambda: make(family), load))
