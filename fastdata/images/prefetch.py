"""Run a batch producer in a background thread, `depth` items ahead of the consumer.

Errors raised by the producer are re-raised in the consumer (never a silent hang). `close()` tells the
producer to stop and joins its thread, so no thread is left blocked on a full queue: the queue is emptied
as it is told, so a producer waiting to put an item sees at once that it should stop. The loader calls it
on an early `break`, an exception, or when it lets go of batches produced ahead (overlap.py).

`cancel()` only tells the producer to stop, without waiting for it: what a garbage-collection finalizer
may call, on whatever thread the collection happens to run; a decode thread that the producer itself
waits on, for one (a join there would never return).

A producer told to stop empties its queue itself before it returns. An item it put just after the consumer
emptied the queue (told between `_put`'s check and the put) is never taken; left there, it would be freed with
the queue when the thread's object dies, at the thread's very end, after the thread has left `_live`, where the
exit hook can no longer see or join it. Freeing a batch's tensors takes the GIL again (torch's deleter of
numpy-backed storage); once the interpreter is finalising, that ends the thread inside a C++ frame that cannot
unwind, and the process aborts: "terminate called without an active exception" (a core dump of the docs walk
showed it, about one exit in 700).
"""

from __future__ import annotations

import logging
import queue
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from fastdata.exiting import STOP_PRODUCERS, on_exit

T = TypeVar("T")
log = logging.getLogger(__name__)

_ITEM, _DONE, _ERROR = "item", "done", "error"
_POLL_S = 0.1


def _put(q: queue.Queue, entry: tuple[str, object], stop: threading.Event) -> bool:
    """Put `entry` unless the consumer has gone away; True when it was delivered."""
    while not stop.is_set():
        try:
            q.put(entry, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


# every producer thread made here, with what stops it; an entry goes when its thread object does
_live: weakref.WeakKeyDictionary[threading.Thread, tuple[threading.Event, queue.Queue]] = weakref.WeakKeyDictionary()
_live_lock = threading.Lock()


def _stop_all() -> None:
    """At interpreter exit, stop and join every producer (one that went on into the next epoch, one whose consumer
    never finished, one told to stop and still ending): a daemon thread still releasing tensors while the
    interpreter finalises aborts the process ("terminate called without an active exception"). Joining a thread
    that has ended returns at once; one that is ending is waited for until its last object is released. Runs
    before DALI's own exit handler and before thread pools join their workers (`fastdata/exiting.py`)."""
    with _live_lock:
        live = list(_live.items())
    for _thread, (stop, q) in live:
        stop.set()
        _drain(q)
    for thread, _ in live:
        if thread.ident is not None:  # started (registered just before its start)
            thread.join(timeout=60)


on_exit(_stop_all, STOP_PRODUCERS)  # after the downloads a producer may wait on are abandoned (exiting.py)


def _drain(q: queue.Queue, *, wait_for_lock: bool = True) -> None:
    """Empty the queue: a producer blocked on it wakes now, not at its next poll.

    Not `wait_for_lock`: what a finalizer does, which runs wherever a garbage collection happens, perhaps on a
    thread inside this very queue's put or get, whose lock it holds; waiting for that lock would wait for ever
    (as the Arrow block cache once did). When the lock is taken, the queue is left as it is: the producer, told
    to stop, sees it at its next poll and empties the queue itself (`_run`)."""
    if not wait_for_lock:
        if not q.mutex.acquire(blocking=False):
            return
        q.mutex.release()  # free, and not this thread's: the gets below may wait for another thread, briefly
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return


def _run(produce: Callable[[threading.Event], Iterator[T]], q: queue.Queue, stop: threading.Event) -> None:
    try:
        items = produce(stop)
        try:
            for item in items:
                if not _put(q, (_ITEM, item), stop):
                    return
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()
        _put(q, (_DONE, None), stop)
    except BaseException as exc:  # noqa: BLE001 - handed to the consumer, who re-raises it
        _put(q, (_ERROR, exc), stop)
    finally:
        if stop.is_set():
            _drain(q)  # what the consumer will never take is freed here, not at the thread's end (see above)


class Prefetched(Generic[T]):
    """The items of `produce(stop)`, computed in a background thread up to `depth` items ahead."""

    def __init__(self, produce: Callable[[threading.Event], Iterator[T]], depth: int, name: str) -> None:
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self._q: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._name = name
        self._finished = False
        # the thread holds the queue and the event, not this object: one the consumer drops is collected, and
        # its __del__ stops the producer
        self._thread = threading.Thread(target=_run, args=(produce, self._q, self._stop), name=name, daemon=True)
        with _live_lock:
            _live[self._thread] = (self._stop, self._q)
        self._thread.start()

    def __iter__(self) -> Prefetched[T]:
        return self

    def __next__(self) -> T:
        if self._finished:
            raise StopIteration
        while True:
            try:
                tag, value = self._q.get(timeout=_POLL_S)
            except queue.Empty:
                if not self._thread.is_alive() and self._q.empty():
                    self.close()
                    raise RuntimeError(f"{self._name} thread ended without a result") from None
                continue
            if tag == _ITEM:
                return value  # type: ignore[return-value]
            self.close()
            if tag == _ERROR:
                raise value  # type: ignore[misc]
            raise StopIteration

    def cancel(self, *, wait_for_lock: bool = False) -> None:
        """Tell the producer to stop; do not wait for it, nor (unless `wait_for_lock`) for its queue's lock: a
        finalizer's call (`_drain`)."""
        self._finished = True
        if self._stop.is_set():  # told already: by close(), cancel() or the exit hook, who emptied the queue
            return
        self._stop.set()
        _drain(self._q, wait_for_lock=wait_for_lock)

    def close(self) -> None:
        """Stop the producer and join its thread (it runs the producer's `finally`, e.g. a pool shutdown).

        Uses no module global once the producer has been told and has ended: an iterator the main module still
        refers to is closed while the interpreter tears the modules down, their globals already None (the exit
        hook stopped and joined its producer before that)."""
        self.cancel(wait_for_lock=True)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def __del__(self) -> None:
        self.cancel()


def prefetch(produce: Callable[[threading.Event], Iterator[T]], /, *, depth: int,
             name: str = "fastdata-prefetch") -> Prefetched[T]:
    """`Prefetched(produce, depth, name)`: `produce` should check `stop.is_set()` between items and release
    its resources in a `finally`."""
    return Prefetched(produce, depth, name)
