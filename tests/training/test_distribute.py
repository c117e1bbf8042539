"""tf.distribute: MirroredStrategy over 2 logical CPUs, MultiWorkerMirroredStrategy over 2 processes.

Both run in fresh processes: logical devices must be configured, and a
multi-worker strategy created, before TensorFlow initialises.
"""

import json
import os
import socket
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

import hatt
from tests._fresh_process import run_json_script
from tests._planted import write_planted_imdb

EPOCHS = 2
MIRRORED_SCRIPT = r"""
import json, sys, time
EPOCHS = int(sys.argv[2])
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import numpy as np
from hatt import training
from hatt.data import Imdb, Split
from tests._planted import planted_corpus

def split(n, seed):
    # 41 words a review in 5 sentences, and splits of whole batches: every batch has one
    # padded shape, so each of Keras' functions is traced once (each trace costs twice
    # under 2 replicas)
    texts, labels = planted_corpus(n, seed, words=(40, 41), sentences=5)
    return Split(texts, np.array(labels), [str(i) for i in range(n)])

# 8 steps an epoch: enough for the single run to learn the cue (>= 0.9), so the two runs'
# agreement says something; each review fitted, tokenized and read costs eager string ops
imdb = Imdb(split(128, 0), split(32, 1), split(32, 2), "planted")
small = Imdb(split(16, 0), split(16, 1), split(16, 2), "planted")  # the HAN's: one step of each
out = {}
for name, model, kwargs, strategy, texts in (
    ("single", "cnn", {"embedding_dim": 16, "filters": 8}, "default", imdb),
    ("mirrored", "cnn", {"embedding_dim": 16, "filters": 8}, "mirrored", imdb),
    ("han", "han", {"embedding_dim": 8, "word_units": 4, "sentence_units": 4}, "mirrored", small),
):
    config = training.TrainConfig(
        model=model, model_kwargs=kwargs, epochs=EPOCHS if model == "cnn" else 1, batch_size=16,
        min_count=1, learning_rate=1e-2, patience=EPOCHS, strategy=strategy, packed=False,
        num_buckets=1,  # one padded shape a split: fewer traces (each costs 2 replicas)
        max_sentences=4, max_words=8,  # the dense HAN: 4 x 8 steps a review, not 30 x 50
    )
    run_dir = f"{sys.argv[1]}/{name}"
    start = time.perf_counter()
    metrics = training.train(config, run_dir, texts=texts, command="test", verbose=0)
    out[name] = {
        "metrics": metrics,
        "config": json.load(open(f"{run_dir}/config.json")),
        "history": training.read_history(run_dir),
        "seconds": time.perf_counter() - start,
    }
try:
    training.train(training.TrainConfig(model="han", strategy="mirrored"), f"{sys.argv[1]}/x", texts=imdb)
except ValueError as error:
    out["packed_error"] = str(error)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_mirrored_over_two_logical_cpus_matches_the_single_device_run(tmp_path):
    out = run_json_script(MIRRORED_SCRIPT, str(tmp_path), str(EPOCHS), timeout=400)
    single, mirrored = out["single"], out["mirrored"]
    assert single["metrics"]["replicas"] == 1 and mirrored["metrics"]["replicas"] == 2
    assert mirrored["metrics"]["strategy"] == mirrored["config"]["strategy"] == "mirrored"
    # the global batch is split across the replicas: same steps, same amount of data
    assert len(mirrored["history"]) == len(single["history"]) == EPOCHS
    assert single["metrics"]["test_accuracy"] >= 0.9
    assert mirrored["metrics"]["test_accuracy"] == pytest.approx(
        single["metrics"]["test_accuracy"], abs=0.05
    )
    assert out["han"]["metrics"]["replicas"] == 2
    assert np.isfinite(out["han"]["metrics"]["test_loss"])
    assert "packed HAN layout cannot be split across replicas" in out["packed_error"]


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


N_TEST = 16


@pytest.mark.slow
def test_multiworker_with_two_processes_trains_to_completion(tmp_path):
    root = write_planted_imdb(tmp_path / "corpus", n_train=64, n_test=N_TEST)
    run_dir = tmp_path / "run"
    workers = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    processes = []
    for index in range(2):
        tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        env = {**os.environ, "TF_CONFIG": json.dumps(tf_config), "TF_CPP_MIN_LOG_LEVEL": "3"}
        env["KERAS_BACKEND"] = "tensorflow"
        argv = [sys.executable, "-m", "hatt.cli", "train", "cnn", "--preset", "none"]
        argv += ["--strategy", "multiworker"]
        argv += ["--data", str(root), "--epochs", "2", "--set", "batch_size=16"]
        argv += ["--set", "min_count=1", "--set", "validation_size=16"]  # 48 to train on
        argv += ["--set", "model_kwargs.embedding_dim=16", "--set", "model_kwargs.filters=8"]
        argv += ["--run-dir", str(run_dir), "--export-dir", ""]
        log = open(tmp_path / f"worker-{index}.log", "w")  # noqa: SIM115
        processes.append(
            (subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env), log)
        )
    deadline = time.monotonic() + 240
    try:
        for process, _ in processes:
            process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        for process, log in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
            log.close()
    logs = [(tmp_path / f"worker-{i}.log").read_text()[-3000:] for i in range(2)]
    assert [p.returncode for p, _ in processes] == [0, 0], logs

    chief = json.loads((run_dir / "metrics.json").read_text())
    other = json.loads((run_dir / "worker-1" / "metrics.json").read_text())
    assert chief["strategy"] == "multiworker" and chief["replicas"] == 2
    assert chief["epochs"] == other["epochs"] == 2  # both workers ran every step
    assert chief["test_accuracy"] == other["test_accuracy"]  # one model, synchronised
    # the gathered predictions are in the split's order: they match the saved model
    saved = np.load(run_dir / "test_probabilities.npz")
    assert saved["probabilities"].shape == (N_TEST,)
    model = keras.saving.load_model(run_dir / "model.keras")
    vectorizer = hatt.data.Vectorizer.load(run_dir / "vectorizer.json")
    imdb = hatt.data.load_imdb(str(root), validation_size=16, progress=False)
    local = model.predict(
        hatt.data.make_dataset(imdb.test.texts, vectorizer=vectorizer, bucketing=False), verbose=0
    )
    np.testing.assert_allclose(saved["probabilities"], local.reshape(-1), atol=1e-5)
    np.testing.assert_array_equal(saved["labels"], imdb.test.labels)
