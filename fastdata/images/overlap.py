"""Epoch overlap: when the producer has made the last batch of an epoch, it goes on with the epoch it expects
next, so the first batches of that epoch are decoded while the user still consumes the last ones of this
one (and while the training loop does whatever it does between epochs: validation, a checkpoint).

A short epoch otherwise pays a refill at every start: the decode threads wait for the user's next
`iter()`, and the first batch then needs a whole batch of decodes before anything overlaps. Measured on
2 cores with 12 batches of 128 an epoch: the first batch of every epoch came 55-70 ms after `iter()`,
against 28-42 ms between batches (docs/performance.md).

The producer marks the boundary with `(EPOCH_END, start)` in its queue: `start` is where it went on.
Production is a pure function of that start (epoch, batch 0, cursor 0, elastic lineage), so the next
`iter()` takes over what was produced ahead only when it starts exactly there; anything else (another
epoch set, a state loaded) closes it and starts afresh. The expected next epoch repeats the last step the
user took (`set_epoch(e + 1)` before every epoch, or the same epoch iterated again); before there is one, a
loader whose `set_epoch` was called expects e + 1 (the convention of PyTorch's samplers), one whose epoch was
never set the same epoch again (which is what it then reads), in train and eval alike.

What is produced ahead is bounded by the loader's `prefetch` depth and then waits; it is released when
the user sets another epoch, loads a state, closes the loader or lets it go (`Loader` stops it when it
is garbage-collected). Loaders with user hooks do not overlap: a hook may depend on what the training
loop changes between epochs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from fastdata.images.resume import ResumePoint


class _EpochEnd:
    def __repr__(self) -> str:
        return "EPOCH_END"


EPOCH_END = _EpochEnd()  # first element of the item that separates two epochs in the producer's queue


class Ahead(NamedTuple):
    """A producer that went on past an epoch's end: its items from `start` on."""

    start: ResumePoint
    batches: Iterator[Any]


def next_step(last: int | None, epoch: int, *, sets_epochs: bool) -> int:
    """The expected epoch after `epoch` is epoch + step: the user's last step (`last` is the epoch iterated
    before this one) when it was 0 or 1; else 1 when the user has called `set_epoch` (the convention: once
    before every epoch), and 0 when not (a loader whose epoch is never set reads the same epoch again)."""
    if last is not None and epoch - last in (0, 1):
        return epoch - last
    return 1 if sets_epochs else 0


class Overlap:
    """What a backend keeps between epochs for the overlap: the producer gone on ahead (`ahead`), and what it
    needs to expect the next epoch (the epoch iterated last, whether `set_epoch` was ever called). Off when
    `enabled` is False (the option, or user hooks)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.ahead: Ahead | None = None
        self._last: int | None = None
        self._sets_epochs = False

    def set_epoch(self, epoch: int) -> None:
        """The user set `epoch`: what was produced ahead for another epoch is let go."""
        self._sets_epochs = True
        if self.ahead is not None and self.ahead.start.epoch != epoch:
            self.stop()

    def step(self, epoch: int) -> int | None:
        """`epoch` is iterated now: the step to the epoch the producer goes on with after it (None: it stops)."""
        last, self._last = self._last, epoch
        return next_step(last, epoch, sets_epochs=self._sets_epochs) if self.enabled else None

    def park(self, start: ResumePoint, batches: Iterator[Any]) -> None:
        """The producer went on past an epoch's end: its items from `start` on wait for the next `iter()`."""
        self.ahead = Ahead(start, batches)

    def take(self, start: ResumePoint) -> Iterator[Any] | None:
        """The batches produced ahead from `start` on, if that is where they began; else None (they are let go)."""
        ahead, self.ahead = self.ahead, None
        if ahead is None:
            return None
        if ahead.start == start:
            return ahead.batches
        ahead.batches.close()
        return None

    def stop(self, wait: bool = True) -> None:
        """Stop the production ahead, if it goes on, and join its thread (only tell it to stop when not `wait`:
        what a garbage-collection finalizer does, on whichever thread it runs)."""
        ahead, self.ahead = self.ahead, None
        if ahead is None:
            return
        if wait:
            ahead.batches.close()
        else:
            ahead.batches.cancel()


def follow_on(start: ResumePoint, step: int) -> ResumePoint:
    """Where the epoch after the one that began at `start` begins: a new epoch has no elastic lineage (it is
    dealt afresh on this world size); the same epoch iterated again keeps it."""
    return ResumePoint(epoch=start.epoch + step, batch=0, cursor=0, lineage=start.lineage if step == 0 else ())
