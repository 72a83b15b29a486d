"""An ordered stream of per-sample results computed ahead in a thread pool.

Position p of an epoch's stream is sample `sequence[p % n]` (train wraps around only when skipped
samples are replaced by following ones), or padding (`None`) past the end of a padded eval sequence.
Up to `ahead` positions are submitted before they are consumed, so the decode threads never wait on
the batch assembler; results come back strictly in position order. Positions are submitted in blocks of
at least `chunk` (a batch), and the random draws of a block's samples are computed in one call
(`draw`), so no sample seeds a generator of its own: `load(index, row, dest)` gets its row of draws (None
in eval) and, when the stream was given `place`, `place(position)`: where its image goes (`rows.py`),
else None. A pool task loads `GROUP` consecutive samples: one task per sample cost 9.8 us of Python
(future, queue, wake-up) held under the GIL that the decode threads share, 2.6 us a sample in groups of
8; each position still gets its own result or exception (`Slot`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

GROUP = 8  # samples a pool task loads


class _Failed:
    """A sample's exception, kept in its group's list of results."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


Load = Callable[[int, list[float] | None, Any], Any]  # (index, row of draws, destination) -> result


def _load_group(load: Load, items: list[tuple[int, Any, Any]]) -> list[Any]:
    out: list[Any] = []
    for index, row, dest in items:
        try:
            out.append(load(index, row, dest))
        except BaseException as exc:  # noqa: BLE001 - handed to this sample's Slot, as a Future would
            out.append(_Failed(exc))
    return out


class Slot:
    """One position of a group task: `result()` is the sample's value, or raises the exception its load raised."""

    __slots__ = ("_group", "_j")

    def __init__(self, group: Future, j: int) -> None:
        self._group, self._j = group, j

    def result(self) -> Any:
        out = self._group.result()[self._j]
        if isinstance(out, _Failed):
            raise out.exc
        return out

    def cancel(self) -> bool:
        return self._group.cancel()


class SampleStream:
    def __init__(self, pool: ThreadPoolExecutor, load: Load, sequence: np.ndarray, *, start: int, limit: int,
                 ahead: int, padded: bool, chunk: int = 1,
                 draw: Callable[[np.ndarray], list[list[float]]] | None = None,
                 place: Callable[[int], Any] | None = None) -> None:
        self._pool, self._load, self._sequence, self._draw, self._place = pool, load, sequence, draw, place
        self._padded = padded
        self._limit = limit  # positions the epoch needs when nothing is skipped; submit ahead up to here
        self._ahead = max(1, ahead)
        self._chunk = max(1, min(chunk, self._ahead))
        self._next_submit = start
        self.position = start  # next position to be consumed
        self._pending: deque[Slot | None] = deque()

    def _submit(self, stop: int) -> None:
        """Submit positions `_next_submit` .. stop - 1, with their draws computed in one call."""
        first, n = self._next_submit, len(self._sequence)
        self._next_submit = stop
        real = max(0, (min(stop, n) if self._padded else stop) - first)  # positions holding a sample
        indices = self._sequence[np.arange(first, first + real) % n] if real else self._sequence[:0]
        rows = self._draw(indices) if self._draw is not None and real else [None] * real
        dests = [self._place(p) for p in range(first, first + real)] if self._place is not None else [None] * real
        items = list(zip(indices.tolist(), rows, dests))
        for g in range(0, real, GROUP):
            group = self._pool.submit(_load_group, self._load, items[g:g + GROUP])
            self._pending.extend(Slot(group, j) for j in range(min(GROUP, real - g)))
        self._pending.extend([None] * (stop - first - real))  # padding rows

    @property
    def submitted_all(self) -> bool:
        """Every position the epoch needs (when nothing is skipped) has been submitted."""
        return self._next_submit >= self._limit

    def prime(self) -> None:
        """Submit the first `ahead` positions now, before the first `next()` (the end of the epoch before it)."""
        target = min(self.position + self._ahead, self._limit)
        if target > self._next_submit:
            self._submit(target)

    def next(self) -> Slot | None:
        """The result slot of the next position (None: a padding row)."""
        target = min(self.position + self._ahead, self._limit)
        gap = target - self._next_submit
        if not self._pending or gap >= self._chunk or (gap > 0 and target == self._limit):
            self._submit(max(target, self._next_submit + 1))  # past the limit (train replacing skipped
            # samples): one position at a time
        self.position += 1
        return self._pending.popleft()

    def cancel(self) -> None:
        for fut in self._pending:
            if fut is not None:
                fut.cancel()
        self._pending.clear()
