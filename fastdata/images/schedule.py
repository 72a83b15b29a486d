"""Which shards a rank's epoch reads, in which order, and when it is done with each (for remote datasets:
what to prefetch, what to give back to the node cache, and how much cache the plan needs at once)."""

from __future__ import annotations

import numpy as np


class ShardSchedule:
    """The shards of `sequence` (global sample indices in reading order) given the shards' first indices."""

    def __init__(self, sequence: np.ndarray, starts: list[int]) -> None:
        self.shard_at = np.searchsorted(np.asarray(starts), sequence, side="right") - 1
        positions = np.arange(len(self.shard_at))
        shards, first = np.unique(self.shard_at, return_index=True)
        last = np.zeros(len(starts), dtype=np.int64) - 1
        np.maximum.at(last, self.shard_at, positions)
        self.order = [int(s) for s in shards[np.argsort(first)]]  # in order of first use
        self.first = dict(zip(shards.tolist(), first.tolist()))  # first position at which each shard is read
        self.last = last  # last position at which each shard is read (-1: not in this sequence)

    def upcoming(self, position: int) -> list[int]:
        """Shards still to be read at or after `position`, soonest first."""
        return [s for s in self.order if self.last[s] >= position]

    def done(self, before: int, upto: int) -> list[int]:
        """Shards whose last read lies in [before, upto): finished when the reader passes `upto`."""
        return [s for s in self.order if before <= self.last[s] < upto]

    def peak_bytes(self, sizes: list[int], *, lookahead: int, ahead: int) -> int:
        """The most bytes a reader holds at once: a shard is held from `lookahead` positions before its first
        read (decode threads read ahead) to its last read, and the next `ahead` shards still to be read are
        prefetched. Evaluated exactly at every position where that set changes."""
        if not self.order:
            return 0
        order = np.asarray(self.order)
        first = np.asarray([self.first[s] for s in self.order]) - lookahead
        last = self.last[order]
        size = np.asarray(sizes, dtype=np.int64)[order]
        peak = 0
        for p in np.unique(np.concatenate([first.clip(min=0), last + 1])):
            held = (first <= p) & (last >= p)
            upcoming = np.flatnonzero(last >= p)[:ahead]  # `order` is by first use: the next ones to be read
            held[upcoming] = True
            peak = max(peak, int(size[held].sum()))
        return peak
