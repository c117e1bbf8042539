"""Load test of `hatt serve` on 127.0.0.1: throughput, latency, errors; with and without batching.

Starts `hatt serve` (as `python -m hatt.cli serve`) in a child process on a
free port of 127.0.0.1, once with batching on and once with it off, serving
the CNN and the HAN. For each model and each verb (`:predict`, `:explain`)
it runs `--clients` concurrent clients for `--seconds` seconds (after
`--warmup` seconds not counted): each client keeps one HTTP/1.1 connection
and sends one request after another, each holding `--texts` IMDB test
reviews (row format). Every run stops by itself; every request has a
timeout. A light-load run (one client, one review a request) measures the
latency a single user sees.

Reported per run: requests/s, reviews/s, p50 / p95 / p99 latency (ms),
errors (any answer but 200, or no answer), and the mean number of reviews a
model call took (the server's `/ui/stats`).

Mixed traffic (`--mixed-seconds`, after the runs above, on a server with
batching on): `--explain-clients` clients (8) send `--explain-texts`-review
(64) `:explain` requests back to back while one client sends one-review
`:predict` requests; reported: the predict p50 / p99, the explain answers
by status (200, 503 queue full or never started, 504 past the deadline) and
the server's resident memory (RSS, sampled every 50 ms from /proc) against
its idle size.

Long documents (`--long-docs`): one-review `:predict` and `:explain`
requests holding an unpunctuated document of 100 KB and 900 KB (under the
1 MiB body cap), the 900 KB one inside a batch of 63 ordinary reviews, and
a 20 MB body (the cap's 413); each with its status, time and the server's
peak RSS over its idle size.

The page's case (`--explain-latency N`, after the runs above, on a server
with batching on): N one-review `:explain` requests, one at a time, each a
test review of 280-320 words; reported: the p50 / p90 / max seconds.

Side by side, in the same process and on the same reviews: a scikit-learn
TF-IDF + logistic regression pipeline on raw text (what a user might pick
instead), fitted on `--train` training reviews, its `predict` timed on
the test reviews (in-process, no HTTP), and the hatt models' own
`Predictor.predict_proba` in-process at batch 64, for the HTTP overhead.

    HATT_IMDB=/path/aclImdb_v1_labeled.tar.gz python -m experiments.benchmarks.serve_load \\
        --cnn saved_models/cnn --han saved_models/han --clients 32 --seconds 60

Writes experiments/results/serve_load.json and serve_load.md.

Targets (issue 31, 2 cores): `:predict` >= 2,700 reviews/s for the CNN and
>= 1,000 for the HAN with batching on; p99 of a single-review request under
light load <= 10 ms for the CNN; a 300-word review's `:explain` p50 <= 0.3 s
(CNN) and <= 1 s (HAN); under mixed traffic the predict p99 <= 50 ms and the
server within 2 GB of its idle RSS; a 20 MB document within 300 MB of it. The
markdown ends with each target met or missed.
"""

import argparse
import asyncio
import json
import os
import platform
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "experiments" / "results" / "serve_load.json"
TARGETS = {
    "cnn_predict_reviews_per_s": 2700,
    "han_predict_reviews_per_s": 1000,
    "cnn_p99_ms": 10,
    "cnn_explain_p50_s": 0.3,
    "han_explain_p50_s": 1.0,
    "mixed_predict_p99_ms": 50,
    "mixed_rss_growth_mb": 2048,
    "long_document_rss_growth_mb": 300,
}
TIMEOUT_S = 60.0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cnn", default="saved_models/cnn", help="the CNN model ('' to skip)")
    parser.add_argument("--han", default="saved_models/han", help="the HAN model ('' to skip)")
    parser.add_argument("--data", default=None, help="IMDB source (default: $HATT_IMDB)")
    parser.add_argument("--reviews", type=int, default=2000, help="test reviews to send")
    parser.add_argument("--train", type=int, default=5000, help="reviews to fit TF-IDF + LR on")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--texts", type=int, default=1, help="reviews per request")
    parser.add_argument("--verbs", default="predict,explain", help="'' for the light load only")
    parser.add_argument("--batching", default="on,off", help="on, off or on,off")
    parser.add_argument("--light-seconds", type=float, default=10.0)
    parser.add_argument("--max-batch-size", type=int, default=64)
    parser.add_argument("--batch-wait-ms", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--explain-workers", type=int, default=1)
    parser.add_argument("--explain-chunk", type=int, default=1)
    parser.add_argument("--explain-deadline", type=float, default=60.0)
    parser.add_argument(
        "--mixed-seconds", type=float, default=0.0, help="mixed predict/explain run (0: none)"
    )
    parser.add_argument("--explain-clients", type=int, default=8)
    parser.add_argument("--explain-texts", type=int, default=64)
    parser.add_argument("--long-docs", action="store_true", help="the long-document requests")
    parser.add_argument(
        "--explain-latency",
        type=int,
        default=0,
        help="one-review :explain requests of 280-320-word reviews, one at a time (0: none)",
    )
    parser.add_argument(
        "--stop-under-load",
        action="store_true",
        help="time the stop on SIGTERM after 6 s of the mixed load (a server of its own)",
    )
    parser.add_argument("--skip-sklearn", action="store_true")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not 0 <= args.mixed_seconds <= 600:
        parser.error(f"Expected --mixed-seconds in [0, 600]. Received: {args.mixed_seconds}")
    for name in ("clients", "reviews", "texts", "train", "explain_clients", "explain_texts"):
        if getattr(args, name) < 1:
            parser.error(f"Expected --{name} >= 1. Received: {getattr(args, name)}")
    if not 0 < args.seconds <= 600:
        parser.error(f"Expected --seconds in (0, 600]. Received: {args.seconds}")
    return args


# === Dataset ===


def create_dataset(args):
    """`--reviews` IMDB test reviews (balanced sample) and `--train` training reviews."""
    from hatt.data import load_imdb
    from hatt.inspect import balanced_sample

    imdb = load_imdb(args.data, validation_size=0, progress=False)
    test = balanced_sample(imdb.test.labels, args.reviews, seed=0)
    train = balanced_sample(imdb.train.labels, args.train, seed=0)
    return {
        "test": [imdb.test.texts[i] for i in test],
        "train": ([imdb.train.texts[i] for i in train], imdb.train.labels[train]),
    }


# === The server ===


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """`hatt serve` in a child process on 127.0.0.1; stopped with SIGINT on exit."""

    def __init__(self, models, args, batching):
        self.port = free_port()
        command = [sys.executable, "-m", "hatt.cli", "serve", *models, "--port", str(self.port)]
        command += ["--max-batch-size", str(args.max_batch_size)]
        command += ["--batch-wait-ms", str(args.batch_wait_ms), "--threads", str(args.threads)]
        command += ["--max-texts", str(max(args.texts, 256))]
        command += ["--max-explain-texts", str(max(args.texts, args.explain_texts))]
        command += ["--explain-workers", str(args.explain_workers)]
        command += ["--explain-chunk", str(args.explain_chunk)]
        command += ["--explain-deadline", str(args.explain_deadline)]
        if not batching:
            command.append("--no-batching")
        self.command = command

    def __enter__(self):
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
        self.log = tempfile.NamedTemporaryFile(
            "w", prefix="serve_load-", suffix=".log", delete=False
        )
        self.process = subprocess.Popen(self.command, env=env, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"hatt serve exited: see {self.log.name}")
            try:
                url = f"http://127.0.0.1:{self.port}/readyz"
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:  # loaded and warmed up in both lanes
                        return self
            except OSError:
                time.sleep(0.5)
        raise RuntimeError("hatt serve was not ready in 300 s")

    def rss_mb(self):
        """The server's resident memory (MB) now."""
        return rss_mb(self.process.pid)

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


# === The clients ===


async def _request(reader, writer, path, body):
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def _client(port, path, bodies, offset, start_at, stop_at, record):
    """One client: one connection, requests back to back until `stop_at`."""
    reader = writer = None
    i = offset
    while time.perf_counter() < stop_at:
        body = bodies[i % len(bodies)]
        i += 1
        began = time.perf_counter()
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            status = await asyncio.wait_for(_request(reader, writer, path, body), TIMEOUT_S)
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError, IndexError):
            status = None
            if writer is not None:
                writer.close()
            reader = writer = None
        ended = time.perf_counter()
        if began >= start_at:
            record.append((ended - began, status))
    if writer is not None:
        writer.close()


def load(port, path, bodies, clients, seconds, warmup):
    """`clients` clients for `warmup` + `seconds` seconds; the measured requests."""
    record = []
    load_groups(port, [(path, bodies, clients, record)], seconds, warmup)
    return record


def load_groups(port, groups, seconds, warmup):
    """Groups of clients at once: each ``(path, bodies, clients, record)`` fills its record."""

    async def main():
        start_at = time.perf_counter() + warmup
        stop_at = start_at + seconds
        await asyncio.gather(
            *(
                _client(port, path, bodies, k * 37, start_at, stop_at, record)
                for path, bodies, clients, record in groups
                for k in range(clients)
            )
        )

    asyncio.run(main())


def summarise(record, seconds, texts):
    latencies = np.array([t for t, s in record if s == 200]) * 1000
    errors = sum(1 for _, s in record if s != 200)
    ok = len(latencies)
    percentile = (
        (lambda q: round(float(np.percentile(latencies, q)), 1)) if ok else (lambda q: None)
    )
    return {
        "requests": len(record),
        "errors": errors,
        "requests_per_s": round(ok / seconds, 1),
        "reviews_per_s": round(ok * texts / seconds, 1),
        "p50_ms": percentile(50),
        "p95_ms": percentile(95),
        "p99_ms": percentile(99),
    }


def stats(port, name, action):
    """``(model calls, reviews)`` the server's batcher of ``name`` / ``action`` has made."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/ui/stats", timeout=10) as response:
        counts = json.load(response).get(name, {}).get(action, {"calls": 0, "texts": 0})
    return counts["calls"], counts["texts"]


def bodies_for(reviews, texts):
    return [
        json.dumps({"instances": reviews[i : i + texts]}).encode()
        for i in range(0, len(reviews) - texts + 1, texts)
    ]


# === Memory ===


def rss_mb(pid):
    """Resident set size of process ``pid`` in MB (Linux /proc)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class PeakRss:
    """The peak RSS of process ``pid`` while the block runs, sampled every ``every`` s."""

    def __init__(self, pid, every=0.05):
        self.pid, self.every = pid, every
        self.peak = 0.0
        self._stop = threading.Event()

    def _sample(self):
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, rss_mb(self.pid))
            except (OSError, RuntimeError):
                return
            self._stop.wait(self.every)

    def __enter__(self):
        self.peak = rss_mb(self.pid)
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)


# === Mixed traffic and long documents ===


def mixed_run(server, name, reviews, args):
    """One-review :predict p50/p99 while `--explain-clients` send 64-review :explain."""
    explains = bodies_for(reviews, args.explain_texts)
    singles = bodies_for(reviews, 1)
    predict_record, explain_record = [], []
    groups = [
        (f"/v1/models/{name}:predict", singles, 1, predict_record),
        (f"/v1/models/{name}:explain", explains, args.explain_clients, explain_record),
    ]
    idle = server.rss_mb()
    with PeakRss(server.process.pid) as peak:
        load_groups(server.port, groups, args.mixed_seconds, args.warmup)
    predict = summarise(predict_record, args.mixed_seconds, 1)
    statuses = {}
    for _, status in explain_record:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    done = statuses.get("200", 0)
    return {
        "model": name,
        "seconds": args.mixed_seconds,
        "explain_clients": args.explain_clients,
        "explain_texts": args.explain_texts,
        "explain_chunk": args.explain_chunk,
        "explain_workers": args.explain_workers,
        "predict": predict,
        "explain_statuses": statuses,
        "explain_reviews_per_s": round(done * args.explain_texts / args.mixed_seconds, 1),
        "idle_rss_mb": round(idle, 1),
        "peak_rss_mb": round(peak.peak, 1),
        "rss_growth_mb": round(peak.peak - idle, 1),
    }


def _raw_post(port, path, body, timeout=TIMEOUT_S):
    """``(status or None, seconds)`` of one POST on its own connection (sent whole or not)."""
    began = time.perf_counter()
    status = None
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            head = (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            try:
                sock.sendall(head.encode() + body)
            except OSError:  # the server answered (413) and closed before reading it all
                pass
            line = sock.makefile("rb").readline()
            status = int(line.split()[1]) if line else None
    except (OSError, ValueError, IndexError):
        status = None
    return status, time.perf_counter() - began


def long_document_runs(server, name, reviews):
    """Unpunctuated long documents through :predict and :explain; status, time, peak RSS."""
    words = " ".join(reviews[:200]).replace(".", " ").replace("!", " ").replace("?", " ").split()

    def document(size):
        """``size`` characters of words and spaces, no sentence end."""
        line = " ".join(words) + " "
        return (line * (size // len(line) + 1))[:size]

    cases = [
        ("100 KB, alone", [document(100_000)]),
        ("900 KB, alone", [document(900_000)]),
        ("900 KB among 63 reviews", [document(900_000), *reviews[:63]]),
        ("20 MB body", [document(100_000) * 200]),
    ]
    runs = []
    for label, texts in cases:
        for verb in ("predict", "explain"):
            if verb == "explain" and len(texts) > 1:
                continue  # the explain cap is 64 and one chunk is what matters here
            body = json.dumps({"instances": texts}).encode()
            idle = server.rss_mb()
            with PeakRss(server.process.pid) as peak:
                status, seconds = _raw_post(server.port, f"/v1/models/{name}:{verb}", body)
            run = {"model": name, "document": label, "verb": verb, "body_mb": len(body) / 1e6}
            run.update(status=status, seconds=round(seconds, 2), idle_rss_mb=round(idle, 1))
            run.update(rss_growth_mb=round(peak.peak - idle, 1))
            print(_long_row(run), flush=True)
            runs.append(run)
    return runs


def explain_latency(server, name, reviews, count, words=(280, 320)):
    """The page's case: one review of about 300 words a `:explain` request, one at a time."""
    chosen = [r for r in reviews if words[0] <= len(r.split()) <= words[1]][: count + 1]
    if len(chosen) < 2:
        raise SystemExit(f"Fewer than 2 reviews of {words[0]}-{words[1]} words: raise --reviews.")
    path = f"/v1/models/{name}:explain"
    _raw_post(server.port, path, json.dumps({"instances": chosen[0:1]}).encode())  # warm-up
    seconds, statuses = [], {}
    for review in chosen[1:]:
        status, took = _raw_post(server.port, path, json.dumps({"instances": [review]}).encode())
        statuses[str(status)] = statuses.get(str(status), 0) + 1
        seconds.append(took)
    return {
        "model": name,
        "requests": len(seconds),
        "words_median": int(np.median([len(r.split()) for r in chosen[1:]])),
        "statuses": statuses,
        "p50_s": round(float(np.percentile(seconds, 50)), 3),
        "p90_s": round(float(np.percentile(seconds, 90)), 3),
        "max_s": round(max(seconds), 3),
    }


def stop_under_load(models, args, reviews, after_s=6.0):
    """Seconds from SIGTERM to exit, the mixed load running, and how its requests ended."""
    name = next(iter(models))
    with ServerProcess([f"{n}={p}" for n, p in models.items()], args, True) as server:
        predict_record, explain_record = [], []
        groups = [
            (f"/v1/models/{name}:predict", bodies_for(reviews, 1), 1, predict_record),
            (
                f"/v1/models/{name}:explain",
                bodies_for(reviews, args.explain_texts),
                args.explain_clients,
                explain_record,
            ),
        ]
        clients = threading.Thread(
            target=load_groups, args=(server.port, groups, after_s + 1.0, 0.0), daemon=True
        )
        clients.start()
        time.sleep(after_s)
        began = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pass
        stopped = time.monotonic() - began
        clients.join(timeout=TIMEOUT_S + 10)
    ended = {}
    for verb, record in (("predict", predict_record), ("explain", explain_record)):
        for _, status in record:
            key = f"{verb} {status}"
            ended[key] = ended.get(key, 0) + 1
    return {
        "model": name,
        "stop_seconds": round(stopped, 2),
        "returncode": server.process.returncode,
        "answers": ended,
    }


# === Side by side, in-process ===


def sklearn_throughput(data, seconds=5.0):
    """TF-IDF (1-3 grams) + logistic regression on raw text: `predict_proba` reviews/s,
    in-process (issue 31's peer of the exported CNN's `predict`)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    texts, labels = data["train"]
    pipeline = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 3), sublinear_tf=True, min_df=2),
        LogisticRegression(C=8.0, max_iter=1000),
    )
    pipeline.fit(texts, labels)
    return _throughput(pipeline.predict_proba, data["test"], seconds)


def _throughput(predict, reviews, seconds, batch=64):
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for i in range(0, len(reviews), batch):
            predict(reviews[i : i + batch])
            done += len(reviews[i : i + batch])
            if time.perf_counter() - start >= seconds:
                break
    return round(done / (time.perf_counter() - start), 1)


def hatt_in_process(models, data, seconds=5.0):
    """Each model in-process at batch 64 (no HTTP): the server's ceiling.

    `predict_proba` runs what `:predict` runs. Where a `model.keras` lies
    beside the export, its classifier is also timed on ids alone
    (`probabilities_from_ids`: tokenize, look up, classify, no attention and
    no saliency), the work a `predict` signature without scores does.
    """
    from hatt import export

    out = {}
    for name, path in models.items():
        predictor = export.load(path)
        predictor.predict_proba(data["test"][:64])  # warm-up
        run = predictor.predict_proba
        out[f"hatt {name} predict_proba"] = _throughput(run, data["test"], seconds)
        keras_file = Path(path) / "model.keras"
        if keras_file.is_file():
            keras_predictor = export.load(keras_file)

            def ids_only(batch, p=keras_predictor):
                return p.probabilities_from_ids(p.ragged_ids(batch), batch_size=len(batch))

            ids_only(data["test"][:64])  # warm-up
            out[f"hatt {name} classifier on ids (no scores)"] = _throughput(
                ids_only, data["test"], seconds
            )
    return out


# === Main ===


def run_server(models, args, batching, reviews, report):
    """Every (model, verb) under load, plus the light-load run, on one server; with
    batching on also the mixed run, the long documents and the explain latency (into
    ``report``'s ``mixed``, ``long_documents`` and ``explain_latency``)."""
    runs = []
    bodies = bodies_for(reviews, args.texts)
    singles = bodies_for(reviews, 1)
    with ServerProcess([f"{n}={p}" for n, p in models.items()], args, batching) as server:
        for name in models:
            for verb in [v for v in args.verbs.split(",") if v]:
                path = f"/v1/models/{name}:{verb}"
                action = "explain" if verb == "explain" else "predict"
                calls, texts = stats(server.port, name, action)
                record = load(server.port, path, bodies, args.clients, args.seconds, args.warmup)
                calls_after, texts_after = stats(server.port, name, action)
                run = {"model": name, "verb": verb, "batching": batching}
                run["reviews_per_model_call"] = round(
                    (texts_after - texts) / max(calls_after - calls, 1), 1
                )
                run.update(clients=args.clients, texts=args.texts, seconds=args.seconds)
                run.update(summarise(record, args.seconds, args.texts))
                print(_row(run), flush=True)
                runs.append(run)
            if args.light_seconds > 0:
                path = f"/v1/models/{name}:predict"
                record = load(server.port, path, singles, 1, args.light_seconds, 1.0)
                run = {"model": name, "verb": "predict (light load)", "batching": batching}
                run.update(clients=1, texts=1, seconds=args.light_seconds)
                run.update(summarise(record, args.light_seconds, 1))
                print(_row(run), flush=True)
                runs.append(run)
            if batching and args.mixed_seconds > 0:
                report["mixed"].append(mixed_run(server, name, reviews, args))
                print(_mixed_row(report["mixed"][-1]), flush=True)
            if batching and args.long_docs:
                report["long_documents"].extend(long_document_runs(server, name, reviews))
            if batching and args.explain_latency > 0:
                latency = explain_latency(server, name, reviews, args.explain_latency)
                report["explain_latency"].append(latency)
                print(_latency_row(latency), flush=True)
    return runs


HEADER = (
    "| model | verb | batching | clients | reviews/request | requests/s | reviews/s "
    "| p50 ms | p95 ms | p99 ms | errors / requests | reviews / model call |\n"
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def _row(run):
    return (
        f"| {run['model']} | {run['verb']} | {'on' if run['batching'] else 'off'} "
        f"| {run['clients']} | {run['texts']} | {run['requests_per_s']} | {run['reviews_per_s']} "
        f"| {run['p50_ms']} | {run['p95_ms']} | {run['p99_ms']} "
        f"| {run['errors']} / {run['requests']} | {run.get('reviews_per_model_call', '')} |"
    )


MIXED_HEADER = (
    "| model | explain clients x reviews | chunk / workers | predict p50 ms | predict p99 ms "
    "| predict errors / requests | explain answers by status | explain reviews/s "
    "| idle RSS MB | peak RSS MB | growth MB |\n"
    "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"
)
LONG_HEADER = (
    "| model | document | verb | body MB | status | seconds | idle RSS MB | growth MB |\n"
    "|---|---|---|---:|---:|---:|---:|---:|"
)


def _mixed_row(run):
    p = run["predict"]
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(run["explain_statuses"].items()))
    return (
        f"| {run['model']} | {run['explain_clients']} x {run['explain_texts']} "
        f"| {run['explain_chunk']} / {run['explain_workers']} | {p['p50_ms']} | {p['p99_ms']} "
        f"| {p['errors']} / {p['requests']} | {statuses} | {run['explain_reviews_per_s']} "
        f"| {run['idle_rss_mb']} | {run['peak_rss_mb']} | {run['rss_growth_mb']} |"
    )


LATENCY_HEADER = (
    "| model | requests | words (median) | statuses | p50 s | p90 s | max s |\n"
    "|---|---:|---:|---|---:|---:|---:|"
)


def _latency_row(run):
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(run["statuses"].items()))
    return (
        f"| {run['model']} | {run['requests']} | {run['words_median']} | {statuses} "
        f"| {run['p50_s']} | {run['p90_s']} | {run['max_s']} |"
    )


def target_lines(report):
    """Each target the report has a figure for: the model, the figure, met or missed."""
    targets, found = report.get("targets", TARGETS), []
    for run in report["runs"]:
        if run["batching"] and run["verb"] == "predict":
            found.append(
                (run["model"], f"{run['model']}_predict_reviews_per_s", run["reviews_per_s"])
            )
        if run["verb"] == "predict (light load)" and run["batching"]:
            found.append((run["model"], f"{run['model']}_p99_ms", run["p99_ms"]))
    for run in report.get("explain_latency", []):
        found.append((run["model"], f"{run['model']}_explain_p50_s", run["p50_s"]))
    for run in report["mixed"]:
        found.append((run["model"], "mixed_predict_p99_ms", run["predict"]["p99_ms"]))
        found.append((run["model"], "mixed_rss_growth_mb", run["rss_growth_mb"]))
    for run in report["long_documents"]:
        if run["document"] == "20 MB body":
            label = f"{run['model']} :{run['verb']}"
            found.append((label, "long_document_rss_growth_mb", run["rss_growth_mb"]))
    lines = []
    for label, key, value in found:
        if key not in targets:
            continue
        at_least = key.endswith("_per_s")  # throughputs are floors, the rest ceilings
        met = value >= targets[key] if at_least else value <= targets[key]
        sense = ">=" if at_least else "<="
        verdict = "met" if met else "MISSED"
        lines.append(f"- {label}, {key}: {value} (target {sense} {targets[key]}): {verdict}")
    return lines


def _long_row(run):
    return (
        f"| {run['model']} | {run['document']} | {run['verb']} | {run['body_mb']:.1f} "
        f"| {run['status']} | {run['seconds']} | {run['idle_rss_mb']} | {run['rss_growth_mb']} |"
    )


def markdown(report):
    lines = ["# hatt serve under load (experiments/benchmarks/serve_load.py)", ""]
    lines += [f"Command: `{report['command']}`  ", f"Machine: {report['machine']}  "]
    lines += [
        f"Load average at the start (1, 5, 15 min): {report['load_average_at_start']} "
        "(other jobs share the cores)",
        "",
    ]
    lines += [HEADER, *(_row(r) for r in report["runs"]), ""]
    if report["mixed"]:
        lines += ["Mixed traffic: one client's 1-review `:predict` while others `:explain`:", ""]
        lines += [MIXED_HEADER, *(_mixed_row(r) for r in report["mixed"]), ""]
    if report["long_documents"]:
        lines += ["Long unpunctuated documents, one request at a time:", ""]
        lines += [LONG_HEADER, *(_long_row(r) for r in report["long_documents"]), ""]
    if "stop" in report:
        stop = report["stop"]
        answers = ", ".join(f"{k}: {v}" for k, v in sorted(stop["answers"].items()))
        lines += [
            f"SIGTERM under the mixed load ({stop['model']}): exited after "
            f"{stop['stop_seconds']} s with status {stop['returncode']}; requests that ended "
            f"(None: no answer, the server gone): {answers}",
            "",
        ]
    if report.get("explain_latency"):
        lines += ["One ~300-word review a `:explain` request, one at a time (the page's case):", ""]
        lines += [LATENCY_HEADER, *(_latency_row(r) for r in report["explain_latency"]), ""]
    lines += ["In-process `predict` throughput on the same reviews (no HTTP), batch 64:", ""]
    lines += ["| model | reviews/s |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in report["in_process"].items()]
    targets = target_lines(report)
    if targets:
        lines += ["", "Targets (issue 31):", "", *targets]
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    models = {n: p for n, p in (("cnn", args.cnn), ("han", args.han)) if p}
    for name, path in models.items():
        if not Path(path).exists():
            raise SystemExit(f"No {name} model at {path!r}: pass --{name} PATH or --{name} ''.")
    data = create_dataset(args)
    report = {
        "command": shlex.join(["python", "-m", "experiments.benchmarks.serve_load", *sys.argv[1:]]),
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "models": models,
        "targets": TARGETS,
        "runs": [],
        "mixed": [],
        "long_documents": [],
        "explain_latency": [],
        "in_process": {},
    }
    print(HEADER, flush=True)
    for batching in args.batching.split(","):
        report["runs"] += run_server(models, args, batching == "on", data["test"], report)
        write_report(report, args.output)  # what was measured is kept if a later step fails
    if args.stop_under_load:
        report["stop"] = stop_under_load(models, args, data["test"])
        write_report(report, args.output)
    if not args.skip_sklearn:
        report["in_process"]["sklearn TF-IDF(1,3) + LR predict_proba (raw text)"] = (
            sklearn_throughput(data)
        )
    report["in_process"].update(hatt_in_process(models, data))
    write_report(report, args.output)
    print(markdown(report))
    return report


def write_report(report, output):
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    output.with_suffix(".md").write_text(markdown(report))


if __name__ == "__main__":
    main()
