"""Run a per-item conversion function over many items, in order, on `jobs` worker processes,
with a bounded number of items in flight (memory stays flat however large the dataset).

A processor may also convert a whole chunk at once (e.g. batched tokenization): if it has a
`process_batch(items) -> list[result]` method, chunks of `chunk_size` items (its attribute, default
CHUNK) go through it; if the batch call fails, the chunk falls back to one item at a time so a
bad input is still recorded as a rejection of that input alone. A result may be a list of samples
(one input that yields several samples, e.g. a long document split into windows)."""

from __future__ import annotations

import ctypes
import gc
import itertools
import logging
import multiprocessing as mp
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from converters.sample import Rejection, Sample, WorkItem
from fastdata.cpus import usable_cpus
from fastdata.errors import ConvertError

log = logging.getLogger(__name__)

Result = Sample | Rejection | list[Sample]
Processor = Callable[[WorkItem], Result]
CHUNK = 4  # items per task sent to a worker
IN_FLIGHT_PER_JOB = 4  # tasks queued per worker


def run_one(fn: Processor, item: WorkItem) -> Result:
    """Convert one item; an unexpected failure becomes a recorded rejection, never a crash."""
    try:
        return fn(item)
    except Exception as exc:  # noqa: BLE001 - bad input must never crash the run
        log.debug("unexpected error on %s", item.rel, exc_info=True)
        return Rejection(item.split, item.rel, f"unexpected error: {type(exc).__name__}: {exc}")


def _run_chunk(fn: Processor, items: list[WorkItem]) -> list[Result]:
    batch = getattr(fn, "process_batch", None)
    if batch is not None:
        try:
            results = batch(items)
            if len(results) == len(items):
                return results
            log.debug("process_batch returned %d results for %d items; retrying one by one", len(results), len(items))
        except Exception:  # noqa: BLE001 - fall back to one item at a time, which records the culprit
            log.debug("batched processing failed; retrying one by one", exc_info=True)
    return [run_one(fn, it) for it in items]


PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when the thread that made it ends


def die_with_parent(parent: int) -> None:
    """A worker's initializer: on Linux the kernel kills the worker (SIGKILL) when the conversion's process dies,
    however it dies (`timeout`'s or a scheduler's SIGTERM, the OOM killer, kill -9). Before, the workers, blocked on
    a task queue whose other end they hold too, outlived it forever as orphans, holding their memory."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: nothing to ask for
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request: no signal will come
        os._exit(1)


def start_worker(parent: int) -> None:
    """A worker's initializer. First, every object the worker inherited from the conversion's process is frozen out
    of the cyclic garbage collector (`gc.freeze()`): a forked worker must never run their finalizers. A DALI
    pipeline left for the collector in a process that had loaded batches shut its threads down from the worker,
    where those threads do not exist, and the worker died of a segmentation fault (found when `make test` first
    ran in two processes). Then `die_with_parent`."""
    gc.freeze()
    die_with_parent(parent)


def chunk_size(fn: Processor) -> int:
    size = getattr(fn, "chunk_size", CHUNK)
    return size if isinstance(size, int) and size >= 1 else CHUNK


class WorkerDied(ConvertError):
    """A worker process died (killed by the OOM killer, a signal, a crash in a native library)."""


def _died(first: WorkItem) -> WorkerDied:
    return WorkerDied(f"a conversion worker died while converting {first.rel} (split {first.split}) or an input "
                      "near it: killed by the out-of-memory killer or a signal? Lower -j or free memory, then rerun "
                      "the same command: it resumes from the finished shards")


def local_jobs_limit() -> int:
    """The most worker processes this pool starts: 4 a usable CPU, 64 at least (each imports the codecs; a typo such
    as `-j 100000` had forked until the machine stopped answering)."""
    return max(64, 4 * usable_cpus())


def check_local_jobs(jobs: int, *, cluster: str = "") -> None:
    """ValueError for more worker processes than `local_jobs_limit`; `cluster` ends the message."""
    most = local_jobs_limit()
    if jobs > most:
        raise ValueError(f"--jobs {jobs} would start {jobs} worker processes on this machine, which has "
                         f"{usable_cpus()} CPUs: at most {most} (4 a CPU, 64 at least){cluster}")


def run_ordered(fn: Processor, items: Iterable[WorkItem], *, jobs: int) -> Iterator[Result]:
    """Yield fn(item) for every item, in input order.

    A worker process that dies stops the run with WorkerDied naming the first input of its chunk, at once:
    `concurrent.futures` notices dead workers (multiprocessing.Pool waits for them forever)."""
    size = chunk_size(fn)
    it = iter(items)
    if jobs <= 1:
        while chunk := list(itertools.islice(it, size)):
            yield from _run_chunk(fn, chunk)
        return
    with ProcessPoolExecutor(jobs, mp_context=mp.get_context("fork"), initializer=start_worker,
                             initargs=(os.getpid(),)) as pool:  # made by this thread: it outlives the pool
        pending: deque = deque()
        try:
            while True:
                chunk = list(itertools.islice(it, size))
                if chunk:
                    try:  # a pool that broke since the last result refuses new work here, before any result says so
                        pending.append((chunk[0], pool.submit(_run_chunk, fn, chunk)))
                    except BrokenProcessPool:
                        raise _died(pending[0][0] if pending else chunk[0]) from None
                if pending and (not chunk or len(pending) >= jobs * IN_FLIGHT_PER_JOB):
                    first, fut = pending.popleft()
                    try:
                        results = fut.result()
                    except BrokenProcessPool:
                        raise _died(first) from None
                    yield from results
                if not chunk and not pending:
                    return
        finally:
            for _, fut in pending:
                fut.cancel()
