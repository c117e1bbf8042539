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
- ``GET /healthz`` (liveness: the process answers), ``GET /readyz``
  (readiness: 200 once every model is loaded and warmed up, 503 before and
  while stopping), ``GET /metrics`` (Prometheus, :mod:`hatt.serve.metrics`);
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
import threading
import time

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.responses import Response
from starlette.routing import Route

from hatt.inspect import html as html_renderer
from hatt.serve import api, page
from hatt.serve.batching import Batcher, Unbatched
from hatt.serve.lanes import ExplainLane, Refused
from hatt.serve.metrics import CONTENT_TYPE, Metrics
from hatt.serve.served import PREDICT, WARM_UP

logger = logging.getLogger("hatt.serve")


@dataclasses.dataclass
class Settings:
    """How a server limits, batches and times requests.

    Attributes:
        max_body_bytes: Largest request body (bytes); larger → 413.
        max_texts: Most reviews in one ``:predict`` request; more → 413.
        batching: Join concurrent ``:predict`` requests into one model call.
        max_batch_size: Reviews a batched model call takes at most.
        batch_wait_ms: How long a batch waits for requests to join it.
        threads: Threads of the predict lane (model calls of ``:predict``
            that may run at once).
        predict_queue: ``:predict`` requests that may wait, per model and
            signature; more → 503 with ``Retry-After``.
        max_explain_texts: Most reviews in one ``:explain`` request; more → 413.
        explain_workers: ``:explain`` requests that run at once (threads of
            the explain lane, shared by every model).
        explain_queue: ``:explain`` requests that may wait for a worker;
            more → 503 with ``Retry-After``.
        explain_chunk: Reviews an explain model call takes at most (a
            request runs in chunks of this size).
        explain_deadline_s: Seconds an ``:explain`` request has from its
            arrival: not started by then → 503 with ``Retry-After``; still
            running → stopped at its next chunk, 504.
        body_timeout_s: Seconds a client has to send its whole body; → 408.
        header_timeout_s: Seconds a connection has to send a request's
            headers (from its opening, or from the previous answer); then
            it is closed (uvicorn has no such limit).
        keep_alive_s: Seconds an idle kept-alive connection stays open.
        shutdown_s: On SIGTERM, seconds given to requests in flight before
            they are cancelled.
        imdb: An IMDB source (``hatt.data.load_imdb``) for the page's
            "random test review" button, or `None` (no button).
    """

    max_body_bytes: int = 1 << 20
    max_texts: int = 256
    batching: bool = True
    max_batch_size: int = 64
    batch_wait_ms: float = 0.0
    threads: int = 2
    predict_queue: int = 1024
    max_explain_texts: int = 64
    explain_workers: int = 1
    explain_queue: int = 16
    explain_chunk: int = 1
    explain_deadline_s: float = 60.0
    body_timeout_s: float = 10.0
    header_timeout_s: float = 10.0
    keep_alive_s: float = 5.0
    shutdown_s: float = 10.0
    imdb: str | None = None

    def __post_init__(self):
        for name in (
            "max_body_bytes", "max_texts", "max_batch_size", "threads", "predict_queue",
            "max_explain_texts", "explain_workers", "explain_queue", "explain_chunk",
        ):  # fmt: skip
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
        for name in (
            "explain_deadline_s", "body_timeout_s", "header_timeout_s", "keep_alive_s",
            "shutdown_s",
        ):  # fmt: skip
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(
                    f"Expected {name} to be a number of seconds > 0. Received: {name}={value!r}"
                )


class JSONResponse(Response):
    """JSON as TF Serving writes it: UTF-8, and NaN / Infinity allowed."""

    media_type = "application/json"

    def render(self, content):
        return json_bytes(content)


def json_bytes(content):
    """``content`` as UTF-8 JSON; a lone surrogate a request carried (``"\\ud800"``) is
    written back as its JSON escape, not a crash (issue 63: a plain-text 500)."""
    text = json.dumps(content, ensure_ascii=False, allow_nan=True)
    return text.encode("utf-8", errors="backslashreplace")


def error_response(status, message, retry_after=None):
    headers = None if retry_after is None else {"Retry-After": str(retry_after)}
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class Server:
    """The state behind the routes: the models, their lanes, the settings, the metrics."""

    def __init__(self, models, settings):
        self.models = dict(models)
        self.settings = settings
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=settings.threads, thread_name_prefix="hatt-predict"
        )
        self.batchers = {}
        self.explain_lane = ExplainLane(
            settings.explain_workers,
            settings.explain_queue,
            settings.explain_chunk,
            settings.explain_deadline_s,
        )
        self.metrics = Metrics()
        self.metrics.watch_queue("all", "explain", lambda: self.explain_lane.waiting)
        self.explained = {}  # model name → (explain model calls, texts), for /ui/stats
        self._explained_lock = threading.Lock()
        self.ready = False
        self.draining = False
        self.warm_up_error = None
        self._imdb = None
        self._imdb_lock = asyncio.Lock()

    # --- model calls ------------------------------------------------------------------

    def batcher(self, model, signature):
        """The predict lane's batcher of ``model``'s ``signature``."""
        key = (model.name, signature)
        if key not in self.batchers:
            observe = self.metrics.batch_observer(model.name, "predict")

            def run(texts, model=model, signature=signature):
                observe(len(texts))
                return api.rows_of(model.run(signature, texts))

            s = self.settings
            self.batchers[key] = (
                Batcher(run, s.max_batch_size, s.batch_wait_ms, self.executor, s.predict_queue)
                if s.batching
                else Unbatched(run, self.executor)
            )
            self.metrics.watch_queue(model.name, "predict", lambda b=self.batchers[key]: b.waiting)
        return self.batchers[key]

    async def predict(self, model, signature, texts):
        """Run ``model``'s ``signature`` on ``texts`` in the predict lane."""
        return await self._guarded(model, len(texts), self.batcher(model, signature)(texts))

    async def explain(self, model, texts, parts=None, gone=None):
        """``model``'s explanations of ``texts``, chunk by chunk in the explain lane.

        With ``parts`` (a function of a chunk's explanations, run in the
        lane's thread) its results stand for the explanations; ``gone``
        (``request.is_disconnected``) stops the work of a client that left.
        """
        observe = self.metrics.batch_observer(model.name, "explain")

        def run(chunk):
            observe(len(chunk))
            with self._explained_lock:
                calls, count = self.explained.get(model.name, (0, 0))
                self.explained[model.name] = (calls + 1, count + len(chunk))
            explanations = model.explain(chunk)
            return explanations if parts is None else parts(explanations)

        return await self._guarded(model, len(texts), self.explain_lane(texts, run, gone))

    async def _guarded(self, model, count, call):
        """Await a lane's answer; a refusal keeps its status, a model's failure is a 500."""
        try:
            return await call
        except api.ApiError:
            raise
        except Refused as refused:
            raise api.ApiError(refused.status, refused.message, refused.retry_after) from None
        except asyncio.CancelledError:
            if not self.draining:
                raise  # the request itself was cancelled
            raise self._stopping() from None
        except Exception as error:  # noqa: BLE001  (a model's failure is a 500, not a crash)
            if self.draining and isinstance(
                error, RuntimeError | concurrent.futures.CancelledError
            ):
                # stopping: the lanes' threads were shut down under the queued work
                raise self._stopping() from None
            raise self._failure(model, count, error) from error

    @staticmethod
    def _stopping():
        return api.ApiError(503, "The server is stopping: retry on another replica.", 1)

    def _failure(self, model, count, error):
        """A model's failure as a 500 (logged with its traceback)."""
        logger.error("model %r failed on %d text(s)", model.name, count, exc_info=error)
        return api.ApiError(
            500,
            f"Internal error while running model {model.name!r}: "
            f"{type(error).__name__}: {str(error)[:300]}",
        )

    async def warm_up(self):
        """Run every model once each way (explain's graph is traced here); then ready.

        ``predict`` runs once at every power-of-two batch size up to
        ``max_batch_size``: the CNN's predict path is compiled by XLA once per
        padded batch shape (:meth:`hatt.export.TextModel._compiled_classifier`),
        and no request should pay for a compilation. The model is called
        directly, on the predict lane's threads and in a thread of its own for
        explain: the warm-up is not traffic, and neither ``/metrics`` (batch
        sizes) nor ``/ui/stats`` counts it (issue 63).
        """
        largest = self.settings.max_batch_size  # padded to the next power of two
        sizes = [1 << k for k in range((largest - 1).bit_length())] + [largest]
        loop = asyncio.get_running_loop()
        try:
            for model in self.models.values():
                for size in sizes:
                    await loop.run_in_executor(self.executor, model.run, PREDICT, WARM_UP * size)
                await asyncio.to_thread(model.explain, WARM_UP)
        except Exception as error:  # noqa: BLE001  (reported by /readyz, not a crash)
            logger.exception("warm-up failed")
            self.warm_up_error = f"{type(error).__name__}: {error}"
            return
        self.ready = not self.draining
        self.metrics.ready.set(1 if self.ready else 0)

    def drain(self):
        """Stop: not ready; explain requests stop at their next chunk (503); predict goes on."""
        self.draining = True
        self.ready = False
        self.metrics.ready.set(0)
        self.explain_lane.close()

    async def close(self):
        self.drain()
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
        """The request's JSON object: at most ``max_body_bytes`` (413 beyond), read within
        ``body_timeout_s`` (408 after)."""
        cap = self.settings.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > cap:
            raise api.ApiError(413, _too_large(cap, f"{declared} bytes"))
        body = bytearray()
        try:
            async with asyncio.timeout(self.settings.body_timeout_s):
                async for chunk in request.stream():
                    body += chunk
                    if len(body) > cap:
                        raise api.ApiError(413, _too_large(cap, "more"))
        except TimeoutError:
            raise api.ApiError(
                408,
                f"Expected the request body within {self.settings.body_timeout_s:g} s. "
                f"Received: {len(body)} bytes by then",
            ) from None
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


def default_method(model):
    """The view a request that names no method gets: ``total`` where the model has it.

    ``total`` (each word's share of the whole logit) cannot point backwards
    when the mix weighs the deep part down; other views are one part alone.
    """
    return "total" if "total" in model.methods else model.methods[0]


def _too_large(cap, received):
    return f"Expected a request body of at most {cap} bytes. Received: {received}"


MAX_HEADER_BYTES = 16 * 1024  # a request's headers (names, values, ": " and CRLF each)


class HeaderLimit:
    """ASGI middleware: a request whose headers exceed :data:`MAX_HEADER_BYTES` is answered
    431 as JSON and counted in ``/metrics`` (endpoint ``"-"``: refused before routing).

    h11 caps only headers still incomplete in its buffer; headers that arrive in one
    read were taken whole (issue 63: 100 KB accepted where docs/serving.md says 16 KiB).
    """

    def __init__(self, app, server):
        self.app, self.server = app, server

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            size = sum(len(name) + len(value) + 4 for name, value in scope["headers"])
            if size > MAX_HEADER_BYTES:
                began = time.perf_counter()
                response = error_response(
                    431,
                    f"Expected request headers of at most {MAX_HEADER_BYTES} bytes. "
                    f"Received: {size} bytes; send large values in the body",
                )
                await response(scope, receive, send)
                self.server.metrics.rejections.labels("-", "-", REJECTIONS[431]).inc()
                self.server.metrics.observe("-", "-", 431, time.perf_counter() - began)
                return
        await self.app(scope, receive, send)


# === Route handlers =======================================================================


def _json_errors(endpoint):
    """Answer :class:`api.ApiError` (and anything unexpected) as ``{"error": ...}``; count it.

    The handler may name the model it served in ``request.state.model`` (the
    metrics' label; ``"-"`` otherwise).
    """

    def decorate(handler):
        async def wrapped(request):
            began = time.perf_counter()
            server = request.app.state.server
            request.state.model = "-"
            name = endpoint(request) if callable(endpoint) else endpoint
            try:
                response = await handler(request, server)
            except api.ApiError as error:
                response = error_response(error.status, error.message, error.retry_after)
                if error.status in REJECTIONS:
                    server.metrics.rejections.labels(
                        request.state.model, name, REJECTIONS[error.status]
                    ).inc()
            except Exception as error:  # noqa: BLE001  (the server keeps serving)
                logger.exception("internal error on %s %s", request.method, request.url.path)
                response = error_response(500, f"Internal error: {type(error).__name__}: {error}")
            server.metrics.observe(
                request.state.model, name, response.status_code, time.perf_counter() - began
            )
            return response

        return wrapped

    return decorate


# The rejections counted by status: what each means here.
REJECTIONS = {
    408: "slow_body",
    413: "too_large",
    431: "headers_too_large",
    499: "client_gone",
    503: "unavailable",
    504: "deadline",
}


async def _render(content):
    """A JSON response rendered off the event loop (an explanation's JSON is large)."""
    body = await asyncio.to_thread(json_bytes, content)
    return Response(body, media_type=JSONResponse.media_type)


@_json_errors("models")
async def list_models(request, server):
    return JSONResponse({"models": list(server.models)})


def endpoint_of(request):
    """The metrics' endpoint of a ``/v1/models/...`` request: predict, explain or model."""
    rest = request.path_params.get("rest", "")
    for verb in api.VERBS:
        if rest.endswith(f":{verb}"):
            return verb
    return "model"


@_json_errors(endpoint_of)
async def model_route(request, server):
    name, version, action = api.parse_route(request.path_params["rest"])
    wanted = "POST" if action in api.VERBS else "GET"
    if request.method != wanted:
        where = f":{action}" if action in api.VERBS else f"the model {action}"
        raise api.ApiError(405, f"Expected {wanted} for {where}. Received: {request.method}")
    model = server.model(name, version)
    request.state.model = model.name
    if action == "status":
        return JSONResponse(model.status())
    if action == "metadata":
        return JSONResponse(model.metadata())
    body = await server.body(request)
    if action == "predict":
        api.check_fields(body, "predict")
        texts, columnar = api.parse_texts(body, server.settings.max_texts)
        signature = api.parse_signature(body)
        rows = await server.predict(model, signature, texts)
        answer = api.predict_response(rows, columnar, model.class_names)
        return JSONResponse(api.with_empty_warning(answer, texts))
    api.check_fields(body, "explain")
    texts, _ = api.parse_texts(body, server.settings.max_explain_texts, ":explain request")
    method = api.parse_choice(body, "method", model.methods, default_method(model))
    parts = await server.explain(
        model, texts, lambda e: api.explain_parts(e, method), request.is_disconnected
    )
    return await _render(api.with_empty_warning(api.explain_response(None, parts=parts), texts))


@_json_errors("ui")
async def ui_models(request, server):
    return JSONResponse(
        {
            "models": [m.describe() for m in server.models.values()],
            "imdb": server.settings.imdb is not None,
            "max_body_bytes": server.settings.max_body_bytes,
        }
    )


@_json_errors("ui_explain")
async def ui_explain(request, server):
    """One review, one model → its card (HTML from hatt's renderer) and its prediction."""
    body = await server.body(request)
    if isinstance(body, dict):
        api.check_fields(body, "ui_explain")
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
    request.state.model = model.name
    api.check_unicode(text, "text")
    method = api.parse_choice(body, "method", model.methods, default_method(model))
    (explanation,) = await server.explain(model, [text], gone=request.is_disconnected)
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


@_json_errors("ui")
async def ui_stats(request, server):
    """Model calls and reviews per model and action, since the start (batching at work)."""
    out = {}
    for (name, action), batcher in server.batchers.items():
        out.setdefault(name, {})[action] = {"calls": batcher.calls, "texts": batcher.texts}
    for name, (calls, texts) in server.explained.items():
        out.setdefault(name, {})["explain"] = {"calls": calls, "texts": texts}
    return JSONResponse(out)


async def healthz(request):
    """Liveness: the process and its event loop answer."""
    return JSONResponse({"status": "alive"})


async def readyz(request):
    """Readiness: 200 once every model is loaded and warmed up; 503 before, and when stopping."""
    server = request.app.state.server
    if server.ready:
        return JSONResponse({"status": "ready", "models": list(server.models)})
    reason = (
        "stopping" if server.draining
        else f"warm-up failed: {server.warm_up_error}" if server.warm_up_error
        else "warming up"
    )  # fmt: skip
    return error_response(503, f"Not ready: {reason}", retry_after=1)


async def metrics(request):
    server = request.app.state.server
    return Response(server.metrics.render(), media_type=CONTENT_TYPE)


@_json_errors("ui")
async def ui_imdb_review(request, server):
    test = await server.imdb_test()
    index = random.randrange(len(test.texts))
    label = int(test.labels[index])
    return JSONResponse({"index": index, "text": test.texts[index], "label": label})


async def favicon(request):
    """No icon: 204, so a browser's request is neither a 404 in the logs nor an error count."""
    return Response(status_code=204)


async def index(request):
    return Response(page.PAGE_HTML, media_type="text/html; charset=utf-8", headers=page.HEADERS)


async def script(request):
    return Response(page.PAGE_JS, media_type="text/javascript; charset=utf-8", headers=page.HEADERS)


async def _not_found(request, exc):
    return _counted(
        request, error_response(404, f"Malformed request: no such path {request.url.path}")
    )


async def _http_error(request, exc):
    return _counted(request, error_response(exc.status_code, str(exc.detail)))


def _counted(request, response):
    """An answer given outside the routes (no such path, a method a route does not take):
    counted in ``/metrics`` as every other (issue 63: 404s and 405s went uncounted)."""
    server = getattr(request.app.state, "server", None)
    if server is not None:
        server.metrics.observe("-", "-", response.status_code, 0.0)
    return response


def create_app(models, settings=None):
    """The ASGI application serving ``models``.

    Args:
        models: ``{name: hatt.serve.ServedModel}`` (see
            :func:`hatt.serve.load_models`).
        settings: A :class:`Settings`; defaults to ``Settings()``.

    Returns:
        A Starlette application (run it with uvicorn, or test it with
        ``starlette.testclient.TestClient``). ``app.state.server`` holds the
        models, their lanes and the metrics. At startup (its lifespan) it
        warms every model up in both lanes; ``/readyz`` answers 200 after.

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
        warm_up = asyncio.create_task(server.warm_up())  # the port opens meanwhile: /healthz
        yield
        warm_up.cancel()
        await server.close()

    app = Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            Route("/static/page.js", script, methods=["GET"]),
            Route("/favicon.ico", favicon, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
            Route("/v1/models", list_models, methods=["GET"]),
            Route("/v1/models/{rest:path}", model_route, methods=["GET", "POST"]),
            Route("/ui/models", ui_models, methods=["GET"]),
            Route("/ui/explain", ui_explain, methods=["POST"]),
            Route("/ui/imdb-review", ui_imdb_review, methods=["GET"]),
            Route("/ui/stats", ui_stats, methods=["GET"]),
        ],
        exception_handlers={404: _not_found, HTTPException: _http_error},
        middleware=[Middleware(HeaderLimit, server=server)],
        lifespan=lifespan,
    )
    app.state.server = server
    return app
