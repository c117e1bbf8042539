"""Is the attention telling the truth? Deletion test on IMDB test reviews.

For each trained family, on a balanced, seeded sample of test reviews:
delete the top-k % tokens ranked by the model's attention (gradient × input
saliency for the CNN; for the HAN word × sentence attention, the word's
share of the document) versus k % tokens drawn at random (averaged over
several draws), and report the mean drop of the predicted class's
probability (ERASER "comprehensiveness", DeYoung et al. 2020) for
k = 5, 10, 20. Tokens are removed from the model's own ids (see
`hatt.inspect.deletion`); each run directory is loaded by `hatt.export.load`,
the loader `hatt predict` and `hatt inspect` use, so the ranking scores are
the ones those show.

    python experiments/faithfulness.py [--runs runs/experiments] [--reviews 1000]

Writes experiments/results/faithfulness.json and faithfulness.md.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from hatt import export
from hatt.data import load_imdb
from hatt.inspect import balanced_sample, deletion_test
from hatt.inspect.deletion import DEFAULT_KS

EXPERIMENTS = Path(__file__).resolve().parent
RESULTS = EXPERIMENTS / "results"
FAMILIES = ("cnn", "rnn", "transformer", "han")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", default="runs/experiments", help="folder with one run directory per family"
    )
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz")
    parser.add_argument("--reviews", type=int, default=1000, help="test reviews (balanced)")
    parser.add_argument("--ks", type=int, nargs="+", default=list(DEFAULT_KS))
    parser.add_argument("--draws", type=int, default=5, help="random deletions per review and k")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--out", default=str(RESULTS), help="where the JSON and markdown go")
    return parser.parse_args(argv)


def create_dataset(args):
    """A balanced, seeded sample of test reviews (aclImdb lists all of one class first)."""
    imdb = load_imdb(args.data, validation_size=0, progress=False)  # the test split only
    labels = np.asarray(imdb.test.labels)
    chosen = balanced_sample(labels, args.reviews, seed=args.seed)
    return [imdb.test.texts[i] for i in chosen], labels[chosen], imdb.source


def markdown(results):
    """The results as a markdown section (table + reading)."""
    ks = results["ks"]
    lines = [
        "## Is the attention telling the truth? (deletion test)",
        "",
        f"Mean drop of the predicted class's probability after deleting k % of a review's "
        f"tokens, ranked by the model's scores versus at random ({results['random_draws']} "
        f"draws), on {results['reviews']} IMDB test reviews (balanced, seed {results['seed']}); "
        "ERASER comprehensiveness (DeYoung et al. 2020). Goal: ratio >= 3 at k = 10. "
        "Command: `python experiments/faithfulness.py`.",
        "",
        "| model | scores | "
        + " | ".join(f"k={k} % ranked | random | ratio" for k in ks)
        + " | flips at k=10 % (ranked / random) | at k=10 %: ranked < random"
        " | at k=10 %: both < 0.001 |",
        "|---|---|" + "---|---|---|" * len(ks) + "---|---|---|",
    ]
    for family, r in results["models"].items():
        cells = []
        for k in ks:
            v = r["by_k"][str(k)]
            ratio = "–" if v["ratio"] is None else f"{v['ratio']:.1f}×"
            cells.append(f"{v['ranked_drop']:.3f} | {v['random_drop']:.3f} | {ratio}")
        ten = r["by_k"].get("10")
        flips = f"{ten['ranked_flip_rate']:.1%} / {ten['random_flip_rate']:.1%}" if ten else "–"
        worse = (
            f"{ten['ranked_below_random']:.1%} | {ten['both_negligible']:.1%}" if ten else "– | –"
        )
        lines.append(
            f"| {family} | {r['score_kind']} | " + " | ".join(cells) + f" | {flips} | {worse} |"
        )
    lines += [
        "",
        "A ratio of – means the random deletions did not lower the probability on average "
        "(mean drop <= 0). The last two columns are shares of reviews: those whose ranked "
        "deletion lowered the probability less than their random deletions did (on average), "
        "and those where neither changed it by 0.001 (saturated predictions).",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    texts, _, source = create_dataset(args)
    results = {
        "reviews": len(texts),
        "ks": args.ks,
        "random_draws": args.draws,
        "seed": args.seed,
        "data_source": source,
        "command": "python experiments/faithfulness.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "models": {},
    }
    for family in args.families:
        run_dir = Path(args.runs) / family
        print(f"{family}: {run_dir}")
        predictor = export.load(run_dir)
        start = time.time()
        result = deletion_test(
            predictor, texts, ks=args.ks, random_draws=args.draws, seed=args.seed
        )
        result["run_dir"] = str(run_dir)
        result["seconds"] = round(time.time() - start, 1)
        results["models"][family] = result
        for k, v in result["by_k"].items():
            ratio = "n/a" if v["ratio"] is None else f"{v['ratio']:.2f}x"
            print(
                f"  k={k:>3} %  ranked {v['ranked_drop']:.4f}  random {v['random_drop']:.4f}  "
                f"ratio {ratio}"
            )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "faithfulness.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "faithfulness.md").write_text(markdown(results))
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
