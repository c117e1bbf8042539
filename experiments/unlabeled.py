"""Few labels + unlabeled text: word2vec on the labeled draw alone vs draw + IMDB's unsup split.

Issue 36, item 2's cheap baseline on item 4's setting. On the small-corpora
benchmark's draws (``experiments/small_corpora.py``'s :func:`draw_indices`, the
same tables), at ``--size`` labels (1,000 by default), each draw gets:

- ``rnn``: ``hatt train rnn`` as a user types it (its preset starts the
  embedding from word2vec trained on the draw's training split only);
- ``rnn_unsup``: the same, with word2vec also trained on the unlabeled reviews
  of ``--unlabeled`` (``aclImdb_v1_unsup.tar.gz``), read by
  :func:`hatt.data.unlabeled.read_unlabeled` with every text equal to a
  validation or test review removed (counted in the row);
- ``nb_lr`` and ``tfidf_lr``: the linear baselines of ``experiments/baselines.py``
  (``small_corpora.baseline_cell``, unchanged).

Every row is evaluated on the FULL IMDB test split (25,000 reviews). Each row's
JSON ``OUT/nSIZE-dDRAW-METHOD.json`` is written when it finishes and skipped when
present (``--force`` redoes it); ``OUT/rows.json`` and ``OUT/unlabeled.md`` are
regenerated after every row.

The ``rnn_unsup`` row is ``hatt train rnn --unlabeled PATH``: the vocabulary and
word2vec learn from the unlabeled reviews too (word2vec's vectors cached in the run
directory's ``word_vectors.npz``).

``rnn_unsup_vat_unlabeled`` (VAT's term on batches of the unsup reviews, since
``adversarial_unlabeled``; ``rnn_unsup_vat`` took it on the labeled batches): its
question, written before its run on draw 0 at 1,000 labels: is the BiGRU with it
above the same with the term on labeled batches (86.55 % under the mix in force,
86.52 % as run) and above no VAT (87.16 %)? One draw: a difference under about
0.4 points (the test split's standard error is 0.2) says nothing either way.
Measured: 86.43 %, no gain, with the training loss still high after 8 epochs of 32
steps. ``rnn_unsup_vat_unlabeled24``, its question written before its run: given up
to 24 epochs (patience 3), is the same run above its 8-epoch self and above no VAT
(87.16 %)? Measured: 86.92 % (deep part alone 86.70 %, best epoch the last): above its
8-epoch self, not above no VAT.

At 500 labels (draw 0), questions written before the runs: is the BiGRU with the unsup
split (``rnn_unsup``) above the BiGRU without it (``rnn``) and above NB-LR (82.88 %)?
And is ``han_unsup``, run again under the mix in force (as run under the mix rule before
issue 36: 82.39 %, below NB-LR, with its deep part alone at 84.70 %), above NB-LR now?
Measured: the BiGRU 85.34 % with the unsup split (deep part alone 83.26 %) against
81.58 % without it (deep part 53.17 %, mix weight 0.03: the model is its channel with
a threshold moved on 50 reviews); the HAN 85.77 % (deep part 84.70 %, mix weight
0.68). Both above NB-LR (82.88 %) and TF-IDF + LR (82.56 %) on this draw.
At 1,000 labels (draw 0), the question written before the run: ``han_unsup`` run again
under the mix in force (as run under the old rule: 85.35 %, its channel alone, with
its deep part alone at 85.71 %): is it above NB-LR (85.49 %) and above 85.35 %?
Measured: 87.35 % (deep part alone 85.70 %, mix weight 0.55): above both, by 1.86 and
2.00 points.
At 2,000 labels (draw 0), the question written before the run: is ``han_unsup`` above
the HAN without unlabeled text on the same draw (87.16 %, its deep part alone 71.91 %)
and above NB-LR (87.10 %)?
Measured: 88.85 % (deep part alone 87.72 %, mix weight 0.58): above both, by 1.69 and
1.75 points.

At 1,000 labels (draw 0), the questions written before the runs: ``han_unsup_lm_disc``
(the language model, the first epoch frozen, then ULMFiT's discriminative rates: the
word encoder at the rate / 2.6, the embedding / 2.6²) against ``han_unsup_lm_frozen``
run again under the mix in force (``--force``; as run under the old rule: 85.35 %, its
channel alone, its deep part alone 86.14 %): is the model, and is its deep part alone,
above it? And is it above ``han_unsup`` (87.35 %)? One draw: under 0.4 points says
nothing either way.
And ``han_unsup_lm_sent`` (the same, with the sentence encoder and the word attention
pretrained for one epoch to predict the neighbouring sentences' words, then frozen and
slowed with the word level): is it, and its deep part alone, above ``han_unsup_lm_disc``?
Measured: ``han_unsup_lm_frozen`` under the mix in force 88.00 % (deep part alone 86.14 %,
the figure ``mix_rule.py`` had reconstructed from its logits); ``han_unsup_lm_disc``
87.41 % (deep part 85.78 %): below it by 0.59 and 0.36 points, above ``han_unsup``
(87.35 %) by 0.06, which says nothing. ``han_unsup_lm_sent`` 85.51 % (deep part 78.64 %):
below both, its deep part by 7 points, still rising at its last epoch (8 of 8) with the
three pretrained layers at 1/2.6, 1/2.6² and 1/2.6³ of the rate. Neither helps here.
The question for ``han_unsup_lm_sent_only`` (the sentence stage without the
discriminative rates, frozen for the first epoch as ``han_unsup_lm_frozen``), written
before its run: is it, and its deep part alone, above ``han_unsup_lm_frozen`` (88.00 %,
86.14 %)? Under 0.4 points says nothing.
Measured: 87.52 % (deep part alone 86.10 %; the sentence stage 754 s, held-out loss 5.64):
0.48 points below it, its deep part level (-0.04). The sentence stage does not help here.
Run:  nice -n 10 python -m experiments.unlabeled [--draws 1] [--size 1000]  (methods: HATT_METHODS)
      [--methods nb_lr tfidf_lr rnn rnn_unsup] [--unlabeled PATH] [--out DIR]
      python -m experiments.unlabeled --count-test-duplicates  (unsup texts equal to a
      test review, and the read time: OUT/unsup_vs_test.json)
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

from experiments import harness  # the draws, tables and baseline cells

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "unlabeled"
RUNS = ROOT / "runs" / "unlabeled"
UNSUP_NAME = "aclImdb_v1_unsup.tar.gz"  # ../shared/data/ beside the checkout (or a worktree's)
UNSUP = next(
    (
        folder / "shared" / "data" / UNSUP_NAME
        for folder in ROOT.parents
        if (folder / "shared" / "data" / UNSUP_NAME).is_file()
    ),
    ROOT.parent / "shared" / "data" / UNSUP_NAME,
)
# hatt rows: (label, --set overrides after `hatt train FAMILY --unlabeled PATH`), the
# family being the name's first part; None: trained without the unlabeled reviews.
HATT_METHODS = {
    "han": ("han, word2vec on the labeled draw", None),
    "han_unsup": ("han, word2vec on the draw + unsup", []),
    "han_unsup_rest": ("han, word2vec on the draw + unsup + the rest of train", []),
    "han_unsup_lm": (
        "han, word2vec and a language model (2 epochs) on the draw + unsup",
        ["lm_epochs=2"],
    ),
    "han_unsup_lm_frozen": (
        "han, word2vec and a language model (2 epochs) on the draw + unsup, its encoder "
        "frozen for the first epoch",
        ["lm_epochs=2", "init_frozen_epochs=1"],
    ),
    "han_unsup_lm_disc": (
        "han, word2vec and a language model (2 epochs) on the draw + unsup, its encoder "
        "frozen for the first epoch, then at discriminative rates (/ 2.6 a layer)",
        ["lm_epochs=2", "init_frozen_epochs=1", "discriminative_decay=2.6"],
    ),
    "han_unsup_lm_sent": (
        "han, word2vec, a language model (2 epochs) and its sentence encoder (1 epoch) on the "
        "draw + unsup, both frozen for the first epoch, then at discriminative rates",
        [
            "lm_epochs=2",
            "lm_sentence_epochs=1",
            "init_frozen_epochs=1",
            "discriminative_decay=2.6",
        ],
    ),
    "han_unsup_lm_sent_only": (
        "han, word2vec, a language model (2 epochs) and its sentence encoder (1 epoch) on the "
        "draw + unsup, both frozen for the first epoch",
        ["lm_epochs=2", "lm_sentence_epochs=1", "init_frozen_epochs=1"],
    ),
    "han_unsup_lm4": (
        "han, word2vec and a language model (4 epochs) on the draw + unsup",
        ["lm_epochs=4"],
    ),
    "rnn": ("rnn, word2vec on the labeled draw", None),
    "rnn_unsup_lm": (
        "rnn, word2vec and a language model (2 epochs) on the draw + unsup",
        ["lm_epochs=2"],
    ),
    "rnn_unsup": ("rnn, word2vec on the draw + unsup", []),
    "rnn_unsup_vocab": (
        "rnn, word2vec and the vocabulary on the draw + unsup",
        ["unlabeled_vocabulary=true"],
    ),
    "rnn_unsup_at": ("rnn, word2vec on the draw + unsup, adversarial", ["adversarial=at"]),
    "rnn_unsup_vat": (
        "rnn, word2vec on the draw + unsup, virtual adversarial",
        ["adversarial=vat", "adversarial_unlabeled=false"],  # its term on the labeled batches
    ),
    "rnn_unsup_vat_unlabeled": (
        "rnn, word2vec on the draw + unsup, virtual adversarial on unsup batches",
        ["adversarial=vat"],  # its term on batches of the unlabeled documents
    ),
    "rnn_unsup_vat_unlabeled24": (
        "rnn, word2vec on the draw + unsup, virtual adversarial on unsup batches, 24 epochs",
        ["adversarial=vat", "epochs=24", "patience=3"],
    ),
    "rnn_unsup_pseudo": (
        "rnn, word2vec on the draw + unsup, pseudo labels",
        ["pseudo_labels=true"],
    ),
    "rnn_unsup_pseudo4k": (
        "rnn, word2vec on the draw + unsup, pseudo labels (at most 4,000)",
        ["pseudo_labels=true", "pseudo_label_limit=4000"],
    ),
    "rnn_unsup_vat_pseudo": (
        "rnn, word2vec on the draw + unsup, virtual adversarial + pseudo labels",
        ["adversarial=vat", "adversarial_unlabeled=false", "pseudo_labels=true"],
    ),
}
LABELS = {
    "nb_lr": "NB-LR",
    "tfidf_lr": "TF-IDF + LR",
    **{name: label for name, (label, _) in HATT_METHODS.items()},
}
METHODS = tuple(LABELS)
# methods whose unlabeled text is the unsup split AND the training documents outside the
# draw, their labels dropped (issue 36, item 4: "the rest of train and the unsup split")
WITH_REST = ("han_unsup_rest",)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get(harness.ENV_VAR), help="IMDB folder")
    parser.add_argument("--unlabeled", default=str(UNSUP), help="the unlabeled reviews")
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--runs", default=str(RUNS))
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("--count-test-duplicates", action="store_true")
    return parser.parse_args(argv)


# === Rows =============================================================================


def rest_table(pools, size, draw, seed, unlabeled, runs):
    """A JSONL table (``text`` only) of the unsup reviews and the training reviews outside
    the draw: the unlabeled text of :data:`WITH_REST` methods (written once)."""
    from hatt.data.unlabeled import read_unlabeled

    path = Path(runs) / "polarity" / "data" / f"n{size:05d}-d{draw}-rest.jsonl"
    if path.exists():
        return path
    chosen = set(harness.draw_indices(pools["train"].labels, size, draw, seed).tolist())
    rest = [text for i, text in enumerate(pools["train"].texts) if i not in chosen]
    unsup, _ = read_unlabeled(str(unlabeled))
    partial = path.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as handle:
        for text in [*rest, *unsup]:
            handle.write(json.dumps({"text": text}) + "\n")
    partial.replace(path)
    return path


def hatt_row(method, tables, place, unlabeled, force):
    """``hatt train FAMILY`` on one draw: alone (``rnn``, ``han``) or with ``--unlabeled
    PATH`` and the method's ``--set`` overrides (:data:`HATT_METHODS`)."""
    family, overrides = method.split("_")[0], HATT_METHODS[method][1]
    if overrides is None:
        return _with_deep(harness.hatt_cell(family, tables, place, force), place / family)
    extra = ["--unlabeled", str(unlabeled)]
    for pair in overrides:
        extra += ["--set", pair]
    row = harness.hatt_cell(family, tables, place, force, name=method, extra=extra)
    run_dir = place / method
    metrics = json.loads((run_dir / "metrics.json").read_text())
    row.update(
        word_vectors=metrics.get("word_vectors"),
        unlabeled=json.loads((run_dir / "unlabeled.json").read_text()),
        pseudo_labels=metrics.get("pseudo_labels"),
        adversarial=metrics.get("adversarial"),
    )
    return _with_deep(row, run_dir)


def _with_deep(row, run_dir):
    """``row`` with the deep part's own test accuracy (the mix's, from metrics.json)."""
    metrics = json.loads((run_dir / "metrics.json").read_text())
    row["deep_test_accuracy"] = (metrics.get("ngram_channel") or {}).get("deep_test_accuracy")
    return row


def run_row(args, pools, test_tokens, draw, method):
    path = Path(args.out) / f"n{args.size:05d}-d{draw}-{method}.json"
    if path.exists() and not args.force:
        return
    tables = harness.draw_tables(pools, "polarity", args.size, draw, args.seed, args.runs)
    place = Path(args.runs) / "polarity" / f"n{args.size:05d}-d{draw}"
    place.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if method in harness.BASELINES:
        row = harness.baseline_cell(method, tables, test_tokens, args.seed, tuning="validation")
    else:
        unlabeled = args.unlabeled
        if method in WITH_REST:
            unlabeled = rest_table(pools, args.size, draw, args.seed, unlabeled, args.runs)
        row = hatt_row(method, tables, place, unlabeled, args.force)
    row.update(
        method=method,
        size=args.size,
        draw=draw,
        row_wall_seconds=round(time.perf_counter() - start, 2),
        commit=harness.commit(),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(row, indent=2) + "\n")
    partial.replace(path)
    print(f"{method} draw {draw}: test accuracy {row['test_accuracy']:.4f}", flush=True)


def count_test_duplicates(args, repeats=3):
    """How many unlabeled texts equal an IMDB test review, and the read time (median)."""
    import statistics

    from hatt.data.imdb import read_imdb
    from hatt.data.unlabeled import read_unlabeled, summary

    test = list(read_imdb(args.data, progress=False).test.texts)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        _, report = read_unlabeled(args.unlabeled, exclude=test)
        seconds.append(round(time.perf_counter() - start, 2))
    report.update(test_texts=len(test), read_seconds=seconds, median=statistics.median(seconds))
    print(summary(report))
    path = Path(args.out) / "unsup_vs_test.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")


# === Report ===========================================================================


def write_reports(out):
    out = Path(out)
    rows = [json.loads(p.read_text()) for p in sorted(out.glob("n*-d*-*.json"))]
    (out / "rows.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = [
        "# Few labels + IMDB's unlabeled reviews (issue 36)",
        "",
        "Generated by `experiments/unlabeled.py`; full IMDB test split (25,000 reviews).",
        "",
        "| labels | draw | method | test accuracy | deep part alone | macro-F1 "
        "| unlabeled kept (removed as test/val) | row wall s |",
        "|---:|---:|---|---:|---:|---:|---|---:|",
    ]
    for row in rows:
        unlabeled = row.get("unlabeled")
        kept = f"{unlabeled['kept']} ({unlabeled['excluded']})" if unlabeled else ""
        deep = row.get("deep_test_accuracy")
        lines.append(
            f"| {row['size']} | {row['draw']} | {LABELS[row['method']]} "
            f"| {100 * row['test_accuracy']:.2f} % "
            f"| {'' if deep is None else f'{100 * deep:.2f} %'} "
            f"| {100 * row['test_macro_f1']:.2f} % "
            f"| {kept} | {row['row_wall_seconds']} |"
        )
    lines += over_draws(rows)
    (out / "unlabeled.md").write_text("\n".join(lines) + "\n")


def over_draws(rows):
    """The report's lines of every method run on more than one draw at a size: its test
    accuracy's mean ± sample std over those draws, as run."""
    groups = {}
    for row in rows:
        groups.setdefault((row["size"], row["method"]), []).append(row)
    lines = [
        "",
        "Over draws, as run (each row under the mix rule of its commit):",
        "",
        "| labels | draws | method | test accuracy, mean ± std |",
        "|---:|---|---|---:|",
    ]
    for (size, method), group in sorted(groups.items()):
        if len(group) > 1:
            mean, std = harness.mean_std([row["test_accuracy"] for row in group])
            draws = ", ".join(str(row["draw"]) for row in group)
            lines.append(
                f"| {size} | {draws} | {LABELS[method]} | {100 * mean:.2f} % ± {100 * std:.2f} |"
            )
    return lines if len(lines) > 5 else []


def main(argv=None):
    args = parse_args(argv)
    if args.count_test_duplicates:
        return count_test_duplicates(args)
    if not args.table_only:
        if not args.data:
            raise ValueError(
                f"Expected --data or ${harness.ENV_VAR}: the IMDB folder. Received: none"
            )
        pools = harness.create_dataset(args.data, "polarity")
        test_tokens = harness.CachedTestTokens()
        for draw in range(args.draws):
            for method in args.methods:
                run_row(args, pools, test_tokens, draw, method)
                write_reports(args.out)
    write_reports(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
