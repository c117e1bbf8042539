"""Join concurrent requests into one model call: a short queue, a max batch, a max wait.

A :class:`Batcher` serves one model and one kind of call (``:predict`` or
``:explain``). Each request puts its texts on an ``asyncio`` queue and
awaits its share of the result. One worker task takes the first waiting
request and every request queued behind it, then waits up to
``max_wait_ms`` for more, until the batch holds ``max_batch_size`` texts,
and runs the model once on all of them in a worker thread, so the event
loop keeps accepting requests while the model runs; those queue up and form
the next batch. Under light load a request waits at most ``max_wait_ms``
(``hatt serve``'s default is 0: a lone request runs at once); under heavy
load the model runs back to back on the batches that queued meanwhile,
which is where the throughput comes from.

If a batch of several requests fails, each request is run again on its own,
so only the request whose texts make the model fail gets the error.
"""

import asyncio
import dataclasses
import time

from hatt.serve.lanes import Refused


@dataclasses.dataclass
class _Request:
    texts: list
    future: asyncio.Future


class Batcher:
    """Batch the calls of ``run(texts) -> list`` (one result per text) made concurrently.

    Args:
        run: The model call: a list of texts → a list of per-text results
            (same length). Runs in ``executor``'s threads.
        max_batch_size: Texts a model call takes at most (a request with
            more texts runs alone, as one call).
        max_wait_ms: How long a batch waits for more requests once it
            has taken those already queued (milliseconds, >= 0).
        executor: A ``concurrent.futures`` executor for the model calls
            (`None`: asyncio's default).
        max_queue: Requests that may wait; more → :class:`Refused` (503,
            ``Retry-After: 1``). `None`: no bound.

    Call arguments:
        texts: The request's texts (list of str).

    Returns:
        (awaitable) The list of per-text results for ``texts``.

    Example:

    >>> batcher = hatt.serve.batching.Batcher(lambda texts: [len(t) for t in texts])
    >>> await batcher(["a review", "another"])
    [8, 7]
    """

    def __init__(self, run, max_batch_size=64, max_wait_ms=0.0, executor=None, max_queue=None):
        if isinstance(max_batch_size, bool) or not isinstance(max_batch_size, int):
            raise ValueError(
                f"Expected max_batch_size to be a positive int. Received: {max_batch_size!r}"
            )
        if max_batch_size < 1:
            raise ValueError(
                f"Expected max_batch_size to be a positive int. Received: {max_batch_size!r}"
            )
        if not isinstance(max_wait_ms, int | float) or not max_wait_ms >= 0:
            raise ValueError(f"Expected max_wait_ms to be >= 0. Received: {max_wait_ms!r}")
        self.run = run
        self.max_batch_size = max_batch_size
        self.max_wait_ms = float(max_wait_ms)
        self.executor = executor
        self.max_queue = max_queue
        self.calls = 0  # model calls made (batches), for tests and the benchmark
        self.texts = 0  # texts those calls took
        self._loop = None
        self._queue = None
        self._worker = None
        self._carried = None  # a request taken from the queue that did not fit its batch

    async def __call__(self, texts):
        texts = list(texts)
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        self._start(loop)
        if self.max_queue is not None and self.waiting >= self.max_queue:
            raise Refused(
                503,
                f"The predict queue is full ({self.max_queue} requests waiting); try again later",
                1,
                reason="queue_full",
            )
        future = loop.create_future()
        self._queue.put_nowait(_Request(texts, future))
        return await future

    @property
    def waiting(self):
        """Requests queued and not yet taken into a batch."""
        if self._queue is None:
            return 0
        return self._queue.qsize() + (self._carried is not None)

    def _start(self, loop):
        """Start the worker in the running loop (again, if the loop changed)."""
        if self._loop is loop and self._worker is not None and not self._worker.done():
            return
        self._loop = loop
        self._queue = asyncio.Queue()
        self._carried = None
        self._worker = loop.create_task(self._work(), name="hatt-batcher")

    async def close(self):
        """Stop the worker (pending requests are cancelled)."""
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
            self._worker = None

    async def _work(self):
        while True:
            batch = await self._collect()
            await self._run_batch(batch)

    async def _next(self, timeout=None):
        """The next waiting request; `None` if none comes within `timeout` seconds.

        A request already queued is taken at once, whatever the timeout. The
        wait does not use `asyncio.wait_for` on `Queue.get`: a cancelled
        `get` never takes an item, and a `get` that finished as the time ran
        out is still returned, so no request is ever dropped.
        """
        if self._carried is not None:
            request, self._carried = self._carried, None
            return request
        if not self._queue.empty():
            return self._queue.get_nowait()
        if timeout is None:
            return await self._queue.get()
        if timeout <= 0:
            return None
        getter = asyncio.ensure_future(self._queue.get())
        done, _ = await asyncio.wait({getter}, timeout=timeout)
        if not done:
            getter.cancel()
            await asyncio.wait({getter})
        return None if getter.cancelled() else getter.result()

    async def _collect(self):
        """The next batch: the first waiting request and those that join it in time.

        Requests that queued while the previous batch ran join at once; then
        the batch waits up to `max_wait_ms` for more, until it holds
        `max_batch_size` texts.
        """
        batch = [await self._next()]
        size = len(batch[0].texts)
        deadline = time.monotonic() + self.max_wait_ms / 1000.0
        while size < self.max_batch_size:
            request = await self._next(deadline - time.monotonic())
            if request is None:
                break
            if size + len(request.texts) > self.max_batch_size:
                self._carried = request  # it starts the next batch
                break
            batch.append(request)
            size += len(request.texts)
        return [r for r in batch if not r.future.done()]  # drop requests whose client left

    async def _call(self, texts):
        loop = asyncio.get_running_loop()
        results = await loop.run_in_executor(self.executor, self.run, texts)
        self.calls += 1
        self.texts += len(texts)
        if len(results) != len(texts):
            raise RuntimeError(
                f"Expected the model call to return one result per text ({len(texts)}). "
                f"Received: {len(results)} results"
            )
        return results

    async def _run_batch(self, batch):
        if not batch:
            return
        texts = [t for r in batch for t in r.texts]
        try:
            results = await self._call(texts)
        except Exception as error:  # noqa: BLE001  (handed to the requests)
            if len(batch) == 1:
                _settle(batch[0].future, error=error)
                return
            for request in batch:  # alone, so only the failing request fails
                await self._run_batch([request])
            return
        start = 0
        for request in batch:
            stop = start + len(request.texts)
            _settle(request.future, result=results[start:stop])
            start = stop


def _settle(future, result=None, error=None):
    if future.done():  # the client went away
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class Unbatched:
    """The same interface as :class:`Batcher`, one model call per request (no batching)."""

    def __init__(self, run, executor=None):
        self.run = run
        self.executor = executor
        self.calls = 0
        self.texts = 0
        self.waiting = 0

    async def __call__(self, texts):
        texts = list(texts)
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        results = await loop.run_in_executor(self.executor, self.run, texts)
        self.calls += 1
        self.texts += len(texts)
        return results

    async def close(self):
        return None
