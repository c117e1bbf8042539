"""Few labels, with and without IMDB's unlabeled reviews: a table and a learning curve.

Issue 36, item 4. Reads the result files other scripts wrote (it trains nothing):

- ``experiments/results/small_corpora/polarity/``: ``hatt train han`` and the NB-LR /
  TF-IDF + LR baselines on the small-corpora draws (``experiments/small_corpora.py``);
- ``experiments/results/unlabeled/``: the same draws with ``--unlabeled`` (``han_unsup``,
  ``rnn_unsup``, ...; ``experiments/unlabeled.py --size N --methods han_unsup``), and
  ``full-*.json``: the whole training split (25,000 labels) with the unsup split
  (:func:`record_full` copies a finished run's figures there);
- ``experiments/results/han.json``, ``baseline_nb_lr.json``, ``baseline_tfidf_lr.json``:
  the whole training split without unlabeled text.

At 25,000 labels the main table holds seed 1337. Other seeds of a whole-split run
(``full-NAME-seedS.json``, written by ``--record-full`` from a run trained with
``--seed S``; ``experiments/results/seeds/S/`` for the rows ``run_all.py --seed S``
made) go to a second table, "25,000 labels over seeds": each seed's figure, the mean
± std and the deep part's, for every method with more than one seed.

Question written before seeds 2 and 3 of ``han_unsup_lm_frozen`` (the best single
model, 93.08 % at seed 1337) were run: over seeds 1337, 2 and 3, is its mean above
the HAN without unlabeled text over the same seeds (92.96 % ± 0.01), and its deep
part's above that HAN's deep part (91.04 % ± 0.33)? The test split's standard error
is about 0.16 points per model: a difference of the means under about 0.2 points
says nothing either way.
Measured: 93.03 % ± 0.06 (93.08, 92.96, 93.04 %), deep part 91.05 % ± 0.17: +0.07 and
+0.01 points, nothing either way.

Questions written before two more whole-split runs (seed 1337, each starting from the
word vectors and the 2-epoch language model that ``han_unsup_lm_frozen``'s run made,
copied into its run directory: the same texts and settings, so the same checkpoints):
``han_unsup_lm_disc`` (the same, then at discriminative rates / 2.6) and
``han_unsup_lm_vat`` (the same, with virtual adversarial training on batches of the
unlabeled reviews, Miyato et al.'s recipe: 92.61 % → 94.09 % for their LSTM). Is each,
and its deep part alone, above ``han_unsup_lm_frozen`` (93.08 %, deep part 91.16 %)?
Under 0.2 points says nothing either way. Does VAT bring the deep part to the goal's
92.5 %?
Measured: ``han_unsup_lm_disc`` 92.87 % (deep part 91.00 %): -0.21 and -0.16 points, no
help. ``han_unsup_lm_vat`` 92.92 % (deep part 91.48 %): the model -0.16 (nothing either
way), the deep part +0.32, the first change at 25,000 labels to lift it past the 0.2
of noise (the sentence stage, below, was the second), yet 1.0 point short of 92.5 %; its best epoch was the last (8 of 8;
validation 91.72 % for the deep part against 90.88 % without VAT) at 62.2 min of fit,
4.2 times the 14.9 of the same run without it.
And, written before its run, for ``han_unsup_lm_sent_only`` (the same start, then the
HAN's sentence encoder and word attention pretrained for one epoch to predict the
neighbouring sentences' words, all frozen for the first epoch; at 1,000 labels it left
the deep part level): with 25,000 labels to fine-tune it, is it, and its deep part
alone, above ``han_unsup_lm_frozen``? Under 0.2 points says nothing.
Measured: 93.08 % (deep part 91.46 %; the sentence stage 677 s over 72,134 documents,
901,391 sentences, held-out loss 5.70): the model level (+0.00), the deep part +0.30
(validation 91.32 against 90.88 %), as much as VAT's +0.32 at a third of its cost.
And for the stack (``experiments/stack_runs.py``), written before the VAT run ended: with
``han_unsup_lm_vat`` added to today's members (``han_unsup_lm``, ``rnn_unsup``, ``cnn``,
NB-LR: 93.08 %), a member trained on another objective, is the stack above 93.08 %?
Measured: 93.13 % (``stacked_vat.md``): +0.05, nothing either way; the regression gives
the two HANs' deep parts 0.40 each and the BiGRU's -0.06.

Questions written before two more whole-split runs (seed 1337), the issue's two
methods not yet measured at 25,000 labels. ``han_unsup_lm_at``: the same start as
``han_unsup_lm_vat`` (word vectors and language model copied in), with adversarial
training (``adversarial=at``: the embeddings perturbed along the labeled loss's
gradient) instead of VAT. Is it, and its deep part, above ``han_unsup_lm_frozen``
(93.08 %, deep part 91.16 %)? Is its deep part above VAT's 91.48 % (Miyato et al.:
AT 93.79 %, VAT 94.09 %)? ``han_unsup_lm_pseudo``: self-training with
``han_unsup_lm_frozen``'s finished run as the teacher (copied into the run directory's
``teacher/``: the same settings, so it is reused), the threshold chosen on validation
(precision >= 0.95), at most 12,500 of the unsup reviews (``pseudo_label_limit``: half
the labeled count, so the labels stay the majority and the fit about 1.5 times as
long), balanced; the student the same recipe on the training split plus those (its
word vectors and language model trained again: its training texts changed). Is the
student, and its deep part, above its teacher (93.08 %, 91.16 %)? Under 0.2 points
says nothing either way.
Measured: ``han_unsup_lm_at`` 92.88 % (deep part 91.13 %; validation 92.64 %, deep part
91.08 %; best epoch 5 of 7, 39.9 min of fit): the model -0.20, the deep part -0.03,
no help, and its deep part 0.35 below VAT's: as in Miyato et al., VAT is the better of
the two, here the only one that moves the deep part.
``han_unsup_lm_pseudo`` 93.41 % (deep part 92.10 %, channel 91.80 %; validation 92.92 %,
deep part 92.72 %; its best epoch the last of 8; the teacher kept 12,500 of the 45,566
unsup reviews it was at least 0.7 sure of, 6,250 a class; 26.1 min of fit, after the
teacher's labelling (168 s), word2vec (514 s) and a 2-epoch language model (1,111 s)
on the student's texts): the model +0.33 and the deep part +0.94 on its teacher, the best
single model and deep part here, still 0.59 and 0.40 points short of the goals.
And, written before its fit: with ``han_unsup_lm_pseudo`` as a sixth member of the stack
(``stacked_vat``'s five: 93.13 %), is the stack above the student alone (93.41 %)?
Measured: 93.37 % (``stacked_pseudo.md``): -0.04, no; the regression gives the student's
deep part 0.42 and its channel 0.63, VAT's deep part 0.28, the teacher's 0.08.
Question written before seeds 2 and 3 of ``han_unsup_lm_pseudo`` (each student taught
by ``han_unsup_lm_frozen``'s run of its seed, copied into its ``teacher/``): over seeds
1337, 2 and 3, is its mean above its teachers' (93.03 % ± 0.06), and its deep part's
above theirs (91.05 % ± 0.17)? Under about 0.2 points says nothing either way.
Measured: 93.29 % ± 0.15 (93.41, 93.34, 93.12 %), deep part 91.90 % ± 0.37 (92.10,
92.12, 91.48 %): +0.26 and +0.85 points, yes to both, each seed above its own teacher
(+0.33, +0.38, +0.08; deep part +0.94, +1.27, +0.34). Seed 3 stopped early (best epoch
4 of 6), the others ran all 8 with the best the last. The mean of the three students'
probabilities: 93.46 % (``pseudo_seeds_mean.json``).

Only the draws every method run at a size has are used there, so the methods stand on
the same documents (a blank cell: not run at that size); every figure is on the FULL test split (25,000 reviews).

Writes ``experiments/results/learning_curve/learning_curve.{json,md}`` (every method)
and ``docs/learning_curve.png`` (the lines of :data:`PLOTTED`).

Run:  python -m experiments.learning_curve
      python -m experiments.learning_curve --record-full RUN_DIR --name han_unsup
      (a run with --seed S other than 1337 is written to full-NAME-seedS.json)
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

from experiments import harness  # plot, BASELINES

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
SMALL = RESULTS / "small_corpora" / "polarity"
UNLABELED = RESULTS / "unlabeled"
OUT = RESULTS / "learning_curve"
FIGURE = ROOT / "docs" / "learning_curve.png"
SEEDS = RESULTS / "seeds"  # run_all.py --seed S: SEEDS/S/han.json, ...
FULL_SIZE = 25000
DEFAULT_SEED = 1337  # the seed of every table's rows; other seeds: "over seeds"


def _with_unlabeled(label, full):
    """A method trained with the unsup split: its draws are experiments/unlabeled.py's,
    its 25,000-label row ``full-FULL.json`` (written by :func:`record_full`)."""
    return (label, UNLABELED, UNLABELED / f"full-{full}.json")


# method → (label, where its draws are, its whole-training-split result file)
METHODS = {
    "han": ("HAN", SMALL, RESULTS / "han.json"),
    "han_unsup": _with_unlabeled("HAN + 50k unlabeled", "han_unsup"),
    # at 25,000 labels there is no rest of train: the han_unsup row
    "han_unsup_rest": _with_unlabeled("HAN + 50k unlabeled + rest of train", "han_unsup"),
    "han_unsup_lm": _with_unlabeled("HAN + 50k unlabeled, LM-pretrained", "han_unsup_lm"),
    "han_unsup_lm_frozen": _with_unlabeled(
        "HAN + 50k unlabeled, LM-pretrained, frozen for the first epoch", "han_unsup_lm_frozen"
    ),
    "han_unsup_lm_disc": _with_unlabeled(
        "HAN + 50k unlabeled, LM-pretrained, frozen for the first epoch, discriminative rates",
        "han_unsup_lm_disc",
    ),
    "han_unsup_lm_sent_only": _with_unlabeled(
        "HAN + 50k unlabeled, LM- and sentence-pretrained, frozen for the first epoch",
        "han_unsup_lm_sent_only",
    ),
    "han_unsup_lm_vat": _with_unlabeled(
        "HAN + 50k unlabeled, LM-pretrained, frozen for the first epoch, VAT", "han_unsup_lm_vat"
    ),
    "han_unsup_lm_at": _with_unlabeled(
        "HAN + 50k unlabeled, LM-pretrained, frozen for the first epoch, adversarial",
        "han_unsup_lm_at",
    ),
    "han_unsup_lm_pseudo": _with_unlabeled(
        "HAN + 50k unlabeled, LM-pretrained, frozen for the first epoch, 12,500 pseudo labels",
        "han_unsup_lm_pseudo",
    ),
    "rnn": ("BiGRU", SMALL, RESULTS / "rnn.json"),
    "rnn_unsup": _with_unlabeled("BiGRU + 50k unlabeled", "rnn_unsup"),
    "rnn_unsup_pseudo4k": _with_unlabeled(
        "BiGRU + 50k unlabeled + 4,000 pseudo labels", "rnn_unsup_pseudo4k"
    ),
    "nb_lr": ("NB-LR", SMALL, RESULTS / "baseline_nb_lr.json"),
    "tfidf_lr": ("TF-IDF + LR", SMALL, RESULTS / "baseline_tfidf_lr.json"),
}

# The figure's lines: each family with and without the unlabeled reviews (its best
# recipe as run at every size) beside the baselines. The variants measured at one or
# two sizes (other schedules, other pretraining) are in the table only: a dozen lines
# in a dozen colours would hide the curve the figure is for.
PLOTTED = ("han", "han_unsup", "han_unsup_lm_frozen", "rnn", "rnn_unsup", "nb_lr", "tfidf_lr")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record-full", metavar="RUN_DIR", help="a finished run on all labels")
    parser.add_argument("--name", default="han_unsup", help="its method name (full-NAME.json)")
    parser.add_argument("--command", default=None, help="the command that trained it")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--figure", default=str(FIGURE))
    return parser.parse_args(argv)


def record_full(run_dir, name, command=None):
    """Copy a finished whole-training-split run's figures to ``UNLABELED/full-NAME.json``."""
    run_dir = Path(run_dir)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    channel = metrics.get("ngram_channel") or {}
    unlabeled = run_dir / "unlabeled.json"
    row = {
        "method": name,
        "size": FULL_SIZE,
        "test_accuracy": metrics["test_accuracy"],
        "test_macro_f1": metrics["test_macro_f1"],
        "deep_test_accuracy": channel.get("deep_test_accuracy"),
        "train_seconds": metrics["train_seconds"],
        "epochs": metrics.get("epochs"),
        "seed": metrics.get("seed"),
        "command": command or metrics.get("command"),
        "hatt_version": metrics.get("hatt_version"),
        "unlabeled": json.loads(unlabeled.read_text()) if unlabeled.exists() else None,
        "word_vectors": metrics.get("word_vectors"),
        "language_model": metrics.get("language_model"),  # None: not pretrained
    }
    path = UNLABELED / full_name(name, row["seed"])
    path.write_text(json.dumps(row, indent=2) + "\n")
    return path


def full_name(name, seed):
    """``full-NAME.json`` at the default seed (or none recorded), else ``full-NAME-seedS.json``."""
    return f"full-{name}.json" if seed in (None, DEFAULT_SEED) else f"full-{name}-seed{seed}.json"


def draws(method):
    """``{size: {draw: row}}`` of ``method``'s small-corpora draws.

    A method of ``small_corpora.py`` (``han``, ``rnn``, the baselines) also takes the
    draws only ``unlabeled.py`` ran (its ``rnn`` row is the same command on the same
    draw); where both have a draw, ``small_corpora.py``'s row is used.
    """
    found = {}
    folders = dict.fromkeys([UNLABELED, METHODS[method][1]])  # the method's own last: it wins
    for folder in folders:
        for path in sorted(folder.glob(f"n*-d*-{method}.json")):
            row = json.loads(path.read_text())
            size, draw = (int(part[1:]) for part in path.stem.split("-")[:2])
            found.setdefault(size, {})[draw] = row
    return found


def full_row(method):
    """The whole-training-split row of ``method`` at the default seed, or None when not run."""
    return full_rows(method).get(DEFAULT_SEED)


def full_rows(method):
    """``{seed: row}`` of ``method``'s whole-training-split runs, every seed found."""
    path = METHODS[method][2]
    if path.parent == UNLABELED:
        others = path.parent.glob(f"{path.stem}-seed*.json")
    else:
        others = SEEDS.glob(f"*/{path.name}")
    rows = {}
    for found in [path, *others]:
        if found.exists():
            row = json.loads(found.read_text())
            seed = row.get("seed")
            rows[DEFAULT_SEED if seed is None else seed] = row
    return dict(sorted(rows.items(), key=lambda item: (item[0] != DEFAULT_SEED, item[0])))


def over_seeds():
    """``{method: cell}`` for each method with more than one seed at 25,000 labels.

    A cell: ``seeds``, ``test_accuracy`` and ``deep_test_accuracy`` per seed, and
    ``mean`` / ``deep_mean`` as (mean, std). Methods reading the same files as an
    earlier one (``han_unsup_rest`` at 25,000 is ``han_unsup``) are left out.
    """
    cells, seen = {}, set()
    for method in METHODS:
        rows = full_rows(method)
        if len(rows) < 2 or METHODS[method][2] in seen:
            continue
        seen.add(METHODS[method][2])
        accuracies = [row["test_accuracy"] for row in rows.values()]
        deep = [_deep(row) for row in rows.values()]
        cells[method] = {
            "seeds": list(rows),
            "test_accuracy": accuracies,
            "deep_test_accuracy": deep,
            "mean": (statistics.mean(accuracies), _std(accuracies)),
            "deep_mean": (statistics.mean(deep), _std(deep)) if None not in deep else None,
            "commands": [_relative(row.get("command", "")) for row in rows.values()],
        }
    return cells


def _relative(command):
    """``command`` with this checkout's absolute path taken out (``--results experiments/...``)."""
    return command.replace(f"{ROOT}/", "")


def _deep(row):
    """The deep part's test accuracy: a recorded row's, or a ``metrics.json``'s channel block."""
    if row.get("deep_test_accuracy") is not None:
        return row["deep_test_accuracy"]
    return (row.get("ngram_channel") or {}).get("deep_test_accuracy")


def collect():
    """``{size: {method: {"test_accuracy": (mean, std), "deep": ..., "draws": [...]}}}``."""
    per_method = {method: draws(method) for method in METHODS}
    sizes = sorted({size for found in per_method.values() for size in found})
    summary = {}
    for size in sizes:
        present = [method for method, found in per_method.items() if found.get(size)]
        shared = set.intersection(*(set(per_method[m][size]) for m in present))
        if shared:  # the draws every method run at this size has (blank: not run there)
            summary[size] = {
                method: _cell([per_method[method][size][d] for d in sorted(shared)], shared)
                for method in present
            }
    full = {method: full_row(method) for method in METHODS}
    summary[FULL_SIZE] = {method: _cell([row], [0]) for method, row in full.items() if row}
    return summary


def _cell(rows, draw_numbers):
    accuracies = [row["test_accuracy"] for row in rows]
    deep = [_deep(row) for row in rows]
    return {
        "test_accuracy": (statistics.mean(accuracies), _std(accuracies)),
        "deep_test_accuracy": statistics.mean(deep) if all(d is not None for d in deep) else None,
        "draws": sorted(draw_numbers),
        "commands": sorted({row.get("command", "") for row in rows}),
    }


def _std(values):
    return statistics.stdev(values) if len(values) > 1 else 0.0


def write_reports(summary, out, figure, seeds=None):
    """``learning_curve.{json,md}`` in ``out`` and the PNG; ``seeds``: :func:`over_seeds`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = seeds or {}
    report = {"by_size": summary, "over_seeds": seeds}
    (out / "learning_curve.json").write_text(json.dumps(report, indent=2) + "\n")
    names = list(METHODS)
    lines = [
        "# Few labels, with and without IMDB's 50,000 unlabeled reviews (issue 36)",
        "",
        "Generated by `experiments/learning_curve.py`; test accuracy on the full IMDB test "
        "split (25,000 reviews), mean ± std over the draws every method has at that size; "
        "the deep part alone in brackets.",
        "",
        "| labels | draws | " + " | ".join(METHODS[m][0] for m in names) + " |",
        "|---:|---|" + "---:|" * len(names),
    ]
    for size, cells in summary.items():
        shown = []
        for method in names:
            if method not in cells:
                shown.append("")
                continue
            mean, std = cells[method]["test_accuracy"]
            deep = cells[method]["deep_test_accuracy"]
            text = f"{100 * mean:.2f} %" + (f" ± {100 * std:.2f}" if std else "")
            shown.append(text + (f" ({100 * deep:.2f})" if deep is not None else ""))
        draws_used = ", ".join(map(str, next(iter(cells.values()))["draws"]))
        label = "all" if size == FULL_SIZE else draws_used
        lines.append(f"| {size} | {label} | " + " | ".join(shown) + " |")
    lines += _seeds_table(seeds)
    (out / "learning_curve.md").write_text("\n".join(lines) + "\n")
    harness.plot({"polarity": _plotted(summary)}, figure)


def _plotted(summary):
    """``summary``'s :data:`PLOTTED` methods, under their labels (baselines by name)."""
    return {
        size: {
            METHODS[m][0] if m not in harness.BASELINES else m: cell
            for m, cell in cells.items()
            if m in PLOTTED
        }
        for size, cells in summary.items()
    }


def _seeds_table(seeds):
    """The "25,000 labels over seeds" section's lines (none without a method on 2+ seeds)."""
    if not seeds:
        return []
    lines = [
        "",
        "## 25,000 labels over seeds",
        "",
        "Each seed draws the validation split carved from `train/` and the initialisation; "
        "the deep part alone in brackets.",
        "",
        "| method | seeds | per seed | mean ± std | deep part, mean ± std | commands |",
        "|---|---|---|---:|---:|---|",
    ]
    for method, cell in seeds.items():
        per_seed = ", ".join(
            f"{100 * accuracy:.2f}" + (f" ({100 * deep:.2f})" if deep is not None else "")
            for accuracy, deep in zip(
                cell["test_accuracy"], cell["deep_test_accuracy"], strict=True
            )
        )
        mean, std = cell["mean"]
        deep = cell["deep_mean"]
        deep_text = f"{100 * deep[0]:.2f} % ± {100 * deep[1]:.2f}" if deep else ""
        commands = "; ".join(f"`{command}`" for command in dict.fromkeys(cell["commands"]))
        lines.append(
            f"| {METHODS[method][0]} | {', '.join(map(str, cell['seeds']))} | {per_seed} "
            f"| {100 * mean:.2f} % ± {100 * std:.2f} | {deep_text} | {commands} |"
        )
    return lines


def main(argv=None):
    args = parse_args(argv)
    if args.record_full:
        print(record_full(args.record_full, args.name, args.command))
    write_reports(collect(), args.out, args.figure, over_seeds())
    return 0


if __name__ == "__main__":
    sys.exit(main())
