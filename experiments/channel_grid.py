"""The n-gram channel's settings judged on tuning reviews, without training again.

With ``ngram.fit="separate"`` (every preset) the deep part trains with the channel
at zero, and the channel is fit afterwards on the training split alone. So a
finished run of ``experiments/mix_tuning.py`` can be given another channel
exactly as ``hatt train`` would have fit it: its corpus is read again from the
run's ``config.json``, the channel is fit with other ``ngram`` settings
(``--variant``; a grid of ``alpha`` and ``C`` is chosen as ``ngram.folds`` says, as
``hatt train`` chooses it today: by 5 folds of the training split below 10,000 reviews,
on the validation split above; the questions below were answered when every grid was
chosen on the validation split, and a run's ``config.json`` written before
``ngram.folds`` reads back as ``"auto"``, so their variants now choose by folds; the layer's settings, ``order``, ``buckets``, ``binary`` and
``reduction``, read other features of the run's token ids), refit on training +
validation with ``ngram.refit``, and
weighed against the run's saved deep logits by a mix rule (``--rule``, default the
one in force, ``mix_rule.TODAY``). The mix is scored on the draw's tuning reviews (the run's
``--test`` table). The variant ``run`` is the run's own settings: its channel
logits must equal the ones the run saved (``max_difference``), which checks that
this script fits the channel as ``hatt train`` does. Runs made before the channel's
regressions were fit on the training split's columns only (``nblr.columns_in_use``)
agree to the solver's tolerance, not exactly (up to 0.022 on a logit at ``C`` 300
on the ratings' draws 6 and 7, with the same accuracies, of the channel and of the
mix, as the runs recorded).

**The fourth question, fixed before its runs were looked at (draws 6 and 7)**: on the
small-corpora draws hatt scored below NB-LR on IMDB's 8 ratings at 1,000 labels, by 5.4
points below the better baseline over draws 1-5 as first measured (3.5 with the
baselines' figures corrected), where the model is its channel (the
deep parts are near chance). The presets' channel (``alpha`` 2, ``C`` in {100, 300})
was tuned on the binary task at 22,500 reviews. An exploration on draws 1-5 (those
draws cannot judge it): the channel alone on the ratings, draws 1-3 (a throwaway
script, so no figures here), was best at ``alpha`` 0.5 at every ``C`` tried and at
``C`` 10-30; this script on draw 1's CNN gave the mix 33.82 % with the presets'
channel and 35.40 % at ``alpha`` 0.5, ``C`` 10.
On the polarity task at 500 and 1,000 labels (CNN runs, draws 1-5, this script) no
setting of ``alpha`` in {0.5, 1, 2} and ``C`` in {3, 10, 30, 100} beat the presets' mean
by more than 0.21 points. Candidate:
``hatt.training.settings.scale.MULTICLASS_NGRAM`` (``alpha`` 0.5, ``C`` in {3, 10, 30}, chosen on
validation) above two classes, the presets' settings kept for two. It changes only
the ratings runs, so it is judged on those of draws 6 and 7 (CNN and HAN at 1,000
labels, 4 runs; ``--draws 6 7 --tasks rating``) with mix_tuning's criterion: it is
kept only if its mean tuning accuracy over those runs is higher than the ``run``
variant's (the presets') by more than 0.01 points.

**Judged (``multiclass.md``): kept.** Mean tuning accuracy over the 4 runs 35.05 %
against the presets' 33.46 % (+1.59 points; higher on each run, by 0.84-2.34); the
channel alone 36.29 against 32.84 %. The mix now costs 1.2 points against the channel
alone on these runs (its 8 biases and two weights fit on 100 validation reviews, with
deep parts near chance): taken up as ``mix_tuning.py``'s fifth question, which kept the
mix with its biases held above two classes. NB-LR scored 36.36 and 35.20 %,
TF-IDF + LR 36.68 and 37.90 % on draws 6 and 7 (draw 7's were first given as 37.82
and 39.56 %, scored on draw 6's tuning reviews: ``beside_baselines.py``'s docstring).

**The sixth question, fixed before draws 12-15's runs were looked at**: over the ratings
draws 1-11 at 1,000 labels hatt is level with TF-IDF + LR on average and 0.6 points below
the better baseline of each draw (on 9 of 11); the model is its channel, an NB-weighted
one-vs-rest fit. A channel that is TF-IDF + LR over the channel's hashed n-grams (the
layer's ``idf`` and ``reduction="l2"``: binary features valued by their smoothed IDF on
the training split, divided by the review's L2 norm; ``init="lr"``: one softmax
regression, no NB ratios) was explored on the CNN runs of draws 1, 2, 3, 10 and 11
(``idf_explore.md``; those draws cannot judge it): the mix's mean tuning accuracy was
36.31 % as run, 34.38 % with trigrams (the presets' order 3: rare trigrams, each of high
IDF, fill the norm), 37.05 % with unigrams and bigrams (``order`` 2, as the baseline),
36.42 / 37.00 % with ``min_df`` 2. Candidate: ``tfidf`` =
``{"order": 2, "idf": true, "reduction": "l2", "init": "lr", "C": [0.5, 1, 2, 4, 8, 16]}``
above two classes, replacing ``hatt.training.settings.scale.MULTICLASS_NGRAM``'s NB-LR settings.
Judged on draws 12-15's ratings runs (CNN and HAN at 1,000 labels, 8 runs, made with
the settings in force before; ``--draws 12 13 14 15 --tasks rating``) under the rule in
force, with mix_tuning's criterion: it is kept only if its mean tuning accuracy over
those runs is higher than the ``run`` variant's by more than 0.01 points.

**Judged (``tfidf.md``): kept.** 36.27 % against 36.00 % over the 8 runs (higher on 6);
``hatt.training.settings.scale.MULTICLASS_NGRAM`` is this channel.

**The seventh question, fixed before draws 16-19's runs were looked at**: the kept
channel's ``C``, chosen among six on 100 validation reviews, is noisy: on draw 15 both
runs chose ``C`` 1 and lost two points. An exploration on the 16 runs of draws 1-3 and
10-15 (``fixed_c.md``; those draws cannot judge it): the grid 36.41 %, ``C`` fixed at 4
36.36 %, **at 8 37.13 %** (the channel as run 36.11 %). Candidate: ``c8`` = the kept
channel with ``"C": 8.0``, no grid. Judged on draws 16-19's ratings runs (CNN and HAN at
1,000 labels, 8 runs; ``--draws 16 17 18 19 --tasks rating``) against the ``tfidf``
variant (the channel in force) under the rule in force: it replaces the grid only if
its mean tuning accuracy over those runs is higher by more than 0.01 points.
**Judged (``fixed_c_judged.md``): kept.** 36.97 % against the grid's 36.30 % over the 8
runs (the NB-LR channel as run: 35.97 %); ``MULTICLASS_NGRAM``'s ``C`` is 8.

Run:  python -m experiments.channel_grid [--draws 6 7] [--tasks rating] [--methods cnn]
      --variant NAME='{"alpha": [...], "C": [...]}' [--variant ...]
      [--runs runs/mix_tuning] [--out experiments/results/mix_rule] [--name channel_grid]
The sixth question's exploration and judgement:
      python -m experiments.channel_grid --draws 1 2 3 10 11 --tasks rating --methods cnn
      --name idf_explore --variant idf='{...}' --variant idf_o2='{...}' ... (idf_explore.md)
      python -m experiments.channel_grid --draws 12 13 14 15 --tasks rating --name tfidf
      --variant tfidf='{"order": 2, "idf": true, "reduction": "l2", "init": "lr",
      "C": [0.5, 1.0, 2.0, 4.0, 8.0, 16.0]}'
The seventh question's judgement (its exploration: --draws 1 2 3 10 11 12 13 14 15
      --name fixed_c with the variants tfidf, c4 and c8):
      python -m experiments.channel_grid --draws 16 17 18 19 --tasks rating --name fixed_c_judged
      --variant tfidf='{"order": 2, "idf": true, "reduction": "l2", "init": "lr",
      "C": [0.5, 1.0, 2.0, 4.0, 8.0, 16.0]}' --variant c8='{"order": 2, "idf": true,
      "reduction": "l2", "init": "lr", "C": 8.0}'
The fourth question's judgement:
      python -m experiments.channel_grid --draws 6 7 --tasks rating
      --variant multiclass='{"alpha": 0.5, "C": [3.0, 10.0, 30.0]}' --rule anchored
      --name multiclass
(``--rule anchored``: the rule in force then; today's holds the biases above two classes.)
"""

import argparse
import dataclasses
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from experiments import mix_rule, mix_tuning  # the rule in force; the tuning runs

ROOT = Path(__file__).resolve().parents[1]
RUN = "run"  # the variant of the run's own settings
# ngram settings that are the channel layer's (NgramSettings name -> NgramLogit's): a
# variant with them reads other features of the same token ids (the deep part is the run's)
LAYER_SETTINGS = {
    "order": "ngram",
    "buckets": "buckets",
    "binary": "binary",
    "reduction": "reduction",
    "idf": "idf",
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=str(mix_tuning.RUNS))
    parser.add_argument("--draws", type=int, nargs="+", help="these draws' runs (default: all)")
    parser.add_argument("--tasks", nargs="+", help="these tasks' runs (default: all)")
    parser.add_argument("--methods", nargs="+", help="these methods' runs (default: all)")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="ngram settings to fit the channel with, e.g. "
        'wide=\'{"alpha": [0.5, 1, 2], "C": [1, 10, 100]}\' or bigrams=\'{"order": 2}\' '
        "(repeatable)",
    )
    parser.add_argument(
        "--rule",
        default=mix_rule.TODAY,
        help=f"the mix rule (mix_rule's) that weighs each channel (default: {mix_rule.TODAY!r}, "
        "the rule in force)",
    )
    parser.add_argument("--out", default=str(mix_tuning.RESULTS))
    parser.add_argument("--name", default="channel_grid", help="the report's file names")
    return parser.parse_args(argv)


def parse_variants(pairs):
    """``{name: ngram overrides}`` from ``NAME=JSON`` pairs, the run's own first."""
    variants = {RUN: {}}
    for pair in pairs:
        name, _, text = pair.partition("=")
        if not name or name in variants:
            raise SystemExit(f"Expected --variant NAME=JSON with a new NAME. Received: {pair!r}")
        try:
            variants[name] = json.loads(text)
        except ValueError as error:
            raise SystemExit(f"--variant {name}: not JSON ({error}). Received: {text!r}") from None
    return variants


# === The channel of a run, fit again ===


class RunChannel:
    """A finished run's corpus and channel layer: its counts, ready for other settings."""

    def __init__(self, run_dir):
        import keras

        import hatt  # noqa: F401  (registers the layers)
        from hatt.training import Corpus, TrainConfig

        self.run_dir = Path(run_dir)
        values = json.loads((self.run_dir / "config.json").read_text())
        config = TrainConfig.from_dict(values, saved=True)  # as asked: scaled again below
        corpus = Corpus.open(config)
        self.config = config.fit_to_corpus(corpus.class_counts("train"))  # as the run did
        model = keras.saving.load_model(self.run_dir / "model.keras", compile=False)
        self.layer = model.get_layer("ngram_logit")
        self.ids = {
            split: corpus.in_memory_split(split) for split in ("train", "validation", "test")
        }
        self._counts = {}  # (order, buckets) -> {split: (counts, labels)}

    def channel(self, overrides):
        """The run's channel layer with the layer settings of ``overrides``
        (:data:`LAYER_SETTINGS`), and its counts of each split."""
        from hatt.training import channel_counts

        changes = {LAYER_SETTINGS[k]: v for k, v in overrides.items() if k in LAYER_SETTINGS}
        layer = self.layer
        if changes:
            layer = type(layer).from_config({**layer.get_config(), **changes})
        key = (layer.ngram, layer.buckets)
        if key not in self._counts:
            self._counts[key] = {
                split: (channel_counts(layer, ids), np.asarray(labels))
                for split, (ids, labels) in self.ids.items()
            }
        return layer, self._counts[key]

    def logits(self, overrides):
        """The channel's validation (training-split fit) and test (the refit with
        ``ngram.refit``) logits with their intercepts, and the fit's description."""
        from hatt.training import channel_features, fit_ngram_channel, refit_ngram_channel

        layer, splits = self.channel(overrides)
        settings = dataclasses.replace(self.config.ngram, **overrides)
        config = dataclasses.replace(self.config, ngram=settings)
        train, validation, test = (splits[s] for s in ("train", "validation", "test"))
        weights, intercept, info = fit_ngram_channel(layer, config, *train, validation)
        out = {"validation": channel_features(layer, validation[0]) @ weights + intercept}
        if settings.refit:  # with the layer's idf, the refit sets the IDF of both splits
            weights, intercept, info["refit"] = refit_ngram_channel(
                layer, config, info, train, validation
            )
        out["test"] = channel_features(layer, test[0]) @ weights + intercept
        return {k: np.asarray(v, np.float64) for k, v in out.items()}, info


def score(run_dir, channel, rule=mix_rule.TODAY):
    """The mix of ``rule`` (mix_rule's) on the run's saved deep logits and ``channel``'s
    logits (mix_tuning's scores), and the channel alone, on the tuning reviews."""
    from hatt.training import logit_accuracy

    y = mix_rule.load_split(run_dir, "test")[2]
    scores = mix_tuning.tuning_scores(run_dir, channel)[rule]
    return {**scores, "channel_accuracy": logit_accuracy(channel["test"], y)}


def cached_logits(cache, run_dir, name):
    """A cached variant's channel logits (``channel-NAME.npz``), or ``None``. The ``run``
    variant cached before the logits were kept reads the run's own, which it reproduces
    (``max_difference``)."""
    if cache.with_suffix(".npz").is_file():
        with np.load(cache.with_suffix(".npz")) as saved:
            return {split: saved[split] for split in ("validation", "test")}
    if name == RUN:
        return {s: mix_rule.load_split(run_dir, s)[1] for s in ("validation", "test")}
    return None


def judge_run(run_dir, variants, rule=mix_rule.TODAY):
    """Every variant's channel for one run, scored under ``rule``; each fit cached beside
    the run per variant's settings: ``channel-NAME.json`` (its fit) and
    ``channel-NAME.npz`` (its ``validation`` and ``test`` logits with the intercept, as
    the run's own files hold the run's), so another rule scores them without a fit."""
    run_channel = None
    result = {"run_dir": str(run_dir), "variants": {}}
    for name, overrides in variants.items():
        cache = Path(run_dir) / f"channel-{name}.json"
        if cache.is_file():
            cached = json.loads(cache.read_text())
            channel = cached_logits(cache, run_dir, name)
            if cached["overrides"] == overrides and channel is not None:
                result["variants"][name] = {**cached, **score(run_dir, channel, rule)}
                continue
        if run_channel is None:
            run_channel = RunChannel(run_dir)
        start = time.perf_counter()
        channel, info = run_channel.logits(overrides)
        entry = {"overrides": overrides, "fit": info}
        entry["seconds"] = round(time.perf_counter() - start, 1)
        if name == RUN:
            saved = {s: mix_rule.load_split(run_dir, s)[1] for s in ("validation", "test")}
            entry["max_difference"] = max(
                float(np.max(np.abs(saved[s] - channel[s]))) for s in saved
            )
        np.savez(cache.with_suffix(".npz"), **channel)
        cache.write_text(json.dumps(entry, indent=2, default=float) + "\n")
        entry = {**entry, **score(run_dir, channel, rule)}
        print(f"{run_dir} {name}: {100 * entry['accuracy']:.2f} %", flush=True)
        result["variants"][name] = entry
    return result


# === The report ===


def markdown(result, command):
    variants = list(result["variants"])
    runs = result["runs"]
    lines = [
        "# The n-gram channel's settings at small sizes, judged on tuning reviews",
        "",
        f"Written by `{command}`: each run's channel fit again with each variant's "
        "ngram settings (chosen on its validation split, as `hatt train` does), weighed "
        f"against the run's saved deep logits by the mix rule {result['rule']!r}, "
        "scored on the draw's tuning reviews. `run` is the run's own settings "
        f"(largest difference from its saved channel logits: "
        f"{max(r['variants'][RUN]['max_difference'] for r in runs):.2e}).",
        "",
        "| variant | settings | runs | tuning accuracy (mean) | tuning log loss (mean) "
        "| channel alone (mean) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name in variants:
        entries = [run["variants"][name] for run in runs]
        settings = json.dumps(result["variants"][name]) if result["variants"][name] else "as run"
        lines.append(
            f"| {name} | `{settings}` | {len(entries)} | "
            f"{100 * np.mean([e['accuracy'] for e in entries]):.2f} % | "
            f"{np.mean([e['log_loss'] for e in entries]):.4f} | "
            f"{100 * np.mean([e['channel_accuracy'] for e in entries]):.2f} % |"
        )
    lines += ["", "Per run: tuning accuracy of the mix (channel alone), the chosen alpha / C.", ""]
    lines.append("| run | " + " | ".join(variants) + " |")
    lines.append("|---|" + "---:|" * len(variants))
    for run in runs:
        cells = []
        for name in variants:
            e = run["variants"][name]
            alpha = f"α {e['fit']['alpha']:g} " if "alpha" in e["fit"] else ""  # not "lr"'s
            cells.append(
                f"{100 * e['accuracy']:.2f} % ({100 * e['channel_accuracy']:.2f} %) "
                f"{alpha}C {e['fit']['C']:g}"
            )
        lines.append(f"| {run['run_dir']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    variants = parse_variants(args.variant)
    run_dirs = [
        run_dir
        for run_dir in mix_tuning.finished_runs(args.runs, args.draws)
        if (args.methods is None or Path(run_dir).name in args.methods)
        and (args.tasks is None or Path(run_dir).parent.parent.name in args.tasks)
    ]
    if not run_dirs:
        raise SystemExit(f"No finished run under {args.runs} (draws {args.draws}).")
    result = {
        "variants": variants,
        "rule": args.rule,
        "runs": [judge_run(r, variants, args.rule) for r in run_dirs],
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps(result, indent=2, default=float) + "\n")
    command = "python -m experiments.channel_grid"
    for flag in ("draws", "tasks", "methods"):
        if getattr(args, flag):
            command += f" --{flag} " + " ".join(map(str, getattr(args, flag)))
    command += "".join(f" --variant {n}='{json.dumps(v)}'" for n, v in variants.items() if n != RUN)
    if args.rule != mix_rule.TODAY:
        command += f" --rule {shlex.quote(args.rule)}"
    if args.name != "channel_grid":
        command += f" --name {args.name}"
    table = markdown(result, command)
    (out / f"{args.name}.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
