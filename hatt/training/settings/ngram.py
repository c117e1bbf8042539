"""The ``ngram`` section of a run's settings: the n-gram channel's layer and how it is fit."""

import dataclasses

import numpy as np

from hatt.models._checks import unknown_keys_error
from hatt.models.head import NgramChannel
from hatt.training.settings.checks import (
    check_at_most,
    check_choice,
    check_fields,
    check_positive_int,
    is_kind,
)

NGRAM_FITS = ("joint", "separate")
NGRAM_INITS = ("nb", "nblr", "lr", "zeros")
# ngram.C's grid when none is given, by the layer's reduction: dividing a review's
# features by the square root of their count (hundreds of n-grams a review) makes them
# much smaller, so the same fit needs a much larger C. Each grid brackets the Cs that
# 5-fold CV on IMDB's training split preferred (sum 0.1-0.3, sqrt 100-300; docs/deep_parts.md).
# "l2" (unit rows, TF-IDF's scale) sits between: scikit-learn's TF-IDF + LR baseline
# chooses C 1-128 on the binary task, 0.125-4 on the ratings.
DEFAULT_C = {
    "sum": [0.01, 0.03, 0.1, 0.3],
    "sqrt": [30.0, 100.0, 300.0, 1000.0],
    "l2": [1.0, 3.0, 10.0, 30.0, 100.0],
}
# ngram.folds="auto": below CV_DOCUMENTS training reviews a grid of ngram.C (and alpha)
# is chosen by stratified CV_FOLDS-fold cross-validation on the training split, as a
# user tunes a scikit-learn baseline; above, on the validation split (IMDB's 22,500
# reviews: 2,500 validation reviews choose as well, in a fifth of the fits).
CV_DOCUMENTS = 10000
CV_FOLDS = 5


# ngram.order 1000 ran at 1 review/s; ngram.buckets 10**11 asked for a 400 GB table (issue 63)
NGRAM_MOST = {"order": 8, "buckets": 2**27}


@dataclasses.dataclass
class NgramSettings:
    """The ``ngram`` section of :class:`TrainConfig`: the channel, and how it is fit.

    The first seven keys are the layer's (:class:`hatt.models.NgramChannel`, with
    its defaults); the others say how its weights are set, from the training
    split only (:mod:`hatt.training.channel.ngram`).

    Args:
        buckets, order, reduction, binary, feature_dropout, l2, idf: the
            layer (``hatt.models.build(..., ngram=...)``); with ``idf`` the
            fit sets the features' IDF from the split it fits on.
        fit: ``"joint"``: the channel starts per ``init`` and trains with the
            deep part. ``"separate"``: the deep part trains with the channel
            off; then the channel is set per ``init`` and the two logits are
            weighed, ``a·deep + b·channel + c``, by a logistic regression on
            the validation split.
        init: ``"nb"``: the Naive Bayes log-count ratios (NBSVM); ``"nblr"``:
            an NB-weighted logistic regression; ``"lr"``: a logistic
            regression on the layer's features (softmax above two classes;
            with ``idf`` and ``reduction="l2"``, TF-IDF + LR over hashed
            n-grams); ``"zeros"``.
        alpha: NB smoothing of the log-count ratios, > 0; with ``"nblr"``
            also a grid, searched with ``C``'s on validation accuracy.
        C: ``"nblr"`` and ``"lr"``: inverse L2 strength, or a grid chosen on
            validation accuracy. ``None`` (the default): a grid for the
            reduction, ``DEFAULT_C`` (``"sum"``: 0.01-0.3; ``"sqrt"``:
            30-1,000; ``"l2"``: 1-100; ``"mean"``: needs one given).
        folds: how a grid of ``C`` (and ``alpha``) is chosen. ``k`` >= 2:
            stratified ``k``-fold cross-validation on the training split (the mean
            held-out accuracy, weighted by the run's class weights), then one fit
            on the whole split at the chosen point; ``0``: the accuracy on the
            validation split. ``"auto"`` (the default): ``CV_FOLDS`` folds below
            ``CV_DOCUMENTS`` training reviews, else ``0``. With one point there
            is nothing to choose and no fold is fit.
        min_df: features in fewer training reviews start at 0 (a feature of
            one review only "predicts" that review's label); with ``idf``
            their IDF is 0 too: they count for nothing, as outside
            ``TfidfVectorizer(min_df=...)``'s vocabulary.
        init_scale: the start's weights are multiplied by it.
        trainable: ``False``: the channel keeps its start and training fits the
            deep part to what the linear model leaves.
        refit: ``fit="separate"`` only: once ``C`` is chosen and the mix is
            fit on the validation split, the channel is fit once more, at that
            ``C``, on the training and validation splits together, and the
            model keeps this fit (with the mix's weights). The validation
            figures stay those of the training-split fit, the only ones not
            fit on validation reviews.
    """

    buckets: int = NgramChannel.buckets
    order: int = NgramChannel.order
    reduction: str = NgramChannel.reduction
    binary: bool = NgramChannel.binary
    feature_dropout: float = NgramChannel.feature_dropout
    l2: float = NgramChannel.l2
    idf: bool = NgramChannel.idf
    fit: str = "joint"
    init: str = "nb"
    alpha: float | list = 1.0
    C: float | list | None = None
    folds: int | str = "auto"
    min_df: int = 1
    init_scale: float = 1.0
    trainable: bool = True
    refit: bool = False

    def __post_init__(self):
        check_fields(self, prefix="ngram.")
        for name, most in NGRAM_MOST.items():  # past these a run crawls or exhausts memory
            check_at_most(f"ngram.{name}", getattr(self, name), most)
        self.channel()  # the layer's own checks
        check_choice("ngram.fit", self.fit, NGRAM_FITS)
        check_choice("ngram.init", self.init, NGRAM_INITS)
        if self.fit == "separate" and self.init == "zeros":
            raise ValueError(
                "ngram.fit='separate' sets the channel after training from ngram.init, "
                "which must be 'nb', 'nblr' or 'lr'. Received: ngram.init='zeros'"
            )
        self._default_C()
        for name in ("alpha", "C"):
            value = getattr(self, name)
            grid = value if isinstance(value, list | tuple) else [value]
            if not grid or not all(is_kind(v, float) and v > 0 for v in grid):
                raise ValueError(
                    f"Expected ngram.{name} to be a positive float or a list of them. "
                    f"Received: ngram.{name}={value!r}"
                )
        if isinstance(self.alpha, list | tuple) and self.init != "nblr":
            raise ValueError(
                "A grid of ngram.alpha is chosen on validation by the NB-weighted logistic "
                f"regression: it needs ngram.init='nblr'. Received: ngram.init={self.init!r}, "
                f"ngram.alpha={self.alpha!r}"
            )
        check_positive_int("ngram.min_df", self.min_df)
        if self.folds != "auto" and (
            isinstance(self.folds, str) or self.folds < 0 or self.folds == 1
        ):
            raise ValueError(
                "Expected ngram.folds to be 'auto', 0 (choose on the validation split) or an "
                f"int >= 2 (folds of the training split). Received: ngram.folds={self.folds!r}"
            )
        if self.refit and self.fit != "separate":
            raise ValueError(
                "ngram.refit fits the channel again after the mix of ngram.fit='separate'. "
                f"Received: ngram.refit=True with ngram.fit={self.fit!r}"
            )

    def _default_C(self):
        """``C=None`` becomes the grid of the reduction (written out, so runs record it)."""
        if self.C is not None:
            return
        if self.reduction not in DEFAULT_C and self.init in ("nblr", "lr"):
            raise ValueError(
                f"ngram.init={self.init!r} with ngram.reduction={self.reduction!r} needs ngram.C "
                f"(a float or a grid; there is a default grid for {sorted(DEFAULT_C)} only)."
            )
        self.C = list(DEFAULT_C.get(self.reduction, DEFAULT_C["sum"]))

    @classmethod
    def from_value(cls, value):
        """``None`` → ``None``; a dict (or an ``NgramSettings``) → checked settings."""
        if value is None or isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise ValueError(
                f"Expected ngram to be None or a dict of settings. Received: ngram={value!r}"
            )
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise unknown_keys_error("ngram settings", unknown, known)
        return cls(**value)

    def channel(self):
        """The layer's settings, for ``hatt.models.build(..., ngram=...)``."""
        return NgramChannel(**{key: getattr(self, key) for key in NgramChannel.KEYS})

    def folds_for(self, labels):
        """The folds that choose a grid on these training ``labels`` (``0``: the
        validation split): ``"auto"`` resolved by their number (:data:`CV_DOCUMENTS`),
        and never more than the smallest class's reviews (a stratified fold needs one
        of each class); fewer than 2 left is ``0``."""
        folds = self.folds
        if folds == "auto":
            folds = CV_FOLDS if len(labels) < CV_DOCUMENTS else 0
        if folds:
            folds = min(folds, int(np.unique(np.asarray(labels), return_counts=True)[1].min()))
        return folds if folds >= 2 else 0

    def grid_points(self):
        """Every ``(alpha, C)`` a fit chooses among (one: nothing to choose)."""
        grids = [v if isinstance(v, list | tuple) else [v] for v in (self.alpha, self.C)]
        return [(a, c) for a in grids[0] for c in grids[1]]

    @property
    def frozen(self):
        """Whether the channel stays out of training (it is fit apart)."""
        return not self.trainable or self.fit == "separate"

    @property
    def needs_counts(self):
        """Whether fitting it counts n-grams in the tokenized splits (not ``"zeros"``)."""
        return self.init != "zeros"
