"""What every loader is to PyTorch and to its user: a `torch.utils.data.IterableDataset` of whole batches, with
`close()` and `with`.

Closing stops what the loader runs and lets its dataset's files go now, not at garbage collection (for a remote
dataset: downloads in flight cut short, held shards given back to the node cache, its entry in the cache's users
removed). Iterating a closed loader is an error.

As an IterableDataset, a loader passes through `DataLoader(loader, batch_size=None)` unchanged, in the process
that iterates it. It refuses to be iterated inside a DataLoader worker process: each worker would read the whole
epoch, so every batch would come once per worker.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

from torch.utils.data import IterableDataset, get_worker_info


class Closable(IterableDataset, ABC):
    """A loader's `__iter__` (its batches come from `_iterate`; refused once closed, and in a DataLoader worker),
    `close()` and `with`."""

    _closed = False

    @abstractmethod
    def _iterate(self) -> Iterator[Any]:
        """The loader's batches for one pass (what `__iter__` returns while the loader is open)."""

    @abstractmethod
    def _release(self) -> None:
        """What closing lets go: the loader's threads, its dataset's files."""

    def __iter__(self) -> Iterator[Any]:
        if self._closed:
            raise RuntimeError("this loader was closed; make a new one with fastdata.loader(...)")
        _refuse_a_worker_process()
        return self._iterate()

    def close(self) -> None:
        """Let the loader's threads and files go; closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        self._release()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _refuse_a_worker_process() -> None:
    worker = get_worker_info()
    if worker is not None:
        raise RuntimeError(
            f"a fastdata loader was iterated in DataLoader worker process {worker.id} of {worker.num_workers}: "
            f"every worker would read the whole epoch, so each batch would come {worker.num_workers} times. The "
            f"loader decodes in its own threads and prefetches (num_threads=, prefetch=): iterate it directly, or "
            f"give it to DataLoader(loader, batch_size=None) with num_workers=0")
