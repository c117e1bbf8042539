"""``hatt serve``'s options, its naming of models, and the command run for real."""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from hatt import serve
from hatt.serve import cli as serve_cli
from hatt.serve.served import load_models, model_name, parse_spec
from tests.serve.conftest import fake_predictor


def parse(argv):
    parser = argparse.ArgumentParser(prog="hatt")
    serve_cli.add_serve_command(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


def test_options_and_their_defaults():
    args = parse(["saved_models/han", "cnn=saved_models/cnn"])
    assert args.models == ["saved_models/han", "cnn=saved_models/cnn"]
    assert (args.host, args.port, args.func) == ("127.0.0.1", 8501, serve_cli.cmd_serve)
    assert args.max_texts == 256 and args.max_body_bytes == 1 << 20
    assert not args.no_batching and args.max_batch_size == 64 and args.batch_wait_ms == 0.0
    with pytest.raises(SystemExit):
        parse([])  # at least one model


def test_the_flags_defaults_are_the_settings_defaults(monkeypatch):
    monkeypatch.delenv("HATT_IMDB", raising=False)
    assert serve.Settings(**serve_cli.settings_from_args(parse(["m"]))) == serve.Settings()
    changed = parse(["m", "--explain-deadline", "5", "--shutdown-timeout", "2", "--no-batching"])
    settings = serve.Settings(**serve_cli.settings_from_args(changed))
    assert (settings.explain_deadline_s, settings.shutdown_s, settings.batching) == (
        5.0,
        2.0,
        False,
    )


@pytest.mark.parametrize(
    "argv, words",
    [
        (["m", "--max-texts", "0"], "max_texts"),
        (["m", "--batch-wait-ms", "-1"], "batch_wait_ms"),
        (["m", "--threads", "0"], "threads"),
        (["m", "--port", "70000"], "--port"),
    ],
)
def test_bad_options_fail_before_loading_anything(argv, words):
    with pytest.raises(ValueError, match=words):
        serve_cli.cmd_serve(parse(argv))


def test_model_names(tmp_path):
    version = tmp_path / "saved_models" / "cnn" / "3"
    version.mkdir(parents=True)
    (version / "saved_model.pb").write_bytes(b"")
    assert model_name(version.parent) == "cnn"
    assert model_name(version) == "cnn"
    assert model_name(tmp_path / "runs" / "han-1" / "model.keras") == "han-1"
    assert model_name(tmp_path / "best.keras") == "best"
    assert parse_spec("fast=saved_models/cnn") == ("fast", "saved_models/cnn")
    assert parse_spec(str(version.parent)) == ("cnn", str(version.parent))
    with pytest.raises(ValueError, match="both named 'cnn'"):
        load_models(["a/cnn", "b/cnn"], loader=lambda path: fake_predictor())
    with pytest.raises(ValueError, match="name='bad name'"):
        serve.served_model("bad name", fake_predictor())
    with pytest.raises(ValueError, match="at least one model"):
        load_models([])
    loaded = load_models(["x/one", "two=x/one"], loader=lambda path: fake_predictor(version=4))
    assert list(loaded) == ["one", "two"] and loaded["two"].version == 4


def test_a_port_in_use_is_one_error_before_any_model_loads(tmp_path, capsys):
    """Issue 63: the URL was printed, then uvicorn's bind error and a warm-up traceback."""
    from hatt import cli

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # no model there: loading first would have said "No model at ..."
        assert cli.main(["serve", str(tmp_path / "no-model"), "--port", str(port)]) == 2
        with pytest.raises(ValueError, match=f"port {port} is in use on 127.0.0.1"):
            serve.serve([str(tmp_path / "no-model")], port=port)
    err = capsys.readouterr().err
    assert err == (
        f"hatt serve: error: port {port} is in use on 127.0.0.1: pick another with --port "
        "(or stop what listens there)\n"
    )


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


@pytest.mark.slow
def test_the_command_serves_until_interrupted(exported):
    port = _free_port()
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("HATT_IMDB", None)
    command = [sys.executable, "-m", "hatt.cli", "serve", str(exported["cnn"].path)]
    server = subprocess.Popen(
        [*command, "--port", str(port), "--max-texts", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                status = _get(f"http://127.0.0.1:{port}/v1/models/cnn")
                break
            except (urllib.error.URLError, ConnectionError):
                assert server.poll() is None, server.communicate()[1][-3000:]
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.5)
        assert status["model_version_status"][0]["state"] == "AVAILABLE"
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/models/cnn:predict",
            data=json.dumps({"instances": ["a", "b", "c"]}).encode(),
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 413  # --max-texts 2 reached the server
        assert "at most 2 texts" in json.load(caught.value)["error"]
    finally:
        server.send_signal(signal.SIGINT)
        _, stderr = server.communicate(timeout=60)
    assert server.returncode == 0, stderr[-3000:]
    assert f"page and REST API on http://127.0.0.1:{port}/" in stderr


def _post(url, body, timeout=30):
    """``(status, headers)`` of a POST; ``(None, None)`` when the connection fails or closes."""
    request = urllib.request.Request(url, data=json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return response.status, {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None, None


@pytest.mark.slow
def test_sigterm_under_load_stops_explain_at_a_chunk_and_exits_in_time(exported):
    port = _free_port()
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("HATT_IMDB", None)
    shutdown_s = 2.0
    command = [sys.executable, "-m", "hatt.cli", "serve", str(exported["cnn"].path)]
    command += ["--port", str(port), "--explain-chunk", "1", "--explain-workers", "2"]
    command += ["--shutdown-timeout", str(shutdown_s)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    answers, stop = [], threading.Event()

    def client(verb, texts):
        while not stop.is_set():
            answers.append((verb, *_post(f"{base}/v1/models/cnn:{verb}", {"instances": texts})))

    try:
        deadline = time.monotonic() + 120
        while True:  # ready: loaded and warmed up in both lanes
            try:
                if _get(f"{base}/readyz")["status"] == "ready":
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            assert server.poll() is None, server.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the server was never ready"
            time.sleep(0.3)
        review = "A fine film, well acted. I would see it again!"
        clients = [
            threading.Thread(target=client, args=("explain", [review] * 64)) for _ in range(4)
        ]
        clients += [threading.Thread(target=client, args=("predict", [review])) for _ in range(2)]
        for thread in clients:
            thread.start()
        time.sleep(2.0)
        assert any(verb == "predict" and status == 200 for verb, status, _ in answers)
        began = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=shutdown_s + 20)
        stopped_in = time.monotonic() - began
    finally:
        stop.set()
        if server.poll() is None:
            server.kill()
        _, stderr = server.communicate(timeout=30)
    for thread in clients:
        thread.join(timeout=60)
    assert server.returncode == 0, stderr[-3000:]
    assert stopped_in < shutdown_s + 10, stopped_in  # the grace, one chunk, the teardown
    statuses = {status for _, status, _ in answers}
    assert statuses <= {200, 503, None}, statuses  # stopped explains are 503s, never 500s
    assert ("explain", 503) in {(v, s) for v, s, _ in answers}, "no explain was stopped"
    for verb, status, headers in answers:
        if status == 503:
            assert verb == "explain" and int(headers["retry-after"]) >= 1
