"""Tar shard bytes kept in the loader's own memory once read (the `memory_cache` option of the image loader).

Reading a sample with `pread` costs a system call, a fresh `bytes` object and a release and re-acquisition of the
GIL that the decode threads share; from the second epoch on, a cached sample is a slice of memory the process
already holds. FFCV and DALI get the same by memory-mapping their files; a map of the file is not used here, since
a shard truncated while mapped turns a read into SIGBUS (DESIGN.md, reliability rules). The memory is an
anonymous map of the shard's size instead: its pages are allocated as samples are first read into them (`preadv`
writes straight into the map), and nothing outside the process can take them away.

One `MemoryBudget` per loader bounds what its shards reserve (a shard reserves its file size when it opens, and
gives it back when it closes); a shard that does not fit is read with `pread` as before. The bound is the loader's
option, never a number the dataset supplies.
"""

from __future__ import annotations

import mmap
import os
import threading


class MemoryBudget:
    """Bytes the shards of one loader may still reserve (thread-safe)."""

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"memory budget must be >= 0 bytes, got {limit}")
        self.limit = limit
        self._left = limit
        self._lock = threading.Lock()

    @property
    def left(self) -> int:
        return self._left

    def take(self, n: int) -> bool:
        """Reserve `n` bytes if they are left; False (nothing reserved) if not."""
        with self._lock:
            if n > self._left:
                return False
            self._left -= n
            return True

    def give(self, n: int) -> None:
        with self._lock:
            self._left = min(self.limit, self._left + n)


class ShardMemory:
    """One shard's bytes at their offsets in the file; `filled[i]` is 1 once sample i's span holds its bytes.

    Two threads may fill the same span at once (an epoch and the next one produced ahead): they write the same
    bytes, and a span is marked filled only after a complete read, so a reader never sees a partial one.
    """

    def __init__(self, size: int, samples: int) -> None:
        self.size = size
        self._map = mmap.mmap(-1, max(size, 1))  # anonymous: zero pages, allocated when first written
        self.view = memoryview(self._map)
        self.filled = bytearray(samples)

    def fill(self, fd: int, lo: int, hi: int) -> bool:
        """Read bytes [lo, hi) of the file into place; False when the file ends before `hi` (truncated)."""
        return os.preadv(fd, [self.view[lo:hi]], lo) == hi - lo
