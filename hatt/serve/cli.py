"""``hatt serve``: the subcommand, kept here so that ``hatt.cli`` only registers it.

``hatt.cli.build_parser`` calls :func:`add_serve_command` with its
subparsers; :func:`cmd_serve` runs the server.
"""

import argparse
import os
import sys

MODEL_HELP = (
    "a SavedModel folder, a saved_models/NAME folder (latest version), a .keras file or a run "
    "directory; NAME=PATH serves it under NAME (default: the folder's name)"
)


# The server's settings as flags, by group: (flag, Settings field, type, default, help).
# The defaults are Settings' own (a test checks): they are repeated here so that
# parsing `hatt serve` (and --help) imports no TensorFlow.
FLAG_GROUPS = {
    "limits": (
        ("--max-body-bytes", "max_body_bytes", int, 1 << 20, "largest request body (413 beyond)"),
        ("--max-texts", "max_texts", int, 256, "most reviews in one request (413 beyond)"),
    ),
    "batching": (
        ("--max-batch-size", "max_batch_size", int, 64, "reviews a batched model call takes"),
        (
            "--batch-wait-ms",
            "batch_wait_ms",
            float,
            0.0,
            "how long a batch waits for more requests once it has taken those queued "
            "(0: none; requests that queue while the model runs form the next batch)",
        ),
        (
            "--threads",
            "threads",
            int,
            2,
            "threads of the predict lane: :predict model calls that may run at once",
        ),
        (
            "--predict-queue",
            "predict_queue",
            int,
            1024,
            ":predict requests that may wait per model (503 with Retry-After beyond)",
        ),
    ),
    "the explain lane (its own queue and threads)": (
        (
            "--max-explain-texts",
            "max_explain_texts",
            int,
            64,
            "most reviews a :explain takes (413)",
        ),
        (
            "--explain-workers",
            "explain_workers",
            int,
            1,
            ":explain requests that run at once (threads of the explain lane, all models)",
        ),
        (
            "--explain-queue",
            "explain_queue",
            int,
            16,
            ":explain requests that may wait (503 with Retry-After beyond)",
        ),
        (
            "--explain-chunk",
            "explain_chunk",
            int,
            1,
            "reviews one explain model call takes (bounds its memory)",
        ),
        (
            "--explain-deadline",
            "explain_deadline_s",
            float,
            60.0,
            "seconds a :explain request has: not started by then 503, still running 504",
        ),
    ),
    "connections and stopping": (
        ("--keep-alive", "keep_alive_s", float, 5.0, "idle connection timeout, seconds"),
        (
            "--header-timeout",
            "header_timeout_s",
            float,
            10.0,
            "seconds to send a request's headers (then the connection is closed)",
        ),
        (
            "--body-timeout",
            "body_timeout_s",
            float,
            10.0,
            "seconds to send a request's body (408 after)",
        ),
        (
            "--shutdown-timeout",
            "shutdown_s",
            float,
            10.0,
            "on SIGTERM, seconds given to requests in flight before they are cancelled",
        ),
    ),
}


def _flags():
    return [flag for group in FLAG_GROUPS.values() for flag in group]


def settings_from_args(args):
    """The parsed flags → ``hatt.serve.Settings`` keyword arguments."""
    values = {field: getattr(args, field) for _, field, _, _, _ in _flags()}
    values["batching"] = not args.no_batching
    values["imdb"] = args.imdb or os.environ.get("HATT_IMDB") or None
    return values


def cmd_serve(args):
    from hatt import serve
    from hatt.serve.process import bind

    settings = serve.Settings(**settings_from_args(args))
    if not 0 <= args.port <= 65535:
        raise ValueError(f"Expected --port in [0, 65535]. Received: --port {args.port}")
    # the port first: one in use is an error before the models load (issue 63)
    sock = bind(args.host, args.port)
    try:
        models = serve.load_models(args.models)
        for model in models.values():
            print(
                f"hatt serve: {model.name} (version {model.version}, {model.family}, "
                f"{model.score_kind}) from {model.predictor.source}",
                file=sys.stderr,
            )
        port = sock.getsockname()[1]  # --port 0: the one the system gave
        print(f"hatt serve: page and REST API on http://{args.host}:{port}/", file=sys.stderr)
        serve.serve(models, host=args.host, port=port, settings=settings, sock=sock)
    finally:
        sock.close()
    return 0


def add_serve_command(sub):
    serve = sub.add_parser(
        "serve",
        help="serve models over HTTP (TF Serving's REST API) with a page to explain reviews",
        description="Serve one or more models in TensorFlow Serving's REST dialect "
        "(GET /v1/models/NAME, GET /v1/models/NAME/metadata, POST /v1/models/NAME:predict, "
        "and KServe's POST /v1/models/NAME:explain) and a page at / to paste a review and see "
        "what each model looked at. See docs/serving.md.",
    )
    serve.add_argument("models", metavar="MODEL", nargs="+", help=MODEL_HELP)
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    serve.add_argument("--port", type=int, default=8501, help="TCP port (TF Serving's REST port)")
    serve.add_argument("--no-batching", action="store_true", help="one model call per request")
    for title, flags in FLAG_GROUPS.items():
        group = serve.add_argument_group(title)
        for flag, field, kind, default, text in flags:
            group.add_argument(flag, dest=field, type=kind, default=default, help=text)
    serve.add_argument(
        "--imdb",
        metavar="PATH",
        default=None,
        help="IMDB data for the page's 'random test review' button (default: $HATT_IMDB)",
    )
    serve.set_defaults(func=cmd_serve)


def main(argv=None):
    """``python -m hatt.serve.cli MODEL ...``: ``hatt serve`` without the rest of ``hatt``."""
    parser = argparse.ArgumentParser(prog="hatt")
    add_serve_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    try:
        return cmd_serve(args)
    except (ValueError, OSError) as error:
        print(f"hatt serve: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
