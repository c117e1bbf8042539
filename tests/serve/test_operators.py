"""What operators and hostile clients meet: lanes, caps, deadlines, health, metrics, timeouts."""

import asyncio
import json
import socket
import threading
import time

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from hatt import serve
from tests.serve.conftest import LiveServer, fake_predictor


def slow_model(name="slow", seconds_per_chunk=0.3, gate=None):
    """The fake model, its explanations taking ``seconds_per_chunk`` (and waiting for ``gate``)."""
    model = serve.served_model(name, fake_predictor())
    explain = model.explain

    def slow_explain(texts):
        if gate is not None:
            gate.wait(30)
        time.sleep(seconds_per_chunk)
        return explain(texts)

    model.explain = slow_explain
    return model


async def _send(app, requests, stagger=0.0):
    """``requests`` ``(method, path, body)`` at once, the k-th after ``k * stagger`` s; with
    the moment each was answered."""
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:

        async def one(k, method, path, body):
            await asyncio.sleep(k * stagger)
            response = await client.request(method, path, json=body)
            return response, time.monotonic()

        return await asyncio.gather(*(one(k, *r) for k, r in enumerate(requests)))


def test_a_predict_is_answered_while_a_slow_explain_runs():
    settings = serve.Settings(explain_chunk=4)
    app = serve.create_app({"slow": slow_model(seconds_per_chunk=0.4)}, settings)
    explain = ("POST", "/v1/models/slow:explain", {"instances": ["a b"] * 8})  # 2 chunks
    predict = ("POST", "/v1/models/slow:predict", {"instances": ["a b"]})
    began = time.monotonic()
    (slow, explained_at), (fast, predicted_at) = asyncio.run(
        _send(app, [explain, predict], stagger=0.1)
    )
    assert slow.status_code == fast.status_code == 200
    assert len(slow.json()["explanations"]) == 8
    assert explained_at - began > 0.8  # two chunks of 0.4 s
    assert predicted_at < explained_at - 0.4  # answered while explain was in flight


def test_explain_has_its_own_cap_named_in_the_413():
    app = serve.create_app(
        {"slow": slow_model(seconds_per_chunk=0)}, serve.Settings(max_explain_texts=2)
    )
    with TestClient(app) as client:
        response = client.post("/v1/models/slow:explain", json={"instances": ["a"] * 3})
        assert response.status_code == 413
        assert "at most 2 texts a :explain request" in response.json()["error"]
        assert (
            client.post("/v1/models/slow:predict", json={"instances": ["a"] * 3}).status_code == 200
        )


def test_deadlines_answer_504_running_and_503_never_started_with_retry_after():
    settings = serve.Settings(explain_deadline_s=0.5, explain_chunk=1, explain_workers=1)
    app = serve.create_app({"slow": slow_model(seconds_per_chunk=0.3)}, settings)
    long = ("POST", "/v1/models/slow:explain", {"instances": ["a b"] * 10})
    short = ("POST", "/v1/models/slow:explain", {"instances": ["c"]})
    (running, _), (queued, _) = asyncio.run(_send(app, [long, short], stagger=0.05))
    assert running.status_code == 504 and "ran past its deadline (0.5 s)" in running.json()["error"]
    assert queued.status_code == 503 and "never started" in queued.json()["error"]
    for response in (running, queued):
        assert int(response.headers["retry-after"]) >= 1


def test_a_full_explain_queue_is_a_503_with_retry_after():
    settings = serve.Settings(explain_queue=1, explain_chunk=1)
    app = serve.create_app({"slow": slow_model(seconds_per_chunk=0.3)}, settings)
    body = ("POST", "/v1/models/slow:explain", {"instances": ["a"]})
    answers = asyncio.run(_send(app, [body] * 3, stagger=0.05))
    statuses = [r.status_code for r, _ in answers]
    assert statuses == [200, 200, 503]
    full = answers[2][0]
    assert "queue is full (1 requests waiting)" in full.json()["error"]
    assert int(full.headers["retry-after"]) >= 1


def test_readiness_waits_for_the_warm_up_and_liveness_does_not():
    gate = threading.Event()
    app = serve.create_app({"slow": slow_model(seconds_per_chunk=0, gate=gate)}, serve.Settings())
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
        before = client.get("/readyz")
        assert before.status_code == 503 and "warming up" in before.json()["error"]
        assert before.headers["retry-after"] == "1"
        assert "hatt_ready 0.0" in client.get("/metrics").text
        gate.set()
        deadline = time.monotonic() + 10
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, "never ready"
            time.sleep(0.02)
        assert client.get("/readyz").json() == {"status": "ready", "models": ["slow"]}
        app.state.server.drain()  # what SIGTERM does first
        assert client.get("/readyz").json()["error"] == "Not ready: stopping"
        assert client.get("/healthz").json() == {"status": "alive"}


def _samples(text):
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_the_warm_up_is_not_counted_as_traffic():
    """Issue 63: /metrics (and /ui/stats) counted the warm-up's model calls."""
    app = serve.create_app({"slow": slow_model(seconds_per_chunk=0)}, serve.Settings())
    with TestClient(app) as client:
        while client.get("/readyz").status_code != 200:
            time.sleep(0.02)
        assert client.get("/ui/stats").json() == {}
        assert (
            'hatt_batch_size_count{lane="predict",model="slow"}' not in client.get("/metrics").text
        )
        client.post("/v1/models/slow:predict", json={"instances": ["a"]})
        assert client.get("/ui/stats").json() == {"slow": {"predict": {"calls": 1, "texts": 1}}}


def test_metrics_count_requests_errors_latency_batches_queues_and_rejections():
    settings = serve.Settings(max_texts=2, explain_chunk=4)
    app = serve.create_app({"slow": slow_model(seconds_per_chunk=0)}, settings)
    with TestClient(app) as client:
        while client.get("/readyz").status_code != 200:
            time.sleep(0.02)
        for _ in range(3):
            assert (
                client.post("/v1/models/slow:predict", json={"instances": ["a b"]}).status_code
                == 200
            )
        assert (
            client.post("/v1/models/slow:explain", json={"instances": ["a"] * 5}).status_code == 200
        )
        assert (
            client.post("/v1/models/slow:predict", json={"instances": ["a"] * 3}).status_code == 413
        )
        assert client.post("/v1/models/nope:predict", json={"instances": ["a"]}).status_code == 404
        # answers given outside the routes are JSON and counted too (issue 63, second pass)
        assert client.get("/ui/nosuch").json()["error"].startswith("Malformed request: no such")
        assert client.put("/v1/models/slow:predict", json={}).status_code == 405
        response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    got = _samples(response.text)

    def value(name, **labels):
        return got.get((name, tuple(sorted(labels.items()))), 0.0)

    assert value("hatt_requests_total", model="slow", endpoint="predict", code="200") == 3
    assert value("hatt_requests_total", model="slow", endpoint="explain", code="200") == 1
    assert value("hatt_request_errors_total", model="slow", endpoint="predict", code="413") == 1
    assert value("hatt_request_errors_total", model="-", endpoint="predict", code="404") == 1
    assert value("hatt_request_errors_total", model="-", endpoint="-", code="404") == 1
    assert value("hatt_request_errors_total", model="-", endpoint="-", code="405") == 1
    assert value("hatt_request_seconds_count", model="slow", endpoint="predict") == 4
    assert value("hatt_rejections_total", model="slow", endpoint="predict", reason="too_large") == 1
    # the warm-up (predict at every power of two up to max_batch_size, one explain) is not
    # traffic (issue 63): only the 3 predicts and the 5 reviews explained in 2 chunks count
    assert value("hatt_batch_size_count", model="slow", lane="predict") == 3
    assert value("hatt_batch_size_sum", model="slow", lane="predict") == 3
    assert value("hatt_batch_size_count", model="slow", lane="explain") == 2
    assert value("hatt_batch_size_sum", model="slow", lane="explain") == 4 + 1
    assert value("hatt_queue_depth", model="all", lane="explain") == 0
    assert ("hatt_queue_depth", (("lane", "predict"), ("model", "slow"))) in got
    assert value("hatt_ready") == 1
    # a client's made-up model name never becomes a label
    assert not any(dict(labels).get("model") == "nope" for _, labels in got)


# === Bad input: never a 500 ===


@pytest.fixture(scope="module")
def fake_client():
    app = serve.create_app({"fake": serve.served_model("fake", fake_predictor())}, serve.Settings())
    with TestClient(app) as client:
        yield client


@pytest.mark.parametrize(
    "body, words",
    [
        (b"", "Malformed JSON body"),
        (b"null", "Received: JSON null"),
        (b"[" * 100_000, "nested too deeply"),
        (b'{"instances": ["a\\ud800b"]}', "lone surrogate"),
        (b'{"inputs": {"text": ["\\udfff"]}}', "inputs.text[0]"),
        (b'{"instances": [NaN]}', "instances[0]=NaN"),
        (b'{"instances": ["\xff"]}', "not UTF-8"),
        (b'{"instances": ["a"], "method": {"x": 1}, "signature_name": [1]}', "signature_name"),
    ],
)
def test_malformed_bodies_are_400s_that_say_why(fake_client, body, words):
    response = fake_client.post("/v1/models/fake:predict", content=body)
    assert response.status_code == 400, response.text
    assert words in response.json()["error"]


def test_a_lone_surrogate_in_a_model_name_is_a_json_404_and_counted(fake_client):
    # issue 63: the 404's message held the surrogate, UTF-8 refused it, a plain-text 500
    def errors():
        sample = 'hatt_request_errors_total{code="404",endpoint="ui_explain",model="-"}'
        line = [x for x in fake_client.get("/metrics").text.splitlines() if x.startswith(sample)]
        return float(line[0].split()[-1]) if line else 0.0

    before = errors()
    body = b'{"model": "\\ud800", "text": "x"}'
    response = fake_client.post("/ui/explain", content=body)
    assert response.status_code == 404 and response.headers["content-type"] == "application/json"
    assert "\ud800" in response.json()["error"]
    assert errors() == before + 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
bodies = (
    st.binary(max_size=64)
    | json_values.map(lambda v: json.dumps(v).encode())
    | st.dictionaries(
        st.sampled_from(["instances", "inputs", "signature_name", "method", "text"]),
        json_values,
        max_size=3,
    ).map(lambda v: json.dumps(v).encode())
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=bodies, verb=st.sampled_from(["predict", "explain"]))
def test_no_body_gives_a_500(fake_client, body, verb):
    response = fake_client.post(f"/v1/models/fake:{verb}", content=body)
    assert response.status_code in (200, 400, 413), (body, response.text)
    assert set(response.json()) <= {"error", "predictions", "outputs", "explanations"}


def test_a_20_mb_document_is_refused_with_the_cap_unread():
    app = serve.create_app({"fake": serve.served_model("fake", fake_predictor())}, serve.Settings())
    document = "word " * (4 << 20)  # 20 MiB, no punctuation
    with TestClient(app) as client:
        declared = client.post("/v1/models/fake:predict", json={"instances": [document]})

        def chunks():  # no Content-Length: the server stops reading at the cap
            yield b'{"instances": ["'
            for _ in range(20):
                yield b"word " * (1 << 18)
            yield b'"]}'

        streamed = client.post("/v1/models/fake:explain", content=chunks())
    for response in (declared, streamed):
        assert response.status_code == 413
        assert "at most 1048576 bytes" in response.json()["error"]


# === Slow clients (a real uvicorn, as hatt serve runs it) ===


class TimedServer(LiveServer):
    """:class:`LiveServer` with ``hatt serve``'s protocol, timeouts and drain."""

    def __init__(self, app, settings):
        super().__init__(app)
        from hatt.serve.process import uvicorn_server

        self.server = uvicorn_server(app, "127.0.0.1", self.port, settings, "warning")
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )


def _closed_within(sock, seconds):
    """Whether the server closes ``sock`` within ``seconds`` (what it sent before, if any)."""
    sock.settimeout(seconds)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        return False, received
    return True, received


def test_slow_headers_slow_bodies_and_idle_connections_time_out():
    settings = serve.Settings(header_timeout_s=0.5, body_timeout_s=0.5, keep_alive_s=0.5)
    app = serve.create_app({"fake": serve.served_model("fake", fake_predictor())}, settings)
    with TimedServer(app, settings) as live:
        address = ("127.0.0.1", live.port)
        with socket.create_connection(address) as silent:  # connects, sends nothing
            assert _closed_within(silent, 3)[0]
        with socket.create_connection(address) as slow_headers:
            slow_headers.sendall(b"POST /v1/models/fake:predict HTTP/1.1\r\nHost: x\r\n")
            time.sleep(0.2)
            slow_headers.sendall(b"X-Slow: 1\r\n")  # still no end of headers
            assert _closed_within(slow_headers, 3)[0]
        with socket.create_connection(address) as slow_body:
            slow_body.sendall(
                b"POST /v1/models/fake:predict HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
                b'{"instances"'
            )
            closed, received = _closed_within(slow_body, 3)
            assert received.startswith(b"HTTP/1.1 408"), received[:200]
            assert b"within 0.5 s" in received
        with socket.create_connection(address) as idle:  # one answer, then nothing
            body = b'{"instances": ["a b"]}'
            idle.sendall(
                b"POST /v1/models/fake:predict HTTP/1.1\r\nHost: x\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            closed, received = _closed_within(idle, 3)
            assert closed and received.startswith(b"HTTP/1.1 200")


def test_an_explain_whose_client_left_stops_running():
    settings = serve.Settings(explain_chunk=1)
    app = serve.create_app({"slow": slow_model(seconds_per_chunk=0.1)}, settings)
    with TimedServer(app, settings) as live:
        while not app.state.server.ready:
            time.sleep(0.02)
        body = json.dumps({"instances": ["a b"] * 40}).encode()
        with socket.create_connection(("127.0.0.1", live.port)) as sock:
            sock.sendall(
                b"POST /v1/models/slow:explain HTTP/1.1\r\nHost: x\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            time.sleep(0.5)
        time.sleep(0.5)  # 40 chunks would take 4 s
        _, stopped_at = app.state.server.explained["slow"]
        time.sleep(0.5)
        _, later = app.state.server.explained["slow"]
        assert later == stopped_at < 40, (stopped_at, later)  # chunks (the warm-up uncounted)
        assert app.state.server.explain_lane.running == 0


@pytest.mark.parametrize("draining,status", [(False, 500), (True, 503)])
def test_work_lost_to_a_shutdown_is_a_503_and_a_model_failure_a_500(draining, status):
    """A lane shut down under queued work while stopping (RuntimeError from the executor)
    answers 503 with Retry-After; the same error outside a shutdown is the model's 500."""
    model = slow_model(seconds_per_chunk=0)
    app = serve.create_app({"slow": model}, serve.Settings())
    with TestClient(app) as client:
        while client.get("/readyz").status_code != 200:
            time.sleep(0.02)

        def refused(signature, texts):
            raise RuntimeError("cannot schedule new futures after shutdown")

        model.run = refused
        app.state.server.draining = draining
        response = client.post("/v1/models/slow:predict", json={"instances": ["a b"]})
        app.state.server.draining = False
    assert response.status_code == status
    assert ("Retry-After" in response.headers) == draining
