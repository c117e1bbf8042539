"""The harness of the research scripts: draws, baseline and hatt cells, tables.

Every few-label experiment (``small_corpora``, ``mix_tuning``, ``unlabeled``,
``transfer``, ``transfer_other``, ``learning_curve``, ...) measures on the same
seeded draws of IMDB's training split and writes the same kind of cell, so the
pieces they share live here and are imported normally::

    from experiments import harness

    pools = harness.create_dataset(data, "polarity")
    tables = harness.draw_tables(pools, "polarity", size=1000, draw=0, seed=1337, runs=RUNS)
    cell = harness.hatt_cell("han", tables, place)  # `hatt train han` as a user types it
    row = harness.baseline_cell("nb_lr", tables, harness.CachedTestTokens(), seed=1337)

- **Draws**: :class:`Pool` (one IMDB split for a task), :func:`create_dataset`,
  :func:`draw_indices` (stratified, seeded by ``(seed, draw)``; a draw's smaller
  sizes are nearly subsets of its larger), :func:`write_table` and
  :func:`draw_tables` (the draw and the test split as ``.jsonl`` tables).
- **Cells**: :func:`hatt_cell` (``hatt train FAMILY`` as a user types it, in its own
  process) and :func:`baseline_cell` (NB-LR or TF-IDF + LR of
  ``experiments/baselines.py``, ``C`` chosen by 5-fold cross-validation on the draw, or
  with ``tuning="validation"`` on hatt's validation slice of the draw).
- **Tables and figures**: :func:`mean_std`, :func:`plot` (accuracy against
  training documents), :func:`commit` (the repository's commit recorded in a cell).

Scripts run from the project root: ``python -m experiments.NAME``.
"""

import dataclasses
import json
import os
import pickle
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import hatt
from experiments import baselines
from hatt.data.imdb import ENV_VAR, read_imdb

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("polarity", "rating")
BASELINES = ("nb_lr", "tfidf_lr")
LABELS = {"nb_lr": "NB-LR", "tfidf_lr": "TF-IDF + LR"}
POSITIVE_FROM = 7  # IMDB: a rating of 7-10 is positive, 1-4 negative

__all__ = [
    "BASELINES",
    "ENV_VAR",
    "LABELS",
    "ROOT",
    "TASKS",
    "CachedTestTokens",
    "Pool",
    "baseline_cell",
    "commit",
    "create_dataset",
    "draw_indices",
    "draw_tables",
    "folder_bytes",
    "hatt_cell",
    "hatt_command",
    "mean_std",
    "plot",
    "run_hatt",
    "shown",
    "task_labels",
    "write_table",
]


# === Draws ===


@dataclasses.dataclass
class Pool:
    """One IMDB split for a task: raw texts, labels as class names, review ids."""

    texts: list
    labels: np.ndarray
    ids: list

    def subset(self, indices):
        return Pool(
            [self.texts[i] for i in indices], self.labels[indices], [self.ids[i] for i in indices]
        )


def task_labels(ratings, task):
    """IMDB star ratings (names ``"1"``..``"10"``) → the task's class names."""
    ratings = np.asarray(ratings).astype(str)
    if task == "rating":
        return ratings
    if task == "polarity":
        positive = ratings.astype(int) >= POSITIVE_FROM
        return np.where(positive, "positive", "negative")
    raise ValueError(f"Expected task to be one of {TASKS}. Received: task={task!r}")


def create_dataset(data, task):
    """IMDB's train and test splits for ``task`` as :class:`Pool` s (read once)."""
    raw = read_imdb(data, labels="rating", progress=False)
    return {
        name: Pool(list(split.texts), task_labels(split.labels, task), list(split.ids))
        for name, split in (("train", raw.train), ("test", raw.test))
    }


def draw_indices(labels, size, draw, seed):
    """Draw ``draw`` of ``size`` documents: stratified by ``labels``, seeded by ``(seed, draw)``.

    Each class gets its share of ``size`` (largest remainders, at least one
    document when it has any) and takes the first documents of its own
    permutation, so a draw's smaller sizes are (nearly) subsets of its larger.

    Returns:
        the chosen indices, sorted.
    """
    labels = np.asarray(labels)
    if not 0 < size <= len(labels):
        raise ValueError(
            f"Expected size in [1, {len(labels)}] (the training documents). Received: size={size}"
        )
    classes, counts = np.unique(labels, return_counts=True)
    exact = size * counts / counts.sum()
    shares = np.floor(exact).astype(int)
    for k in np.argsort(-(exact - shares), kind="stable")[: size - shares.sum()]:
        shares[k] += 1
    rng = np.random.default_rng([seed, draw])
    chosen = [
        rng.permutation(np.flatnonzero(labels == name))[:share]
        for name, share in zip(classes, shares, strict=True)
    ]
    return np.sort(np.concatenate(chosen))


def write_table(pool, path):
    """``pool`` → a ``.jsonl`` table (``text``, ``label``), written atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    with partial.open("w", encoding="utf-8") as f:
        for text, label in zip(pool.texts, pool.labels, strict=True):
            f.write(json.dumps({"text": text, "label": str(label)}, ensure_ascii=False) + "\n")
    os.replace(partial, path)
    return path


def draw_tables(pools, task, size, draw, seed, runs):
    """The draw's training table and the test table (written once, kept under ``runs``)."""
    folder = Path(runs) / task / "data"
    test = folder / "test.jsonl"
    if not test.exists():
        write_table(pools["test"], test)
    train = folder / f"n{size:05d}-d{draw}.jsonl"
    if not train.exists():
        write_table(
            pools["train"].subset(draw_indices(pools["train"].labels, size, draw, seed)), train
        )
    return {"train": train, "test": test}


# === Cells ===


def folder_bytes(path):
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def commit():
    """The repository's commit (``+dirty`` with uncommitted changes to tracked files)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return None
    return f"{head}+dirty" if dirty else head


def hatt_command(family, train_table, test_table, run_dir, export_dir, restart=False, extra=()):
    """`hatt train FAMILY` as a user types it: the preset's defaults, only the places given
    (and ``extra`` flags, e.g. ``--unlabeled PATH``)."""
    command = ["hatt", "train", family, "--data", str(train_table), "--test", str(test_table)]
    command += ["--run-dir", str(run_dir), "--export-dir", str(export_dir), *extra]
    return command + (["--restart"] if restart else [])


def run_hatt(command, log_path):
    """Run a ``hatt ...`` command line (``python -m hatt.cli``) with its output in ``log_path``."""
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"\n$ {shlex.join(command)}\n")
        log.flush()
        done = subprocess.run(
            [sys.executable, "-m", "hatt.cli", *command[1:]], stdout=log, stderr=subprocess.STDOUT
        )
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed ({done.returncode}); see {log_path}")


def hatt_cell(family, tables, place, force=False, *, name=None, extra=()):
    """Train ``family``'s default on one draw (with ``extra`` flags; its run directory
    ``place / name``, default the family); its test figures, bytes and seconds."""
    name = name or family
    run_dir, export_dir = place / name, place / f"{name}-export"
    command = hatt_command(
        family, tables["train"], tables["test"], run_dir, export_dir, force, extra
    )
    if force or not (run_dir / "metrics.json").exists():
        for old in export_dir.rglob("*") if export_dir.exists() else []:
            if old.is_file():
                old.unlink()
        start = time.perf_counter()
        run_hatt(command, place / f"{name}.log")
        wall = time.perf_counter() - start
    else:  # trained, but the cell was not written: read what is there
        wall = None
    metrics = json.loads((run_dir / "metrics.json").read_text())
    keras_file = export_dir / family / "model.keras"
    versions = sorted((p for p in (export_dir / family).iterdir() if p.is_dir()), key=_version)
    return {
        "test_accuracy": metrics["test"]["accuracy"],
        "test_macro_f1": metrics["test"]["macro_f1"],
        "test_size": metrics["test_size"],
        "train_size": metrics["train_size"],
        "validation_size": metrics["validation_size"],
        "saved_model_bytes": folder_bytes(versions[-1]),
        "keras_bytes": keras_file.stat().st_size,
        "fit_seconds": metrics["train_seconds"],
        "wall_seconds": None if wall is None else round(wall, 2),
        "epochs": metrics.get("epochs"),
        "parameters": metrics.get("parameters"),
        "ngram_channel": _channel_summary(metrics.get("ngram_channel")),
        "command": shlex.join(shown(part) for part in command),
    }


def shown(part):
    """A command's path as the repository sees it (relative to its root when inside)."""
    path = Path(part)
    if path.is_absolute() and path.resolve().is_relative_to(ROOT):
        return str(path.resolve().relative_to(ROOT))
    return part


def _version(path):
    return int(path.name) if path.name.isdigit() else -1


def _channel_summary(channel):
    """The mix's scalar figures (its weights, the channel alone) from ``ngram_channel``."""
    if not channel:
        return None
    summary = {k: v for k, v in channel.items() if isinstance(v, int | float | str | bool)}
    if isinstance(channel.get("mix"), dict):  # the deep part's and the channel's weights
        summary["mix"] = channel["mix"]
    return summary


class CachedTestTokens:
    """Each test table tokenized once per process (the baseline cells that share it reuse it).

    A table is known by its texts, not its ids: the ids of a table are its line numbers
    (``test/line1``, ...), the same in every table of a size. Keyed on them, every
    draw's tuning table in one ``mix_tuning.py --baselines`` call read the first draw's
    tuning reviews, on which the later draws' baselines had trained in part.
    """

    def __init__(self):
        self.cache = {}

    def __call__(self, corpus):
        key = tuple(corpus.test.texts)  # the texts themselves: no two tables share a key
        if key not in self.cache:
            self.cache[key] = _tokenized(corpus.test)
        return self.cache[key]


def _tokenized(split):
    return hatt.data.Split(baselines.tokenize(split.texts, progress=False), split.labels, split.ids)


def baseline_cell(name, tables, test_tokens, seed, tuning="cv5"):
    """Baseline ``name`` on one draw, its hyper-parameters chosen as ``tuning`` says.

    ``"cv5"`` (the default, as a user with the draw's table tunes it):
    stratified 5-fold cross-validation on every document of the draw
    (:func:`baselines.cross_validate_hyperparameters`), then a refit on all of
    them. ``"validation"`` (the figures recorded before): accuracy on the
    validation slice ``hatt.data.load_corpus`` carves from the draw, then a
    refit on the rest of the draw.
    """
    if tuning not in baselines.TUNINGS:
        raise ValueError(
            f"Expected tuning to be one of {baselines.TUNINGS}. Received: tuning={tuning!r}"
        )
    start = time.perf_counter()
    corpus = hatt.data.load_corpus(tables["train"], test=str(tables["test"]), progress=False)
    num_classes = len(corpus.class_names)
    if tuning == "validation":
        train, validation = _tokenized(corpus.train), _tokenized(corpus.validation)
    else:
        train, validation = _tokenized(_every_document(tables["train"], corpus.class_names)), None
    fit_start = time.perf_counter()
    if validation is None:
        best, selection = baselines.cross_validate_hyperparameters(
            name, train, folds=baselines.FOLDS, seed=seed, num_classes=num_classes
        )
    else:
        best, selection = baselines.select_hyperparameters(
            name, train, validation, seed=seed, progress=False, num_classes=num_classes
        )
    model, _ = baselines.train(name, train, best, seed=seed, num_classes=num_classes)
    fit_seconds = time.perf_counter() - fit_start
    test = baselines.evaluate(model, test_tokens(corpus), corpus.class_names)["metrics"]
    return {
        "test_accuracy": test["accuracy"],
        "test_macro_f1": test["macro_f1"],
        "test_size": len(corpus.test),
        "train_size": len(train),
        "validation_size": 0 if validation is None else len(validation),
        "model_bytes": len(pickle.dumps(model)),
        "fit_seconds": round(fit_seconds, 2),
        "wall_seconds": round(time.perf_counter() - start, 2),
        "tuning": tuning,
        "hyperparameters": best,
        "selection": selection,
        "parameters": baselines.count_parameters(model),
    }


def _every_document(table, class_names):
    """Every document of a draw's table in file order, labels as indices into ``class_names``."""
    split, _ = hatt.data.read_documents(table, progress=False)
    index = {name: i for i, name in enumerate(class_names)}
    labels = np.array([index[str(label)] for label in split.labels], dtype=np.int64)
    return hatt.data.Split(list(split.texts), labels, list(split.ids))


# === Tables and figures ===


def mean_std(values):
    """``(mean, sample std)`` of ``values`` (std 0 for one value)."""
    values = np.asarray(values, dtype=np.float64)
    std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return float(np.mean(values)), std


def plot(summary, figure):
    """Accuracy against training documents (log x), a line per method, std as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(summary)
    names_of = {
        task: sorted({m for rows in summary[task].values() for m in rows}) for task in tasks
    }
    beside = max(len(names) for names in names_of.values()) > 6  # the legend beside the axes
    width = (6.4 + 3.6 * beside) * len(tasks)
    fig, axes = plt.subplots(1, len(tasks), figsize=(width, 4.4), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        names = names_of[task]
        for method in names:
            points = [
                (size, rows[method]["test_accuracy"])
                for size, rows in summary[task].items()
                if method in rows
            ]
            x = [p[0] for p in points]
            y = [100 * p[1][0] for p in points]
            err = [100 * p[1][1] for p in points]
            style = "--" if method in BASELINES else "-"
            ax.errorbar(
                x, y, yerr=err, fmt=style + "o", capsize=3, label=LABELS.get(method, method)
            )
        ax.set_xscale("log")
        sizes = sorted(summary[task])
        ax.set_xticks(sizes, [str(s) for s in sizes])
        ax.minorticks_off()
        ax.set_xlabel("training documents (log scale)")
        ax.set_ylabel("test accuracy % (25,000 reviews)")
        ax.set_title(f"IMDB {task}: mean ± std over draws")
        ax.grid(alpha=0.3)
        if beside:  # inside, so many entries would cover the curves
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1))
        else:
            ax.legend(fontsize=8)
    fig.tight_layout()
    Path(figure).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure, dpi=110, bbox_inches="tight")
    plt.close(fig)
