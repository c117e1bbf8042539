"""The explain lane on its own: chunks, a bounded queue, deadlines, a stop at the next chunk."""

import asyncio
import threading
import time

import pytest

from hatt.serve.lanes import ExplainLane, Refused


class Slow:
    """A model call that takes `seconds` a chunk and records the chunks (in its thread)."""

    def __init__(self, seconds=0.0):
        self.seconds = seconds
        self.chunks = []
        self.threads = set()

    def __call__(self, chunk):
        self.threads.add(threading.current_thread().name)
        self.chunks.append(list(chunk))
        time.sleep(self.seconds)
        return [t.upper() for t in chunk]


def test_a_request_runs_in_chunks_and_keeps_its_order():
    run = Slow()
    lane = ExplainLane(workers=1, max_queue=4, chunk=3, deadline_s=30)
    texts = [f"t{i}" for i in range(8)]
    assert asyncio.run(lane(texts, run)) == [t.upper() for t in texts]
    assert [len(c) for c in run.chunks] == [3, 3, 2]
    assert (lane.calls, lane.texts) == (3, 8)
    assert all(name.startswith("hatt-explain") for name in run.threads)


def test_the_queue_is_bounded_and_a_full_queue_says_when_to_retry():
    run = Slow(seconds=0.3)
    lane = ExplainLane(workers=1, max_queue=1, chunk=1, deadline_s=30)

    async def main():
        running = asyncio.ensure_future(lane(["a"], run))
        await asyncio.sleep(0.05)
        waiting = asyncio.ensure_future(lane(["b"], run))
        await asyncio.sleep(0.05)
        assert (lane.running, lane.waiting) == (1, 1)
        with pytest.raises(Refused) as caught:
            await lane(["c"], run)
        return caught.value, await asyncio.gather(running, waiting)

    refused, answered = asyncio.run(main())
    assert refused.status == 503 and refused.reason == "queue_full"
    assert "1 requests waiting" in refused.message and refused.retry_after >= 1
    assert answered == [["A"], ["B"]] and run.chunks == [["a"], ["b"]]


def test_a_request_that_never_starts_before_its_deadline_is_a_503():
    run = Slow(seconds=0.5)
    lane = ExplainLane(workers=1, max_queue=4, chunk=1, deadline_s=0.2)

    async def main():
        first = asyncio.ensure_future(lane(["a"], run))  # holds the one worker for 0.5 s
        await asyncio.sleep(0.01)
        with pytest.raises(Refused) as caught:
            await lane(["b"], run)
        await first
        return caught.value

    refused = asyncio.run(main())
    assert refused.status == 503 and refused.reason == "deadline_queued"
    assert "never started" in refused.message and refused.retry_after >= 1
    assert run.chunks == [["a"]]  # b never ran


def test_a_request_past_its_deadline_stops_at_its_next_chunk_with_a_504():
    run = Slow(seconds=0.15)
    lane = ExplainLane(workers=1, max_queue=4, chunk=2, deadline_s=0.2)
    with pytest.raises(Refused) as caught:
        asyncio.run(lane([f"t{i}" for i in range(20)], run))
    assert caught.value.status == 504 and caught.value.reason == "deadline_running"
    assert "of 20 reviews" in caught.value.message
    assert len(run.chunks) == 2  # stopped after the chunk that crossed the deadline


def test_closing_stops_running_requests_at_their_next_chunk_and_refuses_new_ones():
    run = Slow(seconds=0.1)
    lane = ExplainLane(workers=1, max_queue=4, chunk=1, deadline_s=30)

    async def main():
        running = asyncio.ensure_future(lane([f"t{i}" for i in range(50)], run))
        await asyncio.sleep(0.25)
        lane.close()
        with pytest.raises(Refused) as caught:
            await running
        with pytest.raises(Refused) as later:
            await lane(["x"], run)
        return caught.value, later.value

    stopped, refused = asyncio.run(main())
    assert stopped.status == refused.status == 503 and stopped.reason == "shutdown"
    assert len(run.chunks) < 6  # not the 50 chunks it asked for


def test_a_failing_chunk_fails_its_request_only_and_frees_the_worker():
    def run(chunk):
        if "boom" in chunk:
            raise RuntimeError("boom")
        return chunk

    lane = ExplainLane(workers=1, max_queue=2, chunk=1, deadline_s=30)

    async def main():
        return await asyncio.gather(
            lane(["a", "boom"], run), lane(["b"], run), return_exceptions=True
        )

    failed, ok = asyncio.run(main())
    assert isinstance(failed, RuntimeError) and ok == ["b"]
    assert (lane.running, lane.waiting) == (0, 0)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"workers": 0}, "workers=0"),
        ({"max_queue": True}, "max_queue=True"),
        ({"chunk": 1.5}, "chunk=1.5"),
        ({"deadline_s": 0}, "deadline_s=0"),
        ({"deadline_s": float("nan")}, "deadline_s=nan"),
    ],
)
def test_bad_settings_are_refused(kwargs, words):
    with pytest.raises(ValueError, match=words):
        ExplainLane(**kwargs)


def test_a_request_whose_client_left_stops_at_its_next_chunk():
    run = Slow()
    lane = ExplainLane(workers=1, max_queue=4, chunk=1, deadline_s=30)
    asked = []

    async def gone():
        asked.append(len(run.chunks))
        return len(run.chunks) >= 2

    with pytest.raises(Refused) as caught:
        asyncio.run(lane([f"t{i}" for i in range(10)], run, gone))
    assert caught.value.status == 499 and caught.value.reason == "client_gone"
    assert len(run.chunks) == 2 and asked == [0, 1, 2]
