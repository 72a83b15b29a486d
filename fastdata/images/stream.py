"""An ordered stream of per-sample results computed ahead in a thread pool.

Position p of an epoch's stream is sample `sequence[p % n]` (train wraps around only when skipped
samples are replaced by following ones), or padding (`None`) past the end of a padded eval sequence.
Up to `ahead` positions are submitted before they are consumed, so the decode threads never wait on
the batch assembler; results come back strictly in position order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np


class SampleStream:
    def __init__(self, pool: ThreadPoolExecutor, load: Callable[[int], Any], sequence: np.ndarray, *,
                 start: int, limit: int, ahead: int, padded: bool) -> None:
        self._pool, self._load, self._sequence = pool, load, sequence
        self._padded = padded
        self._limit = limit  # positions the epoch needs when nothing is skipped; submit ahead up to here
        self._ahead = max(1, ahead)
        self._next_submit = start
        self.position = start  # next position to be consumed
        self._pending: deque[Future | None] = deque()

    def _submit_one(self) -> None:
        p = self._next_submit
        self._next_submit += 1
        n = len(self._sequence)
        if self._padded and p >= n:
            self._pending.append(None)
        else:
            self._pending.append(self._pool.submit(self._load, int(self._sequence[p % n])))

    def next(self) -> Future | None:
        """The future of the next position (None: a padding row)."""
        if not self._pending:
            self._submit_one()
        while self._next_submit < min(self.position + self._ahead, self._limit):
            self._submit_one()
        self.position += 1
        return self._pending.popleft()

    def cancel(self) -> None:
        for fut in self._pending:
            if fut is not None:
                fut.cancel()
        self._pending.clear()
