"""Configurations written before the ``ngram`` section existed, translated.

``model_kwargs.ngram_buckets``, top-level ``ngram_init`` and their siblings were
the n-gram channel's keys before :class:`hatt.training.settings.config.NgramSettings`
gathered them into one section; :func:`translate_legacy` moves them there, so
old config files and run directories still load. Settings that were removed
because nothing implemented them (``REMOVED_FIELDS``) are dropped from a saved
run's configuration (:func:`drop_removed`): a run written with them did not use
them, so it resumes; asked for today they are unknown keys. A setting added
since a run was written, whose default would change what that run did, is read
back as the run had it (:func:`complete_later`).
"""

from hatt.training.settings.ngram import CV_DOCUMENTS

# Settings removed because no code read them (a run that had them ran without them).
REMOVED_FIELDS = ("pretrain", "pretrain_epochs", "pretrain_output_words")

# Old flat keys of the n-gram channel → keys of the `ngram` section.
LEGACY_MODEL_KWARGS = {
    "ngram_buckets": "buckets",
    "ngram": "order",
    "ngram_reduction": "reduction",
    "ngram_binary": "binary",
    "ngram_dropout": "feature_dropout",
    "ngram_l2": "l2",
}
LEGACY_FIELDS = {
    "ngram_init": "init",
    "ngram_fit": "fit",
    "ngram_alpha": "alpha",
    "ngram_C": "C",
    "ngram_min_df": "min_df",
    "ngram_init_scale": "init_scale",
    "ngram_trainable": "trainable",
}


def translate_legacy(values, complete=False):
    """Move the old flat n-gram keys of ``values`` into its ``ngram`` section.

    ``model_kwargs.ngram_buckets`` / ``ngram`` / ``ngram_binary`` /
    ``ngram_reduction`` / ``ngram_dropout`` / ``ngram_l2`` and the top-level
    ``ngram_init`` / ``ngram_fit`` / ``ngram_alpha`` / ``ngram_C`` /
    ``ngram_min_df`` / ``ngram_init_scale`` / ``ngram_trainable`` become keys of
    ``values["ngram"]``; ``ngram_buckets`` 0 meant "no channel" (``None``).

    Args:
        values: a configuration dict (not changed).
        complete: ``values`` is a whole configuration (an old ``config.json``):
            without ``ngram_buckets`` it had no channel, whatever its other
            ``ngram_*`` keys said. Otherwise (a file or overrides laid over a
            preset) the keys found are a partial section.

    Returns:
        A new dict.
    """
    values = dict(values)
    kwargs = values.get("model_kwargs")
    kwargs = dict(kwargs) if isinstance(kwargs, dict) else {}  # else checked as it is
    layer = {new: kwargs.pop(old) for old, new in LEGACY_MODEL_KWARGS.items() if old in kwargs}
    fit = {new: values.pop(old) for old, new in LEGACY_FIELDS.items() if old in values}
    if layer:
        values["model_kwargs"] = kwargs
    if not layer and not fit:
        return values
    off = ("buckets" in layer and not layer["buckets"]) or (complete and "buckets" not in layer)
    if off:
        values["ngram"] = None
    else:
        section = values.get("ngram")
        section = section.to_dict() if hasattr(section, "to_dict") else section  # NgramSettings
        values["ngram"] = {**(section or {}), **layer, **fit}
    return values


def drop_removed(values):
    """A saved run's configuration without the ``REMOVED_FIELDS`` (a new dict)."""
    return {k: v for k, v in values.items() if k not in REMOVED_FIELDS}


def complete_later(values):
    """A saved run's configuration (its ``ngram`` section translated) with the settings
    added since, as that run had them, so that the same command today is not taken for
    its own where it would train otherwise (and does not resume the run under other rules).

    - ``adversarial_unlabeled`` (VAT's term on the unlabeled documents, default true) came
      after runs whose VAT read the labeled batches only: such a run with unlabeled
      documents reads back ``False``.
    - ``ngram.folds`` (default ``"auto"``: a grid chosen by folds of the training split
      below ``CV_DOCUMENTS`` training documents) came after runs that chose it on the
      validation split: such a run below that size reads back ``0``; at or above it
      ``"auto"`` chose on the validation split too, and stays.
    """
    if (
        "adversarial_unlabeled" not in values
        and values.get("adversarial") == "vat"
        and values.get("unlabeled") is not None
    ):
        values = {**values, "adversarial_unlabeled": False}
    ngram = values.get("ngram")
    documents = (values.get("scaled") or {}).get("train_documents")
    if isinstance(ngram, dict) and "folds" not in ngram and documents is not None:
        if documents < CV_DOCUMENTS:
            values = {**values, "ngram": {**ngram, "folds": 0}}
    return values
