"""Where one tiny training run's time goes: `hatt.training.train` under cProfile, by step.

    python -m experiments.benchmarks.tiny_run_profile [--family han] [--label NAME]

The run is tests/training/test_loop.py's (160 planted reviews, 40 validation, 40 test,
4 epochs; the HAN at 6 sentences of 12 words, packed), the kind of run a test of the loop
pays for. Prints and writes the wall time and the cumulative seconds of the loop's steps
(``fit``, ``evaluate``, ``save_predictions``) and of the graph traces inside them, to
``experiments/results/tiny_run_profile/LABEL.{json,md}``; docs/lab/suite.md reads them.
"""

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path

from hatt import training
from hatt.data import Imdb
from tests._planted import planted_split  # run from the project root: python -m ...

RESULTS = Path(__file__).resolve().parents[1] / "results" / "tiny_run_profile"
KWARGS = {
    "han": {"embedding_dim": 16, "word_units": 8, "sentence_units": 8},
    "cnn": {"embedding_dim": 16, "filters": 8},
}
# (what the table calls it, the function's file ending, its name) in the profile
STEPS = (
    ("fit", "training/run/loop.py", "fit"),
    ("evaluate", "training/run/loop.py", "evaluate"),
    ("save_predictions", "training/run/loop.py", "save_predictions"),
    ("graph traces (all steps)", "tracing_compilation.py", "_create_concrete_function"),
)


def profile_run(family):
    """``(wall seconds, pstats.Stats)`` of one tiny ``training.train`` of ``family``."""
    corpus = Imdb(planted_split(160, 0), planted_split(40, 1), planted_split(40, 2), "planted")
    limits = {"max_sentences": 6, "max_words": 12} if family == "han" else {}
    config = training.TrainConfig(
        model=family,
        model_kwargs=KWARGS[family],
        **limits,
        epochs=4,
        batch_size=16,
        min_count=1,
        learning_rate=1e-2,
        patience=4,
    )
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    training.train(config, Path(tempfile.mkdtemp()) / "run", texts=corpus, verbose=0)
    profiler.disable()
    return time.perf_counter() - start, pstats.Stats(profiler)


def step_seconds(stats):
    """``{step: cumulative seconds}`` of :data:`STEPS` (a recursive function counted once)."""
    out = {}
    for label, path, name in STEPS:
        out[label] = round(
            sum(
                row[3]
                for (file, _, function), row in stats.stats.items()
                if file.endswith(path) and function == name
            ),
            1,
        )
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=sorted(KWARGS), default="han")
    parser.add_argument("--label", default=None, help="the results' file name (default: family)")
    args = parser.parse_args(argv)
    wall, stats = profile_run(args.family)
    result = {"family": args.family, "wall_seconds": round(wall, 1), "steps": step_seconds(stats)}
    label = args.label or args.family
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{label}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# One tiny `training.train` of the {args.family}: {result['wall_seconds']} s",
        "",
        "| step | seconds (cumulative) |",
        "|---|---:|",
        *(f"| {step} | {seconds} |" for step, seconds in result["steps"].items()),
        "",
    ]
    (RESULTS / f"{label}.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
