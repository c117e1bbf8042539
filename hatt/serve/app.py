"""The ASGI application: TF Serving's REST routes, KServe's ``:explain``, and the page.

Starlette (on uvicorn): a small, well-kept ASGI toolkit. hatt validates
requests itself (TF Serving's bodies are loose: strings or objects in a
list, two formats), so a schema layer such as FastAPI's would add
dependencies and answer errors in its own shape instead of TF Serving's
``{"error": ...}``.

Routes:

- ``GET /v1/models``: the names served (KServe V1's list);
- ``GET /v1/models/NAME[/versions/N]``: status (``GetModelStatusResponse``);
- ``GET /v1/models/NAME[/versions/N]/metadata``: signatures
  (``GetModelMetadataResponse``);
- ``POST /v1/models/NAME[/versions/N]:predict``: ``{"instances": [...]}``
  → ``{"predictions": [...]}``, ``{"inputs": ...}`` → ``{"outputs": ...}``;
- ``POST /v1/models/NAME[/versions/N]:explain``: → ``{"predictions": [...],
  "explanations": [...]}`` (tokens and their scores);
- ``GET /``: the page; ``GET /static/page.js``; ``GET /ui/models``,
  ``POST /ui/explain`` (one review's card, rendered by
  :func:`hatt.inspect.html.review_html`), ``GET /ui/imdb-review`` and
  ``GET /ui/stats`` (model calls and reviews per batcher).
"""

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import json
import logging
import random

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import Route

from hatt.inspect import html as html_renderer
from hatt.serve import api, page
from hatt.serve.batching import Batcher, Unbatched

logger = logging.getLogger("hatt.serve")


@dataclasses.dataclass
class Settings:
    """How a server limits and batches requests.

    Attributes:
        max_body_bytes: Largest request body (bytes); larger → 413.
        max_texts: Most reviews in one request; more → 413.
        batching: Join concurrent ``:predict`` requests into one model call
            (``:explain`` requests always run one by one).
        max_batch_size: Reviews a batched model call takes at most.
        batch_wait_ms: How long a batch waits for requests to join it.
        threads: Worker threads that run the models (the event loop stays
            free while they run).
        imdb: An IMDB source (``hatt.data.load_imdb``) for the page's
            "random test review" button, or `None` (no button).
    """

    max_body_bytes: int = 1 << 20
    max_texts: int = 256
    batching: bool = True
    max_batch_size: int = 64
    batch_wait_ms: float = 0.0
    threads: int = 2
    imdb: str | None = None

    def __post_init__(self):
        for name in ("max_body_bytes", "max_texts", "max_batch_size", "threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"Expected {name} to be a positive int. Received: {name}={value!r}"
                )
        wait = self.batch_wait_ms
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not wait >= 0:
            raise ValueError(
                f"Expected batch_wait_ms to be a number >= 0. Received: batch_wait_ms={wait!r}"
            )


class JSONResponse(Response):
    """JSON as TF Serving writes it: UTF-8, and NaN / Infinity allowed."""

    media_type = "application/json"

    def render(self, content):
        return json.dumps(content, ensure_ascii=False, allow_nan=True).encode("utf-8")


def error_response(status, message):
    return JSONResponse({"error": message}, status_code=status)


class Server:
    """The state behind the routes: the models, their batchers, the settings."""

    def __init__(self, models, settings):
        self.models = dict(models)
        self.settings = settings
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=settings.threads, thread_name_prefix="hatt-model"
        )
        self.batchers = {}
        self._imdb = None
        self._imdb_lock = asyncio.Lock()

    # --- model calls ------------------------------------------------------------------

    def batcher(self, model, action):
        """The batcher of ``model``'s ``action`` (a signature name or ``"explain"``)."""
        key = (model.name, action)
        if key not in self.batchers:
            if action == "explain":
                run = model.explain
            else:

                def run(texts, model=model, signature=action):
                    return api.rows_of(model.run(signature, texts))

            s = self.settings
            # :explain is never joined with other requests: integrated gradients walk
            # `steps` scaled copies of the batch padded to its longest review, so a
            # joined batch costs more than its requests one by one (serve_load.py, 32
            # clients: CNN 5.9 reviews/s joined vs 15.9 alone, HAN 2.1 vs 6.3).
            self.batchers[key] = (
                Batcher(run, s.max_batch_size, s.batch_wait_ms, self.executor)
                if s.batching and action != "explain"
                else Unbatched(run, self.executor)
            )
        return self.batchers[key]

    async def call(self, model, action, texts):
        """Run ``model`` on ``texts`` through its batcher; 500 if the model fails."""
        try:
            return await self.batcher(model, action)(texts)
        except api.ApiError:
            raise
        except Exception as error:  # noqa: BLE001  (a model's failure is a 500, not a crash)
            logger.exception("model %r failed on %d text(s)", model.name, len(texts))
            raise api.ApiError(
                500,
                f"Internal error while running model {model.name!r}: "
                f"{type(error).__name__}: {str(error)[:300]}",
            ) from error

    async def close(self):
        for batcher in self.batchers.values():
            await batcher.close()
        self.executor.shutdown(wait=False, cancel_futures=True)

    # --- requests ---------------------------------------------------------------------

    def model(self, name, version=None):
        model = self.models.get(name)
        if model is None or (version is not None and version != model.version):
            raise api.servable_not_found(name, version)
        return model

    async def body(self, request):
        """The request's JSON object, reading at most ``max_body_bytes``; 413 beyond."""
        cap = self.settings.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise api.ApiError(413, _too_large(cap, f"{declared} bytes"))
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > cap:
                raise api.ApiError(413, _too_large(cap, "more"))
        return api.parse_json(bytes(body))

    async def imdb_test(self):
        """The IMDB test split (loaded once, in a thread), or 404 if none is configured."""
        if self.settings.imdb is None:
            raise api.ApiError(404, "No IMDB data: start hatt serve with --imdb or HATT_IMDB set")
        async with self._imdb_lock:
            if self._imdb is None:
                from hatt.data import load_imdb

                def load():
                    return load_imdb(self.settings.imdb, validation_size=0, progress=False).test

                self._imdb = await asyncio.get_running_loop().run_in_executor(None, load)
        return self._imdb


def _too_large(cap, received):
    return f"Expected a request body of at most {cap} bytes. Received: {received}"


# === Route handlers =======================================================================


def _json_errors(handler):
    """Answer :class:`api.ApiError` (and anything unexpected) as ``{"error": ...}``."""

    async def wrapped(request):
        try:
            return await handler(request, request.app.state.server)
        except api.ApiError as error:
            return error_response(error.status, error.message)
        except Exception as error:  # noqa: BLE001  (the server keeps serving)
            logger.exception("internal error on %s %s", request.method, request.url.path)
            return error_response(500, f"Internal error: {type(error).__name__}: {error}")

    return wrapped


@_json_errors
async def list_models(request, server):
    return JSONResponse({"models": list(server.models)})


@_json_errors
async def model_route(request, server):
    name, version, action = api.parse_route(request.path_params["rest"])
    wanted = "POST" if action in api.VERBS else "GET"
    if request.method != wanted:
        where = f":{action}" if action in api.VERBS else f"the model {action}"
        raise api.ApiError(405, f"Expected {wanted} for {where}. Received: {request.method}")
    model = server.model(name, version)
    if action == "status":
        return JSONResponse(model.status())
    if action == "metadata":
        return JSONResponse(model.metadata())
    body = await server.body(request)
    texts, columnar = api.parse_texts(body, server.settings.max_texts)
    if action == "predict":
        signature = api.parse_signature(body)
        rows = await server.call(model, signature, texts)
        return JSONResponse(api.predict_response(rows, columnar))
    method = api.parse_choice(body, "method", model.methods, model.methods[0])
    explanations = await server.call(model, "explain", texts)
    return JSONResponse(api.explain_response(explanations, method))


@_json_errors
async def ui_models(request, server):
    return JSONResponse(
        {
            "models": [m.describe() for m in server.models.values()],
            "imdb": server.settings.imdb is not None,
            "max_body_bytes": server.settings.max_body_bytes,
        }
    )


@_json_errors
async def ui_explain(request, server):
    """One review, one model → its card (HTML from hatt's renderer) and its prediction."""
    body = await server.body(request)
    name = body.get("model")
    if not isinstance(name, str):
        raise api.ApiError(400, f"Expected model to be a model name. Received: model={name!r}")
    text = body.get("text")
    if not isinstance(text, str):
        raise api.ApiError(400, f"Expected text to be a string. Received: text of {type(text)}")
    column = body.get("column", 0)
    if isinstance(column, bool) or not isinstance(column, int) or not 0 <= column < 100:
        raise api.ApiError(400, f"Expected column to be an int in [0, 100). Received: {column!r}")
    model = server.model(name)
    method = api.parse_choice(body, "method", model.methods, model.methods[0])
    (explanation,) = await server.call(model, "explain", [text])
    heading = f"{model.name} · version {model.version}"
    return JSONResponse(
        {
            "model": model.name,
            "html": html_renderer.review_html(
                explanation,
                number=column + 1,
                heading=heading,
                method=explanation.check_method(method),
            ),
            "prediction": api.prediction_of(explanation),
        }
    )


@_json_errors
async def ui_stats(request, server):
    """Model calls and reviews per model and action, since the start (batching at work)."""
    out = {}
    for (name, action), batcher in server.batchers.items():
        out.setdefault(name, {})[action] = {"calls": batcher.calls, "texts": batcher.texts}
    return JSONResponse(out)


@_json_errors
async def ui_imdb_review(request, server):
    test = await server.imdb_test()
    index = random.randrange(len(test.texts))
    label = int(test.labels[index])
    return JSONResponse({"index": index, "text": test.texts[index], "label": label})


async def index(request):
    return Response(page.PAGE_HTML, media_type="text/html; charset=utf-8", headers=page.HEADERS)


async def script(request):
    return Response(page.PAGE_JS, media_type="text/javascript; charset=utf-8", headers=page.HEADERS)


async def _not_found(request, exc):
    return error_response(404, f"Malformed request: no such path {request.url.path}")


async def _http_error(request, exc):
    return error_response(exc.status_code, str(exc.detail))


def create_app(models, settings=None):
    """The ASGI application serving ``models``.

    Args:
        models: ``{name: hatt.serve.ServedModel}`` (see
            :func:`hatt.serve.load_models`).
        settings: A :class:`Settings`; defaults to ``Settings()``.

    Returns:
        A Starlette application (run it with uvicorn, or test it with
        ``starlette.testclient.TestClient``). ``app.state.server`` holds the
        models and their batchers.

    Example:

    >>> models = hatt.serve.load_models(["saved_models/han", "saved_models/cnn"])
    >>> app = hatt.serve.create_app(models, hatt.serve.Settings(max_texts=64))
    """
    settings = settings or Settings()
    if not models:
        raise ValueError(f"Expected at least one model to serve. Received: models={models!r}")
    server = Server(models, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        await server.close()

    app = Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            Route("/static/page.js", script, methods=["GET"]),
            Route("/v1/models", list_models, methods=["GET"]),
            Route("/v1/models/{rest:path}", model_route, methods=["GET", "POST"]),
            Route("/ui/models", ui_models, methods=["GET"]),
            Route("/ui/explain", ui_explain, methods=["POST"]),
            Route("/ui/imdb-review", ui_imdb_review, methods=["GET"]),
            Route("/ui/stats", ui_stats, methods=["GET"]),
        ],
        exception_handlers={404: _not_found, HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.state.server = server
    return app
