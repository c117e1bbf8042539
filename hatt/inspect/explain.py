"""Per-review explanations: the tokens a model saw, every method's scores, its prediction.

:func:`explain` runs a model on raw reviews and returns one
:class:`Explanation` per review, the common input of the renderers
(:mod:`hatt.inspect.html`, :mod:`hatt.inspect.png`,
:mod:`hatt.inspect.terminal`).

There is one path from text to explanations: :func:`hatt.export.as_predictor`
turns what it is given (a path for :func:`hatt.export.load`, a loaded
:class:`hatt.export.Predictor`, or an in-memory `keras.Model` with its
`hatt.data.Vectorizer`, wrapped in :class:`hatt.export.TextModel`) into a
Predictor, and its `explain` output (the exported `explain` signature's dict:
tokens, every method's scores, the logit decomposition) becomes explanations
here, every method aligned to the same tokens by one function
(:func:`hatt.inspect.align.align`). The scores are therefore those of the exported model,
computed once, in :class:`hatt.export.TextModel`.

The methods and the warnings an explanation carries are described in
:mod:`hatt.inspect.explanation`; so is its `attention` (which attention the
model uses), read by :func:`model_attention` from the model's layers.
"""

import weakref

import numpy as np

from hatt import export, models
from hatt.export import facts
from hatt.export.attribution import METHODS
from hatt.inspect.align import align, token_array
from hatt.inspect.explanation import ALL, METHOD_LABELS, Explanation, is_signed, method_label
from hatt.progress import Progress

__all__ = ["ALL", "METHODS", "METHOD_LABELS", "Explanation", "explain", "is_signed", "method_label"]

SCORE_KINDS = ("attention", "saliency")
# The parts of the explained class's logit (and, when the result has it, the logit with no
# word evidence, from which the total view's words sum to the logit).
DECOMPOSITION = ("deep", "ngram", "bias", "logit", "baseline")
_DECOMPOSITION_KEYS = {
    "deep": "logit_deep",
    "ngram": "logit_ngram",
    "bias": "logit_bias",
    "logit": "logit",
    "baseline": "logit_baseline",
}


def _check_texts(texts):
    if isinstance(texts, str | bytes):
        raise ValueError(
            "Expected texts to be a list of strings, not a single string. "
            f"Received: texts={texts[:60]!r}. Wrap it in a list."
        )
    texts = list(texts)
    for i, text in enumerate(texts):
        if isinstance(text, bytes):
            texts[i] = text.decode("utf-8", errors="replace")
        elif not isinstance(text, str):
            raise ValueError(f"Expected texts to hold strings. Received: texts[{i}]={text!r}")
    return texts


def check_methods(methods, available):
    """The methods to keep, in `METHODS` order: all of `available` for `None` or `"all"`.

    Args:
        methods: `None`, `"all"`, one method name or a list of them.
        available: The model's methods.

    Raises:
        ValueError: naming the model's methods, for a name it does not have.
    """
    if methods is None or methods == ALL:
        return tuple(available)
    chosen = [methods] if isinstance(methods, str) else list(methods)
    if not chosen or any(m not in available for m in chosen):
        raise ValueError(
            f"Expected methods to be among this model's methods {tuple(available)} (or 'all'). "
            f"Received: methods={methods!r}"
        )
    return tuple(m for m in available if m in chosen)


def _check_steps(steps):
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ValueError(
            f"Expected steps to be a positive int (integrated gradients' steps) or None. "
            f"Received: steps={steps!r}"
        )
    return steps


# --- result dict → explanations ------------------------------------------------------------


def _probabilities(result, class_names):
    """`[N, C]` probabilities and the one number an explanation keeps per review."""
    if "probabilities" in result:
        probabilities = np.asarray(result["probabilities"], dtype=np.float64)
    else:  # a two-class result with the probability of class 1 only
        positive = np.asarray(result["probability"], dtype=np.float64).reshape(-1)
        probabilities = np.stack([1.0 - positive, positive], axis=-1)
    if len(class_names) == 2:
        return probabilities, probabilities[:, 1]
    return probabilities, probabilities[np.arange(len(probabilities)), probabilities.argmax(-1)]


def _word_weights(result, score_kind, tokens):
    """What `serving_default` gives as `word_attention`, from either signature's dict.

    The explain signature has no `word_attention`: attention models' is
    their `attention`; the saliency of the others is |gradient × input|
    normalised over the real tokens (`hatt.export.normalise`, as
    `serving_default` computes it).
    """
    if "word_attention" in result:
        return np.asarray(result["word_attention"])
    key = "attention" if score_kind == "attention" else "gradient_x_input"
    if key not in result:
        raise ValueError(
            f"Expected the result to hold 'word_attention' or {key!r} (score_kind={score_kind!r}). "
            f"Received: keys={sorted(result)}"
        )
    if key == "attention":
        return np.asarray(result["attention"])
    return np.asarray(export.normalise(np.abs(np.asarray(result[key])), tokens != ""))


def _score_arrays(result, family, score_kind, tokens, methods):
    """`{name: [N, ...] word scores}` and `{name: [N, S] sentence scores}` to align."""
    words = {"word_weights": _word_weights(result, score_kind, tokens)}
    words.update({method: np.asarray(result[method]) for method in methods})
    sentence = {}
    if models.family_spec(family).sentence_attention:
        if "sentence_attention" not in result:
            raise ValueError("Expected a HAN result to hold 'sentence_attention'.")
        sentence["sentence_weights"] = np.asarray(result["sentence_attention"])
    return words, sentence


def _review_facts(result, methods, i):
    """The decomposition, explained class and completeness error of review `i`, when given."""
    facts = {}
    if "logit" in result:
        facts["decomposition"] = {
            part: float(np.asarray(result[key])[i])
            for part, key in _DECOMPOSITION_KEYS.items()
            if key in result
        }
    if "target" in result:
        facts["explained_class"] = int(np.asarray(result["target"])[i])
    if "integrated_gradients" in methods and "ig_completeness_error" in result:
        facts["completeness_error"] = float(np.asarray(result["ig_completeness_error"])[i])
    return facts


def _method_scores(aligned, methods):
    """`scores` and `sentence_scores` of one review: attention's own sentence weights
    (HAN), else the sum of each sentence's word scores."""
    scores = {method: aligned.words[method] for method in methods}
    sentence_scores = {}
    for method in methods:
        if method == "attention" and "sentence_weights" in aligned.sentence:
            sentence_scores[method] = list(aligned.sentence["sentence_weights"])
        else:
            sentence_scores[method] = [float(sum(row)) for row in scores[method]]
    return scores, sentence_scores


def explanations_from_result(
    result,
    texts,
    family,
    score_kind,
    labels=None,
    class_names=("negative", "positive"),
    methods=None,
    warnings=(),
    attention=None,
):
    """Turn an exported model's result dict into :class:`Explanation` objects.

    Args:
        result: The dict of the `explain` signature (`hatt.export.Predictor.
            explain`: `"probabilities"`, `"tokens"`, each method's scores,
            `"target"`, the logit decomposition, `"ig_completeness_error"`),
            or of `serving_default` (`"probabilities"` `[N, C]` or, for two
            classes, `"probability"` `[N]`; `"tokens"`, `"word_attention"`
            `[N, T]` or `[N, S, W]` and, for the HAN, `"sentence_attention"`
            `[N, S]`), which gives one view: `score_kind`.
        texts: The `N` raw reviews.
        family: The model family.
        score_kind: `"attention"` or `"saliency"` (what `word_weights` hold).
        labels: Optional `N` true labels (indices into `class_names`).
        class_names: The model's classes (`result["probabilities"]` order).
        methods: The methods to keep: `None` (or `"all"`) for every method
            the result holds, else a list of them.
        warnings: The model's warnings (`hatt.export.Predictor.warnings`),
            given to every explanation.
        attention: The model's attention settings (:func:`model_attention`),
            given to every explanation; `None` when not known.

    Returns:
        A list of `N` explanations, every method's scores aligned to the
        same tokens.
    """
    if score_kind not in SCORE_KINDS:
        raise ValueError(
            f"Expected score_kind to be one of {SCORE_KINDS}. Received: score_kind={score_kind!r}"
        )
    tokens = token_array(result["tokens"])
    probabilities, probability = _probabilities(result, class_names)
    available = tuple(m for m in METHODS if m in result)
    methods = check_methods(methods, available)
    words, sentence = _score_arrays(result, family, score_kind, tokens, methods)
    out = []
    for i, text in enumerate(texts):
        aligned = align(
            text,
            family,
            tokens[i],
            {name: values[i] for name, values in words.items()},
            {name: values[i] for name, values in sentence.items()},
        )
        scores, sentence_scores = _method_scores(aligned, methods)
        out.append(
            Explanation(
                text,
                family,
                score_kind,
                float(probability[i]),
                aligned.sentences,
                aligned.words["word_weights"],
                aligned.sentence.get("sentence_weights"),
                None if labels is None else int(labels[i]),
                aligned.omitted,
                aligned.gap_before,
                tuple(class_names),
                [float(p) for p in probabilities[i]],
                scores=scores,
                sentence_scores=sentence_scores,
                methods=available,
                warnings=warnings,
                attention=attention,
                **_review_facts(result, methods, i),
            )
        )
    return out


# A predictor's attention, found once: a server explains every request with the same one.
_ATTENTION = weakref.WeakKeyDictionary()


def model_attention(predictor):
    """Which attention a loaded model uses: `{layer name: options}` (`{}`: none), or `None`.

    One source, the model's `hatt.layers.ContextAttention` configs
    (:func:`hatt.export.facts.attention_facts`): a Keras model's own layers
    (a run directory, a `.keras` file, a model in memory); for a SavedModel,
    what its export recorded (`metadata["attention"]`), else the configs in
    its export folder's `model.keras` when that is this version's. `None`
    when neither says (an older version of an export, a stand-in
    predictor).
    """
    try:
        return _ATTENTION[predictor]
    except (KeyError, TypeError):
        pass
    found = _find_attention(predictor)
    try:
        _ATTENTION[predictor] = found
    except TypeError:  # not weakly referenceable: found again next time
        pass
    return found


def _find_attention(predictor):
    if getattr(predictor, "kind", None) == "keras":
        try:
            text_model = predictor.text_model
        except export.ExportError:
            return None
        if isinstance(text_model, export.TextModel):
            return facts.attention_facts(text_model.classifier.get_config())
        return None
    recorded = getattr(predictor, "metadata", {}).get("attention")
    if isinstance(recorded, dict):
        return recorded
    return facts.saved_model_attention(predictor.source)


def _runner(predictor, methods, steps):
    """The one call per batch: the `explain` signature, or `serving_default` for an old export.

    Checks `methods` and `steps` before anything runs.
    """
    steps = _check_steps(steps)
    # Exports written before the explain signature have no methods: their
    # serving_default scores (word_weights) are the one view.
    available = tuple(getattr(predictor, "methods", None) or ())
    if not available:
        if methods not in (None, ALL) or steps is not None:
            raise ValueError(
                "Expected a model with an explain signature for methods= or steps= (this one has "
                f"only its {predictor.score_kind} scores; export it again). "
                f"Received: methods={methods!r}, steps={steps!r}"
            )
        return predictor, None
    methods = check_methods(methods, available)
    if steps is None:
        return predictor.explain, methods
    if predictor.kind != "keras":  # the signature's steps were fixed at export
        raise ValueError(
            "Expected steps=None for a SavedModel: its explain signature runs integrated "
            f"gradients at its export's steps ({predictor.metadata.get('explain_steps', '?')}). "
            "Load the run directory or saved_models/NAME/model.keras to choose them. "
            f"Received: steps={steps!r}"
        )
    text_model = predictor.text_model
    return (lambda chunk: text_model.explain(chunk, steps=steps)), methods


def explain(
    model,
    texts,
    labels=None,
    vectorizer=None,
    batch_size=32,
    progress=True,
    methods=None,
    steps=None,
):
    """Run `model` on raw reviews and explain each prediction with every method.

    Args:
        model: What to explain: a path (SavedModel folder,
            `saved_models/NAME`, `.keras` file or run directory, loaded by
            `hatt.export.load`), a loaded `hatt.export.Predictor`, a
            `hatt.export.TextModel`, or an in-memory `keras.Model` together
            with `vectorizer` (see `hatt.export.as_predictor`).
        texts: List of raw reviews (str). Empty or word-less reviews give an
            explanation with no tokens and the model's probability for an
            empty review.
        labels: Optional list of true labels, one per text: indices into
            the model's `class_names` (IMDB: 1 = positive).
        vectorizer: The `hatt.data.Vectorizer` of an in-memory `keras.Model`.
        batch_size: Reviews per model call.
        progress: Show a progress bar (on stderr) when there is more than
            one batch.
        methods: The methods to keep (`None`: all the model has,
            `predictor.methods`); a name the model does not have raises a
            `ValueError` listing its methods.
        steps: Integrated gradients' steps (`None`: the model's: a
            SavedModel's export steps, else `hatt.export.attribution.DEFAULT_STEPS`).
            Other steps need a Keras model (a run directory, a `.keras`
            file, a model in memory): a SavedModel's are fixed.

    Returns:
        A list of :class:`Explanation`, one per text.

    Example:

    >>> explained = hatt.inspect.explain("runs/han-20260101-000000", ["A fine film."])
    >>> e = explained[0]
    >>> e.sentences, e.scores["integrated_gradients"], e.decomposition
    """
    texts = _check_texts(texts)
    batch_size = export.check_batch_size(batch_size)
    predictor = export.as_predictor(model, vectorizer)
    labels = _check_labels(labels, len(texts), predictor.num_classes)
    run, methods = _runner(predictor, methods, steps)
    warnings = tuple(getattr(predictor, "warnings", ()))
    bar = Progress(len(texts), enabled=progress and len(texts) > batch_size, stream="stderr")
    out = []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        out.extend(
            explanations_from_result(
                run(chunk),
                chunk,
                predictor.family,
                predictor.score_kind,
                None if labels is None else labels[start : start + batch_size],
                predictor.class_names,
                methods,
                warnings,
                model_attention(predictor),
            )
        )
        bar.update(start + len(chunk))
    return out


def _check_labels(labels, count, num_classes=2):
    if labels is None:
        return None
    labels = list(labels)
    if len(labels) != count:
        raise ValueError(f"Expected one label per text ({count}). Received: {len(labels)} labels")
    for label in labels:
        if isinstance(label, bool) or label not in range(num_classes):
            raise ValueError(
                f"Expected labels to be class indices in [0, {num_classes}). "
                f"Received: label={label!r}"
            )
    return labels


def balanced_sample(labels, n, seed=1337):
    """Indices of a seeded sample of `n` items, as many of each class as can be, shuffled.

    aclImdb lists all negative reviews of a split before the positive ones, so
    the first `n` reviews are never a fair sample. The classes present share
    `n` equally (the `n mod classes` lowest labels get one more).

    Args:
        labels: 1-D array of int labels.
        n: Sample size, at most what an equal share of each class allows.
        seed: Seed of the draw.

    Returns:
        A 1-D int array of `n` distinct indices.
    """
    labels = np.asarray(labels)
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"Expected n to be a positive int. Received: n={n!r}")
    # Drawn from the highest label down, the lowest labels taking the remainder:
    # for two classes the very draw of earlier versions (positives first).
    classes = np.unique(labels)[::-1]
    k = len(classes)
    members = [np.flatnonzero(labels == c) for c in classes]
    shares = [n // k + (i >= k - n % k) for i in range(k)]
    if any(share > len(m) for share, m in zip(shares, members, strict=True)):
        sizes = ", ".join(f"{c}: {len(m)}" for c, m in zip(classes, members, strict=True))
        raise ValueError(
            f"Expected n <= {len(classes) * min(len(m) for m in members)} for a balanced sample "
            f"of {len(classes)} classes ({sizes}). Received: n={n}"
        )
    rng = np.random.default_rng(seed)
    chosen = np.concatenate(
        [rng.choice(m, share, replace=False) for m, share in zip(members, shares, strict=True)]
    )
    rng.shuffle(chosen)
    return chosen
