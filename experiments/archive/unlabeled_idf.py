"""What the IDF can take from unlabeled text: TF-IDF + LR with the IDF of the draw alone
against the IDF of the draw and IMDB's 50,000 unlabeled reviews.

Issue 36, item 2 asks what the n-gram channel can take from unlabeled text (vocabulary,
IDF, NB ratios smoothed). The vocabulary was measured in ``experiments/unlabeled.py``
(``rnn_unsup_vocab``). This script measures the IDF, on the TF-IDF + LR baseline itself
(``experiments/baselines.py``'s features and classifier), the channel that hatt fits
above two classes (``ngram.init="lr"``, ``idf``, ``"l2"``): if the IDF of more documents
does not help the baseline, it will not help the channel.

On the small-corpora benchmark's draws (:func:`small_corpora.draw_indices`) at ``--size``
labels, each draw gets ``mix_tuning``'s 5,000 tuning reviews (training reviews outside
the draw; IMDB's test split is never read). The vocabulary is the draw's (``min_df`` 2,
uni- and bigrams, sublinear TF, as the baseline); the IDF is either

- ``draw``: the draw's own (the baseline as it is), or
- ``draw + unsup``: the draw's and the unsup reviews' (every unsup text equal to a
  tuning review dropped, counted in the JSON).

Each is scored at every ``C`` of the baseline's grid (a fixed ``C`` compares the two
IDFs alike; choosing ``C`` on 100 validation reviews would add its own noise). Writes
``OUT/idf.json`` and ``OUT/idf.md``.

Run:  nice -n 10 python -m experiments.archive.unlabeled_idf --data aclImdb [--draws 1 2 3]
      [--tasks polarity rating] [--size 1000]
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from experiments import baselines, harness, mix_tuning
from experiments import unlabeled as unlabeled_rows

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "experiments" / "results" / "unlabeled"
IDFS = ("draw", "draw + unsup")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get(harness.ENV_VAR), help="IMDB folder")
    parser.add_argument("--unlabeled", default=str(unlabeled_rows.UNSUP))
    parser.add_argument("--tasks", nargs="+", choices=harness.TASKS, default=["polarity", "rating"])
    parser.add_argument("--draws", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--tuning-size", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1337, help="seed of the draws")
    parser.add_argument("--out", default=str(RESULTS))
    return parser.parse_args(argv)


def idf_pair(train_tokens, unlabeled_tokens):
    """The vectorizer fit on the draw, and ``{name: idf}`` for :data:`IDFS` over its
    vocabulary."""
    fixed = baselines.SETTINGS["tfidf_lr"]["fixed"]
    features = baselines.create_features("tfidf_lr", **fixed).fit(train_tokens)
    # the same features with the draw's vocabulary fixed (min_df then keeps every word)
    wider = baselines.create_features("tfidf_lr", **fixed).set_params(
        vocabulary=features.vocabulary_
    )
    wider.fit([*train_tokens, *unlabeled_tokens])
    return features, {"draw": features.idf_.copy(), "draw + unsup": wider.idf_}


def scores(features, idfs, train, tuning, num_classes, seed):
    """Tuning accuracy of each IDF at each ``C`` of the baseline's grid."""
    out = {}
    for name, idf in idfs.items():
        features.idf_ = idf
        x_train, x_tuning = features.transform(train.texts), features.transform(tuning.texts)
        out[name] = {}
        for C in baselines.grid_of("tfidf_lr", num_classes)["C"]:
            model = (
                baselines.create_classifier(C, seed)
                if num_classes == 2
                else baselines.create_multiclass_classifier("tfidf_lr", {"C": C}, seed)
            )
            model.fit(x_train, train.labels)
            out[name][str(C)] = float(np.mean(model.predict(x_tuning) == tuning.labels))
    return out


def compare_idfs(train, tuning, unlabeled_tokens, num_classes, seed):
    """``(accuracy, features)``: :func:`scores` of :func:`idf_pair`, the vocabulary's size."""
    features, idfs = idf_pair(train.texts, unlabeled_tokens)
    return scores(features, idfs, train, tuning, num_classes, seed), len(features.vocabulary_)


def run_task(args, task, unsup, compare=compare_idfs):
    """Every draw of ``task``: ``{draw: row}``. ``unsup``: the unlabeled texts'
    ``fingerprints`` (:func:`hatt.data.text.fingerprints`, as ``read_unlabeled``'s
    exclusion compares them) and ``tokens``, computed once for every draw.
    ``compare(train, tuning, unlabeled_tokens, num_classes, seed)`` gives the row's
    ``(accuracy, features)``: ``{variant: {point: tuning accuracy}}`` and a size."""
    from hatt.data import Split
    from hatt.data.text import fingerprints

    pools = harness.create_dataset(args.data, task)
    texts, labels = pools["train"].texts, np.asarray(pools["train"].labels)
    num_classes = len(np.unique(labels))
    rows = {}
    for draw in args.draws:
        start = time.perf_counter()
        drawn = harness.draw_indices(labels, args.size, draw, args.seed)
        picked = mix_tuning.tuning_indices(
            labels, set(drawn.tolist()), args.tuning_size, draw, args.seed
        )
        train = Split(baselines.tokenize([texts[i] for i in drawn], progress=False), labels[drawn])
        tuning_texts = [texts[i] for i in picked]
        tuning = Split(baselines.tokenize(tuning_texts, progress=False), labels[picked])
        held_out = set(fingerprints(tuning_texts).tolist())
        kept = [i for i, f in enumerate(unsup["fingerprints"]) if f not in held_out]
        accuracy, size = compare(
            train, tuning, [unsup["tokens"][i] for i in kept], num_classes, args.seed
        )
        rows[draw] = {
            "accuracy": accuracy,
            "unlabeled": len(kept),
            "unlabeled_equal_to_tuning": len(unsup["tokens"]) - len(kept),
            "features": size,
            "seconds": round(time.perf_counter() - start, 1),
        }
        best = {name: max(row.values()) for name, row in rows[draw]["accuracy"].items()}
        print(task, draw, {name: f"{100 * value:.2f}" for name, value in best.items()}, flush=True)
    return rows


def markdown(result, command):
    lines = [
        "# TF-IDF + LR: the IDF of the draw against the IDF of the draw + unsup",
        "",
        f"`{command}`",
        "",
        f"{result['size']} labels a draw; mean accuracy over draws {result['draws']} on each "
        "draw's 5,000 tuning reviews (training reviews outside the draw), at each `C` of "
        "the baseline's grid; the vocabulary is the draw's in both.",
        "",
    ]
    for task, rows in result["tasks"].items():
        grid = list(next(iter(rows.values()))["accuracy"]["draw"])
        lines += [f"## {task}", "", "| IDF | " + " | ".join(f"C {c}" for c in grid) + " |"]
        lines.append("|---|" + "---:|" * len(grid))
        for name in IDFS:
            means = [np.mean([row["accuracy"][name][c] for row in rows.values()]) for c in grid]
            lines.append(f"| {name} | " + " | ".join(f"{100 * m:.2f} %" for m in means) + " |")
        lower = sum(
            row["accuracy"]["draw + unsup"][c] < row["accuracy"]["draw"][c]
            for row in rows.values()
            for c in grid
        )
        lines += [
            "",
            f"draw + unsup below draw in {lower} of {len(rows) * len(grid)} (draw, C).",
            "",
        ]
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    return measure(args, compare_idfs, "idf", markdown, "unlabeled_idf", argv)


def measure(args, compare, name, write_markdown, script, argv=None):
    """Read ``args.unlabeled`` once, run every task's draws with ``compare``
    (:func:`run_task`), write ``OUT/NAME.json`` and ``write_markdown(result, command)``
    to ``OUT/NAME.md`` (``command``: ``python -m experiments.archive.SCRIPT ARGV``)."""
    from hatt.data.text import fingerprints
    from hatt.data.unlabeled import read_unlabeled

    raw, report = read_unlabeled(str(args.unlabeled))
    unsup = {
        "fingerprints": fingerprints(raw).tolist(),
        "tokens": baselines.tokenize(raw, progress=True),
    }
    result = {
        "size": args.size,
        "draws": args.draws,
        "seed": args.seed,
        "unlabeled_report": report,
        "tasks": {task: run_task(args, task, unsup, compare) for task in args.tasks},
        "commit": harness.commit(),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    command = f"python -m experiments.archive.{script} " + " ".join(argv or sys.argv[1:])
    (out / f"{name}.md").write_text(write_markdown(result, command))
    print(f"wrote {out / f'{name}.md'}")


if __name__ == "__main__":
    main()
