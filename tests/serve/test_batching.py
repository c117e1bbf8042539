"""The batcher on its own: joins concurrent requests, bounds batches and waits, isolates failures."""

import asyncio
import threading
import time

import pytest

from hatt.serve.batching import Batcher, Unbatched


class Recorder:
    """A model call that records its batches (and fails on "boom")."""

    def __init__(self, seconds=0.0):
        self.batches = []
        self.seconds = seconds
        self.threads = set()

    def __call__(self, texts):
        self.threads.add(threading.current_thread().name)
        self.batches.append(list(texts))
        time.sleep(self.seconds)
        if "boom" in texts:
            raise RuntimeError("boom")
        return [t.upper() for t in texts]


async def _gather(batcher, requests, stagger=0.0):
    async def one(i, texts):
        await asyncio.sleep(stagger * i)
        return await batcher(texts)

    return await asyncio.gather(
        *(one(i, t) for i, t in enumerate(requests)), return_exceptions=True
    )


def test_concurrent_requests_share_a_call_and_get_their_own_results():
    run = Recorder()
    batcher = Batcher(run, max_batch_size=64, max_wait_ms=100)
    requests = [[f"r{i}a", f"r{i}b"] for i in range(10)]
    results = asyncio.run(_gather(batcher, requests))
    assert results == [[t.upper() for t in r] for r in requests]
    assert len(run.batches) == 1 and batcher.calls == 1 and batcher.texts == 20
    assert run.threads and "MainThread" not in run.threads  # the loop's thread stays free


def test_batches_never_exceed_the_max_and_keep_the_order():
    run = Recorder()
    batcher = Batcher(run, max_batch_size=5, max_wait_ms=100)
    requests = [[f"t{i}-{j}" for j in range(i % 3 + 1)] for i in range(12)]
    results = asyncio.run(_gather(batcher, requests))
    assert results == [[t.upper() for t in r] for r in requests]
    assert all(len(b) <= 5 for b in run.batches)
    assert [t for b in run.batches for t in b] == [t for r in requests for t in r]
    # a request larger than the max runs alone, whole
    big = asyncio.run(_gather(Batcher(run, max_batch_size=2), [["a", "b", "c"]]))
    assert big == [["A", "B", "C"]] and run.batches[-1] == ["a", "b", "c"]


def test_a_lone_request_waits_at_most_the_max_wait():
    batcher = Batcher(Recorder(), max_batch_size=64, max_wait_ms=50)

    async def timed():
        start = time.perf_counter()
        await batcher(["only"])
        return time.perf_counter() - start

    assert asyncio.run(timed()) < 0.5
    immediate = Batcher(Recorder(), max_batch_size=64, max_wait_ms=0)
    assert asyncio.run(_gather(immediate, [["x"]])) == [["X"]]


@pytest.mark.parametrize("wait", [0, 1])
def test_requests_arriving_while_the_model_runs_form_the_next_batch(wait):
    run = Recorder(seconds=0.5)
    batcher = Batcher(run, max_batch_size=64, max_wait_ms=wait)
    results = asyncio.run(_gather(batcher, [[f"r{i}"] for i in range(6)], stagger=0.02))
    assert results == [[f"R{i}"] for i in range(6)]
    assert len(run.batches) == 2 and run.batches[0] == ["r0"]  # the rest queued meanwhile


def test_a_failing_request_fails_alone():
    run = Recorder()
    batcher = Batcher(run, max_batch_size=64, max_wait_ms=100)
    results = asyncio.run(_gather(batcher, [["a"], ["boom"], ["b"]]))
    assert results[0] == ["A"] and results[2] == ["B"]
    assert isinstance(results[1], RuntimeError)
    assert run.batches[0] == ["a", "boom", "b"] and ["a"] in run.batches[1:]


def test_unbatched_calls_once_per_request():
    run = Recorder()
    unbatched = Unbatched(run)
    results = asyncio.run(_gather(unbatched, [["a"], ["b", "c"], []]))
    assert results == [["A"], ["B", "C"], []]
    assert sorted(map(len, run.batches)) == [1, 2] and unbatched.calls == 2


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"max_batch_size": 0}, "max_batch_size"),
        ({"max_batch_size": True}, "max_batch_size"),
        ({"max_wait_ms": -1}, "max_wait_ms"),
        ({"max_wait_ms": float("nan")}, "max_wait_ms"),
    ],
)
def test_bad_settings_are_refused(kwargs, words):
    with pytest.raises(ValueError, match=words):
        Batcher(Recorder(), **kwargs)


def test_a_full_queue_is_refused_with_retry_after():
    from hatt.serve.lanes import Refused

    run = Recorder(seconds=0.2)
    batcher = Batcher(run, max_batch_size=1, max_queue=2)

    async def main():
        first = asyncio.ensure_future(batcher(["a"]))  # runs
        await asyncio.sleep(0.05)
        queued = [asyncio.ensure_future(batcher([t])) for t in ("b", "c")]
        await asyncio.sleep(0)
        with pytest.raises(Refused) as caught:
            await batcher(["d"])
        return caught.value, await asyncio.gather(first, *queued)

    refused, answered = asyncio.run(main())
    assert (refused.status, refused.retry_after) == (503, 1) and "2 requests" in refused.message
    assert answered == [["A"], ["B"], ["C"]]


def test_the_server_joins_predict_requests_and_explains_in_its_own_lane(fake):
    from hatt.serve.app import Server, Settings
    from hatt.serve.lanes import ExplainLane

    server = Server({"fake": fake}, Settings(batching=True, threads=3, explain_workers=2))
    assert isinstance(server.batcher(fake, "predict"), Batcher)
    # explain never joins predict's batches: its own lane, threads and queue
    assert isinstance(server.explain_lane, ExplainLane)
    assert server.explain_lane.executor is not server.executor
    assert (server.executor._max_workers, server.explain_lane.executor._max_workers) == (3, 2)
    assert list(server.batchers) == [("fake", "predict")]
    unbatched = Server({"fake": fake}, Settings(batching=False))
    assert isinstance(unbatched.batcher(fake, "predict"), Unbatched)
