"""Read-only file descriptors shared by the decode threads, a bounded number kept open (least recently used).

Keeping the descriptors of recently read shards open saves an open/close per sample (cheap on a local disk, a
metadata round trip on network filesystems); `pread` needs no shared file position, so one descriptor serves
every thread.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from pathlib import Path


def _close_all(fds: OrderedDict[Path, list[int]]) -> None:
    for fd, _ in fds.values():
        os.close(fd)
    fds.clear()


class FileHandles:
    """Read-only descriptors shared by all threads, at most `capacity` kept open while unused (LRU).

    A descriptor in use (between `acquire` and `release`) is never closed, so a concurrent `pread`
    can never meet a closed or reused descriptor; all are closed by `close()` or garbage collection.
    """

    def __init__(self, capacity: int = 32) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._capacity = capacity
        self._fds: OrderedDict[Path, list[int]] = OrderedDict()  # path -> [fd, users]
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _close_all, self._fds)

    def acquire(self, path: Path) -> int:
        with self._lock:
            entry = self._fds.get(path)
            if entry is not None:
                entry[1] += 1
                self._fds.move_to_end(path)
                return entry[0]
        fd = os.open(path, os.O_RDONLY)  # outside the lock: an open can be slow on network filesystems
        with self._lock:
            entry = self._fds.get(path)
            if entry is not None:  # another thread opened it meanwhile
                os.close(fd)
                entry[1] += 1
                return entry[0]
            self._fds[path] = [fd, 1]
            self._evict()
            return fd

    def release(self, path: Path) -> None:
        with self._lock:
            self._fds[path][1] -= 1
            self._evict()

    def _evict(self) -> None:
        """Close the least recently used idle descriptors beyond capacity (caller holds the lock)."""
        excess = len(self._fds) - self._capacity
        if excess <= 0:  # the common case, on every read: no scan of the open descriptors
            return
        for path in [p for p, (_, users) in self._fds.items() if users == 0][:excess]:
            os.close(self._fds.pop(path)[0])

    def __len__(self) -> int:
        return len(self._fds)

    def drop(self, path: Path) -> None:
        """Close the descriptor of `path` now if no read uses it (else the LRU closes it later)."""
        with self._lock:
            entry = self._fds.get(path)
            if entry is not None and entry[1] == 0:
                os.close(self._fds.pop(path)[0])

    def close(self) -> None:
        """Close every descriptor (call when no read is in flight); later reads open them again."""
        with self._lock:
            _close_all(self._fds)
