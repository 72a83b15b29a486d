"""Where the kornia backend's decode threads write each image: straight into its row of the uint8 batch.

A sample stream's position p (counted from the position the stream started at) is given row
(p - start) % batch of block (p - start) // batch, a batch-sized buffer taken from a `BufferPool` when
the block's first position is submitted. Without skipped samples, block k *is* the k-th batch's buffer:
the resize writes into it and assembling the batch copies nothing (a 224 x 224 row is a 150 KB memcpy
and a fresh allocation per image otherwise).

A skipped sample (on_error="skip" in train) moves the samples after it to earlier rows, and a batch's
last rows then come from the next block. The batch is assembled in the block of its first sample; the
assembler copies the moved rows in row order, which never overwrites a row still to be read: a sample's
row in its block is never before its row in the batch, and a later block is another buffer. The next
batch starts in a later block, so no block serves two batches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np


class Row(NamedTuple):
    """Where one sample's image was written: row `row` of `buffer`, block `block` of `owner`. The buffer is
    carried, not looked up in `owner` by block: decode threads then never read the owner's dict while the
    producer thread changes it, and a block the owner has let go stays valid for whoever still holds it."""

    owner: BatchRows
    block: int
    row: int
    buffer: np.ndarray

    @property
    def array(self) -> np.ndarray:
        """The row itself (H x W x 3 uint8), a view of the block's buffer."""
        return self.buffer[self.row]


class BatchRows:
    """The destination of every position of one sample stream (the stream calls it as it submits them)."""

    def __init__(self, take: Callable[[], np.ndarray], batch: int, start: int) -> None:
        self._take, self._batch, self._start = take, batch, start
        self._blocks: dict[int, np.ndarray] = {}

    def __call__(self, position: int) -> Row:
        block, row = divmod(position - self._start, self._batch)
        if block not in self._blocks:
            self._blocks[block] = self._take()
        return Row(self, block, row, self._blocks[block])

    def batch(self, first: Row, rows: int) -> np.ndarray:
        """The buffer of the batch whose first sample is `first` (its block's first `rows` rows); the blocks
        before it are done with and let go (the pool hands them out again once nothing else holds them)."""
        for block in [b for b in self._blocks if b < first.block]:
            del self._blocks[block]
        return first.buffer[:rows]

    def __len__(self) -> int:
        return len(self._blocks)
