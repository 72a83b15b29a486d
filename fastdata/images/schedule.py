"""Which shards a rank's epoch reads, in which order, and when it is done with each (for remote datasets:
what to prefetch, what to give back to the node cache, and how much cache the plan needs at once), and the
two uses a loader makes of it: following an epoch's reading position, and checking the cache limit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def shard_follower(view: Any, reader: Any, sequence: np.ndarray, cursor: int) -> Callable[[int | None], None]:
    """For a remote dataset: a callable told the reading position of `sequence` before each batch (None at the
    end) that prefetches the shards it reads next and gives back to the node cache those it is done with;
    for a local one, a no-op. `reader` is the view's SplitReader."""
    remote = view.remote
    if remote is None:
        return lambda position: None
    schedule = ShardSchedule(_items(sequence, reader), reader.starts)
    names = [ref.info.name for ref in view.shards]
    state = {"at": cursor}

    def follow(position: int | None) -> None:
        if position is None:  # epoch over (or stopped): every shard goes back to the cache, still cached
            for s in range(len(names)):
                reader.forget(s)
            return
        for s in schedule.done(state["at"], position):
            reader.forget(s)
        state["at"] = position
        remote.follow([names[s] for s in schedule.upcoming(position)])

    return follow


def check_cache(view: Any, reader: Any, sequence: np.ndarray, opts: Any) -> None:
    """Refuse a remote dataset's cache_limit that cannot hold what a loader reading `sequence` (with `opts`'
    batch size and prefetch) holds at once."""
    remote = view.remote
    if remote is None:
        return
    sizes = [ref.info.bytes for ref in view.shards]
    schedule = ShardSchedule(_items(sequence, reader), reader.starts)
    need = schedule.peak_bytes(sizes, lookahead=(opts.prefetch + 1) * opts.batch_size, ahead=remote.ahead)
    limit = remote.cache.limit
    if limit is not None and limit < need:
        raise ValueError(f"cache_limit={limit} bytes is too small for this loader: it holds up to {need} bytes "
                         f"of shards at once (those of one shuffle window of {opts.shuffle_window} samples "
                         f"plus {remote.ahead} prefetched shards); set cache_limit to at least {need} bytes, "
                         "or lower shuffle_window")


def _items(sequence: np.ndarray, reader: Any) -> np.ndarray:
    """The samples `sequence` reads: weighted sampling numbers a sample's repeats k * N + its index
    (planning/weights.py)."""
    return np.asarray(sequence) % max(len(reader), 1)
