"""What fastdata does when the interpreter exits, in one place and in a fixed order.

At exit, before every `atexit` handler and before thread pools join their workers, `EXITING` is set and
the hooks run in the order they were given (lower first): the storage client abandons the downloads in
flight (`fastdata/storage/inflight.py`, order 0), then the loaders' producer threads are stopped and joined
(`fastdata/images/prefetch.py`, order 1). A producer waiting for a shard still downloading would otherwise
hold the exit up until the server sent the rest or the read timed out (tests/test_remote_stop.py).

Why before `atexit`: DALI shuts its pipelines down in an `atexit` handler registered when DALI is first
imported (after fastdata), and `atexit` runs the last registered first, so a producer still running a
pipeline would meet DALI tearing it down ("terminate called without an active exception"). `threading`'s
exit hooks run before `atexit`, last registered first, so ours, registered after `concurrent.futures`
registered its own, also runs before the pools join their workers, while the producers and downloads can
still end by themselves. `threading._register_atexit` is private (CPython 3.9+, the hook `concurrent.futures`
uses); without it, `atexit`.
"""

from __future__ import annotations

import atexit
import concurrent.futures.thread  # noqa: F401 - its exit hook (joining pool workers) registered before ours
import logging
import threading
from collections.abc import Callable

from fastdata.errors import StorageError

log = logging.getLogger(__name__)

EXITING = threading.Event()  # set when the interpreter starts to exit

ABANDON_DOWNLOADS = 0  # orders of the hooks
STOP_PRODUCERS = 1

_hooks: list[tuple[int, Callable[[], None]]] = []


def on_exit(hook: Callable[[], None], order: int) -> None:
    """Run `hook` at interpreter exit, after `EXITING` is set and the hooks of lower order."""
    _hooks.append((order, hook))


def stop_if_exiting(what: str) -> None:
    """Raise a StorageError when the process is exiting: `what` (a download, a wait for one) is abandoned."""
    if EXITING.is_set():
        raise StorageError(f"{what} abandoned: the process is exiting")


def _run_hooks() -> None:
    EXITING.set()
    for _, hook in sorted(_hooks, key=lambda entry: entry[0]):
        try:
            hook()
        except Exception:  # noqa: BLE001 - one failing hook must not keep the others from running
            log.exception("exit hook %r failed", hook)


_register = getattr(threading, "_register_atexit", None)
if _register is None:
    atexit.register(_run_hooks)
else:
    _register(_run_hooks)
