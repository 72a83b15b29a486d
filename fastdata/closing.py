"""What every loader is to PyTorch and to its user: a `torch.utils.data.IterableDataset` of whole batches, with
`close()` and `with`.

Closing stops what the loader runs and lets its dataset's files go now, not at garbage collection (for a remote
dataset: downloads in flight cut short, held shards given back to the node cache, its entry in the cache's users
removed). Iterating a closed loader is an error, and so is going on with a pass begun before it was closed.

A loader reads one pass at a time. `iter(loader)` (a new `for` loop) ends the pass still open, if any: its
threads stop at once, and asking it for another batch raises instead of handing out batches of a position that
the new pass now moves (text and volume passes share one; image passes would each have read the epoch again).

As an IterableDataset, a loader passes through `DataLoader(loader, batch_size=None)` unchanged, in the process
that iterates it. It refuses to be iterated inside a DataLoader worker process: each worker would read the whole
epoch, so every batch would come once per worker. It cannot be pickled or copied (it holds threads and open
files), and says so, where a DataLoader that spawns its workers would fail on a lock.
"""

from __future__ import annotations

import os
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

from torch.utils.data import IterableDataset, get_worker_info

# why an open pass ended, as it says when asked for another batch
NEWER_PASS = ("a newer pass over this loader began (iter() was called on it again, say a new for loop) and ended "
              "this one: a loader reads one pass at a time")
MOVED = ("set_epoch() or load_state_dict() moved this loader to another position during this pass and ended it; "
         "a new for loop reads from there")
CLOSED = "this loader was closed during this pass; make a new one with fastdata.loader(...)"


class Closable(IterableDataset, ABC):
    """A loader's `__iter__` (its batches come from `_iterate`; refused once closed, and in a DataLoader worker;
    one pass at a time), `close()` and `with`."""

    _closed = False
    _passes = 0  # passes begun or ended: the number of the open pass, if one is
    _ended = NEWER_PASS  # why the last pass ended (what a pass resumed after its end raises)
    _open: weakref.ref | None = None  # the batches of the latest pass (a generator of `_iterate`), while they live
    _keeps_threads = False  # whether threads started by a pass outlive it (image loaders: decode pool, epoch overlap)
    _threads_in: int | None = None  # the process those threads run in, once a pass began

    @property
    def sampler(self) -> Closable:
        """The loader itself, so that a trainer which calls `set_epoch` on the sampler of what it iterates reaches the
        loader's: PyTorch Lightning does so as each epoch starts (before, every epoch of an image loader under
        Lightning came in epoch 0's order, crops and flips)."""
        return self

    @property
    def batch_sampler(self) -> None:
        """None, as a `DataLoader` of whole batches has: the loader makes its batches itself (a trainer that finds a
        `sampler` reads this too; Lightning's evaluation loop did, and failed on its absence)."""
        return None

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
        self._refuse_a_forked_process()
        self._end_open_pass(NEWER_PASS)
        batches = self._iterate()
        self._open = weakref.ref(batches)  # weak: a pass holds its loader, and the loader must not hold it back
        return self._pass(batches, self._passes)

    def _refuse_a_forked_process(self) -> None:
        """A process forked after a pass began holds a copy of the loader but none of the threads that pass started
        (a fork copies the calling thread only): its first batch would wait for them forever (DALI's) or fail on a
        prefetch thread that is not there. Said plainly instead; a loader forked before its first pass is whole."""
        if not self._keeps_threads:
            return
        if self._threads_in is None:
            self._threads_in = os.getpid()
        elif self._threads_in != os.getpid():
            raise RuntimeError(
                f"this loader's threads run in process {self._threads_in}, where its first pass began; process "
                f"{os.getpid()} was forked from it and has none of them (a fork copies no thread): make a loader in "
                "this process with fastdata.loader(...), or start the process with the 'spawn' method, or fork before "
                "the loader's first pass")

    def _pass(self, batches: Iterator[Any], number: int) -> Iterator[Any]:
        """`batches`, as long as this pass has not been ended. A pass ended from another thread while it waited
        for a batch (its threads stopped under it) says why it ended, not how its threads stopped."""
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except Exception as error:
                if self._passes != number:
                    raise RuntimeError(self._ended) from error
                raise
            yield batch
            if self._passes != number:
                raise RuntimeError(self._ended)
        if self._passes != number:  # its batches ran out because the pass was ended, not at the epoch's end
            raise RuntimeError(self._ended)

    def _end_open_pass(self, why: str) -> None:
        """End the open pass, if any, for the reason `why`: the latest pass's batches, if they live, stop now (their
        generator closes, and their threads end), and the pass raises `why` if asked for another batch."""
        self._passes += 1
        self._ended = why
        batches = self._open() if self._open is not None else None
        if batches is not None:
            try:
                batches.close()
            except ValueError:  # running in another thread (generator already executing): it stops at its next batch
                pass

    def close(self) -> None:
        """Let the loader's threads and files go; closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        self._end_open_pass(CLOSED)
        self._release()

    def __getstate__(self) -> Any:
        raise TypeError(f"a fastdata loader cannot be pickled or copied ({type(self).__name__} holds threads and open "
                        "files): build it in the process that iterates it; for DataLoader, pass it with "
                        "num_workers=0 (it has threads of its own)")

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
