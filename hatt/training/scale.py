"""Presets that scale with the corpus, and class weights when the classes are unbalanced.

The presets (``hatt/presets/*.json``) were tuned on IMDB's 22,500 training
reviews. Applied unchanged to a few thousand documents they give models of
50-150 MB (a 4,194,304-bucket n-gram channel, a 500-filter one-hot CNN
kernel) that are no more accurate. One rule, applied once the training split
is known (:func:`fit_to_corpus`), with ``r = training documents / 22,500``:

- ``ngram.buckets``: ``BUCKETS_MARGIN · preset · r``, rounded up to a power
  of two (hashed n-grams grow about linearly with the documents; the margin
  keeps collisions rare: 4x fewer buckets than that cost the channel 0.26
  points on 1,800 IMDB reviews), at least 65,536;
- CNN ``model_kwargs.filters``: ``preset · r^FILTERS_POWER`` (a fourth root),
  rounded to a multiple of 50, at least 100 (250 filters instead of 500 left
  the mixed model's accuracy where it was on 1,800 reviews; 150 (a square
  root) cost 0.4 points).

The measurements: docs/training.md, "Presets scale with the corpus".

The preset's value is the cap: the full IMDB training split gives exactly the
preset. Only keys that came from the preset scale (``TrainConfig.scale``,
filled by :func:`hatt.training.assemble_config`); a key the user set (``--set``,
``--config``) is never changed. ``class_weight="auto"`` becomes ``"balanced"``
when the largest class of the training split has more than
``CLASS_WEIGHT_RATIO`` times the smallest's documents, ``None`` otherwise.
"""

import copy
import math

REFERENCE_DOCUMENTS = 22500  # IMDB's training split, where the presets were tuned
SCALED_KEYS = ("ngram.buckets", "model_kwargs.filters")
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


def _get(config, key):
    section, name = key.split(".")
    holder = getattr(config, section)
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


RULES = {"ngram.buckets": scaled_buckets, "model_kwargs.filters": scaled_filters}


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
    documents = int(sum(int(c) for c in counts))
    changes = {}
    for key in config.scale or ():
        before = _get(config, key)
        if isinstance(before, int) and not isinstance(before, bool):
            after = RULES[key](before, documents)
            _set(config, key, after)
            if after != before:
                changes[key] = [before, after]
    if config.class_weight == "auto":
        config.class_weight = resolve_class_weight("auto", counts)
        changes["class_weight"] = ["auto", config.class_weight]
        ratio = max(counts) / max(min(counts), 1)
        print(
            f"class_weight auto → {config.class_weight or 'none'} (largest class {ratio:.2f}x the "
            f"smallest; balanced above {CLASS_WEIGHT_RATIO}x)"
        )
    sizes = {k: v for k, v in changes.items() if k != "class_weight"}
    if sizes:
        shown = ", ".join(f"{k.split('.')[-1]} {a:,} → {b:,}" for k, (a, b) in sizes.items())
        print(f"Scaled for {documents:,} training documents: {shown}")
    config.scaled = {"train_documents": documents, **changes} if changes else None
    return config
