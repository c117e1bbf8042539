"""``hatt train`` (TextClassifier.fit from flags) and ``hatt export`` (a run as a SavedModel)."""

import shlex
import sys

import hatt
from hatt.cli.args import (
    _add_data,
    _add_limit,
    _add_seed,
    _add_set,
    _config_data_options,
)
from hatt.names import CLASS_WEIGHTS, FAMILIES, STRATEGIES
from hatt.progress import printable_lines

# The flags of `hatt train` that set the TrainConfig field of their name (None: not given).
CONFIG_FLAGS = (
    "class_weight",
    "epochs",
    "seed",
    "limit",
    "strategy",
    "prepared",
    "unlabeled",
    "unlabeled_text_column",
    "init",
)

# === hatt train =====================================================================


def cmd_train(args):
    import shutil
    import time
    from pathlib import Path

    from hatt import export, training

    config = training.assemble_config(
        args.model,
        preset=args.preset,
        config_file=args.config,
        overrides=args.set,
        **_config_data_options(args),
        **{field: getattr(args, field) for field in CONFIG_FLAGS},
        # a seed asked for on the command line: a reproducible run
        deterministic=True if args.seed is not None else None,
    )
    run_dir = Path(
        args.run_dir or Path("runs") / f"{config.model}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    argv = list(sys.argv[1:] if args.argv is None else args.argv)
    # Quoted so that the recorded command can be pasted back into a shell.
    command = shlex.join(["hatt", *argv])
    # where the model goes: the export's one rule (its corpus's name, or --name)
    out = export.export_folder(
        config.model,
        data=config.data,
        labels=config.labels,
        name=args.name,
        export_dir=args.export_dir,
    )
    # The one object a Python user holds: the CLI only parses flags into its settings.
    clf = hatt.TextClassifier.from_config(config)
    started = run_dir.exists()
    try:
        clf.fit(
            run_dir=run_dir,
            command=command,
            restart=args.restart,
            verbose=_verbosity(),
            callbacks=[export.SameTaskCheck(out, run_dir, TRAIN_FIX)] if out else None,
        )
    except KeyboardInterrupt:
        print(_interrupted_line(run_dir, config.epochs, argv, args), file=sys.stderr)
        return 130
    except export.OtherTaskError:
        if not started:  # stopped before its first epoch: nothing of it is worth keeping
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    print_summary(clf.metrics, run_dir)
    if out is not None:
        result = export.export(run_dir, out)
        print(f"  exported to           {result.version_line()}")
        print(f"                        {result.saved_model} (SavedModel), {result.keras_file}")
    return 0


# The clash's fix, said by `hatt train` before its first epoch (hatt.export.check_same_task).
TRAIN_FIX = (
    "Nothing was trained either: run the same command with --name NAME, and the model gets "
    "a folder of its own beside it."
)


def _verbosity():
    """Keras' ``verbose``: progress bars on a terminal, one plain line an epoch otherwise
    (a redirected log holds no escape codes)."""
    return 1 if sys.stdout.isatty() else 2


def _interrupted_line(run_dir, epochs, argv, args):
    """Where a Ctrl-C stopped `hatt train`, and the command that resumes the run."""
    from hatt.training.run.resume import read_state

    try:
        state = read_state(run_dir)
    except (OSError, ValueError):
        state = None
    done = int(state["epoch"]) if state else 0
    resume = [a for a in argv if a != "--restart"]
    if args.run_dir is None:
        resume += ["--run-dir", str(run_dir)]
    where = f"after epoch {done} of {epochs}" if done else "before its first epoch finished"
    command = shlex.join(["hatt", *resume])
    return f"hatt train: interrupted {where} (run directory {run_dir}); resume with: {command}"


def add_train_command(sub):
    from hatt.presets import PRESETS

    train = sub.add_parser(
        "train",
        help="train a model family on your documents (--data; IMDB by default), evaluate on "
        "the test split, export it",
        description="Train FAMILY on a corpus (--data: a folder, a table, tfds:NAME; IMDB by "
        "default): vocabulary from the training split, early stopping on the validation split "
        "(best epoch restored), one evaluation on the test split. Settings: the family's "
        "preset (hatt/presets/FAMILY.json), then --config, then --set.",
    )
    train.add_argument("model", metavar="FAMILY", choices=FAMILIES, help=", ".join(FAMILIES))
    _add_data(train)
    train.add_argument(
        "--class-weight",
        choices=CLASS_WEIGHTS,
        default=None,
        help="balanced: weigh each class by 1 / its share of the training split; sqrt: by "
        "1 / the square root of its share (half way); auto (the default): balanced when the "
        "largest class has over 1.5x the smallest's documents; none: every class weighs 1",
    )
    _add_learning_from_elsewhere(train)
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
    _add_run_place(train)
    train.set_defaults(func=cmd_train)


def print_summary(metrics, run_dir):
    """The run's summary, its class names shown as text: a label holding terminal controls
    (``pos\\x1b[31m``) is printed escaped, never acted on (issue 63)."""
    from hatt import training

    print(printable_lines(training.summary(metrics, run_dir)))


def _add_learning_from_elsewhere(train):
    """--unlabeled, --unlabeled-text-column and --init: what a run learns from beyond its
    labeled documents."""
    train.add_argument(
        "--unlabeled",
        metavar="PATH",
        default=None,
        help="unlabeled documents that word2vec also learns from (the vocabulary too with --set "
        "unlabeled_vocabulary=true): a folder "
        "of .txt files, a .csv / .tsv / .jsonl table, a text file of one a line, or an "
        "archive (aclImdb_v1_unsup.tar.gz), or imdb:unsup (IMDB's own, found beside the "
        "labeled data); any equal to a validation or test text is dropped. Needs "
        "word_vectors=word2vec (the rnn, han and transformer presets)",
    )
    train.add_argument(
        "--unlabeled-text-column",
        metavar="NAME",
        default=None,
        help="the unlabeled table's text column (default: text)",
    )
    train.add_argument(
        "--init",
        metavar="MODEL",
        default=None,
        help="start from a trained model of the same family (a run directory, a .keras file "
        "or saved_models/NAME): its encoders, its word vectors for the words both "
        "vocabularies know, and its head when the classes are the same (init.json says what); "
        "or imdb: hatt's IMDB start of the family, built once from IMDB ($HATT_IMDB, with "
        "its unlabeled reviews where they lie beside it) and cached under $HATT_CACHE "
        "(a folder named imdb: ./imdb)",
    )


def _add_run_place(train):
    """--run-dir, --export-dir, --strategy, --prepared and --restart: where a run writes,
    what it reads prepared, and how it runs."""
    train.add_argument(
        "--run-dir",
        help="default: runs/MODEL-TIMESTAMP; the same command with the same --run-dir resumes "
        "an interrupted run",
    )
    train.add_argument(
        "--name",
        default=None,
        help="export to saved_models/NAME (default: the corpus's name and the family, "
        "my-cnn for --data my.csv; IMDB's model keeps the family's, cnn)",
    )
    train.add_argument(
        "--export-dir",
        default=None,
        metavar="DIR",
        help="export to DIR/FAMILY (DIR/NAME with --name) instead of saved_models/ "
        "('' to skip the export)",
    )
    train.add_argument(
        "--strategy",
        choices=STRATEGIES,
        help="tf.distribute strategy: default (one device), mirrored (the machine's GPUs or "
        "logical CPUs), multiworker (reads TF_CONFIG); batch_size is the global batch",
    )
    train.add_argument("--prepared", metavar="DIR", help="train from `hatt prepare` shards")
    train.add_argument(
        "--restart",
        action="store_true",
        help="discard an interrupted or finished run in --run-dir and train from the start "
        "(without it, the same command resumes an interrupted run)",
    )


# === hatt export ====================================================================


def cmd_export(args):
    from hatt import export

    # --name: saved_models/NAME; neither: the folder hatt train exported the run to
    out = args.out or (export.export_folder(None, name=args.name) if args.name else None)
    result = export.export(args.run_dir, out)
    print(f"Exported {args.run_dir} ({result.family}, word scores: {result.score_kind})")
    print(f"  version      {result.version_line()}")
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
        "--out",
        metavar="DIR",
        default=None,
        help="default: where hatt train exports the run: saved_models/FAMILY for IMDB "
        "(cnn, rnn, ...), saved_models/CORPUS-FAMILY for your own data (my-cnn)",
    )
    where.add_argument(
        "--name",
        default=None,
        help="export to saved_models/NAME: a model of its own, beside the others (a new "
        "version of an existing NAME must answer the same classes)",
    )
    export.set_defaults(func=cmd_export)
