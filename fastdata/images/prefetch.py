"""Run a batch producer in a background thread, `depth` items ahead of the consumer.

Errors raised by the producer are re-raised in the consumer (never a silent hang); when the consumer
stops early (`break`, an exception, garbage collection) the producer is told to stop and is joined,
so no thread is left blocked on a full queue.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

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


def prefetch(produce: Callable[[threading.Event], Iterator[T]], /, *, depth: int,
             name: str = "fastdata-prefetch") -> Iterator[T]:
    """Yield the items of `produce(stop)`, computed in a background thread up to `depth` items ahead.

    `produce` should check `stop.is_set()` between items and release its resources in a `finally`.
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def run() -> None:
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

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    try:
        while True:
            try:
                tag, value = q.get(timeout=_POLL_S)
            except queue.Empty:
                if not thread.is_alive() and q.empty():
                    raise RuntimeError(f"{name} thread ended without a result") from None
                continue
            if tag == _DONE:
                return
            if tag == _ERROR:
                raise value  # type: ignore[misc]
            yield value  # type: ignore[misc]
    finally:
        stop.set()
        thread.join()
