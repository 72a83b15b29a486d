"""`close()` and `with` for every loader: stop what it runs and let its dataset's files go now, not at garbage
collection (for a remote dataset: downloads in flight cut short, held shards given back to the node cache, its
entry in the cache's users removed). Iterating a closed loader is an error."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any


class Closable(ABC):
    """A loader's `__iter__` (its batches come from `_iterate`, refused once closed), `close()` and `with`."""

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
