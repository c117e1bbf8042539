"""The deep part's validation logits at an epoch chosen without them (cross-fitting).

Early stopping keeps the deep part's epoch with the best validation figure
(``config.monitor``), and the mix (:mod:`hatt.training.channel.mix`) is then fit on that
epoch's validation logits. On a small validation split (50 to 200 reviews) the
chosen epoch's logits flatter the deep part: it was chosen because it did well on
those very reviews. On issue 36's tuning runs from scratch at 500-1,000 labels
(draws 1-3, 6 runs a family) the BiGRU's deep part scored 6.6 points higher on
validation than on 5,000 reviews no run saw, the HAN's 3.4; over draws 1-5 (10
runs a family) 1.6 and 1.5 (``experiments/results/mix_rule/all_draws.md``).

Cross-fitting removes the selection from the logits the mix sees: the
validation reviews are split into folds, and each fold's logits are the deep
part's at the epoch that the *other* folds would have chosen (the same monitor
and the same first-best rule as ``keras.callbacks.EarlyStopping``). This needs
the deep part's validation logits after every epoch, which
:class:`EpochLogits` records during ``fit`` (one prediction pass over the
validation split an epoch, on validation splits of at most :data:`MAX_REVIEWS`
reviews) into the run directory, so that a resumed run keeps the epochs before
its interruption.

The mix is still fit on the chosen epoch's logits: fitting it on the
cross-fitted ones was judged on tuning reviews and not adopted (issue 36's
third question, ``experiments/mix_tuning.py``, draw 4: 74.35 % against the
anchored mix's 74.41 %). The cross-fitted logits are recorded
(``ngram_channel.json``'s ``crossfit``: the epochs chosen and the deep part's
accuracy and loss on them; ``validation_probabilities.npz``'s
``crossfit_deep_logits``) so that a run shows how much its validation split
flatters the deep part, and so that later rules can be judged on them.
"""

import os
from pathlib import Path

import keras
import numpy as np

from hatt import run_dir as run_files
from hatt.models import head
from hatt.training.channel.nblr import logit_losses, predicted_classes

FOLDS = 5
# Recorded where the validation split holds at most this many reviews: a small corpus's,
# where the chosen epoch's flattery is large; above it the extra prediction pass an
# epoch buys little.
MAX_REVIEWS = 2000
KEY = "epoch_{}"  # an epoch's logits in the file, numbered from 1 as Keras prints them


class EpochLogits(keras.callbacks.Callback):
    """Record the deep part's validation logits at the end of every epoch.

    The file holds one array an epoch (``epoch_1``, ``epoch_2``, ...) and is
    rewritten atomically after each; a resumed run reads the epochs already
    recorded and overwrites any it trains again.

    Args:
        path: the ``.npz`` file (in the run directory).
        predict: callable with no arguments giving the deep part's logits on
            the validation split, in the split's order.
    """

    def __init__(self, path, predict):
        super().__init__()
        self.path = Path(path)
        self.predict = predict
        self.by_epoch = read(self.path)

    def on_epoch_end(self, epoch, logs=None):
        self.by_epoch[KEY.format(epoch + 1)] = np.asarray(self.predict(), np.float32)
        partial = run_files.partial(self.path)
        with open(partial, "wb") as f:
            np.savez(f, **self.by_epoch)
        os.replace(partial, self.path)


def recorder(run, model, corpus):
    """A run's step 6a (``ngram.fit="separate"``): the deep part's validation logits
    after every epoch, for the cross-fitted logits.

    Args:
        run: the run (:class:`hatt.training.run.record.Run`: its config, run directory,
            strategy and replicas).
        model: the model being trained (its ``"logit"`` layer is the deep part's).
        corpus: the run's :class:`hatt.training.run.datasets.Corpus`.

    Returns:
        The :class:`EpochLogits` callback, or ``None`` (no separate mix,
        several workers, or a validation split above :data:`MAX_REVIEWS`).
    """
    settings = run.config.ngram
    if settings is None or settings.fit != "separate" or run.config.strategy == "multiworker":
        return None
    if len(corpus.labels("validation")) > MAX_REVIEWS:
        return None
    deep_model = head.deep_part(model)
    dataset = run.prediction_dataset(corpus, "validation")
    return EpochLogits(
        Path(run.run_dir) / run_files.EPOCH_LOGITS, lambda: run.predict(deep_model, dataset)
    )


def recorded(run):
    """``(logits of every epoch trained, monitor)`` of a run that recorded them, for
    :func:`hatt.training.channel.mix.mix_ngram_channel`; ``None`` when an epoch is missing."""
    callback = run.epoch_logits
    epochs = len(run.backup.records) if run.backup else 0
    by_epoch = epochs_run(callback.by_epoch, epochs) if callback else None
    return None if by_epoch is None else (by_epoch, run.config.monitor)


def read(path):
    """The recorded ``{key: logits}`` of ``path``; empty when it is missing or unreadable
    (a run then has no cross-fitted logits; nothing else depends on the file)."""
    try:
        with np.load(path) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError):
        return {}


def epochs_run(by_epoch, epochs):
    """The logits of epochs ``1..epochs`` as a list, or ``None`` when one is missing."""
    keys = [KEY.format(epoch) for epoch in range(1, epochs + 1)]
    if epochs < 1 or any(key not in by_epoch for key in keys):
        return None
    return [np.asarray(by_epoch[key], np.float64) for key in keys]


def crossfit_logits(by_epoch, y, monitor, folds=FOLDS, seed=0):
    """Each validation review's deep logits at the epoch chosen on the other folds.

    Args:
        by_epoch: the deep part's validation logits after each epoch, a list
            of ``[N]`` (two classes) or ``[N, C]`` arrays.
        y: the validation labels ``[N]``.
        monitor: the run's ``config.monitor``: an accuracy is maximized, a loss
            minimized, the first best epoch kept (as ``EarlyStopping``).
        folds: stratified folds (fewer where a class has fewer reviews).
        seed: the folds' shuffle.

    Returns:
        ``(logits, chosen)``: the cross-fitted logits, shaped as one epoch's,
        and the epoch (from 1) chosen for each fold; ``(None, [])`` when a
        class has fewer than two reviews (no folds can be made).

    Example:

    >>> y = np.array([0, 1] * 10)
    >>> good, bad = np.where(y == 1, 2.0, -2.0), np.where(y == 1, -2.0, 2.0)
    >>> logits, chosen = crossfit_logits([bad, good], y, "val_loss")
    >>> chosen, bool((logits == good).all())
    ([2, 2, 2, 2, 2], True)
    """
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(y, np.int64)
    stacked = np.stack([np.asarray(logits, np.float64) for logits in by_epoch])
    folds = min(folds, int(np.bincount(y).min()) if len(y) else 0)
    if folds < 2 or len(set(y.tolist())) < 2:
        return None, []
    if "accuracy" in monitor:
        score = np.stack([predicted_classes(logits) == y for logits in stacked]).astype(float)
    else:
        score = -np.stack([logit_losses(logits, y) for logits in stacked])
    out, chosen = np.empty_like(stacked[0]), []
    splitter = StratifiedKFold(folds, shuffle=True, random_state=seed)
    for train, held in splitter.split(np.zeros(len(y)), y):
        epoch = int(np.argmax(score[:, train].mean(axis=1)))  # the first best
        out[held] = stacked[epoch][held]
        chosen.append(epoch + 1)
    return out, chosen
