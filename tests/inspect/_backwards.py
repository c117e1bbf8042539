"""A tiny CNN run whose separate fit's mix gave the deep part a negative weight (issue 30).

`backwards_cnn` makes the model: the tiny CNN of the `tiny` fixture, its channel
set to Naive Bayes log-count ratios (it reads "superb" as positive, as the deep
part does), and the mix `deep·z_deep + channel·z_channel` folded in as
`hatt.training.channel.ngram` folds it. The model predicts through its channel, so the
deep part's own scores colour "superb" against 'positive' while the total does
not. `write_backwards_run` saves it as a run directory whose `metrics.json`
records that mix (as `hatt train` records a separate fit) and a warning of its
own, the input of the warnings of `hatt inspect`, `hatt predict` and the page.
"""

import json
import shutil

import keras

from hatt.data import Vectorizer
from hatt.training.channel.ngram import nb_log_ratios

DEEP, CHANNEL = -0.05, 2.3
# What the run's record says (the input of the warnings, not a measurement).
RECORD = {
    "fit": "separate",
    "mix": {"deep": DEEP, "channel": CHANNEL, "bias": 0.0},
    "deep_validation_accuracy": 0.8125,
    "channel_validation_accuracy": 0.875,
    "mixed_validation_accuracy": 0.875,
}
RECORDED_WARNING = "The validation split has 16 reviews: the mix rests on very few."


def backwards_cnn(run_dir, corpus, deep=DEEP, channel=CHANNEL):
    """The CNN of ``run_dir`` with the channel fit on ``corpus.train`` and a negative mix."""
    model = keras.saving.load_model(run_dir / "model.keras", compile=False)
    vectorizer = Vectorizer.load(run_dir / "vectorizer.json")
    wide, dense = model.get_layer("ngram_logit"), model.get_layer("logit")
    ratios = nb_log_ratios(
        vectorizer.ragged_ids(corpus.train.texts),
        corpus.train.labels,
        wide.vocabulary_size,
        wide.buckets,
        wide.ngram,
    )
    wide.embeddings.assign(channel * ratios.reshape(wide.embeddings.shape))
    dense.kernel.assign(dense.kernel * deep)
    dense.bias.assign(dense.bias * deep)
    return model, vectorizer


def write_backwards_run(run_dir, corpus, out):
    """Copy the run ``run_dir`` to ``out`` with the backwards model and its record; ``out``."""
    shutil.copytree(run_dir, out)
    model, _ = backwards_cnn(run_dir, corpus)
    model.save(out / "model.keras")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics.update(
        class_names=["negative", "positive"], ngram_channel=RECORD, warnings=[RECORDED_WARNING]
    )
    (out / "metrics.json").write_text(json.dumps(metrics))
    return out
