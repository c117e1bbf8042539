"""Fixtures of the server tests: tiny real exports, a fake model that can fail, clients."""

import socket
import threading
import time

import numpy as np
import pytest
import tensorflow as tf
from starlette.testclient import TestClient

from hatt import export, serve

BOOM = "boom"  # a review holding this word makes the fake model raise


def fake_run(batch):
    """A serving_default stand-in: words → tokens, p = 0.75, uniform weights; raises on BOOM."""
    texts = [t.decode("utf-8") for t in batch.numpy()]
    if any(BOOM in t.split() for t in texts):
        raise RuntimeError("the fake model exploded")
    words = [t.split() or [""] for t in texts]
    width = max((len(w) for w in words), default=1)
    tokens = np.array([[w.encode() for w in ws] + [b""] * (width - len(ws)) for ws in words])
    tokens = tokens.reshape(len(texts), width)
    real = (tokens != b"").astype(np.float32)
    weights = real / np.maximum(real.sum(axis=1, keepdims=True), 1.0)
    return {
        "probability": tf.constant(np.full(len(texts), 0.75, np.float32)),
        "tokens": tf.constant(tokens, dtype=tf.string),
        "word_attention": tf.constant(weights),
    }


def fake_predictor(version=7):
    """A real :class:`hatt.export.Predictor` around :func:`fake_run` (a flat 'cnn')."""
    return export.Predictor(
        fake_run, family="cnn", score_kind="saliency", source="fake", kind="saved_model",
        version=version,
    )  # fmt: skip


@pytest.fixture(scope="session")
def served(exported):
    """``{name: ServedModel}``: the tiny CNN and HAN exports, named as ``hatt serve`` names them."""
    return serve.load_models([str(exported["cnn"].path), f"han={exported['han'].path}"])


@pytest.fixture(scope="session")
def fake():
    return serve.served_model("fake", fake_predictor())


@pytest.fixture
def client(served, fake):
    app = serve.create_app({**served, "fake": fake}, serve.Settings(max_texts=8))
    with TestClient(app) as test_client:
        yield test_client


class LiveServer:
    """uvicorn serving ``app`` on 127.0.0.1 (a free port) in a thread, for real clients."""

    def __init__(self, app):
        import uvicorn

        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.socket.close()
