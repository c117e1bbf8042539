"""The ``hatt`` command: a thin shell over the library, one small function per subcommand.

Subcommands: ``hatt data`` describes a corpus (classes, split sizes and length
statistics), ``hatt train`` trains and exports a family (its preset unless
told otherwise), ``hatt export`` exports a run directory, ``hatt predict``
classifies reviews, ``hatt prepare`` tokenizes IMDB into shards, ``hatt
inspect`` shows what a prediction rests on.

Errors a user can fix — a bad setting, missing data, a path that cannot be
read or written — are one line on standard error and exit status 2.
"""

import argparse
import json
import shlex
import sys

import hatt
from hatt.models import FAMILIES
from hatt.serve.cli import add_serve_command  # cheap: Starlette loads on first use
from hatt.training.distribute import STRATEGIES

MODEL_HELP = (
    "a SavedModel folder, a saved_models/NAME folder (latest version), a .keras file "
    "or a run directory"
)


# === Shared arguments ===============================================================


def _add_data(parser):
    parser.add_argument(
        "--data",
        metavar="PATH",
        default=None,
        help="the corpus: a folder with a subfolder per class (or a .tar.gz / .zip of one), "
        "a .csv / .tsv / .jsonl table (optionally .gz), tfds:NAME, or an aclImdb folder or "
        ".tar.gz (default: IMDB from $HATT_IMDB, then tensorflow-datasets)",
    )
    parser.add_argument(
        "--labels",
        choices=("binary", "rating"),
        default=None,
        help="IMDB only: binary (negative / positive, the default) or rating (8 classes: "
        "the star ratings 1-4 and 7-10 in the file names)",
    )
    parser.add_argument(
        "--text-column", default=None, metavar="NAME", help="a table's text column (default: text)"
    )
    parser.add_argument(
        "--label-column",
        default=None,
        metavar="NAME",
        help="a table's label column (default: label)",
    )
    parser.add_argument(
        "--test",
        metavar="PATH",
        default=None,
        help="a separate test table or folder (default: the data's own test split, else "
        "20 %% of it carved out, stratified)",
    )
    parser.add_argument(
        "--classes",
        metavar="A,B,C",
        default=None,
        help="the class names in this order (default: sorted, numerically for numbers); "
        "a label not among them is an error",
    )


def data_options(args):
    """The :func:`hatt.data.load_corpus` keyword arguments that ``_add_data``'s flags give.

    ``source`` (``--data``), ``labels``, ``text_column``, ``label_column``,
    ``test`` and ``classes`` (``--classes a,b,c`` as a list); the split
    options (``validation_size``, ``seed``, ``limit``) are the caller's.
    """
    classes = None
    if args.classes is not None:
        classes = [name.strip() for name in args.classes.split(",")]
        if len(classes) < 2 or not all(classes) or len(set(classes)) != len(classes):
            raise ValueError(
                "Expected --classes to be two or more distinct class names separated by "
                f"commas. Received: --classes {args.classes!r}"
            )
    options = {
        "source": args.data,
        "labels": args.labels,
        "text_column": args.text_column,
        "label_column": args.label_column,
        "test": args.test,
        "classes": classes,
    }
    return {key: value for key, value in options.items() if value is not None}


def _add_seed(parser, help, default=None):
    parser.add_argument("--seed", type=int, default=default, help=help)


def _add_limit(parser):
    parser.add_argument(
        "--limit", type=int, default=None, help="keep a stratified subset of N per split"
    )


def _add_set(parser, help):
    parser.add_argument("--set", metavar="KEY=VALUE", action="append", default=[], help=help)


def _add_quiet(parser, help="no progress bars"):
    parser.add_argument("--quiet", action="store_true", help=help)


def _add_text_file(parser, help):
    parser.add_argument("--file", metavar="F", default=None, help=help)


def _read_file(name):
    """The reviews of ``--file`` (a repaired line count goes to standard error)."""
    texts = hatt.data.read_texts(name)
    if texts.replaced_lines:
        where = "standard input" if name == "-" else name
        print(
            f"hatt: {where}: {texts.replaced_lines} line(s) held invalid UTF-8 "
            "(replaced with U+FFFD)",
            file=sys.stderr,
        )
    return texts


# === hatt data ======================================================================


def _split_size(text):
    """``--validation-size``: a number of documents (int) or a share in (0, 1) (float)."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def cmd_data(args):
    corpus = hatt.data.load_corpus(
        **data_options(args),
        validation_size=args.validation_size,
        seed=args.seed,
        limit=args.limit,
        progress=not args.quiet,
    )
    stats = hatt.data.statistics(corpus)
    print(json.dumps(stats, indent=2) if args.json else hatt.data.format_statistics(stats))
    return 0


def add_data_command(sub):
    data = sub.add_parser(
        "data",
        help="load a corpus and print its classes, split sizes and length statistics",
        description="Load a corpus (IMDB by default, or --data PATH) as training would, and "
        "print the documents per class in each split, the length statistics, what reading "
        "skipped, and a warning when the largest class has more than 5x the smallest's "
        "documents.",
    )
    _add_data(data)
    _add_seed(data, "seed of the carved splits", default=1337)
    data.add_argument(
        "--validation-size",
        type=_split_size,
        default=None,
        metavar="N",
        help="documents carved out of train for validation (an int, or a share such as 0.1; "
        "default: 10 %%, at most 2500)",
    )
    _add_limit(data)
    data.add_argument("--json", action="store_true", help="print the statistics as JSON")
    _add_quiet(data)
    data.set_defaults(func=cmd_data)


# === hatt train =====================================================================


def cmd_train(args):
    import time
    from pathlib import Path

    from hatt import training

    config = training.assemble_config(
        args.model,
        preset=args.preset,
        config_file=args.config,
        overrides=args.set,
        **_config_data_options(args),
        class_weight=args.class_weight,
        epochs=args.epochs,
        seed=args.seed,
        limit=args.limit,
        strategy=args.strategy,
        prepared=args.prepared,
        # a seed asked for on the command line: a reproducible run
        deterministic=True if args.seed is not None else None,
    )
    run_dir = Path(
        args.run_dir or Path("runs") / f"{config.model}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    # Quoted so that the recorded command can be pasted back into a shell.
    command = shlex.join(["hatt", *(sys.argv[1:] if args.argv is None else args.argv)])
    # The one object a Python user holds: the CLI only parses flags into its settings.
    clf = hatt.TextClassifier.from_config(config)
    clf.fit(run_dir=run_dir, command=command, restart=args.restart)
    print(training.summary(clf.metrics, run_dir))
    if args.export_dir:
        from hatt import export

        result = export.export(run_dir, Path(args.export_dir) / config.model)
        print(
            f"  exported to           {result.saved_model} (SavedModel, version "
            f"{result.version}) and {result.keras_file}"
        )
    return 0


def _config_data_options(args):
    """The TrainConfig data fields that ``_add_data``'s flags give (``None``: not given).

    ``hatt train`` and ``hatt prepare`` lay them over the preset and ``--config``.
    """
    options = data_options(args)
    names = {"source": "data", "test": "test_data"}  # load_corpus → TrainConfig
    return {names.get(key, key): value for key, value in options.items()}


def add_train_command(sub):
    from hatt.training.config import PRESETS

    train = sub.add_parser(
        "train",
        help="train a model family on IMDB, evaluate on the test split, export it",
        description="Train MODEL on IMDB: vocabulary from the training split, early stopping "
        "on the validation split (best epoch restored), one evaluation on the test split. "
        "Settings: the family's preset (hatt/presets/MODEL.json), then --config, then --set.",
    )
    train.add_argument("model", choices=FAMILIES)
    _add_data(train)
    train.add_argument(
        "--class-weight",
        choices=("auto", "balanced", "none"),
        default=None,
        help="balanced: weigh each class by 1 / its share of the training split; auto (the "
        "default): balanced when the largest class has over 1.5x the smallest's documents; "
        "none: every class weighs 1",
    )
    train.add_argument(
        "--preset",
        default="default",
        metavar="NAME",
        help=f"settings to start from: default (the family's own), none (bare defaults), "
        f"or one of {', '.join(PRESETS)}",
    )
    train.add_argument("--config", metavar="FILE.json", help="settings (TrainConfig keys)")
    _add_set(
        train,
        "override one setting, e.g. --set batch_size=64 --set model_kwargs.units=32 "
        "--set ngram.C=0.1 (values are JSON; a bare word for a text setting)",
    )
    train.add_argument("--epochs", type=int, default=None)
    _add_seed(train, "seed Python, NumPy and Keras and turn on op determinism (reproducible run)")
    _add_limit(train)
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
        choices=STRATEGIES,
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


# === hatt export ====================================================================


def _model_name(name):
    """``--name``: one folder name under saved_models/ (no path, not hidden)."""
    if not name or name != name.strip() or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(
            f"Expected --name to be a folder name such as reviews-cnn (no '/', not starting "
            f"with '.'). Received: --name {name!r}"
        )
    return name


def cmd_export(args):
    from pathlib import Path

    from hatt import export

    out = args.out or (Path("saved_models") / _model_name(args.name) if args.name else None)
    result = export.export(args.run_dir, out)
    print(f"Exported {args.run_dir} ({result.family}, word scores: {result.score_kind})")
    print(f"  SavedModel   {result.saved_model}   (version {result.version})")
    print(f"  Keras        {result.keras_file}")
    print(f"  metadata     {result.path / export.EXPORT_FILE}")
    print(f"  took         {result.seconds:.1f} s")
    return 0


def add_export_command(sub):
    export = sub.add_parser(
        "export",
        help="export a run directory as a SavedModel (raw text in) and a .keras file",
        description="Write OUT/VERSION/ (a SavedModel in TF Serving's layout, the next free "
        "version) and OUT/model.keras. The serving_default signature takes `text` (tf.string, "
        "[None]) and returns probability, tokens, word_attention (the CNN: gradient x input "
        "saliency) and, for the HAN, sentence_attention.",
    )
    export.add_argument("run_dir", metavar="RUN_DIR", help="a run directory of `hatt train`")
    where = export.add_mutually_exclusive_group()
    where.add_argument(
        "--out", metavar="DIR", default=None, help="default: saved_models/FAMILY (cnn, rnn, ...)"
    )
    where.add_argument(
        "--name",
        default=None,
        help="export to saved_models/NAME: a model of its own, beside the others (a new "
        "version of an existing NAME must answer the same classes)",
    )
    export.set_defaults(func=cmd_export)


# === hatt predict ===================================================================


def _chunks(items, size):
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def print_model_warnings(command, predictor):
    """The model's warnings (:attr:`hatt.export.Predictor.warnings`) on stderr, one a line."""
    for warning in getattr(predictor, "warnings", ()):
        print(f"hatt {command}: warning: {warning}", file=sys.stderr)


def cmd_predict(args):
    from hatt import export

    if bool(args.texts) == bool(args.file):
        raise ValueError("Give the reviews either as TEXT arguments or with --file F (not both).")
    if args.batch_size < 1:
        raise ValueError(f"Expected --batch-size >= 1. Received: {args.batch_size}")
    if not 0.0 <= args.threshold <= 1.0:
        raise ValueError(f"Expected --threshold in [0, 1]. Received: {args.threshold}")
    reviews = _read_file(args.file).lines if args.file else list(enumerate(args.texts))
    predictor = export.load(args.model)
    if predictor.num_classes > 2 and args.threshold != 0.5:
        raise ValueError(
            f"--threshold is for two-class models; this one has {predictor.num_classes} classes "
            "(the label is the most probable one)."
        )
    print_model_warnings("predict", predictor)
    for chunk in _chunks(reviews, args.batch_size):
        out = predictor.predict([t for _, t in chunk], batch_size=args.batch_size)
        for i, (text_id, _) in enumerate(chunk):
            print(json.dumps(_prediction_row(predictor, out, i, text_id, args.threshold)))
        sys.stdout.flush()
    return 0


def _prediction_row(predictor, out, i, text_id, threshold):
    """One review's JSON line: text_id, label, its probability, every class's probability."""
    probabilities = [round(float(p), 6) for p in out["probabilities"][i]]
    names = predictor.class_names
    if predictor.num_classes == 2:  # the threshold decides between the two
        index = int(probabilities[1] >= threshold)
    else:
        index = max(range(len(probabilities)), key=probabilities.__getitem__)
    row = {
        "text_id": text_id,
        "label": names[index],
        "label_probability": probabilities[index],
        "probabilities": dict(zip(names, probabilities, strict=True)),
    }
    if predictor.num_classes == 2:
        row["probability"] = probabilities[1]  # of the second class, as before 0.3
    return row


def add_predict_command(sub):
    predict = sub.add_parser(
        "predict",
        help="classify reviews; prints JSON lines {text_id, label, label_probability, ...}",
        description="Classify reviews with a trained model. Prints one JSON line per review: "
        '{"text_id", "label", "label_probability", "probabilities": {class: p}}, and for '
        'two-class models "probability" (of the second class, e.g. positive). The label is the '
        "most probable class; with two classes, the second one when its probability is >= 0.5 "
        "(--threshold). text_id is the index of the "
        "TEXT argument, or the 0-based line number in --file (one review per line; blank lines "
        "are skipped; a few invalid UTF-8 bytes are replaced, a file that is not text is "
        "refused). What the model's run recorded against its parts (a deep part with a "
        "negative weight in the mix, or below the n-gram channel alone) is warned about "
        "once on stderr.",
    )
    predict.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    predict.add_argument("texts", metavar="TEXT", nargs="*", help="reviews to classify")
    _add_text_file(predict, "a text file, one review per line ('-': stdin)")
    predict.add_argument("--batch-size", type=int, default=64, help="reviews per model call")
    predict.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="two-class models: probability of the second class from which it is the label",
    )
    predict.set_defaults(func=cmd_predict)


# === hatt prepare ===================================================================


def cmd_prepare(args):
    from pathlib import Path

    from hatt import training
    from hatt.data import prepared as prepared_lib

    config = training.assemble_config(
        args.model,
        preset=None,
        overrides=args.set,
        **_config_data_options(args),
        seed=args.seed,
        limit=args.limit,
    )
    imdb = training.corpus.load_texts(config)
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


def add_prepare_command(sub):
    prepare = sub.add_parser(
        "prepare",
        help="tokenize IMDB once into TFRecord shards for `hatt train --prepared`",
        description="Fit the vocabulary on the training split and write the tokenized "
        "train / validation / test splits as TFRecord shards, with vectorizer.json and a "
        "prepared.json manifest.",
    )
    _add_data(prepare)
    prepare.add_argument("--out", metavar="DIR", required=True, help="output folder (new)")
    prepare.add_argument(
        "--model",
        choices=FAMILIES,
        default="han",
        help="family whose layout to write (flat for cnn/rnn/transformer, nested for han)",
    )
    prepare.add_argument("--shard-size", type=int, default=5000, help="reviews per shard")
    _add_set(prepare, "vocabulary settings")
    _add_seed(prepare, "seed of the validation split")
    _add_limit(prepare)
    _add_quiet(prepare)
    prepare.set_defaults(func=cmd_prepare)


# === hatt inspect ===================================================================


def _inspect_texts(args):
    """The reviews (and true labels, for --imdb-test) that `hatt inspect` explains."""
    if args.text is not None:
        return list(args.text), None
    if args.file is not None:
        texts = _read_file(args.file).texts
        if not texts:
            raise ValueError(
                f"Expected --file to hold at least one review. Received: {args.file!r}"
            )
        return texts, None
    from hatt.inspect.explain import balanced_sample

    if args.imdb_test < 1:
        raise ValueError(f"Expected --imdb-test to be >= 1. Received: --imdb-test={args.imdb_test}")
    corpus = hatt.data.load_corpus(**data_options(args), validation_size=0, progress=False)
    test = corpus.test
    chosen = balanced_sample(test.labels, args.imdb_test, seed=args.seed)
    return [test.texts[i] for i in chosen], [int(test.labels[i]) for i in chosen]


def _inspect_method(args, predictor):
    """--method checked against the model's methods before anything runs."""
    views = tuple(getattr(predictor, "methods", None) or ()) or (predictor.score_kind,)
    if args.method not in (None, "all") and args.method not in views:
        raise ValueError(
            f"Expected --method to be one of this model's methods {views} or 'all'. "
            f"Received: --method {args.method}"
        )
    return args.method


def _write_inspect_outputs(args, explanations, method):
    """The --html pages, --png images and --json file asked for; their paths."""
    from pathlib import Path

    from hatt import inspect as hatt_inspect

    written = []
    if args.html:
        from hatt.inspect.html import page_paths

        per_page = args.html_per_page or None
        pages = 1 if per_page is None else max(1, -(-len(explanations) // per_page))
        hatt_inspect.write_html(explanations, args.html, max_reviews=per_page, method=method)
        written.extend(page_paths(args.html, pages))
    if args.png:
        written.extend(hatt_inspect.write_pngs(explanations, args.png, method=method))
    if args.json:
        Path(args.json).write_text(
            json.dumps([e.to_dict() for e in explanations], indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        written.append(args.json)
    return written


def cmd_inspect(args):
    from hatt import inspect as hatt_inspect

    if args.html_per_page < 0:
        raise ValueError(
            f"Expected --html-per-page to be >= 0. Received: --html-per-page {args.html_per_page}"
        )
    if args.steps is not None and args.steps < 1:
        raise ValueError(f"Expected --steps to be >= 1. Received: --steps {args.steps}")
    texts, labels = _inspect_texts(args)
    predictor = hatt.export.as_predictor(args.model)
    method = _inspect_method(args, predictor)  # before the model runs
    explanations = hatt_inspect.explain(
        predictor, texts, labels=labels, progress=not args.quiet, steps=args.steps
    )
    if not args.quiet:
        hatt_inspect.to_terminal(
            explanations, color=False if args.no_color else None, method=method
        )
    written = _write_inspect_outputs(args, explanations, method)
    views = ", ".join(explanations[0].views) if explanations else "?"
    shown = method or (explanations[0].default_method() if explanations else "?")
    print(
        f"{len(explanations)} review(s) explained with {views} scores (shown: {shown})",
        file=sys.stderr,
    )
    for path in written:
        print(f"  wrote {path}", file=sys.stderr)
    print_model_warnings("inspect", predictor)
    return 0


def add_inspect_command(sub):
    from hatt.inspect.explain import METHODS
    from hatt.inspect.html import MAX_REVIEWS

    inspect = sub.add_parser(
        "inspect",
        help="show which words and sentences a trained model's predictions rest on",
        description="Explain MODEL's predictions per sentence and word with every method "
        "it has: the total (shown first: each word's contribution to the whole logit of the "
        "predicted class, the deep part's integrated gradients plus the n-gram channel's "
        "exact share), attention (unsigned, class-agnostic), gradient × input and integrated "
        "gradients of the deep part alone, and the n-gram channel's share alone, with the "
        "logit split into deep part, n-gram channel and bias; in the terminal, as one HTML "
        "page (with a method switch) and as PNG heat maps. Colours are relative to each "
        "review. A model whose deep part has a negative weight in the mix, or scores below "
        "the channel alone, is warned about on stderr and in the HTML.",
    )
    inspect.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    source = inspect.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", action="append", metavar="T", help="a review (repeatable)")
    _add_text_file(source, "a UTF-8 text file, one review per line ('-': stdin)")
    source.add_argument(
        "--imdb-test",
        type=int,
        metavar="N",
        help="N test reviews (balanced, seeded sample) with their true labels",
    )
    _add_data(inspect)
    _add_seed(inspect, "seed of the --imdb-test sample", default=1337)
    inspect.add_argument(
        "--html", metavar="OUT.html", help="write the reviews as HTML (OUT.html, OUT-2.html, ...)"
    )
    inspect.add_argument(
        "--html-per-page",
        type=int,
        default=MAX_REVIEWS,
        metavar="N",
        help="reviews per HTML page, the pages linked to each other (0: all on one page)",
    )
    inspect.add_argument(
        "--png", metavar="OUT.png", help="write a heat map (several reviews: OUT_1.png, ...)"
    )
    inspect.add_argument(
        "--method",
        choices=(*METHODS, "all"),
        help="the scores the terminal, the PNGs and the HTML page (which holds them all) show "
        "first; 'all': every method, side by side (default: total, each word's contribution "
        "to the whole prediction; an export without the explain signature: its own scores)",
    )
    inspect.add_argument(
        "--steps",
        type=int,
        metavar="N",
        help="integrated gradients' steps (default: the model's, hatt.attribution.DEFAULT_STEPS)",
    )
    inspect.add_argument(
        "--json",
        metavar="OUT.json",
        help="write the explanations as JSON (every method, the logit decomposition and "
        "integrated gradients' completeness error)",
    )
    inspect.add_argument("--no-color", action="store_true", help="plain terminal output")
    _add_quiet(inspect, "no terminal view")
    inspect.set_defaults(func=cmd_inspect)


# === The command ====================================================================


def build_parser():
    parser = argparse.ArgumentParser(
        prog="hatt",
        description="Attention-based document classifiers for Keras 3: train, export, "
        "inspect and serve them.",
    )
    parser.add_argument("--version", action="version", version=f"hatt {hatt.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in (
        add_data_command,
        add_train_command,
        add_export_command,
        add_predict_command,
        add_prepare_command,
        add_inspect_command,
        add_serve_command,
    ):
        add(sub)
    return parser


def error_line(error):
    """One line for a user's error: an OS error names its path and the reason."""
    if isinstance(error, OSError) and error.filename is not None:
        reason = error.strerror or type(error).__name__
        return f"{reason}: {str(error.filename)!r}"
    text = str(error)
    if isinstance(error, hatt.data.DataNotFoundError):
        return text  # its lines say how to provide the data
    return " ".join(text.split("\n"))


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except (ValueError, OSError) as error:
        print(f"hatt {args.command}: error: {error_line(error)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
