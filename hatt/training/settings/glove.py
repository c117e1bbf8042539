"""``word_vectors="glove"``'s setting: the embedding is 50 wide, GloVe 6B's width.

The vectors themselves are read by :mod:`hatt.training.starts.glove`. Here, before
any data is read: :func:`fit_width` (in :func:`hatt.training.assemble_config`) makes
``model_kwargs.embedding_dim`` :data:`DIM` when the user did not set it (a preset's
100, a builder's default) and says so; a family that projects its embedding
(``hidden_dim``, the transformer's) keeps its width after that learned projection.
:func:`checked_width` (in :class:`hatt.training.TrainConfig`) does the same for a
config made directly, and refuses another width the user asked for.
"""

import inspect

from hatt import models

SOURCE = "glove"  # the value of TrainConfig.word_vectors
DIM = 50  # the vectors' width


def _parameters(family):
    return inspect.signature(models.family_spec(family).builder).parameters


def embedding_dim(family, model_kwargs):
    """``family``'s embedding width with ``model_kwargs`` (its builder's default when unset);
    ``None`` for a family whose builder takes no ``embedding_dim``."""
    parameters = _parameters(family)
    if "embedding_dim" not in parameters:
        return None
    return model_kwargs.get("embedding_dim", parameters["embedding_dim"].default)


def _with_glove_width(family, model_kwargs, width):
    """``model_kwargs`` with ``embedding_dim`` :data:`DIM`; a builder that projects the
    embedding (``hidden_dim``, the transformer's) keeps ``width`` after a learned
    projection unless the user set its own."""
    fitted = {**model_kwargs, "embedding_dim": DIM}
    if "hidden_dim" in _parameters(family) and model_kwargs.get("hidden_dim") is None:
        fitted["hidden_dim"] = width
    return fitted


def _say(before, fitted):
    projection = (
        f", projected to hidden_dim {fitted['hidden_dim']}" if fitted.get("hidden_dim") else ""
    )
    print(
        f"word_vectors=glove: model_kwargs.embedding_dim {before} → {DIM} (GloVe 6B's width; "
        f"{before} was not set by you){projection}"
    )


def fit_width(values, later):
    """``values`` (a config's dict, its layers merged) with GloVe's width when the user left it.

    With ``word_vectors="glove"``, ``model_kwargs.embedding_dim`` becomes :data:`DIM`
    (said on the terminal) unless a layer the user wrote (``later``: the ``--set``
    overrides, the ``--config`` file, as dicts; ``None``: none) set it; a builder with a
    ``hidden_dim`` keeps its width after a learned projection.

    Returns:
        ``values``, or a new dict with ``model_kwargs`` fitted.
    """
    if values.get("word_vectors") != SOURCE:
        return values
    if any("embedding_dim" in ((layer or {}).get("model_kwargs") or {}) for layer in later):
        return values
    model_kwargs = values.get("model_kwargs") or {}
    before = embedding_dim(values["model"], model_kwargs)
    if before is None or before == DIM:
        return values
    fitted = _with_glove_width(values["model"], model_kwargs, before)
    _say(before, fitted)
    return {**values, "model_kwargs": fitted}


def checked_width(family, source, model_kwargs):
    """``model_kwargs`` fitted to :data:`DIM` where ``embedding_dim`` was not set; refuses another.

    For a :class:`hatt.training.TrainConfig` whose ``word_vectors`` is ``source``:
    with ``"glove"``, checked before any data is read (a preset's value is
    :func:`fit_width`'s); with another source, ``model_kwargs`` as it is.

    Returns:
        ``model_kwargs``, or a new dict fitted as :func:`fit_width` does.

    Raises:
        ValueError: another ``embedding_dim`` was asked for.
    """
    if source != SOURCE:
        return model_kwargs
    dim = embedding_dim(family, model_kwargs)
    if dim is None or dim == DIM:
        return model_kwargs
    if "embedding_dim" not in model_kwargs:
        fitted = _with_glove_width(family, model_kwargs, dim)
        _say(dim, fitted)
        return fitted
    raise ValueError(
        f"Expected model_kwargs.embedding_dim={DIM} (GloVe 6B's width) with "
        f"word_vectors='glove'. Received: model_kwargs.embedding_dim={dim}. Add "
        f"--set model_kwargs.embedding_dim={DIM}, or leave it unset."
    )
