"""hatt's own English-review start (``init="imdb"``): a family trained once on IMDB, cached.

A model trained on IMDB's 25,000 labelled movie reviews knows how English
opinions are written; started from it, a few thousand documents of a related task
(another site's reviews, star ratings, product comments) train a deep part that
takes part in the decision, where from scratch the mix often drops it
(docs/lab/transfer.md: IMDB's 8 ratings at 500-2,000 labels, above both
cross-validated baselines in accuracy, the deep part weighted about 1). ``hatt train FAMILY --init imdb`` (``TextClassifier(FAMILY, init="imdb")``)
asks for that start without training IMDB first:

- the first run builds it: the family's preset trained on IMDB as ``hatt train
  FAMILY`` trains it (IMDB found as ``hatt train`` finds it: ``$HATT_IMDB``, then
  tensorflow-datasets). Where IMDB's 50,000 unlabeled reviews lie beside the labelled
  ones (:func:`hatt.data.unlabeled.find_imdb_unsup`) and the family has a word encoder
  a language model pretrains (the HAN, the BiGRU), its word vectors and a 2-epoch
  language model learn from them first (:data:`UNLABELED_RECIPE`: docs/results.md's
  ``han_unsup_lm_frozen``, the best single run before self-training);
- it is a run directory under the cache (``$HATT_CACHE/starts/imdb-FAMILY-RECIPE``)
  with its ``config.json`` and ``metrics.json`` (its settings and its IMDB figures);
  interrupted, the next run resumes it; every later run reuses it;
- the run that asked for it then starts from it as from any trained model
  (:mod:`hatt.training.starts.transfer`), and records ``init: "imdb"``, so a resumed
  or repeated run finds the same start.

Building takes a full IMDB run: the time measured on two cores is said before it
starts (:func:`plan`). Without IMDB, the run is refused before anything is built,
with the ways to provide it.

    >>> hatt.training.train(assemble_config("han", data="reviews.csv", init="imdb"), "runs/r")
"""

import time

from hatt import models
from hatt import run_dir as run_files
from hatt.data import imdb as imdb_data
from hatt.data.corpus import DataNotFoundError
from hatt.data.readers.archive import cache_dir
from hatt.data.readers.files import read_json_object
from hatt.data.unlabeled import IMDB_UNLABELED, find_imdb_unsup
from hatt.training.settings.config import assemble_config

IMDB_START = "imdb"  # init's name for this start (a folder of that name: ./imdb)
STARTS_FOLDER = "starts"  # under the cache folder
RECIPE_VERSION = 1  # a new recipe builds a new start beside the old one
# Over the family's preset, where IMDB's unlabeled reviews are found and the family has a
# word encoder (docs/results.md, "At 25,000 labels: every method": han_unsup_lm_frozen).
UNLABELED_RECIPE = {"unlabeled": IMDB_UNLABELED, "lm_epochs": 2, "init_frozen_epochs": 1}


def is_imdb_start(init):
    """Whether ``init`` (``TrainConfig.init``) names this start rather than a path."""
    return init == IMDB_START


def recipe(family, word_encoder):
    """``(name, settings)`` of the start of ``family``: ``"unlabeled"`` with
    :data:`UNLABELED_RECIPE` where IMDB's unlabeled reviews are found and ``word_encoder``
    (the family has one a language model pretrains), else ``"labeled"`` (the preset)."""
    if word_encoder and _unlabeled_found():
        return "unlabeled", dict(UNLABELED_RECIPE)
    return "labeled", {}


def start_dir(family, recipe_name):
    """The start's run directory: ``$HATT_CACHE/starts/imdb-FAMILY-RECIPE-vN``."""
    name = f"{IMDB_START}-{family}-{recipe_name}-v{RECIPE_VERSION}"
    return cache_dir() / STARTS_FOLDER / name


def is_built(folder):
    """Whether the start at ``folder`` finished (its ``metrics.json`` is written last)."""
    return run_files.path(folder, run_files.METRICS).is_file() and run_files.is_run_dir(folder)


def plan(family, recipe_name, settings):
    """The line said before a build: what it trains, where it goes, how long it took."""
    data = "IMDB's 25,000 labelled reviews"
    if recipe_name == "unlabeled":
        data += (
            f", its word vectors and a {settings['lm_epochs']}-epoch language model first "
            "learning from the 50,000 unlabeled ones too"
        )
    spec = models.family_spec(family)
    minutes = spec.imdb_unlabeled_minutes if recipe_name == "unlabeled" else spec.imdb_minutes
    took = "a full IMDB run"
    if minutes:
        took = f"{minutes:g} minutes on two cores when measured"
    elif recipe_name == "unlabeled" and spec.imdb_minutes:
        took = f"longer than the {spec.imdb_minutes:g} minutes of the labelled reviews alone"
    return (
        f"Building hatt's IMDB start for {family} once: the {family} preset trained on {data} "
        f"({took}). It is cached in {start_dir(family, recipe_name)} and reused by every "
        "later run; interrupted, the next run resumes it."
    )


def ensure_start(family, *, fit, verbose="auto"):
    """The run directory of the IMDB start of ``family``, built first when not cached.

    Args:
        family: the family of the run that starts from it.
        fit: the plain run, ``fit(config, run_dir, verbose=...)``
            (:func:`hatt.training.run.loop.train`).
        verbose: the build's Keras verbosity.

    Returns:
        The start's run directory (a :class:`~pathlib.Path`).

    Raises:
        DataNotFoundError: the start is not cached and IMDB cannot be found.
    """
    from_cache = existing_start(family)
    if from_cache is not None:
        return from_cache
    recipe_name, settings = recipe(family, models.family_spec(family).word_encoder)
    folder = start_dir(family, recipe_name)
    _check_imdb_found()
    print(plan(family, recipe_name, settings), flush=True)
    config = _start_config(family, settings)
    began = time.perf_counter()
    metrics = fit(config, folder, verbose=verbose, command=f"hatt train {family} --init imdb")
    print(
        f"hatt's IMDB start for {family} is built in {(time.perf_counter() - began) / 60:.1f} "
        f"minutes: test accuracy {100 * metrics['test_accuracy']:.2f} % on IMDB ({folder}).",
        flush=True,
    )
    return folder


def existing_start(family):
    """The run directory of a finished IMDB start of ``family`` (either recipe, the
    unlabeled one first), or ``None``."""
    for recipe_name in ("unlabeled", "labeled"):
        folder = start_dir(family, recipe_name)
        if is_built(folder):
            return folder
    return None


def built_start(family):
    """The finished start's run directory, for :func:`hatt.training.starts.transfer.load_source`.

    Raises:
        ValueError: it was never built (:func:`ensure_start` builds it).
    """
    folder = existing_start(family)
    if folder is None:
        raise ValueError(
            f"Expected hatt's IMDB start for {family} in {cache_dir() / STARTS_FOLDER}. "
            f"Received: init={IMDB_START!r} with none built there; hatt.training.train (or "
            f"`hatt train {family} --init imdb`) builds it first"
        )
    return folder


def describe(folder):
    """One line on a finished start: where, its IMDB test accuracy, its recipe."""
    metrics = read_json_object(run_files.path(folder, run_files.METRICS))
    return f"hatt's IMDB start: {folder} (test accuracy {100 * metrics['test_accuracy']:.2f} %)"


# === Helpers ==========================================================================


def _unlabeled_found():
    try:
        find_imdb_unsup()
    except ValueError:
        return False
    return True


def _check_imdb_found():
    """Refuse before building when IMDB is neither at ``$HATT_IMDB`` nor in
    tensorflow-datasets (reading it is the first step of the build; the check reads the
    folder's names only, or asks tensorflow-datasets)."""
    try:
        imdb_data.locate()
    except DataNotFoundError as error:
        raise DataNotFoundError(
            f"init={IMDB_START!r} builds hatt's IMDB start once from IMDB's reviews, and IMDB "
            f"was not found.\n{error}\nOr start from a trained model of your own: --init PATH."
        ) from None


def _start_config(family, settings):
    """The start's settings: the family's preset (as ``hatt train FAMILY``) with ``settings``."""
    return assemble_config(family, overrides=settings)
