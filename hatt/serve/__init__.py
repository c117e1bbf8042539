"""Serve hatt models over HTTP in TensorFlow Serving's REST dialect, with a page to read them.

``hatt serve MODEL [MODEL ...]`` loads each model with
:func:`hatt.export.load` and serves, on one port:

- TF Serving's REST API: ``GET /v1/models/NAME`` (status),
  ``GET /v1/models/NAME/metadata`` (signatures),
  ``POST /v1/models/NAME:predict`` (row ``instances`` or columnar
  ``inputs``), each also under ``/versions/N``; errors as ``{"error": ...}``;
- KServe V1's ``POST /v1/models/NAME:explain``: the tokens each model saw
  and their attention (or saliency) scores;
- a page at ``/``: paste a review, see one or two models' predictions and
  the sentence bands and word highlights of :mod:`hatt.inspect.html`.

Concurrent ``:predict`` requests are batched into one model call
(:mod:`hatt.serve.batching`); ``:explain`` runs in its own bounded lane
(:mod:`hatt.serve.lanes`); requests are capped in size (413) and checked
(400 naming the field); ``/healthz``, ``/readyz`` and ``/metrics`` serve
operators (:mod:`hatt.serve.metrics`); slow clients time out and SIGTERM
stops within a bound (:mod:`hatt.serve.process`).

Public API: :func:`load_models`, :func:`create_app`, :func:`serve`,
:class:`Settings`, :class:`ServedModel`.
"""

import contextlib
import importlib
import signal
import threading

# Imported on first use, so that `hatt.serve.cli` (which `hatt` registers) is cheap to import.
_LAZY = {
    "Settings": "app",
    "create_app": "app",
    "ServedModel": "served",
    "load_models": "served",
    "model_name": "served",
    "served_model": "served",
}

__all__ = [
    "ServedModel",
    "Settings",
    "create_app",
    "load_models",
    "model_name",
    "serve",
    "served_model",
]


def serve(models, host="127.0.0.1", port=8501, settings=None, log_level="info", sock=None):
    """Load ``models`` and serve them until SIGTERM / SIGINT (uvicorn, one process).

    The port is taken first (:func:`hatt.serve.process.bind`): one in use is a
    ``ValueError`` before any model is loaded. Slow clients and idle connections
    time out and a stop is bounded (:mod:`hatt.serve.process`).

    Args:
        models: Model paths as ``hatt predict`` takes them, each optionally
            ``NAME=PATH``; or a ``{name: ServedModel}`` dict.
        host: Interface to listen on (``127.0.0.1``: this machine only).
        port: TCP port (8501, TF Serving's REST port, by default).
        settings: A :class:`Settings` (limits, batching).
        log_level: uvicorn's log level.
        sock: A socket already bound (``hatt serve`` binds before it loads the
            models); ``host`` and ``port`` are then only its names.

    Example:

    >>> hatt.serve.serve(["saved_models/han", "saved_models/cnn"], port=8501)
    """
    from hatt.serve.app import Settings, create_app
    from hatt.serve.process import bind, uvicorn_server
    from hatt.serve.served import load_models

    settings = settings or Settings()
    sock = sock or bind(host, port)
    try:
        if not isinstance(models, dict):
            models = load_models(models)
        app = create_app(models, settings)
        server = uvicorn_server(app, host, sock.getsockname()[1], settings, log_level)
        with _stopped_quietly():
            server.run(sockets=[sock])
    finally:
        sock.close()


@contextlib.contextmanager
def _stopped_quietly():
    """A SIGTERM / SIGINT after uvicorn's bounded stop ends ``serve``; the exit status is 0.

    uvicorn raises the signal again once it has stopped: under Python's own
    handlers SIGTERM would kill the process (status -15) and SIGINT raise
    ``KeyboardInterrupt``.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        yield
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f"hatt.serve.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'hatt.serve' has no attribute {name!r}")
