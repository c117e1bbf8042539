"""``hatt serve``: the subcommand, kept here so that ``hatt.cli`` only registers it.

``hatt.cli.build_parser`` calls :func:`add_serve_command` with its
subparsers; :func:`cmd_serve` runs the server.
"""

import os
import sys

MODEL_HELP = (
    "a SavedModel folder, a saved_models/NAME folder (latest version), a .keras file or a run "
    "directory; NAME=PATH serves it under NAME (default: the folder's name)"
)


def cmd_serve(args):
    from hatt import serve

    settings = serve.Settings(
        max_body_bytes=args.max_body_bytes,
        max_texts=args.max_texts,
        batching=not args.no_batching,
        max_batch_size=args.max_batch_size,
        batch_wait_ms=args.batch_wait_ms,
        threads=args.threads,
        predict_queue=args.predict_queue,
        max_explain_texts=args.max_explain_texts,
        explain_workers=args.explain_workers,
        explain_queue=args.explain_queue,
        explain_chunk=args.explain_chunk,
        explain_deadline_s=args.explain_deadline,
        body_timeout_s=args.body_timeout,
        header_timeout_s=args.header_timeout,
        keep_alive_s=args.keep_alive,
        shutdown_s=args.shutdown_timeout,
        imdb=args.imdb or os.environ.get("HATT_IMDB") or None,
    )
    if not 0 <= args.port <= 65535:
        raise ValueError(f"Expected --port in [0, 65535]. Received: --port {args.port}")
    models = serve.load_models(args.models)
    for model in models.values():
        print(
            f"hatt serve: {model.name} (version {model.version}, {model.family}, "
            f"{model.score_kind}) from {model.predictor.source}",
            file=sys.stderr,
        )
    print(f"hatt serve: page and REST API on http://{args.host}:{args.port}/", file=sys.stderr)
    serve.serve(models, host=args.host, port=args.port, settings=settings)
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
    limits = serve.add_argument_group("limits")
    limits.add_argument(
        "--max-body-bytes", type=int, default=1 << 20, help="largest request body (413 beyond)"
    )
    limits.add_argument(
        "--max-texts", type=int, default=256, help="most reviews in one request (413 beyond)"
    )
    batching = serve.add_argument_group("batching")
    batching.add_argument("--no-batching", action="store_true", help="one model call per request")
    batching.add_argument(
        "--max-batch-size", type=int, default=64, help="reviews a batched model call takes"
    )
    batching.add_argument(
        "--batch-wait-ms",
        type=float,
        default=0.0,
        help="how long a batch waits for more requests once it has taken those queued "
        "(0: none; requests that queue while the model runs form the next batch)",
    )
    batching.add_argument(
        "--threads",
        type=int,
        default=2,
        help="threads of the predict lane: :predict model calls that may run at once",
    )
    batching.add_argument(
        "--predict-queue",
        type=int,
        default=1024,
        help=":predict requests that may wait per model (503 with Retry-After beyond)",
    )
    explain = serve.add_argument_group("the explain lane (its own queue and threads)")
    explain.add_argument(
        "--max-explain-texts", type=int, default=64, help="most reviews a :explain takes (413)"
    )
    explain.add_argument(
        "--explain-workers",
        type=int,
        default=1,
        help=":explain requests that run at once (threads of the explain lane, all models)",
    )
    explain.add_argument(
        "--explain-queue",
        type=int,
        default=16,
        help=":explain requests that may wait (503 with Retry-After beyond)",
    )
    explain.add_argument(
        "--explain-chunk",
        type=int,
        default=1,
        help="reviews one explain model call takes (bounds its memory)",
    )
    explain.add_argument(
        "--explain-deadline",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="a :explain request's time: not started by then 503, still running 504",
    )
    timeouts = serve.add_argument_group("connections and stopping")
    timeouts.add_argument(
        "--keep-alive", type=float, default=5.0, metavar="SECONDS", help="idle connection timeout"
    )
    timeouts.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time to send a request's headers (then the connection is closed)",
    )
    timeouts.add_argument(
        "--body-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time to send a request's body (408 after)",
    )
    timeouts.add_argument(
        "--shutdown-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="on SIGTERM, time given to requests in flight before they are cancelled",
    )
    serve.add_argument(
        "--imdb",
        metavar="PATH",
        default=None,
        help="IMDB data for the page's 'random test review' button (default: $HATT_IMDB)",
    )
    serve.set_defaults(func=cmd_serve)


def main(argv=None):
    """``python -m hatt.serve.cli MODEL ...``: ``hatt serve`` without the rest of ``hatt``."""
    import argparse

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
