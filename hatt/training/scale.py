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

- more than two classes: ``ngram.alpha`` and ``ngram.C`` become
  :data:`MULTICLASS_NGRAM` (NB smoothing 0.5, ``C`` in {3, 10, 30}): each
  class's one-vs-rest fit has a few hundred reviews of its class against
  thousands, and wants less smoothing and a stronger penalty than the binary
  presets' ``alpha`` 2, ``C`` in {100, 300}, as the NB-LR baseline's
  multi-class grid reaches lower than its binary one. On IMDB's 8 ratings at
  1,000 labels, judged on tuning draws fixed before their runs were looked at:
  35.05 % against the presets' 33.46 % (``experiments/channel_grid.py``).

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
# The n-gram channel's NB-LR above two classes (the presets' are the binary task's).
MULTICLASS_NGRAM = {"ngram.alpha": 0.5, "ngram.C": [3.0, 10.0, 30.0]}
SCALED_KEYS = (*SIZE_KEYS, *MULTICLASS_NGRAM)
# Keys that came to scale after runs were saved (7bb4767): an older run lists none of them.
LATER_KEYS = tuple(MULTICLASS_NGRAM)
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
    """The rule of ``key`` in :data:`MULTICLASS_NGRAM`: the preset's value for two classes."""

    def rule(preset, counts):
        return MULTICLASS_NGRAM[key] if len(counts) > 2 else preset

    return rule


# key -> rule(preset value, documents per class of the training split)
RULES = {
    "ngram.buckets": lambda preset, counts: scaled_buckets(preset, sum(counts)),
    "model_kwargs.filters": lambda preset, counts: scaled_filters(preset, sum(counts)),
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


def complete_scale(saved, wanted):
    """A saved run's settings (a dict, as asked) with the keys that scale since it was written.

    A run saved before ``ngram.alpha`` and ``ngram.C`` scaled (:data:`LATER_KEYS`)
    lists neither in ``scale``, where the same command today lists those its preset
    gave. Such a key is added where the run's value is the one asked today, so the
    interrupted run resumes. With two classes nothing changes; above two, the
    channel, fit once training ends (``ngram.fit="separate"``), gets today's
    multi-class settings, as the same command would give a new run.

    Args:
        saved: the run's saved settings, unscaled (``TrainConfig.from_dict(...,
            saved=True).to_dict()``).
        wanted: the settings asked today (``TrainConfig.to_dict()``).

    Returns:
        ``saved``, or a new dict with its ``scale`` completed.
    """
    listed, asked = saved.get("scale"), wanted.get("scale") or ()
    if not isinstance(listed, list) or any(key in listed for key in LATER_KEYS):
        return saved  # no preset, or written since: compared as it is
    added = []
    for key in LATER_KEYS:
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
    for key in config.scale or ():
        before = _get(config, key)
        if before is not None and not isinstance(before, bool):
            after = RULES[key](before, counts)
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
    sizes = {k: v for k, v in changes.items() if k in SIZE_KEYS}
    if sizes:
        shown = ", ".join(f"{k.split('.')[-1]} {a:,} → {b:,}" for k, (a, b) in sizes.items())
        print(f"Scaled for {documents:,} training documents: {shown}")
    classes = {k: v for k, v in changes.items() if k in MULTICLASS_NGRAM}
    if classes:
        shown = ", ".join(f"{k} {a} → {b}" for k, (a, b) in classes.items())
        print(f"The n-gram channel for {len(counts)} classes (one-vs-rest): {shown}")
    config.scaled = {"train_documents": documents, **changes} if changes else None
    return config
