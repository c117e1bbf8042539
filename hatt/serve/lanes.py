"""The explain lane: its own bounded queue and workers, chunked work, a deadline per request.

``:predict`` is joined into batches by :mod:`hatt.serve.batching` and runs
on its own threads; ``:explain`` runs here, so that a long explanation never
holds a prediction up. An :class:`ExplainLane` bounds what explanations may
cost:

- at most ``workers`` requests run at once (each on its own thread), at
  most ``max_queue`` more wait; a request that finds the queue full is
  refused at once (503, ``Retry-After``);
- a request runs in chunks of ``chunk`` reviews, one model call each:
  integrated gradients walk ``steps`` scaled copies of a chunk, so the
  memory of one call is bounded by steps x ``chunk`` x the model's window,
  whatever the request's size;
- a request has ``deadline_s`` seconds from its arrival: if it has not
  started by then it is refused (503, ``Retry-After``: it never ran); if it
  is still running, it stops at its next chunk (504);
- a request whose client went away (``gone``), or that is running when
  the server stops (:meth:`ExplainLane.close`), stops at its next chunk
  (a request left in the queue by its client never runs).

One chunk is the unit nothing interrupts (a model call in a thread cannot
be stopped), so a stop takes at most one chunk's time.
"""

import asyncio
import concurrent.futures
import math
import time


class Refused(Exception):
    """A request the lane will not (or no longer) run: an HTTP status, a message, Retry-After."""

    def __init__(self, status, message, retry_after=None, reason="refused"):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after
        self.reason = reason


class ExplainLane:
    """Run ``run(chunk) -> list`` over a request's texts in chunks, within bounds.

    Args:
        workers: Requests that run at once (threads of the lane).
        max_queue: Requests that may wait for a worker; more → 503.
        chunk: Reviews a model call takes at most.
        deadline_s: Seconds a request has from its arrival to its answer.

    Call arguments:
        texts: The request's texts (list of str).
        run: The model call for this request: a list of texts → a list of
            per-text results (same length). Runs in the lane's threads.
        gone: Optional ``async gone() -> bool``: whether the client has left
            (asked before each chunk).

    Returns:
        (awaitable) The per-text results, in order.

    Raises:
        Refused: queue full or closing (503), never started before the
            deadline (503), deadline passed while running (504), the client
            left (499, nginx's "client closed request": nobody reads it).

    Example:

    >>> lane = hatt.serve.lanes.ExplainLane(workers=1, max_queue=8, chunk=4, deadline_s=30)
    >>> await lane(["a review", "another"], lambda chunk: [len(t) for t in chunk])
    [8, 7]
    """

    def __init__(self, workers=1, max_queue=16, chunk=1, deadline_s=60.0):
        for name, value in (("workers", workers), ("max_queue", max_queue), ("chunk", chunk)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"Expected {name} to be a positive int. Received: {name}={value!r}"
                )
        if (
            isinstance(deadline_s, bool)
            or not isinstance(deadline_s, int | float)
            or not (deadline_s > 0)
        ):
            raise ValueError(
                f"Expected deadline_s to be a number > 0. Received: deadline_s={deadline_s!r}"
            )
        self.workers = workers
        self.max_queue = max_queue
        self.chunk = chunk
        self.deadline_s = float(deadline_s)
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="hatt-explain"
        )
        self.waiting = 0  # requests queued for a worker
        self.running = 0  # requests holding a worker
        self.calls = 0  # model calls (chunks) made
        self.texts = 0  # texts those calls took
        self.closing = False
        self._seconds_per_text = 1.0  # a running estimate, for Retry-After
        self._slots = None
        self._loop = None

    def retry_after(self):
        """Seconds a client should wait before trying again: the queue's work, estimated."""
        ahead = (self.waiting + self.running) * self.chunk * self._seconds_per_text
        return int(min(max(math.ceil(ahead / self.workers), 1), 120))

    async def __call__(self, texts, run, gone=None):
        texts = list(texts)
        if not texts:
            return []
        arrived = time.monotonic()
        self._check_open()
        if self.waiting >= self.max_queue:
            raise Refused(
                503,
                f"The explain queue is full ({self.max_queue} requests waiting); try again later",
                self.retry_after(),
                reason="queue_full",
            )
        await self._acquire(arrived)
        try:
            return await self._run_chunks(texts, run, arrived, gone)
        finally:
            self.running -= 1
            self._slots.release()

    def _check_open(self):
        if self.closing:
            raise Refused(
                503, "The server is shutting down; try another replica", 5, reason="shutdown"
            )

    async def _acquire(self, arrived):
        """Wait for a worker until the deadline; 503 (never started) after it."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a semaphore belongs to one loop (tests run several)
            self._loop, self._slots = loop, asyncio.Semaphore(self.workers)
        self.waiting += 1
        try:
            remaining = self.deadline_s - (time.monotonic() - arrived)
            await asyncio.wait_for(self._slots.acquire(), max(remaining, 0.0))
        except TimeoutError:
            raise Refused(
                503,
                f"The explain request waited its whole deadline ({self.deadline_s:g} s) in "
                "the queue and never started; try again later",
                self.retry_after(),
                reason="deadline_queued",
            ) from None
        finally:
            self.waiting -= 1
        self.running += 1
        if self.closing:  # closed while it waited
            self.running -= 1
            self._slots.release()
            self._check_open()

    async def _run_chunks(self, texts, run, arrived, gone):
        loop = asyncio.get_running_loop()
        out = []
        for start in range(0, len(texts), self.chunk):
            self._check_open()
            if gone is not None and await gone():
                raise Refused(499, "The client left", reason="client_gone")
            elapsed = time.monotonic() - arrived
            if elapsed > self.deadline_s:
                raise Refused(
                    504,
                    f"The explain request ran past its deadline ({self.deadline_s:g} s) after "
                    f"{start} of {len(texts)} reviews; send fewer reviews a request",
                    self.retry_after(),
                    reason="deadline_running",
                )
            part = texts[start : start + self.chunk]
            began = time.monotonic()
            results = await loop.run_in_executor(self.executor, run, part)
            self._learn(time.monotonic() - began, len(part))
            if len(results) != len(part):
                raise RuntimeError(
                    f"Expected the model call to return one result per text ({len(part)}). "
                    f"Received: {len(results)} results"
                )
            out.extend(results)
        return out

    def _learn(self, seconds, count):
        self.calls += 1
        self.texts += count
        self._seconds_per_text = 0.8 * self._seconds_per_text + 0.2 * seconds / count

    def close(self):
        """Stop taking requests; running ones stop at their next chunk (503).

        The threads are not waited for: each finishes at most the chunk it
        runs.
        """
        self.closing = True
        self.executor.shutdown(wait=False, cancel_futures=True)
