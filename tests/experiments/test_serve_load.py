"""experiments/benchmarks/serve_load.py's own logic: memory sampling, raw posts, the tables."""

import importlib
import os
import socket
import threading

import numpy as np


def _module():
    return importlib.import_module("experiments.benchmarks.serve_load")


def test_peak_rss_sees_an_allocation_made_while_it_samples():
    module = _module()
    before = module.rss_mb(os.getpid())
    with module.PeakRss(os.getpid(), every=0.01) as peak:
        block = np.ones(64 << 20, dtype=np.uint8)  # 64 MiB, touched
        threading.Event().wait(0.1)
        del block
    assert before > 0 and peak.peak - before > 50


def test_a_raw_post_reads_an_answer_sent_before_the_body_was_read():
    module = _module()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer_early():  # reads the headers only, answers 413 and closes: a body cap at work
        connection, _ = listener.accept()
        connection.recv(1024)
        connection.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n")
        connection.close()

    thread = threading.Thread(target=answer_early)
    thread.start()
    status, seconds = module._raw_post(port, "/v1/models/m:predict", b"x" * (8 << 20), timeout=10)
    thread.join()
    listener.close()
    assert status == 413 and seconds < 10


def test_the_tables_show_the_mixed_and_long_document_runs():
    module = _module()
    predict = module.summarise([(0.004, 200), (0.006, 200), (1.0, None)], 1.0, 1)
    assert (predict["errors"], predict["requests"], predict["p50_ms"]) == (1, 3, 5.0)
    mixed = {"model": "cnn", "explain_clients": 8, "explain_texts": 64, "explain_chunk": 4}
    mixed.update(explain_workers=1, predict=predict, explain_statuses={"200": 3, "503": 2})
    mixed.update(explain_reviews_per_s=9.6, idle_rss_mb=900.0, peak_rss_mb=1400.0)
    mixed.update(rss_growth_mb=500.0)
    long = {"model": "cnn", "document": "20 MB body", "verb": "predict", "body_mb": 20.0}
    long.update(status=413, seconds=0.01, idle_rss_mb=900.0, rss_growth_mb=0.2)
    report = {"command": "c", "machine": "m", "load_average_at_start": [0, 0, 0], "runs": []}
    report.update(mixed=[mixed], long_documents=[long], in_process={})
    text = module.markdown(report)
    assert "| cnn | 8 x 64 | 4 / 1 | 5.0 |" in text and "200: 3, 503: 2" in text
    assert "| cnn | 20 MB body | predict | 20.0 | 413 | 0.01 | 900.0 | 0.2 |" in text


def test_the_targets_are_stated_met_or_missed_from_the_measured_figures():
    module = _module()
    fast = {"model": "cnn", "verb": "predict", "batching": True, "reviews_per_s": 2800.0}
    light = {"model": "cnn", "verb": "predict (light load)", "batching": True, "p99_ms": 12.5}
    latency = {"model": "han", "requests": 20, "words_median": 301, "statuses": {"200": 20}}
    latency.update(p50_s=0.8, p90_s=1.2, max_s=1.5)
    report = {"runs": [fast, light], "explain_latency": [latency], "mixed": []}
    report["long_documents"] = []
    lines = module.target_lines(report)
    assert "- cnn, cnn_predict_reviews_per_s: 2800.0 (target >= 2700): met" in lines
    assert "- cnn, cnn_p99_ms: 12.5 (target <= 10): MISSED" in lines
    assert "- han, han_explain_p50_s: 0.8 (target <= 1.0): met" in lines
    assert module._latency_row(latency) == "| han | 20 | 301 | 200: 20 | 0.8 | 1.2 | 1.5 |"
