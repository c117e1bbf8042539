"""Presets that scale with the corpus (its size, its classes), and weights for unbalanced classes.

The presets (``hatt/presets/*.json``) were tuned on IMDB's 22,500 training
reviews. Applied unchanged to a few thousand documents they give models of
50-150 MB (a 4,194,304-bucket n-gram channel, a 500-filter one-hot CNN
kernel) that are no more accurate. The rules, applied once the training split
is known (:func:`fit_to_corpus`), with ``r = training documents / 22,500``:

- ``ngram.buckets``: ``BUCKETS_MARGIN · preset · r``, rounded up to a power
  of two (hashed n-grams grow about linearly with the documents; the margin
  keeps collisions rare: 4x fewer buckets than that cost the channel 0.26
  points on 1,800 IMDB reviews), at least 65,536;
- CNN ``model_kwargs.filters``: ``preset · r^FILTERS_POWER`` (a fourth root),
  rounded to a multiple of 50, at least 100 (250 filters instead of 500 left
  the mixed model's accuracy where it was on 1,800 reviews; 150 (a square
  root) cost 0.4 points).

- more than two classes (binary features): the channel becomes
  :data:`MULTICLASS_NGRAM`, TF-IDF + LR over unigrams and bigrams
  (``order`` 2, ``idf``, ``reduction`` "l2", ``init`` "lr": one softmax
  regression, ``C`` 8) instead of the presets' NB-weighted one-vs-rest fit
  over trigrams. On IMDB's 8 ratings at 1,000 labels, judged on tuning draws
  fixed before their runs were looked at (``experiments/channel_grid.py``'s
  sixth and seventh questions): with ``C`` chosen in 0.5-16 on validation
  36.27 % against 36.00 % (draws 12-15); ``C`` fixed at 8, 36.97 % against that
  grid's 36.30 % (draws 16-19), where a ``C`` chosen on 100 validation reviews
  was noise. Before it (runs whose ``scale`` lists ``ngram.alpha`` and
  ``ngram.C`` only) the NB-LR channel took ``alpha`` 0.5 and ``C`` in
  {3, 10, 30} (:data:`NBLR_MULTICLASS_C`; 35.05 % against the presets'
  33.46 % on draws 6 and 7).

The measurements: docs/training.md, "Presets scale with the corpus".

The preset's value is the cap: the full IMDB training split (two classes) gives
exactly the preset. Only keys that came from the preset scale (``TrainConfig.scale``,
filled by :func:`hatt.training.assemble_config`); a key the user set (``--set``,
``--config``) is never changed. ``class_weight="auto"`` becomes ``"balanced"``
when the largest class of the training split has more than
``CLASS_WEIGHT_RATIO`` times the smallest's documents, ``None`` otherwise.
"""

import copy
import math

REFERENCE_DOCUMENTS = 22500  # IMDB's training split, where the presets were tuned
SIZE_KEYS = ("ngram.buckets", "model_kwargs.filters")  # scale with the documents
# The n-gram channel above two classes: TF-IDF + LR (the presets' NB-LR is the binary
# task's). "ngram.init" comes first: the layer's keys and C's grid follow the init the
# channel ends with.
MULTICLASS_NGRAM = {
    "ngram.init": "lr",
    "ngram.order": 2,
    "ngram.reduction": "l2",
    "ngram.idf": True,
    "ngram.alpha": 0.5,
    "ngram.C": 8.0,
}
# C of an NB-LR channel above two classes (the rule before the TF-IDF channel; still
# where ngram.init stays "nblr": set by the user, or a run saved before).
NBLR_MULTICLASS_C = [3.0, 10.0, 30.0]
SCALED_KEYS = (*SIZE_KEYS, *MULTICLASS_NGRAM)
# Keys that came to scale after runs were saved, by generation: ngram.alpha and ngram.C
# (7bb4767), then the channel's layer and fit (the TF-IDF channel). A run lists none of
# a generation written after it.
LATER_KEYS = ("ngram.alpha", "ngram.C")
CHANNEL_KEYS = ("ngram.init", "ngram.order", "ngram.reduction", "ngram.idf")
BUCKETS_MARGIN = 4
MIN_BUCKETS = 2**16
FILTERS_POWER = 0.25
MIN_FILTERS = 100
FILTERS_STEP = 50
# Above 1.5x, plain cross-entropy visibly favours the large class (issue 30's 5-class
# corpus: 49.07 % -> 52.23 % accuracy with balanced weights); below it the weights are ~1.
CLASS_WEIGHT_RATIO = 1.5


def scaled_buckets(preset, documents):
    """``ngram.buckets`` for ``documents`` training documents (``preset`` is the cap)."""
    wanted = max(BUCKETS_MARGIN * preset * documents / REFERENCE_DOCUMENTS, MIN_BUCKETS)
    return min(preset, 2 ** math.ceil(math.log2(wanted)))


def scaled_filters(preset, documents):
    """CNN ``filters`` for ``documents`` training documents (``preset`` is the cap)."""
    wanted = preset * (documents / REFERENCE_DOCUMENTS) ** FILTERS_POWER
    return min(preset, max(MIN_FILTERS, FILTERS_STEP * round(wanted / FILTERS_STEP)))


def resolve_class_weight(class_weight, counts):
    """``"auto"`` → ``"balanced"`` or ``None`` by the training split's ``counts``; else as given."""
    if class_weight != "auto":
        return class_weight
    counts = [int(c) for c in counts]
    return "balanced" if max(counts) > CLASS_WEIGHT_RATIO * max(min(counts), 1) else None


def class_weight_map(class_weight, counts):
    """``{class: weight}`` of a resolved ``class_weight`` for ``counts`` per class, or ``None``.

    ``"balanced"``: class ``k`` weighs ``n / (C · n_k)`` (scikit-learn's
    ``class_weight="balanced"``), so that every class adds the same to a loss;
    ``"sqrt"``: the square root of that, rescaled so that the documents' weights still
    sum to ``n`` (a class 4x rarer weighs 2x, not 4x: half way between); ``None``: every
    class weighs 1 (returned as ``None``). The one rule of the deep part's Keras
    ``class_weight``, the n-gram channel's fit and its mix with the deep part.

    Example:

    >>> class_weight_map("balanced", [30, 10])
    {0: 0.6666666666666666, 1: 2.0}
    """
    if class_weight is None:
        return None
    if class_weight not in ("balanced", "sqrt"):
        raise ValueError(
            "Expected class_weight to be resolved ('balanced', 'sqrt' or None; 'auto' is "
            f"resolved by the training split first). Received: class_weight={class_weight!r}"
        )
    counts = [max(float(c), 1.0) for c in counts]
    total = sum(counts)
    weights = [total / (len(counts) * c) for c in counts]
    if class_weight == "sqrt":
        roots = [math.sqrt(w) for w in weights]
        scale = total / sum(c * r for c, r in zip(counts, roots, strict=True))
        weights = [scale * r for r in roots]
    return dict(enumerate(weights))


def _get(config, key):
    """``key``'s value in ``config``: a :class:`TrainConfig` or its ``to_dict()``."""
    section, name = key.split(".")
    holder = config.get(section) if isinstance(config, dict) else getattr(config, section)
    if holder is None:
        return None
    return holder.get(name) if isinstance(holder, dict) else getattr(holder, name)


def _set(config, key, value):
    section, name = key.split(".")
    holder = getattr(config, section)
    if isinstance(holder, dict):
        holder[name] = value
    else:
        setattr(holder, name, value)


def multiclass_ngram(key):
    """The rule of ``key`` in :data:`MULTICLASS_NGRAM`: the preset's value for two classes.

    Above two, ``ngram.init`` becomes ``"lr"`` where the features are binary (TF-IDF's L2
    norm counts each feature once); the layer's keys follow only a channel that ends as
    ``"lr"`` (an ``"nblr"`` the user kept keeps its layer), and ``ngram.C`` takes the grid
    of the init it ends with.
    """

    def rule(preset, counts, config):
        if len(counts) <= 2:
            return preset
        lr = _get(config, "ngram.init") == "lr"  # as scaled so far: init comes first
        if key == "ngram.init":
            return MULTICLASS_NGRAM[key] if _get(config, "ngram.binary") else preset
        if key in CHANNEL_KEYS:
            return MULTICLASS_NGRAM[key] if lr else preset
        if key == "ngram.C" and not lr:
            return NBLR_MULTICLASS_C  # an NB-LR channel's grid
        return MULTICLASS_NGRAM[key]

    return rule


# key -> rule(preset value, documents per class of the training split, the config so far)
# The n-gram channel's table holds buckets x classes floats (and Adam two more each): past
# 2**28 (1 GiB of float32) a many-class corpus ran out of memory before its first step
# (issue 63: 2,000 classes x 2,097,152 buckets asked for 16 GB).
TABLE_FLOATS = 2**28


def table_buckets(classes):
    """The most buckets (a power of two) whose table of ``classes`` columns fits."""
    return 2 ** int(math.log2(max(TABLE_FLOATS // max(classes, 1), 1)))


def check_table(config, classes):
    """Raise where the channel's table of ``config.ngram.buckets`` rows cannot fit."""
    buckets = (config.ngram.buckets if config.ngram is not None else 0) or 0
    if buckets * classes > TABLE_FLOATS:
        raise ValueError(
            f"Expected the n-gram channel's table to fit in memory: ngram.buckets={buckets:,} x "
            f"{classes:,} classes is {buckets * classes * 4 / 2**30:.1f} GiB of weights (the "
            f"optimizer holds two more). Set --set ngram.buckets={table_buckets(classes):,} "
            "or less."
        )


RULES = {
    "ngram.buckets": lambda preset, counts, config: min(
        scaled_buckets(preset, sum(counts)), table_buckets(len(counts))
    ),
    "model_kwargs.filters": lambda preset, counts, config: scaled_filters(preset, sum(counts)),
    **{key: multiclass_ngram(key) for key in MULTICLASS_NGRAM},
}


def unscale(values):
    """A config dict with its recorded ``scaled`` changes undone (a new dict)."""
    scaled = values.get("scaled") or {}
    values = {**values, "scaled": None} if "scaled" in values else dict(values)
    for key, change in scaled.items():
        if key == "train_documents":
            continue
        if key == "class_weight":
            values["class_weight"] = change[0]
            continue
        section, name = key.split(".")
        values[section] = {**(values.get(section) or {}), name: change[0]}
    return values


def complete_scale(saved, wanted, scaled=None):
    """A saved run's settings (a dict, as asked) with the keys that scale since it was written.

    A run saved before ``ngram.alpha`` and ``ngram.C`` scaled (:data:`LATER_KEYS`)
    lists neither in ``scale``, where the same command today lists those its preset
    gave. Such a key is added where the run's value is the one asked today, so the
    interrupted run resumes. With two classes nothing changes; above two, the
    channel, fit once training ends (``ngram.fit="separate"``), gets today's
    multi-class settings, as the same command would give a new run.

    The channel's layer and fit (:data:`CHANNEL_KEYS`) are added the same way to a
    run saved before them, except where the run scaled its channel for more than two
    classes (``scaled`` names ``ngram.alpha`` or ``ngram.C``): its model was built with
    the NB-LR channel's layer, so today's command, which builds another, is not its
    command and does not resume it.

    Args:
        saved: the run's saved settings, unscaled (``TrainConfig.from_dict(...,
            saved=True).to_dict()``).
        wanted: the settings asked today (``TrainConfig.to_dict()``).
        scaled: the run's record of what it scaled (its ``config.json``'s
            ``scaled``), if any.

    Returns:
        ``saved``, or a new dict with its ``scale`` completed.
    """
    listed, asked = saved.get("scale"), wanted.get("scale") or ()
    if not isinstance(listed, list):
        return saved  # no preset: compared as it is
    multiclass = any(key in (scaled or {}) for key in LATER_KEYS)
    added = []
    for generation in (LATER_KEYS, CHANNEL_KEYS):
        if any(key in listed for key in generation):
            continue  # written since
        if generation == CHANNEL_KEYS and multiclass:
            continue
        for key in generation:
            value = _get(saved, key)
            if key in asked and value is not None and value == _get(wanted, key):
                added.append(key)
    if not added:
        return saved
    keys = set(listed) | set(added)
    return {**saved, "scale": [key for key in SCALED_KEYS if key in keys]}


def fit_to_corpus(config, counts):
    """A copy of ``config`` (a :class:`TrainConfig`) scaled to the training split.

    Args:
        config: the run's settings; ``config.scale`` lists the keys that may scale.
        counts: documents per class in the training split.

    Returns:
        the copy, its ``scaled`` set to what changed (also printed).
    """
    if config.scaled:
        return config  # resolved once already
    config = copy.deepcopy(config)
    counts = [int(c) for c in counts]
    documents = sum(counts)
    changes = {}
    for key in sorted(config.scale or (), key=SCALED_KEYS.index):  # ngram.C after ngram.init
        before = _get(config, key)
        if before is not None:
            after = RULES[key](before, counts, config)
            _set(config, key, after)
            if after != before:
                changes[key] = [before, after]
    check_table(config, len(counts))
    if config.class_weight == "auto":
        config.class_weight = resolve_class_weight("auto", counts)
        changes["class_weight"] = ["auto", config.class_weight]
        ratio = max(counts) / max(min(counts), 1)
        print(
            f"class_weight auto → {config.class_weight or 'none'} (largest class {ratio:.2f}x the "
            f"smallest; balanced above {CLASS_WEIGHT_RATIO}x)"
        )
    sizes = {k: v for k, v in changes.items() if k in SIZE_KEYS}
    if sizes:
        shown = ", ".join(f"{k.split('.')[-1]} {a:,} → {b:,}" for k, (a, b) in sizes.items())
        print(f"Scaled for {documents:,} training documents: {shown}")
    classes = {k: v for k, v in changes.items() if k in MULTICLASS_NGRAM}
    if classes:
        shown = ", ".join(f"{k} {a} → {b}" for k, (a, b) in classes.items())
        scheme = (
            "TF-IDF + a softmax regression"
            if config.ngram.init == "lr" and config.ngram.idf
            else "one-vs-rest"
            if config.ngram.init == "nblr"
            else config.ngram.init
        )
        print(f"The n-gram channel for {len(counts)} classes ({scheme}): {shown}")
    config.scaled = {"train_documents": documents, **changes} if changes else None
    return config
