"""Response bodies being read from remote storage, and cutting them short.

Every body a `RemoteStore` reads is registered while it is read. When the process exits (`fastdata/exiting.py`)
every registered body's socket is shut; when a store's dataset is closed (`InFlight.abandon`), that store's. A
read blocked on a slow or stalled server then returns at once, the retry loop sees that it must not try again,
and a wait before a retry ends within 0.1 s: no exit, `break` or `close()` waits for a server.

A body read with a `timeout` must move: each piece it delivers (`Body.moved`) gives it `timeout` seconds for the
next. A watcher thread shuts the socket of one that does not (`Body.cut`), so a server that drips a byte now and
then, never silent for a whole read timeout, cannot hold a read forever (curl's `--speed-time`). A forked child
starts with none of its parent's bodies and a fresh lock.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from fastdata import exiting
from fastdata.errors import StorageError

_reading: set[Any] = set()  # responses whose bodies are being read, in any thread of any store
_lock = threading.Lock()
WATCH_EVERY = 0.1  # seconds between the watcher's looks at the bodies that must move


@dataclass(eq=False)
class Body:
    """One body being read; with a `timeout`, it must deliver a piece within `timeout` seconds of the last one."""

    response: Any
    timeout: float | None = None
    due: float = 0.0  # monotonic time by which the next piece must come
    cut: bool = False  # the watcher shut it for not moving

    def moved(self) -> None:
        """A piece of the body arrived: `timeout` seconds more for the next."""
        if self.timeout is not None:
            self.due = time.monotonic() + self.timeout


_watched: set[Body] = set()  # bodies with a timeout, looked at by the watcher
_watcher: list[threading.Thread] = []


def _after_fork_in_child() -> None:
    """A forked child reads none of its parent's bodies, and must not inherit `_lock` held by a thread that is not
    there (the watcher takes it ten times a second): its exit hook would wait on it forever."""
    global _lock
    _lock = threading.Lock()
    _reading.clear()
    _watched.clear()
    _watcher.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _watch() -> None:
    """Shut the socket of every watched body whose next piece is late; ends when none is left to watch."""
    while not exiting.EXITING.is_set():
        with _lock:
            if not _watched:
                _watcher.clear()  # under the lock: the next watched body starts a new watcher
                return
            now = time.monotonic()
            late = [b for b in _watched if not b.cut and b.due < now]
            for body in late:
                body.cut = True
        for body in late:
            _shut(body.response)
        exiting.EXITING.wait(WATCH_EVERY)


def _start_watcher() -> None:
    """Under `_lock`: start the watcher thread unless one runs (a forked child starts its own)."""
    if not _watcher or not _watcher[0].is_alive():
        _watcher[:] = [threading.Thread(target=_watch, name="fastdata-body-watch", daemon=True)]
        _watcher[0].start()


def _shut(response: Any) -> None:
    try:
        response.shutdown()  # a read blocked in another thread returns at once
    except (ValueError, RuntimeError, OSError):  # no socket to shut (already released or closed)
        pass


def _abandon_all() -> None:
    """At exit: shut the sockets of the bodies being read, so that no exit waits for a slow or stalled server."""
    with _lock:
        responses = list(_reading)
    for response in responses:
        _shut(response)


exiting.on_exit(_abandon_all, exiting.ABANDON_DOWNLOADS)


class InFlight:
    """The bodies one store is reading, and whether its dataset was closed."""

    def __init__(self) -> None:
        self._bodies: set[Any] = set()
        self.abandoned = False

    def abandon(self) -> None:
        """The dataset was closed: reads in flight end now (their sockets shut), and nothing is retried or sent."""
        with _lock:
            self.abandoned = True
            responses = list(self._bodies)
        for response in responses:
            _shut(response)

    def pause(self, seconds: float) -> None:
        """Sleep before a retry; an exit or `abandon()` ends the sleep (within 0.1 s)."""
        until = time.monotonic() + seconds
        while not self.abandoned and not exiting.EXITING.is_set():
            left = until - time.monotonic()
            if left <= 0:
                return
            exiting.EXITING.wait(min(left, 0.1))

    def stop_if_abandoned(self, what: str) -> None:
        """Raise a StorageError naming `what` when the process exits or the dataset was closed."""
        exiting.stop_if_exiting(what)
        if self.abandoned:
            raise StorageError(f"{what} abandoned: the dataset was closed")

    @contextmanager
    def reading(self, response: Any, timeout: float | None = None) -> Iterator[Body]:
        """While a response's body is read: registered, so that an exit or `abandon()` can cut the read short; with
        a `timeout`, watched: cut short (`Body.cut`) when no piece comes for `timeout` seconds."""
        body = Body(response, timeout)
        body.moved()
        with _lock:
            _reading.add(response)
            self._bodies.add(response)
            if timeout is not None:
                _watched.add(body)
                _start_watcher()
            late = self.abandoned or exiting.EXITING.is_set()  # registered after the sockets were shut
        try:
            if late:
                _shut(response)
            yield body
        finally:
            with _lock:
                _reading.discard(response)
                self._bodies.discard(response)
                _watched.discard(body)
