"""A stand-in for a model with the `explain` signature of issue 13 (its output contract).

`FakePredictor` is a `hatt.export.Predictor` whose `explain(texts,
batch_size=None, steps=None)` returns the contract's dict (see
`/work/notes/contract13.md`, `hatt.export.Predictor.explain`) computed from a
planted lexicon, with known numbers: the logit of class 1 is the sum of the
words' `LEXICON` values (others: `OTHER`), gradient × input of a word is its
value times the sign of the explained class (+1 for class 1, -1 for class 0),
integrated gradients 0.9 × that, the n-gram channel 0.5 × that, the total
their sum (1.4 × that with the channel); attention is |value| normalised over
the review (HAN: over each sentence). So the tests of the views know every
score without a trained model. Without `"total"` in its methods it poses as
an export written before the total view (no `total`, no `logit_baseline`).
"""

import numpy as np
import tensorflow as tf

from hatt import export
from hatt.data import text as text_lib

LEXICON = {"superb": 2.0, "good": 1.0, "bad": -1.0, "dreadful": -2.0}
OTHER = 0.1
BIAS = 0.25


def _tokens(texts, family):
    """`[N, T]` (flat) or `[N, S, W]` (HAN) str tokens, "" on padding, as the model would see."""
    nested = [
        [[t.decode() for t in s] for s in review]
        for review in text_lib.tokenize(tf.constant(list(texts) or [""])).to_list()
    ][: len(texts)]
    if family != "han":
        flat = [[t for s in review for t in s] for review in nested]
        width = max([len(r) for r in flat] + [1])
        return np.array([r + [""] * (width - len(r)) for r in flat] or np.zeros((0, 1)), object)
    sentences = max([len(r) for r in nested] + [1])
    words = max([len(s) for r in nested for s in r] + [1])
    out = np.full((len(texts), sentences, words), "", dtype=object)
    for i, review in enumerate(nested):
        for s, sentence in enumerate(review):
            out[i, s, : len(sentence)] = sentence
    return out


ALL_METHODS = ("attention", "total", "gradient_x_input", "integrated_gradients", "ngram")


def explain_result(texts, family="rnn", methods=ALL_METHODS):
    """The contract's `explain` dict for `texts`, from the planted lexicon."""
    tokens = _tokens(texts, family)
    real = tokens != ""
    value = np.vectorize(lambda t: LEXICON.get(t, OTHER) if t else 0.0, otypes=[float])(tokens)
    axes = tuple(range(1, tokens.ndim))
    z = value.sum(axis=axes) + BIAS  # the logit of class 1
    positive = 1.0 / (1.0 + np.exp(-z))
    target = (positive >= 0.5).astype(np.int32)
    sign = np.where(target == 1, 1.0, -1.0).reshape((-1,) + (1,) * (tokens.ndim - 1))
    gxi = sign * value
    result = {
        "probabilities": np.stack([1 - positive, positive], -1).astype(np.float32),
        "label": np.array(["negative", "positive"], object)[target],
        "probability": positive.astype(np.float32),
        "tokens": tokens,
        "target": target,
        "gradient_x_input": gxi.astype(np.float32),
        "integrated_gradients": (0.9 * gxi).astype(np.float32),
    }
    if "attention" in methods:
        weight = np.abs(value) * real
        total = weight.sum(axis=-1, keepdims=True)
        result["attention"] = (weight / np.where(total > 0, total, 1)).astype(np.float32)
    if "ngram" in methods:
        result["ngram"] = (0.5 * gxi).astype(np.float32)
    if "total" in methods:
        result["total"] = result["integrated_gradients"] + result.get("ngram", 0.0)
    if family == "han":
        share = np.abs(value).sum(-1)
        result["sentence_attention"] = (
            share / np.maximum(share.sum(-1, keepdims=True), 1e-9)
        ).astype(np.float32)
        for method in ("total", "gradient_x_input", "integrated_gradients", "ngram"):
            if method in result:
                result[f"sentence_{method}"] = result[method].sum(-1)
    flat_sign = sign.reshape(-1)
    ngram = result["ngram"].sum(axis=axes) if "ngram" in result else np.zeros(len(texts))
    logit = flat_sign * z
    bias = flat_sign * BIAS
    delta = result["integrated_gradients"].sum(axis=axes) / 1.01
    result.update(
        logit=logit.astype(np.float32),
        logit_ngram=ngram.astype(np.float32),
        logit_bias=bias.astype(np.float32),
        logit_deep=(logit - ngram - bias).astype(np.float32),
        ig_delta=delta.astype(np.float32),
        ig_completeness_error=(np.abs(result["integrated_gradients"].sum(axis=axes) - delta)
                               / np.maximum(np.abs(delta), 1e-6)).astype(np.float32),
    )  # fmt: skip
    if "total" in methods:  # the logit with no word evidence
        result["logit_baseline"] = (logit - ngram - delta).astype(np.float32)
    return result


class FakePredictor(export.Predictor):
    """A Predictor whose `explain` is `explain_result`; it records each call.

    `methods` as `hatt.export.Predictor.methods`; without `"attention"` its
    `score_kind` is `"saliency"` (a CNN). Calling it (`serving_default`)
    fails: `hatt.inspect.explain` must make one `explain` call per batch.
    It poses as a Keras model (`kind="keras"`), whose steps may be chosen.
    """

    def __init__(self, family="rnn", methods=ALL_METHODS, warnings=()):
        self.family = family
        self._methods = tuple(methods)
        self.score_kind = "attention" if "attention" in methods else "saliency"
        self.class_names = ("negative", "positive")
        self.source, self.kind, self.version = "fake", "keras", None
        self.metadata = {"warnings": list(warnings)}
        self.calls = []

    @property
    def methods(self):
        return self._methods

    @property
    def text_model(self):
        """Its own TextModel: `explain(texts, steps=None)` (other steps go through it)."""
        return self

    def explain(self, texts, batch_size=None, steps=None):
        self.calls.append((list(texts), steps))
        return explain_result(texts, self.family, self.methods)

    def __call__(self, texts, batch_size=None):
        raise AssertionError("hatt.inspect.explain ran serving_default besides explain")
