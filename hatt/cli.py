"""The ``hatt`` command: a thin shell over the library.

Subcommands: ``hatt data`` describes the IMDB corpus (split sizes and length
statistics), ``hatt train`` trains and exports a family, ``hatt export``
exports a run directory, ``hatt predict`` classifies reviews.
"""

import argparse
import json
import shlex
import sys

import hatt


def _add_data_arguments(parser):
    parser.add_argument(
        "--data",
        metavar="PATH",
        default=None,
        help="aclImdb folder or .tar.gz (default: $HATT_IMDB, then tensorflow-datasets)",
    )
    parser.add_argument("--seed", type=int, default=1337, help="seed of the validation split")
    parser.add_argument(
        "--validation-size", type=int, default=2500, help="reviews carved out of train"
    )
    parser.add_argument(
        "--limit", type=int, default=None, help="keep a stratified subset of N per split"
    )


def _summary(values):
    import numpy as np

    values = np.asarray(values)
    if values.size == 0:
        return {"mean": 0.0, "median": 0.0, "p90": 0.0, "p99": 0.0, "max": 0}
    return {
        "mean": round(float(values.mean()), 1),
        "median": round(float(np.median(values)), 1),
        "p90": round(float(np.percentile(values, 90)), 1),
        "p99": round(float(np.percentile(values, 99)), 1),
        "max": int(values.max()),
    }


def data_statistics(imdb):
    """Split sizes and length statistics (words, sentences, words per sentence)."""
    from hatt.data import tokenize

    stats = {"source": imdb.source, "splits": {}}
    for name in ("train", "validation", "test"):
        split = getattr(imdb, name)
        words_per_review, sentences_per_review, words_per_sentence = [], [], []
        for start in range(0, len(split), 4096):
            tokens = tokenize(split.texts[start : start + 4096])
            sentence_lengths = tokens.row_lengths(axis=2)
            words_per_review.extend(tokens.merge_dims(1, 2).row_lengths().numpy().tolist())
            sentences_per_review.extend(tokens.row_lengths().numpy().tolist())
            words_per_sentence.extend(sentence_lengths.flat_values.numpy().tolist())
        stats["splits"][name] = {
            "reviews": len(split),
            "positive": int(split.labels.sum()),
            "negative": int(len(split) - split.labels.sum()),
            "words_per_review": _summary(words_per_review),
            "sentences_per_review": _summary(sentences_per_review),
            "words_per_sentence": _summary(words_per_sentence),
        }
    return stats


def _print_statistics(stats):
    print(f"IMDB from {stats['source']}")
    header = f"{'split':<11}{'reviews':>8}{'pos':>7}{'neg':>7}  {'':<20}"
    header += "".join(f"{k:>9}" for k in ("mean", "median", "p90", "p99", "max"))
    print(header)
    for name, split in stats["splits"].items():
        first = True
        for key in ("words_per_review", "sentences_per_review", "words_per_sentence"):
            s = split[key]
            prefix = (
                f"{name:<11}{split['reviews']:>8}{split['positive']:>7}{split['negative']:>7}"
                if first
                else " " * 33
            )
            print(
                f"{prefix}  {key:<20}"
                + "".join(f"{s[k]:>9}" for k in ("mean", "median", "p90", "p99", "max"))
            )
            first = False


def cmd_data(args):
    from hatt.data import load_imdb

    imdb = load_imdb(
        args.data,
        validation_size=args.validation_size,
        seed=args.seed,
        limit=args.limit,
        progress=not args.quiet,
    )
    stats = data_statistics(imdb)
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        _print_statistics(stats)
    return 0


def cmd_train(args):
    import time
    from pathlib import Path

    from hatt import training

    values = {"model": args.model}
    if args.config:
        try:
            values = training.merge_config(values, json.loads(Path(args.config).read_text()))
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"Could not read --config {args.config!r}: {error}") from error
        values["model"] = args.model
    values = training.merge_config(values, training.parse_overrides(args.set))
    for key in ("data", "epochs", "seed", "limit", "strategy", "prepared"):
        if getattr(args, key) is not None:
            values[key] = getattr(args, key)
    if args.seed is not None:  # a seed asked for on the command line: reproducible run
        values["deterministic"] = True
    if values.get("prepared"):  # the corpus fixes the data and vocabulary settings
        values = training.merge_config(values, training.prepared_settings(values["prepared"]))
    config = training.TrainConfig.from_dict(values)
    run_dir = Path(
        args.run_dir or Path("runs") / f"{config.model}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    # Quoted so that the recorded command can be pasted back into a shell.
    command = shlex.join(["hatt", *(sys.argv[1:] if args.argv is None else args.argv)])
    metrics = training.train(config, run_dir, command=command, restart=args.restart)
    print(training.summary(metrics, run_dir))
    if args.export_dir:
        from hatt import export

        result = export.export(run_dir, Path(args.export_dir) / config.model)
        print(
            f"  exported to           {result.saved_model} (SavedModel, version "
            f"{result.version}) and {result.keras_file}"
        )
    return 0


def cmd_export(args):
    from hatt import export

    result = export.export(args.run_dir, args.out)
    print(f"Exported {args.run_dir} ({result.family}, word scores: {result.score_kind})")
    print(f"  SavedModel   {result.saved_model}   (version {result.version})")
    print(f"  Keras        {result.keras_file}")
    print(f"  metadata     {result.path / export.EXPORT_FILE}")
    print(f"  took         {result.seconds:.1f} s")
    return 0


def _file_reviews(name):
    """(line index, review) for the non-blank lines of a file or stdin; bad UTF-8 repaired."""
    stream = sys.stdin.buffer if name == "-" else open(name, "rb")  # noqa: SIM115
    try:
        for index, line in enumerate(stream):
            text = line.decode("utf-8", errors="replace").rstrip("\r\n")
            if text.strip():
                yield index, text
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _chunks(items, size):
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def cmd_predict(args):
    from pathlib import Path

    from hatt import export

    if bool(args.texts) == bool(args.file):
        raise ValueError("Give the reviews either as TEXT arguments or with --file F (not both).")
    if args.batch_size < 1:
        raise ValueError(f"Expected --batch-size >= 1. Received: {args.batch_size}")
    if not 0.0 <= args.threshold <= 1.0:
        raise ValueError(f"Expected --threshold in [0, 1]. Received: {args.threshold}")
    if args.file and args.file != "-" and not Path(args.file).is_file():
        raise ValueError(f"No such file: --file {args.file!r}")
    predictor = export.load(args.model)
    reviews = _file_reviews(args.file) if args.file else enumerate(args.texts)
    for chunk in _chunks(reviews, args.batch_size):
        probabilities = predictor.predict_proba([t for _, t in chunk], batch_size=args.batch_size)
        for (text_id, _), p in zip(chunk, probabilities, strict=True):
            label = "positive" if p >= args.threshold else "negative"
            print(
                json.dumps({"text_id": text_id, "probability": round(float(p), 6), "label": label})
            )
        sys.stdout.flush()
    return 0


def cmd_prepare(args):
    from pathlib import Path

    from hatt import training
    from hatt.data import load_imdb
    from hatt.data import prepared as prepared_lib

    values = training.merge_config({"model": args.model}, training.parse_overrides(args.set))
    for key in ("data", "seed", "limit"):
        if getattr(args, key) is not None:
            values[key] = getattr(args, key)
    config = training.TrainConfig.from_dict(values)
    imdb = load_imdb(
        config.data,
        validation_size=config.validation_size,
        validation_split=config.validation_split,
        seed=config.seed,
        limit=config.limit,
    )
    settings = {k: getattr(config, k) for k in training.PREPARED_FIELDS}
    settings["seed"] = config.seed
    manifest = prepared_lib.prepare(
        imdb,
        training.create_vectorizer(config),
        args.out,
        model=config.model,
        shard_size=args.shard_size,
        settings=settings,
        progress=not args.quiet,
    )
    splits = manifest["splits"]
    print(
        f"\nPrepared {manifest['layout']} ids for {config.model} in {Path(args.out)}: "
        + ", ".join(
            f"{n} {s['reviews']} reviews / {len(s['shards'])} shards" for n, s in splits.items()
        )
        + f"; vocabulary {manifest['vocabulary_size']} ids"
    )
    print(f"Train with: hatt train {config.model} --prepared {args.out}")
    return 0


def _inspect_texts(args):
    """The reviews (and true labels, for --imdb-test) that `hatt inspect` explains."""
    from pathlib import Path

    if args.text is not None:
        return list(args.text), None
    if args.file is not None:
        if args.file != "-" and not Path(args.file).is_file():
            raise ValueError(f"No such file: --file {args.file!r}")
        texts = [text for _, text in _file_reviews(args.file)]
        if not texts:
            raise ValueError(
                f"Expected --file to hold at least one review. Received: {args.file!r}"
            )
        return texts, None
    from hatt.data import load_imdb
    from hatt.inspect.explain import balanced_sample

    if args.imdb_test < 1:
        raise ValueError(f"Expected --imdb-test to be >= 1. Received: --imdb-test={args.imdb_test}")
    test = load_imdb(args.data, validation_size=0, progress=False).test  # test split only
    chosen = balanced_sample(test.labels, args.imdb_test, seed=args.seed)
    return [test.texts[i] for i in chosen], [int(test.labels[i]) for i in chosen]


def cmd_inspect(args):
    from pathlib import Path

    from hatt import inspect as hatt_inspect

    texts, labels = _inspect_texts(args)
    explanations = hatt_inspect.explain(args.model, texts, labels=labels)
    if not args.quiet:
        hatt_inspect.to_terminal(explanations, color=False if args.no_color else None)
    written = []
    if args.html:
        written.append(hatt_inspect.write_html(explanations, args.html))
    if args.png:
        written.extend(hatt_inspect.write_pngs(explanations, args.png))
    if args.json:
        Path(args.json).write_text(
            json.dumps([e.to_dict() for e in explanations], indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        written.append(args.json)
    kind = explanations[0].score_kind if explanations else "?"
    print(f"{len(explanations)} review(s) explained with {kind} scores", file=sys.stderr)
    for path in written:
        print(f"  wrote {path}", file=sys.stderr)
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="hatt",
        description="Attention-based document classifiers for Keras 3, on IMDB reviews.",
    )
    parser.add_argument("--version", action="version", version=f"hatt {hatt.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    data = sub.add_parser("data", help="load IMDB and print split sizes and length statistics")
    _add_data_arguments(data)
    data.add_argument("--json", action="store_true", help="print the statistics as JSON")
    data.add_argument("--quiet", action="store_true", help="no progress bars")
    data.set_defaults(func=cmd_data)

    train = sub.add_parser(
        "train",
        help="train a model family on IMDB, evaluate on the test split, export it",
        description="Train MODEL on IMDB: vocabulary from the training split, early stopping "
        "on the validation split (best epoch restored), one evaluation on the full test split.",
    )
    train.add_argument("model", choices=("cnn", "rnn", "transformer", "han"))
    train.add_argument("--data", metavar="PATH", default=None, help="aclImdb folder or .tar.gz")
    train.add_argument("--config", metavar="FILE.json", help="settings (TrainConfig keys)")
    train.add_argument(
        "--set",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="override one setting, e.g. --set batch_size=64 --set model_kwargs.units=32",
    )
    train.add_argument("--epochs", type=int, default=None)
    train.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed Python, NumPy and Keras and turn on op determinism (reproducible run)",
    )
    train.add_argument("--limit", type=int, default=None, help="stratified subset per split")
    train.add_argument(
        "--run-dir",
        default=None,
        help="default: runs/MODEL-TIMESTAMP; the same command with the same --run-dir resumes "
        "an interrupted run",
    )
    train.add_argument(
        "--export-dir", default="saved_models", help="where the model is exported ('' to skip)"
    )
    train.add_argument(
        "--strategy",
        choices=training_strategies(),
        default=None,
        help="tf.distribute strategy: default (one device), mirrored (the machine's GPUs or "
        "logical CPUs), multiworker (reads TF_CONFIG); batch_size is the global batch",
    )
    train.add_argument(
        "--prepared", metavar="DIR", default=None, help="train from `hatt prepare` shards"
    )
    train.add_argument(
        "--restart",
        action="store_true",
        help="discard an interrupted or finished run in --run-dir and train from the start "
        "(without it, the same command resumes an interrupted run)",
    )
    train.set_defaults(func=cmd_train)

    export = sub.add_parser(
        "export",
        help="export a run directory as a SavedModel (raw text in) and a .keras file",
        description="Write OUT/VERSION/ (a SavedModel in TF Serving's layout, the next free "
        "version) and OUT/model.keras. The serving_default signature takes `text` (tf.string, "
        "[None]) and returns probability, tokens, word_attention (the CNN: gradient x input "
        "saliency) and, for the HAN, sentence_attention.",
    )
    export.add_argument("run_dir", metavar="RUN_DIR", help="a run directory of `hatt train`")
    export.add_argument(
        "--out", metavar="DIR", default=None, help="default: saved_models/FAMILY (cnn, rnn, ...)"
    )
    export.set_defaults(func=cmd_export)

    predict = sub.add_parser(
        "predict",
        help="classify reviews; prints JSON lines {text_id, probability, label}",
        description="Classify reviews with a trained model. Prints one JSON line per review: "
        '{"text_id", "probability", "label"}; label is "positive" when the probability of the '
        'positive class is >= 0.5 (--threshold), else "negative". text_id is the index of the '
        "TEXT argument, or the 0-based line number in --file (one review per line; blank lines "
        "are skipped; invalid UTF-8 is repaired).",
    )
    predict.add_argument(
        "model",
        metavar="MODEL",
        help="a SavedModel folder, a saved_models/NAME folder (latest version), a .keras file "
        "or a run directory",
    )
    predict.add_argument("texts", metavar="TEXT", nargs="*", help="reviews to classify")
    predict.add_argument(
        "--file", metavar="F", default=None, help="a text file, one review per line ('-': stdin)"
    )
    predict.add_argument("--batch-size", type=int, default=64, help="reviews per model call")
    predict.add_argument(
        "--threshold", type=float, default=0.5, help="probability from which a review is positive"
    )
    predict.set_defaults(func=cmd_predict)

    prepare = sub.add_parser(
        "prepare",
        help="tokenize IMDB once into TFRecord shards for `hatt train --prepared`",
        description="Fit the vocabulary on the training split and write the tokenized "
        "train / validation / test splits as TFRecord shards, with vectorizer.json and a "
        "prepared.json manifest.",
    )
    prepare.add_argument("--data", metavar="PATH", default=None, help="aclImdb folder or .tar.gz")
    prepare.add_argument("--out", metavar="DIR", required=True, help="output folder (new)")
    prepare.add_argument(
        "--model",
        choices=("cnn", "rnn", "transformer", "han"),
        default="han",
        help="family whose layout to write (flat for cnn/rnn/transformer, nested for han)",
    )
    prepare.add_argument("--shard-size", type=int, default=5000, help="reviews per shard")
    prepare.add_argument(
        "--set", metavar="KEY=VALUE", action="append", default=[], help="vocabulary settings"
    )
    prepare.add_argument("--seed", type=int, default=None, help="seed of the validation split")
    prepare.add_argument("--limit", type=int, default=None, help="stratified subset per split")
    prepare.add_argument("--quiet", action="store_true", help="no progress bars")
    prepare.set_defaults(func=cmd_prepare)

    inspect = sub.add_parser(
        "inspect",
        help="show which words and sentences a trained model's predictions rest on",
        description="Explain MODEL's predictions: attention weights (saliency for the CNN) "
        "per sentence and word, in the terminal, as one HTML page and as PNG heat maps. "
        "The HTML and PNG colours are relative to each review.",
    )
    inspect.add_argument(
        "model",
        metavar="MODEL",
        help="a SavedModel folder, a saved_models/NAME folder (latest version), a .keras file "
        "or a run directory",
    )
    source = inspect.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", action="append", metavar="T", help="a review (repeatable)")
    source.add_argument(
        "--file", metavar="F", help="a UTF-8 text file, one review per line ('-': stdin)"
    )
    source.add_argument(
        "--imdb-test",
        type=int,
        metavar="N",
        help="N test reviews (balanced, seeded sample) with their true labels",
    )
    inspect.add_argument("--data", metavar="PATH", default=None, help="aclImdb folder or .tar.gz")
    inspect.add_argument("--seed", type=int, default=1337, help="seed of the --imdb-test sample")
    inspect.add_argument("--html", metavar="OUT.html", help="write one page with every review")
    inspect.add_argument(
        "--png", metavar="OUT.png", help="write a heat map (several reviews: OUT_1.png, ...)"
    )
    inspect.add_argument("--json", metavar="OUT.json", help="write the explanations as JSON")
    inspect.add_argument("--no-color", action="store_true", help="plain terminal output")
    inspect.add_argument("--quiet", action="store_true", help="no terminal view")
    inspect.set_defaults(func=cmd_inspect)
    return parser


def training_strategies():
    return ("default", "mirrored", "multiworker")


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    from hatt.data import DataNotFoundError

    try:
        return args.func(args)
    except (DataNotFoundError, ValueError) as error:
        print(f"hatt {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
