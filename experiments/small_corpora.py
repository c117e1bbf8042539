"""Small corpora: every family's `hatt train` default beside NB-LR and TF-IDF + LR.

Issue 30, item 1. IMDB subsamples of the training split (stratified, seeded,
several draws per size) are written as a user would hold them, a ``.jsonl``
table with a ``text`` and a ``label`` column, and the FULL test split (25,000
reviews) as a second table. Each family then runs exactly as a user types it::

    hatt train FAMILY --data draw.jsonl --test test.jsonl --run-dir R --export-dir E

(its preset, hatt's own validation carving; only where the files go is
given), so that rerunning this script after a change to the presets or the
mix measures the new defaults with no edit here. The two linear baselines of
``experiments/baselines.py`` run on the same draws: their ``C`` (and NB-LR's
``alpha``) is chosen on the validation slice that ``hatt.data.load_corpus``
carves from the draw's own training documents (the slice `hatt train` uses),
then refit on the rest of the draw, as ``baselines.py`` does on the full split.

Tasks (``--task``): ``polarity`` (negative / positive) and ``rating`` (the 8
star ratings 1-4 and 7-10 from the file names); a draw is stratified by the
task's labels.

Draws: draw ``d`` of size ``n`` takes, per class, the first ``n``-share
documents of a permutation seeded by ``(seed, d)``; a draw is reproducible
and the smaller sizes of one draw are (nearly) subsets of the larger ones.

Per cell (task × size × draw × method) one JSON file
``OUT/TASK/nSIZE-dDRAW-METHOD.json``: test accuracy and macro-F1, the model's
bytes (hatt: the exported SavedModel folder and the ``.keras`` file;
baselines: the pickled scikit-learn pipeline), ``fit_seconds`` (hatt: Keras
``fit``, its ``train_seconds``; baselines: choosing the hyper-parameters and
the refit) and ``wall_seconds`` (hatt: the whole ``hatt train`` process,
reading, the channel, test evaluation and export included; baselines: the
cell from reading the tables to the test figures). A finished cell is skipped
on the next run (``--force`` redoes it); an interrupted ``hatt train`` resumes
from its run directory. ``OUT/small_corpora.md`` (mean ± sample std over
draws) and the learning curve are regenerated from the JSON files after every
cell, or alone with ``--table-only``.

Run:  python experiments/small_corpora.py [--data PATH] [--sizes 500 1000 2000 5000]
      [--draws 2] [--families cnn rnn transformer han] [--task polarity|rating]
      [--out DIR] [--force] [--table-only]
"""

import argparse
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
from hatt.data.imdb import ENV_VAR, read_imdb
from hatt.models import FAMILIES

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baselines  # noqa: E402  (experiments/baselines.py: the linear baselines, reused)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "small_corpora"
RUNS = ROOT / "runs" / "small_corpora"
FIGURE = ROOT / "docs" / "small_corpora.png"
TABLE_NAME = "small_corpora.md"
TASKS = ("polarity", "rating")
BASELINES = ("nb_lr", "tfidf_lr")
LABELS = {"nb_lr": "NB-LR", "tfidf_lr": "TF-IDF + LR"}
POSITIVE_FROM = 7  # IMDB: a rating of 7-10 is positive, 1-4 negative


# === Arguments ===


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz (else $HATT_IMDB)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 5000])
    parser.add_argument("--draws", type=int, default=2, help="draws per size")
    parser.add_argument("--families", nargs="*", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument(
        "--baselines", nargs="*", choices=BASELINES, default=list(BASELINES), help="linear ones"
    )
    parser.add_argument("--task", choices=TASKS, default="polarity")
    parser.add_argument("--seed", type=int, default=1337, help="seed of the draws")
    parser.add_argument("--out", default=str(RESULTS), help="folder of the JSON cells + table")
    parser.add_argument("--runs", default=str(RUNS), help="tables, run dirs, exports (ignored)")
    parser.add_argument(
        "--figure", default=None, help=f"the learning curve (default: {FIGURE} or OUT/...png)"
    )
    parser.add_argument("--force", action="store_true", help="redo finished cells")
    parser.add_argument("--table-only", action="store_true", help="only regenerate table + PNG")
    args = parser.parse_args(argv)
    for size in args.sizes:
        if size < 2:
            raise ValueError(f"Expected every --sizes value to be >= 2. Received: --sizes {size}")
    if args.draws < 1:
        raise ValueError(f"Expected --draws to be >= 1. Received: --draws {args.draws}")
    if args.figure is None:
        same = Path(args.out).resolve() == RESULTS.resolve()
        args.figure = str(FIGURE if same else Path(args.out) / "small_corpora.png")
    return args


# === Dataset ===


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


# === Cells ===


def cell_path(out, task, size, draw, method):
    return Path(out) / task / f"n{size:05d}-d{draw}-{method}.json"


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
        "command": shlex.join(_shown(part) for part in command),
    }


def _shown(part):
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


def baseline_cell(name, tables, test_tokens, seed):
    """Baseline ``name`` on one draw: ``C`` chosen on hatt's validation slice of the draw."""
    start = time.perf_counter()
    corpus = hatt.data.load_corpus(tables["train"], test=str(tables["test"]), progress=False)
    train, validation = _tokenized(corpus.train), _tokenized(corpus.validation)
    num_classes = len(corpus.class_names)
    fit_start = time.perf_counter()
    best, _ = baselines.select_hyperparameters(
        name, train, validation, seed=seed, progress=False, num_classes=num_classes
    )
    model, _ = baselines.train(name, train, best, seed=seed, num_classes=num_classes)
    fit_seconds = time.perf_counter() - fit_start
    test = baselines.evaluate(model, test_tokens(corpus), corpus.class_names)["metrics"]
    return {
        "test_accuracy": test["accuracy"],
        "test_macro_f1": test["macro_f1"],
        "test_size": len(corpus.test),
        "train_size": len(corpus.train),
        "validation_size": len(corpus.validation),
        "model_bytes": len(pickle.dumps(model)),
        "fit_seconds": round(fit_seconds, 2),
        "wall_seconds": round(time.perf_counter() - start, 2),
        "hyperparameters": best,
        "parameters": baselines.count_parameters(model),
    }


# === The run ===


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


def methods(args):
    return [*args.baselines, *args.families]


def run_cell(args, pools, test_tokens, size, draw, method):
    """One cell: train and evaluate ``method`` on the draw, write its JSON."""
    tables = draw_tables(pools, args.task, size, draw, args.seed, args.runs)
    place = Path(args.runs) / args.task / f"n{size:05d}-d{draw}"
    place.mkdir(parents=True, exist_ok=True)
    if method in BASELINES:
        figures = baseline_cell(method, tables, test_tokens, args.seed)
    else:
        figures = hatt_cell(method, tables, place, force=args.force)
    cell = {
        "task": args.task,
        "size": size,
        "draw": draw,
        "seed": args.seed,
        "method": method,
        "kind": "baseline" if method in BASELINES else "hatt",
        **figures,
        "commit": commit(),
        "hatt_version": hatt.__version__,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = cell_path(args.out, args.task, size, draw, method)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cell, indent=2) + "\n")
    return cell


def run_all(args, run=run_cell):
    """Every missing cell, small sizes first; the table and curve after each one."""
    todo = [
        (size, draw, method)
        for size in sorted(args.sizes)
        for draw in range(args.draws)
        for method in methods(args)
        if args.force or not cell_path(args.out, args.task, size, draw, method).exists()
    ]
    total = len(args.sizes) * args.draws * len(methods(args))
    print(
        f"[small_corpora] {args.task}: {total - len(todo)} of {total} cells done, {len(todo)} to run"
    )
    pools, test_tokens = None, CachedTestTokens()
    for i, (size, draw, method) in enumerate(todo, 1):
        if pools is None and run is run_cell:
            pools = create_dataset(args.data, args.task)
        start = time.perf_counter()
        print(
            f"[small_corpora] ({i}/{len(todo)}) {args.task} n={size} draw {draw} {method} ...",
            flush=True,
        )
        cell = run(args, pools, test_tokens, size, draw, method)
        print(
            f"[small_corpora]   accuracy {cell['test_accuracy']:.4f}, macro-F1 "
            f"{cell['test_macro_f1']:.4f} ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
        write_reports(args.out, args.figure)
    return len(todo)


# === Table and curve ===


def read_cells(out):
    """Every cell JSON under ``out`` (``OUT/TASK/*.json``)."""
    return [json.loads(p.read_text()) for p in sorted(Path(out).glob("*/n*-d*-*.json"))]


def mean_std(values):
    """``(mean, sample std)`` of ``values`` (std 0 for one value)."""
    values = np.asarray(values, dtype=np.float64)
    std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return float(np.mean(values)), std


def model_bytes(cell):
    """A cell's model size: hatt's SavedModel folder, a baseline's pickle."""
    return cell.get("saved_model_bytes", cell.get("model_bytes"))


def deep_weight(cell):
    """The weight the mix gave a hatt model's deep part.

    ``None`` when no mix was recorded, or when it is a matrix (more than two
    classes mix each class's logit from every class's: no one sign to show).
    """
    mix = (cell.get("ngram_channel") or {}).get("mix") or {}
    weight = mix.get("deep")
    return weight if isinstance(weight, int | float) else None


def aggregate(cells):
    """``{task: {size: {method: summary}}}``: mean ± std over draws of each figure."""
    groups = {}
    for cell in cells:
        groups.setdefault((cell["task"], cell["size"], cell["method"]), []).append(cell)
    summary = {}
    for (task, size, method), group in sorted(groups.items()):
        group = sorted(group, key=lambda c: c["draw"])
        row = {"draws": [c["draw"] for c in group], "kind": group[0]["kind"]}
        for key in ("test_accuracy", "test_macro_f1", "fit_seconds", "wall_seconds"):
            values = [c[key] for c in group if c.get(key) is not None]
            row[key] = mean_std(values) if values else None
        row["model_bytes"] = mean_std([model_bytes(c) for c in group])
        if group[0]["kind"] == "hatt":
            row["keras_bytes"] = mean_std([c["keras_bytes"] for c in group])
            weights = [w for w in map(deep_weight, group) if w is not None]
            row["deep_weight"] = mean_std(weights) if weights else None
            row["negative_deep"] = sum(w < 0 for w in weights)
        row["by_draw"] = {c["draw"]: c["test_accuracy"] for c in group}
        summary.setdefault(task, {}).setdefault(size, {})[method] = row
    return summary


def goal(methods_at_size):
    """Item 2's goal at one size: families against the better linear baseline per draw.

    The better linear baseline of a draw is the more accurate of NB-LR and
    TF-IDF + LR on that draw; its mean is over the draws every compared
    method has. Returns ``None`` when a baseline or every family is missing.
    """
    linear = [methods_at_size.get(name) for name in BASELINES]
    families = {m: r for m, r in methods_at_size.items() if r["kind"] == "hatt"}
    if any(row is None for row in linear) or not families:
        return None
    result = {"families": {}}
    for family, row in families.items():
        draws = sorted(set(row["by_draw"]).intersection(*(r["by_draw"] for r in linear)))
        if not draws:
            continue
        best_linear = np.mean([max(r["by_draw"][d] for r in linear) for d in draws])
        mean = np.mean([row["by_draw"][d] for d in draws])
        result["families"][family] = {
            "accuracy": float(mean),
            "better_linear": float(best_linear),
            "draws": draws,
            "at_least": bool(mean >= best_linear),
        }
    if not result["families"]:
        return None
    best = max(result["families"], key=lambda f: result["families"][f]["accuracy"])
    result["best_family"] = best
    result["best_beats"] = bool(
        result["families"][best]["accuracy"] > result["families"][best]["better_linear"]
    )
    return result


def _pct(pair, draws):
    """A percentage, ``mean ± std`` over two draws or more, the value alone for one."""
    if pair is None:
        return "–"
    return f"{100 * pair[0]:.2f}" + (f" ± {100 * pair[1]:.2f}" if draws > 1 else "")


def _megabytes(pair):
    return f"{pair[0] / 1e6:.1f}"


def _seconds(pair):
    return "–" if pair is None else f"{pair[0]:.0f}"


def _deep(row):
    """The mix's deep weight, mean ± std, and on how many draws it was negative."""
    if row.get("deep_weight") is None:
        return "–"
    mean, std = row["deep_weight"]
    spread = f" ± {std:.2f}" if len(row["draws"]) > 1 else ""
    return f"{mean:+.2f}{spread} ({row['negative_deep']})"


def format_table(summary):
    """The markdown: per task, one row per size × method, then the goal lines."""
    lines = [
        "<!-- generated by experiments/small_corpora.py --table-only; do not edit -->",
        "",
        "Mean ± sample std over draws; test = IMDB's full test split. Model size: hatt's "
        "exported SavedModel folder (the .keras file in brackets), a baseline's pickled "
        "scikit-learn pipeline. Fit s: hatt's Keras fit (train_seconds), a baseline's "
        "hyper-parameter choice and refit. Wall s: the whole `hatt train` process (reading, "
        "channel, 25,000-review test evaluation, export); a baseline's cell from its tables "
        "to its test figures (the test split's tokenization shared). Deep weight: the "
        "validation mix's weight on the deep part's logit (ngram_channel.json's mix.deep), "
        "in brackets on how many draws it was negative.",
    ]
    for task, sizes in summary.items():
        lines += [
            "",
            f"### Task: {task}",
            "",
            "| train docs | method | draws | accuracy % | macro-F1 % | model MB | fit s | wall s "
            "| deep weight (< 0) |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for size, rows in sizes.items():
            for method, row in sorted(rows.items(), key=lambda kv: (kv[1]["kind"], kv[0])):
                n, size_text = len(row["draws"]), _megabytes(row["model_bytes"])
                if "keras_bytes" in row:
                    size_text += f" ({_megabytes(row['keras_bytes'])})"
                lines.append(
                    f"| {size} | {LABELS.get(method, method)} | {n} | "
                    f"{_pct(row['test_accuracy'], n)} | {_pct(row['test_macro_f1'], n)} | "
                    f"{size_text} | "
                    f"{_seconds(row['fit_seconds'])} | {_seconds(row['wall_seconds'])} | "
                    f"{_deep(row)} |"
                )
        lines += ["", "Goal (issue 30, item 2), against the better linear baseline per draw:", ""]
        for size, rows in sizes.items():
            lines.append(f"- {size}: {format_goal(goal(rows))}")
    return "\n".join(lines) + "\n"


def format_goal(result):
    if result is None:
        return "not measured (a baseline or every family missing)"
    best = result["best_family"]
    row = result["families"][best]
    head = (
        f"best family {best} {100 * row['accuracy']:.2f} % vs {100 * row['better_linear']:.2f} % "
        f"→ {'beats it' if result['best_beats'] else 'does NOT beat it'}"
    )
    each = ", ".join(
        f"{family} {'≥' if r['at_least'] else '<'} ({100 * (r['accuracy'] - r['better_linear']):+.2f})"
        for family, r in sorted(result["families"].items())
    )
    return f"{head}; each default at least as accurate: {each}"


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


def write_reports(out, figure):
    """The markdown table and the learning curve from the JSON cells alone."""
    cells = read_cells(out)
    if not cells:
        raise ValueError(f"Expected cell JSON files under --out. Received: --out {str(out)!r}")
    summary = aggregate(cells)
    (Path(out) / TABLE_NAME).write_text(format_table(summary))
    plot(summary, figure)
    return summary


def main(argv=None):
    args = parse_args(argv)
    if not args.table_only:
        if args.data is None and not os.environ.get(ENV_VAR):
            raise ValueError(f"Expected --data PATH (an aclImdb folder) or ${ENV_VAR} to be set.")
        run_all(args)
    write_reports(args.out, args.figure)
    print(f"[small_corpora] table: {Path(args.out) / TABLE_NAME}, curve: {args.figure}")


if __name__ == "__main__":
    main()
