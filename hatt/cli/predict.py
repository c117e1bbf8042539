"""``hatt predict`` (labels and probabilities) and ``hatt inspect`` (what predictions rest on)."""

import json
import sys

import hatt
from hatt.cli.args import (
    MODEL_HELP,
    _add_data,
    _add_quiet,
    _add_seed,
    _add_text_file,
    _read_file,
    data_options,
)
from hatt.names import MAX_REVIEWS, METHODS
from hatt.progress import printable, printable_lines

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


MAX_WARNINGS = 3  # a model's warnings printed in full; the rest are counted in one line


def print_model_warnings(command, predictor, explaining=True):
    """The model's warnings (:attr:`hatt.export.Predictor.warnings`) on stderr, one a line.

    Without ``explaining`` (predict, evaluate), those about explanations only
    (:func:`hatt.export.facts.explanation_warnings`) are left out. At most
    :data:`MAX_WARNINGS` are printed, then one line counts the rest (issue 63: a
    2,000-class model warned about each of its small classes on every call).
    """
    warnings = list(getattr(predictor, "warnings", ()))
    if not explaining:
        from hatt.export.facts import explanation_warnings

        metadata = getattr(predictor, "metadata", None) or {}
        names = getattr(predictor, "class_names", None)
        about_explanations = explanation_warnings(metadata.get("ngram"), names)
        warnings = [w for w in warnings if w not in about_explanations]
    for warning in warnings[:MAX_WARNINGS]:
        print(f"hatt {command}: warning: {printable(warning)}", file=sys.stderr)
    if len(warnings) > MAX_WARNINGS:
        print(
            f"hatt {command}: warning: ... and {len(warnings) - MAX_WARNINGS:,} more warnings "
            'recorded with this model (its run\'s metrics.json lists them under "warnings"; '
            "hatt.export.load(MODEL).warnings in Python)",
            file=sys.stderr,
        )


def cmd_predict(args):
    from hatt import export

    if bool(args.texts) == bool(args.file):
        raise ValueError("Give the reviews either as TEXT arguments or with --file F (not both).")
    if not 1 <= args.batch_size <= export.MAX_BATCH:  # at the door, before the model loads
        raise ValueError(
            f"Expected --batch-size from 1 to {export.MAX_BATCH:,}. Received: {args.batch_size}"
        )
    if not 0.0 <= args.threshold <= 1.0:
        raise ValueError(f"Expected --threshold in [0, 1]. Received: {args.threshold}")
    reviews = _reviews(args)
    predictor = export.load(args.model)
    if predictor.num_classes > 2 and args.threshold != 0.5:
        raise ValueError(
            f"--threshold is for two-class models; this one has {predictor.num_classes} classes "
            "(the label is the most probable one)."
        )
    print_model_warnings("predict", predictor, explaining=False)
    empty = [str(text_id) for text_id, text in reviews if not text.strip()]
    if empty:  # answered, flagged in their rows, and said (issue 64: "happy 0.547" of "")
        print(
            f"hatt predict: warning: {len(empty)} review(s) hold no text ({', '.join(empty[:3])}"
            f'{" ..." if len(empty) > 3 else ""}): their rows say "no_text": true, and their '
            "probabilities are the model's answer to an empty review, not a reading of it",
            file=sys.stderr,
        )
    for chunk in _chunks(reviews, args.batch_size):
        out = predictor.predict([t for _, t in chunk], batch_size=args.batch_size)
        for i, (text_id, text) in enumerate(chunk):
            row = _prediction_row(predictor, out, i, text_id, args.threshold)
            if not text.strip():
                row["no_text"] = True
            print(json.dumps(row))
        sys.stdout.flush()
    return 0


PREDICT_FORMATS = ("lines", "csv", "tsv", "jsonl")


def _reviews(args):
    """``[(text_id, text)]``: TEXT arguments (ids 0, 1, ...), a file's lines (their
    0-based numbers), or a table's text column (ids ``line17``: where the record starts,
    so a review with line breaks stays one review; with ``--id-column``, that column's
    values as written)."""
    from hatt.data.readers.load import reader_for
    from hatt.data.readers.read_log import ReadLog
    from hatt.data.readers.table import read_table

    if not args.file:
        if args.format not in (None, "lines") or args.text_column or args.id_column:
            raise ValueError("--format, --text-column and --id-column read a --file F table.")
        return list(enumerate(args.texts))
    reader = reader_for(args.file, format=args.format)
    kind = reader.kind or "lines"  # a table by its text column, any other file a line a review
    if kind == "lines":
        for flag, given in (("--text-column", args.text_column), ("--id-column", args.id_column)):
            if given:
                raise ValueError(
                    f"Expected {flag} with a table (--format csv, tsv or jsonl). Received: "
                    f"--file {args.file!r} read as one review a line"
                )
        return _read_file(args.file).lines
    if args.file == "-":
        raise ValueError(f"Expected a table file for --format {kind}. Received: --file -")
    log = ReadLog()
    table = read_table(
        args.file,
        text_column=args.text_column or "text",
        label_column=None,
        log=log,
        kind=kind,
        id_column=args.id_column,
    )
    for line in log.summary_lines():  # skipped rows are counted, never dropped silently
        print(f"hatt predict: {line}", file=sys.stderr)
    ids = table.ids if args.id_column else [i.split("/", 1)[1] for i in table.ids]
    return list(zip(ids, table.texts, strict=True))


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
    if predictor.num_classes == 2:  # of the second class (as before 0.3), named
        row["probability"] = probabilities[1]
        row["probability_of"] = hatt.export.probability_of(names)
    return row


def add_predict_command(sub):
    predict = sub.add_parser(
        "predict",
        help="classify reviews; prints JSON lines {text_id, label, label_probability, ...}",
        description="Classify reviews with a trained model. Prints one JSON line per review: "
        '{"text_id", "label", "label_probability", "probabilities": {class: p}}, and for '
        'two-class models "probability" and "probability_of": the second class\'s probability '
        "and its name (e.g. positive), whatever the label. The label is the "
        "most probable class; with two classes, the second one when its probability is >= 0.5 "
        "(--threshold). text_id is the index of the "
        "TEXT argument, or the 0-based line number in --file (one review per line; blank lines "
        "are skipped; a few invalid UTF-8 bytes are replaced, a file that is not text is "
        "refused), or for a table the line its record starts on (line17), or with "
        "--id-column your own ids, carried through as written. Options may come before, "
        "between or after MODEL and TEXT. What the model's run recorded (unbalanced or "
        "tiny classes, what the mix decided) is warned about once on stderr, at most 3 "
        "warnings and a count of the rest; "
        "what concerns explanations only (a deep part with a negative weight in the mix, or "
        "below the n-gram channel alone) is left to hatt inspect.",
    )
    predict.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    predict.add_argument("texts", metavar="TEXT", nargs="*", help="reviews to classify")
    _add_text_file(
        predict,
        "a text file, one review per line ('-': stdin), or a .csv / .tsv / .jsonl table "
        "(its --text-column; text_id is then the line its record starts on)",
    )
    predict.add_argument(
        "--format",
        choices=PREDICT_FORMATS,
        default=None,
        help="how to read --file (default: from its name: .csv, .tsv, .jsonl[.gz] are "
        "tables, anything else one review a line)",
    )
    predict.add_argument(
        "--text-column", default=None, metavar="NAME", help="a table's text column (default: text)"
    )
    predict.add_argument(
        "--id-column",
        default=None,
        metavar="NAME",
        help="a table's column of your own ids: each line's text_id is its value, as written "
        '(a number as its text, an empty field ""), instead of line17',
    )
    predict.add_argument("--batch-size", type=int, default=64, help="reviews per model call")
    predict.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="two-class models: probability of the second class from which it is the label",
    )
    predict.set_defaults(func=cmd_predict)


# === hatt evaluate ==================================================================


def cmd_evaluate(args):
    from pathlib import Path

    from hatt.training.run.metrics import format_metrics

    if args.classes is not None:
        raise ValueError(
            "Expected no --classes: hatt evaluate matches the labels to the model's own "
            f"classes by name. Received: --classes {args.classes!r}"
        )
    options = data_options(args)
    documents, report = hatt.data.read_documents(**options, split=args.split, progress=False)
    predictor = hatt.export.load(args.model)
    print_model_warnings("evaluate", predictor, explaining=False)
    clf = hatt.TextClassifier.from_predictor(predictor)
    figures = clf.evaluate(documents.texts, documents.labels, batch_size=args.batch_size)
    seen, held_out = figures.pop("training_documents", None), figures.pop("held_out", None)
    _say_training_documents(seen, len(documents))
    source = args.data or "IMDB"
    # class names as text, never escapes; a name holding \r stays on its row (issue 63)
    print(
        printable(f"{args.model} on {source}: {len(documents):,} documents (--split {args.split})")
    )
    print(printable_lines(format_metrics(figures)))
    if held_out is not None:
        print(f"\nOn the {held_out['examples']:,} documents it did not train on alone:")
        print(printable_lines(format_metrics(held_out)))
    if args.output:
        result = {
            "model": str(args.model),
            "data": str(source),
            "split": args.split,
            "class_names": list(clf.class_names),
            "read": report,
            **figures,
            # how many of them the model trained on (None: it cannot tell), and the
            # figures of the others alone
            "training_documents": seen,
            "held_out": held_out,
        }
        Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _say_training_documents(seen, total):
    """On stderr: the share of the documents the model trained on (``seen``, from
    :meth:`hatt.TextClassifier.evaluate`), or that it cannot tell (issue 64: a model
    scored 91.67 % on the folder it was trained from, 62.67 % on held-out files, without
    a word)."""
    if seen is None:
        print(
            "hatt evaluate: note: this model keeps no fingerprints of its training documents "
            "(an export or run of an older hatt, a bare .keras file, or a run from prepared "
            "shards): it cannot tell whether any of these documents is one of them",
            file=sys.stderr,
        )
    elif seen:
        print(
            f"hatt evaluate: warning: {seen:,} of the {total:,} documents are this "
            "model's training documents: their figures say little about new documents"
            + ("" if seen < total else " (all of them)"),
            file=sys.stderr,
        )


def add_evaluate_command(sub):
    from hatt.names import SPLIT_CHOICES

    evaluate = sub.add_parser(
        "evaluate",
        help="score a trained model on a labelled file or folder (accuracy, macro-F1, ...)",
        description="Read the labelled documents of --data with the readers of `hatt train` "
        "(a folder of class folders, a CSV/TSV/JSONL table with --text-column and "
        "--label-column, an aclImdb folder, ...), predict them with MODEL and print the "
        "figures of metrics.json: accuracy, macro-F1, per-class precision / recall / F1, the "
        "confusion matrix, and the mean absolute error for numeric classes (ratings). "
        "Labels are matched to the model's classes by name; a label the model does not know "
        "is an error that lists them. Documents the model trained on (its run keeps their "
        "fingerprints, its export too) are counted and warned about, and the figures of the "
        "others are printed alone beside the whole; a model without fingerprints (an older "
        "export, a bare .keras file) says it cannot tell.",
    )
    evaluate.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    _add_data(evaluate)
    evaluate.add_argument(
        "--split",
        choices=SPLIT_CHOICES,
        default="auto",
        help="auto: the source's own test split when it has one (IMDB, DIR/test, --test), "
        "else every document",
    )
    evaluate.add_argument("--batch-size", type=int, default=64, help="documents per model call")
    evaluate.add_argument("--output", metavar="FILE.json", help="write the figures as JSON")
    evaluate.set_defaults(func=cmd_evaluate)


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
        help="integrated gradients' steps (default: the model's, hatt.export.attribution.DEFAULT_STEPS)",
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
