"""Faithfulness of every explanation method on the full model, and whether attention is needed.

For each trained family found (a run directory per family under ``--runs``,
or ``--model PATH``; a family whose model is missing is skipped with the
reason printed):

1. On a balanced, seeded sample of IMDB test reviews (1,000 by default), the
   ERASER deletion test (DeYoung et al. 2020) for each explanation method the
   model has (``hatt.export.attribution.METHODS``: attention, gradient × input,
   Integrated Gradients, the n-gram channel's share) and for random tokens:
   comprehensiveness (the drop of the predicted class's probability when a
   review's top k % tokens are removed) and sufficiency (the drop when only
   they are kept, in order) at k = 5, 10, 20 %, and their AOPC (the mean over
   those three bins); the best method at k = 10 % and its ratio to random
   (goal: >= 5x); the Integrated Gradients completeness error (median, p95).
   See :mod:`hatt.inspect.deletion`.
2. The "is attention needed" check of Wiegreffe & Pinter (2019), for each
   model that pools with attention: test accuracy with the learned attention
   and with uniform attention over the real tokens (the HAN: words and
   sentences), on the full test split. See :mod:`hatt.inspect.uniform`.

    python -m experiments.faithfulness [--runs runs/experiments] [--reviews 1000]
        [--families cnn rnn ...] [--methods ...] [--steps N] [--model PATH ...]

Writes experiments/results/faithfulness.json and faithfulness.md (after each
model, so a long run keeps what it has measured). The families can be
measured in separate runs (``--families han``, one at a time or on different
machines): a run keeps the models an earlier run measured with the same
settings (reviews, ks, draws, steps, seed, labels) and replaces only its own;
each model records the command that measured it. ``--fresh`` starts over.
"""

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from hatt import export
from hatt.data import load_imdb
from hatt.export.attribution import DEFAULT_STEPS, METHODS
from hatt.inspect import balanced_sample, deletion_test, uniform_attention_check
from hatt.inspect.deletion import DEFAULT_KS, RANDOM

EXPERIMENTS = Path(__file__).resolve().parent
RESULTS = EXPERIMENTS / "results"
FAMILIES = ("cnn", "rnn", "transformer", "han")
GOAL_K, GOAL_RATIO = 10, 5.0  # the best method's comprehensiveness at k = 10 % >= 5x random


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", default="runs/experiments", help="folder with one run directory per family"
    )
    parser.add_argument(
        "--model", nargs="+", action="extend", default=[], metavar="PATH",
        help="run directories, .keras files or saved_models/NAME folders (with model.keras) "
        "to measure besides or instead of --runs; the family is read from the model",
    )  # fmt: skip
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz")
    parser.add_argument("--labels", default="binary", choices=("binary", "rating"))
    parser.add_argument("--reviews", type=int, default=1000, help="test reviews (balanced)")
    parser.add_argument("--draws", type=int, default=5, help="random top-k sets per review and k")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="Integrated Gradients")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--uniform-reviews", type=int, default=None,
        help="test reviews for the uniform-attention check (balanced; default: all)",
    )  # fmt: skip
    parser.add_argument("--no-uniform", action="store_true", help="skip the uniform check")
    parser.add_argument("--out", default=str(RESULTS), help="where the JSON and markdown go")
    parser.add_argument(
        "--fresh", action="store_true",
        help="drop the models an earlier run measured (default: keep those measured with the "
        "same settings)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.reviews < 1 or args.draws < 1 or args.steps < 1 or args.batch_size < 1:
        parser.error("--reviews, --draws, --steps and --batch-size must be positive")
    return args


# === Data and models =================================================================


def create_dataset(args):
    """The test split (aclImdb lists all of one class first, so samples are balanced)."""
    return load_imdb(args.data, labels=args.labels, validation_size=0, progress=False)


def sample(split, n, seed):
    """The texts and labels of a balanced, seeded sample of `n` reviews of `split`."""
    labels = np.asarray(split.labels)
    chosen = balanced_sample(labels, n, seed=seed)
    return [split.texts[i] for i in chosen], labels[chosen]


def load_model(path):
    """A Keras-backed Predictor for `path` (a SavedModel folder's model.keras beside it)."""
    path = Path(path)
    if not path.exists():
        raise export.ExportError(f"no model at {path}")
    if path.is_dir() and (path / "model.keras").is_file():
        path = path / "model.keras"  # a run directory, or saved_models/NAME
    predictor = export.load(path)
    predictor.text_model  # noqa: B018  (ExportError: a SavedModel without model.keras)
    return predictor


def create_models(args):
    """`({family: Predictor}, {name: reason skipped})`: the --model paths, then --runs' families.

    A family that no --model path gave is looked for in `--runs/FAMILY`.
    """
    predictors, skipped = {}, {}
    for path in args.model:
        try:
            predictor = load_model(path)
        except export.ExportError as error:
            skipped[str(path)] = str(error)
            continue
        family = predictor.family
        if family not in args.families:
            skipped[str(path)] = f"a {family} model; --families is {' '.join(args.families)}"
        elif family in predictors:
            skipped[str(path)] = f"a second {family} model (measuring {predictors[family].source})"
        else:
            predictors[family] = predictor
    for family in args.families:
        if family not in predictors:
            try:
                predictors[family] = load_model(Path(args.runs) / family)
            except export.ExportError as error:
                skipped[family] = str(error)
    return {f: predictors[f] for f in FAMILIES if f in predictors}, skipped


# === Measurements ====================================================================


def evaluate_faithfulness(predictor, texts, args):
    """The deletion test over the methods asked for that the model has, and its summary."""
    methods = [m for m in args.methods if m in predictor.methods]
    lacking = {m: "not a method of this model" for m in args.methods if m not in methods}
    result = deletion_test(
        predictor, texts, methods=methods, ks=DEFAULT_KS, random_draws=args.draws,
        seed=args.seed, steps=args.steps, batch_size=args.batch_size,
    )  # fmt: skip
    return {**result, "lacking_methods": lacking, **best_method(result)}


def best_method(result):
    """The method whose comprehensiveness at k = 10 % is highest, its ratio to random."""
    key = str(GOAL_K)
    methods = result["methods"]
    if not methods:
        return {"best_method": None, "best_ratio": None, "goal_met": None}
    by_method = result["by_method"]
    best = max(methods, key=lambda m: by_method[m]["by_k"][key]["comprehensiveness"])
    ratio = by_method[best]["by_k"][key]["ratio"]
    return {
        "best_method": best,
        "best_ratio": ratio,
        "goal_met": ratio is not None and ratio >= GOAL_RATIO,
    }


def evaluate_uniform(predictor, test, class_names, args):
    """Learned versus uniform attention accuracy, or `{"skipped": reason}`."""
    if "attention" not in predictor.methods:
        return {"skipped": "no attention (pools without ContextAttention)"}
    if tuple(predictor.class_names) != tuple(class_names):
        return {
            "skipped": f"the model's classes {list(predictor.class_names)} are not the "
            f"data's {list(class_names)} (--labels)"
        }
    if args.uniform_reviews is None:
        texts, labels = list(test.texts), np.asarray(test.labels)
    else:
        texts, labels = sample(test, args.uniform_reviews, args.seed)
    return uniform_attention_check(predictor, texts, labels, batch_size=args.batch_size)


# === Report ==========================================================================


def _number(value, digits=3):
    return "–" if value is None else f"{value:.{digits}f}"


def _ratio(value):
    return "–" if value is None else f"{value:.1f}×"


def method_table(results):
    """Comprehensiveness and sufficiency per family × method (+ random), and AOPC."""
    ks = results["ks"]
    header = (
        "| model | method | "
        + " | ".join(f"comp. k={k} %" for k in ks)
        + " | comp. AOPC | "
        + " | ".join(f"suff. k={k} %" for k in ks)
        + f" | suff. AOPC | comp. k={GOAL_K} % / random | flips k={GOAL_K} % |"
    )
    lines = [header, "|---|---|" + "---|" * (2 * len(ks) + 4)]
    for family, model in results["models"].items():
        faith = model["faithfulness"]
        for method in [*faith["methods"], RANDOM]:
            row = faith["by_method"][method]
            at = row["by_k"]
            cells = [_number(at[str(k)]["comprehensiveness"]) for k in ks]
            cells.append(_number(row["aopc_comprehensiveness"]))
            cells += [_number(at[str(k)]["sufficiency"]) for k in ks]
            cells.append(_number(row["aopc_sufficiency"]))
            goal = at.get(str(GOAL_K), {})
            cells.append(_ratio(goal.get("ratio")) if method != RANDOM else "1×")
            cells.append(f"{goal.get('comprehensiveness_flip_rate', 0):.1%}")
            name = f"**{method}**" if method == faith["best_method"] else method
            lines.append(f"| {family} | {name} | " + " | ".join(cells) + " |")
    return lines


def summary_table(results):
    """Per family: the best method, its ratio to random, attention against it, IG's error."""
    lines = [
        f"| model | best method (comp. k={GOAL_K} %) | × random | goal >= {GOAL_RATIO:.0f}× "
        f"| attention's comp. k={GOAL_K} % vs the best signed method's "
        "| IG completeness error median | p95 |",
        "|---|---|---|---|---|---|---|",
    ]
    key = str(GOAL_K)
    for family, model in results["models"].items():
        faith = model["faithfulness"]
        by_method = faith["by_method"]
        signed = [m for m in faith["methods"] if m != "attention"]
        versus = "–"
        if "attention" in faith["methods"] and signed:
            best_signed = max(signed, key=lambda m: by_method[m]["by_k"][key]["comprehensiveness"])
            versus = (
                f"{by_method['attention']['by_k'][key]['comprehensiveness']:.3f} vs "
                f"{by_method[best_signed]['by_k'][key]['comprehensiveness']:.3f} ({best_signed})"
            )
        error = faith["ig_completeness_error"] or {}
        goal = {True: "yes", False: "no", None: "–"}[faith["goal_met"]]
        lines.append(
            f"| {family} | {faith['best_method'] or '–'} | {_ratio(faith['best_ratio'])} | {goal} "
            f"| {versus} | {_percent(error.get('median'))} | {_percent(error.get('p95'))} |"
        )
    return lines


def _percent(value):
    if value is None:
        return "–"
    return f"{100 * value:.1e}%" if 0 < value < 5e-5 else f"{value:.2%}"  # 0.00% would hide it


def uniform_table(results):
    """Learned versus uniform attention accuracy per family."""
    lines = [
        "| model | attention layers | test reviews | learned attention | uniform attention "
        "| difference | same prediction |",
        "|---|---|---|---|---|---|---|",
    ]
    for family, model in results["models"].items():
        check = model["uniform"]
        if "skipped" in check:
            lines.append(f"| {family} | – | – | – | – | – | skipped: {check['skipped']} |")
            continue
        lines.append(
            f"| {family} | {', '.join(check['attention_layers'])} | {check['reviews']:,} "
            f"| {check['learned_accuracy']:.2%} | {check['uniform_accuracy']:.2%} "
            f"| {100 * check['difference']:+.2f} pt | {check['agreement']:.1%} |"
        )
    return lines


def commands(results):
    """'Command: `…`.', or each command with the models it measured."""
    by_command = {}
    for family, model in results["models"].items():
        by_command.setdefault(model.get("command", results["command"]), []).append(family)
    if len(by_command) <= 1:
        return f"Command: `{next(iter(by_command), results['command'])}`."
    return "Commands: " + "; ".join(f"{', '.join(f)}: `{c}`" for c, f in by_command.items()) + "."


def markdown(results):
    """The results as a markdown section: three tables and their legend."""
    ks = ", ".join(str(k) for k in results["ks"])
    lines = [
        "## Faithfulness of the explanations (deletion test) and is attention needed?",
        "",
        f"On {results['reviews']:,} IMDB test reviews (balanced, seed {results['seed']}), each "
        "method's top k % tokens of a review (signed methods: most supportive of the predicted "
        "class first; attention by weight, the HAN's by word × sentence attention) are removed "
        "(comprehensiveness: the drop of the predicted class's probability; higher is more "
        "faithful) or kept alone, in order (sufficiency: the drop; lower is more faithful), "
        "deleting from the model's own ids (DeYoung et al. 2020, ERASER). AOPC is the mean over "
        f"the bins k = {ks} % (ERASER's paper uses 1, 5, 10, 20, 50 %). Random: "
        f"{results['random_draws']} random top-k sets per review and k. The best method is the "
        f"one with the highest comprehensiveness at k = {GOAL_K} % (in bold); the goal is >= "
        f"{GOAL_RATIO:.0f}× random. Integrated Gradients uses {results['steps']} steps; its "
        "completeness error is |Σ attributions − (f(x) − f(baseline))| / |f(x) − f(baseline)| "
        "per review. The uniform-attention check (Wiegreffe & Pinter 2019) replaces every "
        "attention layer's weights by 1/n over the real tokens (the HAN: words and sentences) "
        "and measures test accuracy again. " + commands(results),
        "",
        *method_table(results),
        "",
        *summary_table(results),
        "",
        *uniform_table(results),
    ]
    if results["skipped"]:
        lines += ["", "Skipped: " + "; ".join(f"{k}: {v}" for k, v in results["skipped"].items())]
    return "\n".join(lines) + "\n"


SETTINGS = ("reviews", "ks", "random_draws", "steps", "seed", "labels")


def earlier_models(results, out, fresh):
    """The models in `out`'s faithfulness.json measured with `results`' settings.

    Measured with other settings (or `fresh`), they are left out, and the
    user is told which.
    """
    path = Path(out) / "faithfulness.json"
    if not path.is_file():
        return {}
    try:
        earlier = json.loads(path.read_text())
        models = dict(earlier["models"])
    except (ValueError, KeyError, TypeError) as error:
        print(f"{path}: not a faithfulness result ({error}); starting a new one", file=sys.stderr)
        return {}
    differ = [k for k in SETTINGS if earlier.get(k) != results[k]]
    if models and (fresh or differ):
        why = "--fresh" if fresh else "other " + ", ".join(differ)
        print(f"{path}: replacing {', '.join(models)} ({why})", file=sys.stderr)
        return {}
    for model in models.values():
        model.setdefault("command", earlier.get("command"))
    return models


def merge(results, earlier):
    """`results` with the `earlier` models it did not measure, in family order."""
    models = {**earlier, **results["models"]}
    order = [f for f in FAMILIES if f in models] + [f for f in models if f not in FAMILIES]
    return {**results, "models": {f: models[f] for f in order}}


def write(results, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "faithfulness.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "faithfulness.md").write_text(markdown(results))


def print_model(family, model):
    faith = model["faithfulness"]
    print(f"  {faith['reviews']} reviews in {model['seconds']['faithfulness']} s; "
          f"best {faith['best_method']} at {_ratio(faith['best_ratio'])} random")  # fmt: skip
    for method in [*faith["methods"], RANDOM]:
        row = faith["by_method"][method]
        print(
            f"  {method:<22} comp. AOPC {row['aopc_comprehensiveness']:.4f}  "
            f"suff. AOPC {row['aopc_sufficiency']:.4f}"
        )
    if "skipped" not in model["uniform"]:
        check = model["uniform"]
        print(
            f"  uniform attention: {check['learned_accuracy']:.2%} -> {check['uniform_accuracy']:.2%}"
        )


def main(argv=None):
    args = parse_args(argv)
    imdb = create_dataset(args)
    texts, _ = sample(imdb.test, args.reviews, args.seed)
    predictors, skipped = create_models(args)
    for name, reason in skipped.items():
        print(f"{name}: skipped ({reason})", file=sys.stderr)
    results = {
        "reviews": len(texts),
        "ks": list(DEFAULT_KS),
        "aopc_bins": list(DEFAULT_KS),
        "random_draws": args.draws,
        "steps": args.steps,
        "seed": args.seed,
        "labels": args.labels,
        "data_source": imdb.source,
        "command": "python -m experiments.faithfulness "
        + shlex.join(sys.argv[1:] if argv is None else argv),
        "skipped": skipped,
        "models": {},
    }
    earlier = earlier_models(results, args.out, args.fresh)
    for family, predictor in predictors.items():
        print(f"{family}: {predictor.source} (methods {', '.join(predictor.methods)})")
        start = time.time()
        faith = evaluate_faithfulness(predictor, texts, args)
        middle = time.time()
        uniform = {"skipped": "--no-uniform"} if args.no_uniform else None
        uniform = uniform or evaluate_uniform(predictor, imdb.test, imdb.class_names, args)
        seconds = {
            "faithfulness": round(middle - start, 1),
            "uniform": round(time.time() - middle, 1),
        }
        results["models"][family] = {
            "source": str(predictor.source),
            "faithfulness": faith,
            "uniform": uniform,
            "seconds": seconds,
            "command": results["command"],
        }
        print_model(family, results["models"][family])
        write(merge(results, earlier), args.out)
    results = merge(results, earlier)
    write(results, args.out)
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
