"""Run every experiment on IMDB and write the results tables.

For each model family, ``hatt train FAMILY`` runs in its own process (the settings
that produced the reported figure are the family's preset,
``hatt/presets/FAMILY.json``); the scikit-learn baselines run through
``experiments/baselines.py``.
Each run's metrics are copied to ``experiments/results/<name>.json``; an
ensemble row averages the families' test probabilities (all four, no selection,
so nothing is tuned on the test split), and a second one adds the NB-LR
baseline as a fifth member (also fixed in advance), and a stacked one fits a
logistic regression over the same members' logits on the validation split (a family
fit with ``ngram.fit="separate"`` brings its deep part and its n-gram channel as two
logits); then ``experiments/RESULTS.md`` is generated (with a table of each
family's parts) and the table in README.md is replaced by it. Each trained family is
exported to ``saved_models/FAMILY/`` (SavedModel version + ``model.keras``).

``--labels rating`` runs the IMDB ratings task instead (8 classes, the star
ratings 1-4 and 7-10 from the file names): ``hatt train FAMILY --labels
rating`` for each family, ``python -m experiments.baselines --labels rating`` for the
baselines. Its files live one folder down, ``experiments/results/rating/``
(same names), ``runs/experiments/rating/`` and ``saved_models/rating/FAMILY/``,
and ``RESULTS.md`` gets a second table (accuracy, macro-F1, MAE in stars,
minutes) from them, with the mean ensembles (no stacked one). The binary task's
files and table are as before. Every run writes the figures of
:func:`hatt.training.classification_metrics`; the tables read the flat
keys ``test_accuracy``, ``test_macro_f1``, ``test_mae``, ``test_mae_median``,
``validation_accuracy``, ``epochs``, ``train_seconds`` (the table's minutes add
``word_vectors.seconds``, the word2vec training, where there is one), ``parameters``,
``seed`` and ``command`` (the figures also under ``"test"`` when a flat key
is missing).

``--seed S`` repeats the whole run at another seed (the validation split, the
initialisation and the baselines' solvers): its files go one folder down,
``experiments/results/seeds/S/`` and ``runs/experiments/seeds/S/``, nothing is
exported, and the headline rows (seed 1337) are left as they are. Once other
seeds' files exist, RESULTS.md and README.md get a table of every row's mean ±
standard deviation over the seeds (and ``results/seeds_summary.json``), so the
ensembles too are repeated on each seed's own validation split.

    python -m experiments.run_all [--labels binary|rating] [--seed S] [--data PATH]
        [--only cnn rnn ...] [--table-only]
"""

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
RESULTS = EXPERIMENTS / "results"
FAMILIES = ("cnn", "rnn", "transformer", "han")
BASELINES = ("tfidf_lr", "nb_lr")
TASKS = ("binary", "rating")  # as experiments/baselines.py and `hatt train --labels`
HEADLINE_SEED = 1337  # the seed of the headline rows; other seeds' files go to seeds/SEED/
README_START = "<!-- results:start -->"
README_END = "<!-- results:end -->"
PARTS_START = "<!-- parts:start -->"  # the README's copy of the parts table
PARTS_END = "<!-- parts:end -->"
SEEDS_START = "<!-- seeds:start -->"  # the README's copy of the seeds table
SEEDS_END = "<!-- seeds:end -->"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz")
    parser.add_argument(
        "--labels",
        choices=TASKS,
        default="binary",
        help="the task to run: positive/negative (default) or the 8 star ratings",
    )
    parser.add_argument("--only", nargs="+", default=None, help="names to run (default: all)")
    parser.add_argument(
        "--seed",
        type=int,
        default=HEADLINE_SEED,
        help=f"the seed of every run (default {HEADLINE_SEED}, the headline rows; another "
        "seed's files go to results/seeds/SEED/ and are not exported)",
    )
    parser.add_argument(
        "--set",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a setting passed to every `hatt train` (recorded in the results' command)",
    )
    parser.add_argument("--runs", default=str(ROOT / "runs" / "experiments"))
    parser.add_argument("--table-only", action="store_true", help="only regenerate the table")
    parser.add_argument(
        "--export-dir",
        default=None,
        help="each family is exported to EXPORT_DIR[/TASK]/FAMILY ('' to skip; default "
        "saved_models for the headline seed, none for the others)",
    )
    args = parser.parse_args(argv)
    if any(pair.split("=", 1)[0].strip() == "seed" for pair in args.set):
        parser.error("choose the seed with --seed S, not --set seed=S")
    if args.export_dir is None:
        args.export_dir = str(ROOT / "saved_models") if args.seed == HEADLINE_SEED else ""
    return args


def task_folder(root, task, seed=HEADLINE_SEED):
    """Where a task's files go: ``root`` for the binary task, ``root/TASK`` for the others,
    both under ``seeds/SEED/`` for a seed other than the headline one."""
    root = Path(root) if seed == HEADLINE_SEED else Path(root) / "seeds" / str(seed)
    return root if task == "binary" else root / task


def seed_arguments(seed):
    """The ``hatt train`` arguments that choose ``seed`` (none for the headline seed).

    ``--set seed=S`` rather than ``hatt train --seed S``, which also turns on
    deterministic ops: the headline rows ran without them.
    """
    return [] if seed == HEADLINE_SEED else ["--set", f"seed={seed}"]


def run(command):
    print("$", " ".join(shlex.quote(c) for c in command), flush=True)
    subprocess.run(command, check=True, cwd=ROOT)


def task_arguments(task):
    """The command-line arguments that choose ``task`` (none for the binary one)."""
    return [] if task == "binary" else ["--labels", task]


def train_family(name, args):
    run_dir = task_folder(args.runs, args.labels, args.seed) / name
    # the family's preset (hatt/presets/FAMILY.json)
    settings = [part for pair in args.set for part in ("--set", pair)]
    settings += seed_arguments(args.seed)
    command = ["hatt", "train", name, *task_arguments(args.labels), *settings]
    if args.data:
        command += ["--data", args.data]
    export_dir = str(task_folder(args.export_dir, args.labels)) if args.export_dir else ""
    # --restart: a finished run directory from an earlier run_all is trained again.
    command += ["--run-dir", str(run_dir), "--export-dir", export_dir, "--restart"]
    run([sys.executable, "-m", "hatt.cli", *command[1:]])
    # The command that reproduces the row (the data path is the user's own).
    command = shlex.join(["hatt", "train", name, *task_arguments(args.labels), *settings])
    record_family(name, run_dir, command, task_folder(RESULTS, args.labels, args.seed))


def record_family(name, run_dir, command, results):
    """Copy a finished run's ``metrics.json`` to ``results/NAME.json`` with its ``command``."""
    metrics = json.loads((Path(run_dir) / "metrics.json").read_text())
    metrics["command"] = command
    results = Path(results)
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(metrics, indent=2) + "\n")


def run_baselines(names, args):
    for name in names:
        command = [sys.executable, "-m", "experiments.baselines", "--only", name]
        command += task_arguments(args.labels)
        if args.seed != HEADLINE_SEED:
            command += ["--seed", str(args.seed)]
            command += ["--results", str(task_folder(RESULTS, args.labels, args.seed))]
            command += ["--runs", str(task_folder(args.runs, args.labels, args.seed) / "baselines")]
        if args.data:
            command += ["--data", args.data]
        run(command)


def _split_arrays(members, split):
    """Each member's saved arrays for ``split`` and the labels, aligned on review ids.

    Returns ``None`` when a member's file is missing; raises when two members
    hold the reviews in different orders.
    """
    arrays, ids = [], None
    for metrics in members:
        path = metrics.get(f"{split}_probabilities")
        if path and not Path(path).is_absolute():
            path = ROOT / path  # baselines record paths relative to the repository
        if not path or not Path(path).exists():
            return None
        data = dict(np.load(path))
        if ids is None:
            ids = data["ids"]
        elif not np.array_equal(data["ids"], ids):
            raise ValueError(f"{path}: reviews are not in the same order")
        arrays.append(data)
    return arrays, arrays[0]["labels"]


def training_seconds(metrics):
    """A row's training time: the fit, plus training its word vectors when it did (word2vec)."""
    if metrics.get("train_seconds") is None:
        return None
    return metrics["train_seconds"] + (metrics.get("word_vectors") or {}).get("seconds", 0.0)


def _row(kind, members, command, **figures):
    """A results row for an ensemble of ``members``."""
    return {
        "model": f"{kind} (" + " + ".join(m["model"] for m in members) + ")",
        **figures,
        "epochs": None,
        "train_seconds": sum(training_seconds(m) for m in members),
        "parameters": sum(m["parameters"] for m in members),
        "seed": members[0]["seed"],
        "command": f"python -m experiments.run_all ({command})",
    }


def ensemble(members, splits=("validation", "test")):
    """Mean of the members' probabilities, aligned on review ids; None if any is missing.

    Binary members save P(class 1) ``[N]``, members of more classes ``[N, C]``;
    the mean's figures are :func:`hatt.training.classification_metrics`
    (the most probable class; for the ratings the MAE in stars too). ``splits``:
    the splits scored (``("test",)`` for members whose validation splits differ).
    """
    from hatt.training import classification_metrics, flat_metrics

    figures = {}
    for split in splits:
        loaded = _split_arrays(members, split)
        if loaded is None:
            return None
        arrays, labels = loaded
        mean = np.mean([a["probabilities"] for a in arrays], axis=0)
        metrics = classification_metrics(labels, mean, class_names(members[0], mean))
        figures.update(flat_metrics(metrics, split))
        figures[split] = metrics
    return _row("ensemble", members, "mean of the members' probabilities", **figures)


def class_names(metrics, probabilities):
    """The class names of a results file (binary files written before they were saved: neg, pos)."""
    names = metrics.get("class_names") or (
        (metrics.get("test") or {}).get("confusion_matrix") or {}
    ).get("classes")
    if names:
        return names
    if np.ndim(probabilities) == 1:
        return ("neg", "pos")
    raise ValueError(f"{metrics['model']}: its results file names no classes (class_names)")


def _logit(probabilities):
    p = np.clip(np.asarray(probabilities, np.float64), 1e-7, 1 - 1e-7)
    return np.log(p) - np.log1p(-p)


def _features(members, split):
    """Per member: its deep and channel logits when saved (a separate fit), else its logit."""
    loaded = _split_arrays(members, split)
    if loaded is None:
        return None
    arrays, labels = loaded
    columns, names = [], []
    for metrics, data in zip(members, arrays, strict=True):
        if "deep_logits" in data:
            columns += [data["deep_logits"], data["channel_logits"]]
            names += [f"{metrics['model']}.deep", f"{metrics['model']}.channel"]
        else:
            columns.append(_logit(data["probabilities"]))
            names.append(metrics["model"])
    return np.stack(columns, axis=1).astype(np.float64), labels, names


def stacked_ensemble(members):
    """Logistic regression over the members' logits, fit on the validation split only.

    A family trained with ``ngram_fit="separate"`` brings two logits, its deep
    part and its n-gram channel, so the weights say what each part adds. The
    validation accuracy reported is 5-fold cross-validated (each fold scored by
    a regression fit on the other four); the test split is scored once by the
    regression fit on all of validation.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    validation, test = _features(members, "validation"), _features(members, "test")
    if validation is None or test is None:
        return None
    (x_val, y_val, names), (x_test, y_test, _) = validation, test
    if np.bincount(y_val, minlength=2).min() < 5:
        return None  # too few validation reviews of a class to fit and cross-validate
    regression = LogisticRegression(C=1.0, max_iter=1000)
    folds = cross_val_predict(regression, x_val, y_val, cv=5)
    regression.fit(x_val, y_val)
    row = _row(
        "stacked ensemble",
        members,
        "logistic regression over the members' logits, fit on validation; "
        "validation accuracy 5-fold cross-validated",
        test_accuracy=float(np.mean(regression.predict(x_test) == y_test)),
        validation_accuracy=float(np.mean(folds == y_val)),
    )
    row["weights"] = dict(zip(names, (float(w) for w in regression.coef_[0]), strict=True))
    row["bias"] = float(regression.intercept_[0])
    return row


# Per task: name of the results file → (how it combines, the members); fixed in
# advance, never chosen on test. The stacked ensemble is binary only.
ENSEMBLES = {
    "binary": {
        "ensemble": (ensemble, FAMILIES),
        "ensemble_with_nb_lr": (ensemble, (*FAMILIES, "nb_lr")),
        "ensemble_stacked": (stacked_ensemble, (*FAMILIES, "nb_lr")),
    },
    "rating": {
        "ensemble": (ensemble, FAMILIES),
        "ensemble_with_nb_lr": (ensemble, (*FAMILIES, "nb_lr")),
    },
}


def collect(task="binary", seed=HEADLINE_SEED):
    """The rows of ``task``'s table at ``seed``: its results files, then its ensembles
    (rewritten from that seed's members)."""
    results = task_folder(RESULTS, task, seed)
    rows = []
    for name in (*(f"baseline_{b}" for b in BASELINES), *FAMILIES):
        path = results / f"{name}.json"
        if path.exists():
            rows.append(json.loads(path.read_text()))
    by_model = {r["model"]: r for r in rows}
    for name, (combine, members) in ENSEMBLES[task].items():
        if all(m in by_model for m in members):
            combined = combine([by_model[m] for m in members])
            if combined is not None:
                (results / f"{name}.json").write_text(json.dumps(combined, indent=2) + "\n")
        if (results / f"{name}.json").exists():
            rows.append(json.loads((results / f"{name}.json").read_text()))
    return rows


def table(rows):
    lines = [
        "| model | test accuracy | validation accuracy | epochs | training minutes "
        "| parameters | command |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        epochs = "–" if r.get("epochs") is None else str(r["epochs"])
        lines.append(
            f"| {r['model']} | {100 * r['test_accuracy']:.2f} % "
            f"| {100 * r['validation_accuracy']:.2f} % | {epochs} "
            f"| {training_seconds(r) / 60:.1f} | {r['parameters']:,} | `{r['command']}` |"
        )
    return "\n".join(lines)


def figure(row, split, key):
    """``row``'s flat ``SPLIT_KEY`` figure, else the one under ``row[SPLIT]``; None if neither."""
    value = row.get(f"{split}_{key}")
    return value if value is not None else (row.get(split) or {}).get(key)


def rating_table(rows):
    """The ratings task's table: accuracy, macro-F1 and the MAE in stars (– when missing)."""

    def show(value, pattern="{:.3f}", scale=1):
        return "–" if value is None else pattern.format(value * scale)

    lines = [
        "| model | test accuracy | macro-F1 | MAE (stars) | MAE of the median (stars) "
        "| validation accuracy | epochs | training minutes | parameters | command |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [
            r["model"],
            show(figure(r, "test", "accuracy"), "{:.2f} %", 100),
            show(figure(r, "test", "macro_f1")),
            show(figure(r, "test", "mae")),
            show(figure(r, "test", "mae_median")),
            show(figure(r, "validation", "accuracy"), "{:.2f} %", 100),
            show(r.get("epochs"), "{}"),
            show(training_seconds(r), "{:.1f}", 1 / 60),
            show(r.get("parameters"), "{:,}"),
            f"`{r['command']}`",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


RATING_INTRO = (
    "## IMDB ratings (8 classes)\n\n"
    "The same reviews and splits labelled with their star rating (1-4 and 7-10, from "
    "the file names `<id>_<rating>.txt`): `python -m experiments.run_all --labels rating`. "
    "Accuracy is the share of exact ratings; macro-F1 the mean of the eight classes' F1; "
    "MAE the mean absolute error in stars of the most probable rating (a 7 predicted for "
    "a 4 is 3 stars off), and the MAE of the median that of the median of the predicted "
    "distribution, the prediction with the least expected error. Settings were chosen on "
    "the validation split only (seed {seeds}).\n\n"
)


def _is_separate_fit(row):
    return (row.get("ngram_channel") or {}).get("fit") == "separate"


def _separate_fits(rows):
    return [r for r in rows if _is_separate_fit(r)]


def parts_rows(rows):
    """The parts table itself: each separately fit family's deep part, channel and mix."""
    lines = [
        "| model | deep part alone | n-gram channel alone | the model | a (deep) | b (channel) |",
        "|---|---|---|---|---|---|",
    ]
    for r in _separate_fits(rows):
        c = r["ngram_channel"]

        def pair(key, c=c):
            return f"{100 * c[f'{key}_test_accuracy']:.2f} ({100 * c[f'{key}_validation_accuracy']:.2f})"

        lines.append(
            f"| {r['model']} | {pair('deep')} | {pair('channel')} | {pair('mixed')} "
            f"| {c['mix']['deep']:.3f} | {c['mix']['channel']:.3f} |"
        )
    return "\n".join(lines)


def parts_table(rows):
    """What the deep part and the n-gram channel of each separately fit family score alone."""
    if not _separate_fits(rows):
        return ""
    intro = [
        "## The parts of each model\n",
        'Each family is a deep model plus an n-gram channel (`ngram_fit="separate"`): the '
        "deep part is trained with the channel off, the channel is an NB-weighted logistic "
        "regression on the training split, and `a·deep + b·channel + c` is fit on the "
        "validation split. Accuracy of each part alone and of the model, test (validation):\n",
    ]
    return "\n".join(intro) + "\n" + parts_rows(rows) + "\n"


def _seeds(rows):
    return ", ".join(sorted({str(r.get("seed")) for r in rows}))


# === Several seeds ===


def other_seeds(task="binary"):
    """The seeds besides the headline one with results files for ``task``, in order."""
    folder = RESULTS / "seeds"
    if not folder.is_dir():
        return []
    seeds = (int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit())
    return sorted(s for s in seeds if any(task_folder(RESULTS, task, s).glob("*.json")))


def _spread(values):
    """``{"values": {seed: v}, "mean", "std", "seeds"}`` over the seeds that have a value:
    the mean and the sample standard deviation (ddof 1; 0.0 for one value, None for none)."""
    present = {str(seed): v for seed, v in values.items() if v is not None}
    x = np.asarray(list(present.values()), np.float64)
    mean = float(np.mean(x)) if len(x) else None
    std = float(np.std(x, ddof=1)) if len(x) > 1 else (0.0 if len(x) else None)
    return {"values": present, "mean": mean, "std": std, "seeds": len(present)}


def seeds_summary(rows_by_seed):
    """Each row's figures over seeds: ``rows_by_seed`` maps a seed to its :func:`collect` rows.

    Rows are matched by model name (an ensemble's name lists its members) and kept
    in the order they first appear. Per row: the test and validation accuracy at
    each seed with their mean and sample standard deviation, and for a separately
    fit family (``ngram_channel.fit == "separate"``) the same for its deep part,
    its channel and the mixed model.
    """
    tables = {seed: {r["model"]: r for r in rows} for seed, rows in rows_by_seed.items()}
    models = dict.fromkeys(model for table in tables.values() for model in table)
    summary = []
    for model in models:
        by_seed = {seed: table[model] for seed, table in tables.items() if model in table}
        entry = {"model": model}
        for split in ("test", "validation"):
            entry[f"{split}_accuracy"] = _spread(
                {s: figure(r, split, "accuracy") for s, r in by_seed.items()}
            )
        channels = {s: r["ngram_channel"] for s, r in by_seed.items() if _is_separate_fit(r)}
        if channels:
            entry["parts"] = {
                f"{part}_{split}_accuracy": _spread(
                    {s: c.get(f"{part}_{split}_accuracy") for s, c in channels.items()}
                )
                for part in ("deep", "channel", "mixed")
                for split in ("test", "validation")
            }
        summary.append(entry)
    return summary


def _pm(spread, scale=100):
    """``mean ± std``; a figure from one seed says so rather than show a spread of 0."""
    if spread["mean"] is None:
        return "–"
    if spread["seeds"] < 2:
        return f"{scale * spread['mean']:.2f} (one seed)"
    return f"{scale * spread['mean']:.2f} ± {scale * spread['std']:.2f}"


def seeds_rows(summary, seeds):
    """The seeds table: each row's test accuracy, mean ± std and at each seed."""
    lines = [
        "| model | test accuracy, mean ± std | "
        + " | ".join(f"seed {s}" for s in seeds)
        + " | validation accuracy, mean ± std |",
        "|---|---|" + "---|" * len(seeds) + "---|",
    ]
    for entry in summary:
        test = entry["test_accuracy"]
        cells = [
            f"{100 * test['values'][str(s)]:.2f}" if str(s) in test["values"] else "–"
            for s in seeds
        ]
        lines.append(
            f"| {entry['model']} | {_pm(test)} | "
            + " | ".join(cells)
            + f" | {_pm(entry['validation_accuracy'])} |"
        )
    return "\n".join(lines)


def seeds_parts_rows(summary):
    """Each separately fit family's parts over seeds: test mean ± std (validation mean ± std)."""
    lines = [
        "| model | deep part alone | n-gram channel alone | the model |",
        "|---|---|---|---|",
    ]
    for entry in summary:
        if "parts" not in entry:
            continue
        parts = entry["parts"]
        cells = [
            f"{_pm(parts[f'{p}_test_accuracy'])} ({_pm(parts[f'{p}_validation_accuracy'])})"
            for p in ("deep", "channel", "mixed")
        ]
        lines.append(f"| {entry['model']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def seeds_section(rows, task="binary"):
    """RESULTS.md's section over seeds for ``task`` (and its JSON); ``("", "")`` with one seed.

    ``rows`` are the headline seed's (:func:`collect`); the other seeds' are collected here.

    Returns ``(section, table)``: the markdown section and its first table alone
    (the README's copy). The figures go to ``results[/TASK]/seeds_summary.json``.
    """
    others = other_seeds(task)
    if not others:
        return "", ""
    seeds = [HEADLINE_SEED, *others]
    summary = seeds_summary({HEADLINE_SEED: rows, **{s: collect(task, s) for s in others}})
    path = task_folder(RESULTS, task) / "seeds_summary.json"
    path.write_text(json.dumps({"seeds": seeds, "rows": summary}, indent=2) + "\n")
    rows = seeds_rows(summary, seeds)
    title = "Over seeds" if task == "binary" else f"Over seeds ({task})"
    text = (
        f"## {title}\n\n"
        f"Every row repeated at seeds {', '.join(map(str, seeds))} with "
        "`python -m experiments.run_all --seed S` (the validation split, the "
        "initialisation and the solvers change; each ensemble combines that seed's own "
        "members, the stacked one fit on that seed's validation split): test accuracy, "
        "mean ± sample standard deviation over the "
        "seeds and each seed's figure (– where a seed has no such row).\n\n"
        f"{rows}\n"
    )
    if any("parts" in entry for entry in summary):
        text += (
            "\nThe parts of each model over the same seeds, test mean ± std "
            "(validation mean ± std):\n\n" + seeds_parts_rows(summary) + "\n"
        )
    return text, rows


def write_tables(rows, rating_rows=()):
    """RESULTS.md (the binary table, its parts, the ratings table, the deletion test) and README."""
    body = table(rows)
    text = (
        "# Results on IMDB\n\n"
        "Generated by `python -m experiments.run_all` from `experiments/results/*.json`; "
        "do not edit by hand.\n\n"
        "Test accuracy is measured once, on the full 25,000-review test split; every "
        "setting and the early-stopping epoch were chosen on the 2,500-review validation "
        f"split carved out of `train/` (seed {_seeds(rows)}). Training minutes are "
        "wall time on the machine that ran the row (2 CPU cores unless said otherwise).\n\n"
        f"{body}\n"
    )
    parts = parts_table(rows)
    if parts:
        text += "\n" + parts
    seeds, seeds_table = seeds_section(rows, "binary")
    if seeds:
        text += "\n" + seeds
    if rating_rows:
        text += "\n" + RATING_INTRO.format(seeds=_seeds(rating_rows))
        text += rating_table(rating_rows) + "\n"
        rating_seeds, _ = seeds_section(rating_rows, "rating")
        if rating_seeds:
            text += "\n" + rating_seeds
    faithfulness = RESULTS / "faithfulness.md"  # written by experiments/faithfulness.py
    if faithfulness.exists():
        text += "\n" + faithfulness.read_text()
    (EXPERIMENTS / "RESULTS.md").write_text(text)
    readme = ROOT / "README.md"
    content = replace_block(readme.read_text(), README_START, README_END, body)
    if parts:
        content = replace_block(content, PARTS_START, PARTS_END, parts_rows(rows))
    if seeds_table:
        content = replace_block(content, SEEDS_START, SEEDS_END, seeds_table)
    readme.write_text(content)
    print(text)


def replace_block(content, start, end, body):
    """``content`` with the text between the ``start`` and ``end`` markers replaced by ``body``."""
    if start not in content or end not in content:
        return content
    head, rest = content.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"


def main(argv=None):
    args = parse_args(argv)
    names = args.only or [*BASELINES, *FAMILIES]
    unknown = sorted(set(names) - set(BASELINES) - set(FAMILIES))
    if unknown:
        raise SystemExit(f"unknown names {unknown}; choose from {BASELINES + FAMILIES}")
    if not args.table_only:
        run_baselines([n for n in names if n in BASELINES], args)
        for name in (n for n in names if n in FAMILIES):
            train_family(name, args)
    write_tables(collect("binary"), collect("rating"))


if __name__ == "__main__":
    main()
