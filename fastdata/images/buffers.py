"""Batch-sized host buffers, reused once nothing outside the pool refers to them.

A batch of 64 float32 images of 224 x 224 is 38 MB. A fresh one from the allocator is fresh memory from
the kernel (glibc hands out allocations this large with mmap and returns them on free), so every batch
pays about 9,400 page faults and the zeroing of each page on its first write: measured about 3 ms for
that batch on a quiet 2-core machine (up to 15 ms while other work shared it), against 8 ms for converting
and normalising it (see `device_aug.py`). The pool keeps the buffers of the last few batches and hands one
out again when no tensor, view or array made from it is alive any more (its only reference is the pool's),
so the memory is already mapped.

A buffer that the user keeps (a batch stored in a list, a view, `.numpy()`) stays referenced and is never
handed out again while it lives; the pool then allocates a fresh one, as without it.
"""

from __future__ import annotations

import sys
import threading

import numpy as np


def _refs_when_only_pooled() -> int:
    """What `sys.getrefcount(pool[i])` reads when the pool's list is the array's only holder."""
    probe = [np.empty(1)]
    return sys.getrefcount(probe[0])


class BufferPool:
    """Up to `keep` numpy buffers, each handed out again once only the pool refers to it."""

    def __init__(self, keep: int) -> None:
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self._keep = keep
        self._arrays: list[np.ndarray] = []
        self._lock = threading.Lock()
        self._only_pooled = _refs_when_only_pooled()
        self.reused = 0  # how many `take`s were served from the pool (for tests and logs)

    def take(self, shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
        """An uninitialised C-contiguous array of `shape` and `dtype`: a free pooled one, else a new one."""
        dtype = np.dtype(dtype)
        with self._lock:
            free = [i for i in range(len(self._arrays)) if sys.getrefcount(self._arrays[i]) == self._only_pooled]
            for i in free:
                if self._arrays[i].shape == shape and self._arrays[i].dtype == dtype:
                    self.reused += 1
                    return self._arrays[i]
            arr = np.empty(shape, dtype)
            if len(self._arrays) < self._keep:
                self._arrays.append(arr)
            elif free:  # full: a free buffer of another shape (the short last batch of an epoch) makes room
                self._arrays[free[0]] = arr
            return arr

    def __len__(self) -> int:
        return len(self._arrays)
