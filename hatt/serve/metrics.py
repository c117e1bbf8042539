"""Prometheus metrics of a server (``GET /metrics``), in a registry of its own.

Each app has its own ``CollectorRegistry``, so two apps in one process (the
tests) do not share counts. Labels take only the names of served models
(``"-"`` for a request that names none, or an unknown one) and a fixed set
of endpoints (``"-"`` for a request refused before routing: headers over
16 KiB), so a client cannot grow the label sets.

- ``hatt_requests_total{model, endpoint, code}``: requests answered;
- ``hatt_request_errors_total{model, endpoint, code}``: those answered >= 400;
- ``hatt_request_seconds{model, endpoint}``: latency histogram;
- ``hatt_batch_size{model, lane}``: reviews a model call took (predict's
  batches, explain's chunks);
- ``hatt_queue_depth{model, lane}``: requests waiting, read at scrape time;
- ``hatt_rejections_total{model, endpoint, reason}``: requests refused
  (by status: ``slow_body`` 408, ``too_large`` 413, ``headers_too_large`` 431,
  ``client_gone`` 499, ``unavailable`` 503, ``deadline`` 504);
- ``hatt_ready``: 1 once every model is loaded and warmed up.
"""

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
# The label sets (see the module's docstring).
BY_ENDPOINT = ("model", "endpoint")
BY_CODE = (*BY_ENDPOINT, "code")
BY_REASON = (*BY_ENDPOINT, "reason")
BY_LANE = ("model", "lane")


class Metrics:
    """The counters, histograms and gauges of one server."""

    def __init__(self):
        self.registry = r = CollectorRegistry()
        self.requests = Counter("hatt_requests", "Requests answered", BY_CODE, registry=r)
        self.errors = Counter(
            "hatt_request_errors", "Requests answered with a status >= 400", BY_CODE, registry=r
        )
        latency = "Time from a request's arrival to its answer"
        self.latency = Histogram(
            "hatt_request_seconds", latency, BY_ENDPOINT, buckets=LATENCY_BUCKETS, registry=r
        )
        batch = "Reviews a model call took"
        self.batch_size = Histogram(
            "hatt_batch_size", batch, BY_LANE, buckets=BATCH_BUCKETS, registry=r
        )
        self.queue_depth = Gauge(
            "hatt_queue_depth", "Requests waiting in a lane", BY_LANE, registry=r
        )
        refused = "Requests refused (queue full, deadline, shutdown, size, slow body)"
        self.rejections = Counter("hatt_rejections", refused, BY_REASON, registry=r)
        self.ready = Gauge("hatt_ready", "1 once every model is loaded and warmed up", registry=r)

    def observe(self, model, endpoint, status, seconds):
        code = str(status)
        self.requests.labels(model, endpoint, code).inc()
        if status >= 400:
            self.errors.labels(model, endpoint, code).inc()
        self.latency.labels(model, endpoint).observe(seconds)

    def watch_queue(self, model, lane, depth):
        """Report ``depth()`` (requests waiting) as the queue depth of ``model``'s ``lane``."""
        self.queue_depth.labels(model, lane).set_function(depth)

    def batch_observer(self, model, lane):
        return self.batch_size.labels(model, lane).observe

    def render(self):
        return prometheus_client.generate_latest(self.registry)
