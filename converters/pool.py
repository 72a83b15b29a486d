"""Run a per-item conversion function over many items, in order, on `jobs` worker processes,
with a bounded number of items in flight (memory stays flat however large the dataset)."""

from __future__ import annotations

import itertools
import logging
import multiprocessing as mp
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from converters.sample import Rejection, Sample, WorkItem

log = logging.getLogger(__name__)

Processor = Callable[[WorkItem], Sample | Rejection]
CHUNK = 4  # items per task sent to a worker
IN_FLIGHT_PER_JOB = 4  # tasks queued per worker


def run_one(fn: Processor, item: WorkItem) -> Sample | Rejection:
    """Convert one item; an unexpected failure becomes a recorded rejection, never a crash."""
    try:
        return fn(item)
    except Exception as exc:  # noqa: BLE001 - bad input must never crash the run
        log.debug("unexpected error on %s", item.rel, exc_info=True)
        return Rejection(item.split, item.rel, f"unexpected error: {type(exc).__name__}: {exc}")


def _run_chunk(fn: Processor, items: list[WorkItem]) -> list[Sample | Rejection]:
    return [run_one(fn, it) for it in items]


def run_ordered(fn: Processor, items: Iterable[WorkItem], *, jobs: int) -> Iterator[Sample | Rejection]:
    """Yield fn(item) for every item, in input order."""
    if jobs <= 1:
        for item in items:
            yield run_one(fn, item)
        return
    ctx = mp.get_context("fork")
    it = iter(items)
    with ctx.Pool(jobs) as pool:
        pending: deque = deque()
        while True:
            chunk = list(itertools.islice(it, CHUNK))
            if chunk:
                pending.append(pool.apply_async(_run_chunk, (fn, chunk)))
            if pending and (not chunk or len(pending) >= jobs * IN_FLIGHT_PER_JOB):
                yield from pending.popleft().get()
            if not chunk and not pending:
                return
