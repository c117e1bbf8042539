"""What a finished run would have scored had its mix kept the deep part.

Issue 36's few-label runs: the mix (:func:`hatt.training.channel.mix.choose_mix`) fits
``a·deep + b·channel + c`` on the validation split, then keeps the deep part only when a
5-fold check on those reviews shows it lowers the log loss by at least one standard
error (``KEEP_MARGIN_SE``). At 50-100 validation reviews that check rarely passes. This
script refits the mix with the deep part (:func:`hatt.training.fit_mix`, the run's
own validation logits, ``validation_probabilities.npz``) and applies it to the run's
test logits (``test_probabilities.npz``): the test accuracy the model would have had,
beside the run's own, its deep part's and its channel's. It trains nothing.

Run:  python -m experiments.archive.mix_kept RUN_DIR [RUN_DIR ...] [--out FILE.json]
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from hatt.training import fit_mix


def accuracy(logits, labels):
    logits = np.asarray(logits)
    predicted = (logits > 0).astype(int) if logits.ndim == 1 else logits.argmax(axis=1)
    return float((predicted == labels).mean())


def analyse(run_dir):
    run_dir = Path(run_dir)
    validation = np.load(run_dir / "validation_probabilities.npz")
    test = np.load(run_dir / "test_probabilities.npz")
    kept = fit_mix(validation["deep_logits"], validation["channel_logits"], validation["labels"])
    mixed = kept.logits(test["deep_logits"], test["channel_logits"])
    metrics = json.loads((run_dir / "metrics.json").read_text())
    channel = metrics.get("ngram_channel") or {}
    return {
        "run_dir": str(run_dir),
        "validation_reviews": int(len(validation["labels"])),
        "as_run": metrics["test_accuracy"],
        "deep_alone": channel.get("deep_test_accuracy"),
        "channel_alone": channel.get("channel_test_accuracy"),
        "deep_kept": accuracy(mixed, test["labels"]),
        "mix_with_deep": kept.to_dict(),
        "held_out_check": (channel.get("mix") or {}).get("held_out"),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dirs", nargs="+")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    rows = [analyse(run_dir) for run_dir in args.run_dirs]
    for row in rows:
        print(
            f"{row['run_dir']}: as run {100 * row['as_run']:.2f} %, deep kept "
            f"{100 * row['deep_kept']:.2f} % (deep alone {100 * (row['deep_alone'] or 0):.2f}, "
            f"channel alone {100 * (row['channel_alone'] or 0):.2f}; "
            f"{row['validation_reviews']} validation reviews)"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
