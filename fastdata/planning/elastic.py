"""Resuming an interrupted epoch on a different number of ranks.

A run stopped after every rank had delivered `b` batches (ranks advance in lockstep, so any rank's state
says where all of them stood). What the epoch had not yet delivered is the rest of each old rank's plan;
it is gathered in rank order and dealt again to the new ranks, equal batch counts each, by the kind's own
rules (images and patches: contiguous blocks of samples cut into batches; token batches: dealt round
robin after evening out). An epoch can be interrupted more than once: its `lineage` lists every
(world_size, batches) it stopped at, and the plan of a rank is replayed from the epoch's first plan through
each of them, a pure function like every plan. The next epoch starts afresh on the new world size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from fastdata.distributed import MAX_WORLD_SIZE, valid_world_size

# ranks an interrupted epoch's replay may plan in all (the world sizes of its lineage): 8 x MAX_WORLD_SIZE
MAX_REPLAYED_RANKS = 1 << 20

Plan = TypeVar("Plan")
Rest = TypeVar("Rest")
Step = tuple[int, int]  # (world_size, batches every rank had delivered) when the epoch was interrupted


def check_lineage(value: Any) -> tuple[Step, ...]:
    """The `elastic` field of a state as steps, or ValueError saying what is wrong with it."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not all(
            isinstance(s, list | tuple) and len(s) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                              for v in s) for s in value):
        raise ValueError(f"state_dict field 'elastic' must be a list of [world_size, batches] pairs, got {value!r}")
    steps = tuple((int(w), int(b)) for w, b in value)
    if any(not valid_world_size(w) or b < 0 for w, b in steps):
        raise ValueError(f"state_dict field 'elastic' holds a world_size outside 1..{MAX_WORLD_SIZE} or a negative "
                         f"batch count: {value!r}")
    if sum(w for w, _ in steps) > MAX_REPLAYED_RANKS:
        raise ValueError(f"state_dict field 'elastic' replays {sum(w for w, _ in steps)} ranks in all, more than "
                         f"{MAX_REPLAYED_RANKS}: {len(steps)} interruptions of one epoch")
    return steps


def replay(lineage: Sequence[Step], world_size: int, *, plans: Callable[[int], list[Plan]],
           rest: Callable[[Plan, int], Rest], redeal: Callable[[list[Rest], int], list[Plan]]) -> list[Plan]:
    """Every rank's plan of the interrupted epoch on `world_size` ranks.

    `plans(w)`: the epoch's first plan of every rank of `w`; `rest(plan, b)`: what a plan still had to deliver
    after `b` batches; `redeal(rests, w)`: those rests (in old rank order) dealt to `w` ranks."""
    if not lineage:
        return plans(world_size)
    current = plans(lineage[0][0])
    for k, (_, done) in enumerate(lineage):
        after = lineage[k + 1][0] if k + 1 < len(lineage) else world_size
        current = redeal([rest(p, done) for p in current], after)
    return current


def resumed_lineage(saved: tuple[Step, ...], *, saved_world: int, saved_batch: int, world_size: int) -> tuple[
        tuple[Step, ...], int]:
    """(lineage, batch) a loader of `world_size` resumes at, given a state saved at `saved_batch` on
    `saved_world` ranks with lineage `saved`: the same place when the world size is unchanged, else the
    start of the re-dealt rest."""
    if saved_world == world_size:
        return saved, saved_batch
    return (*saved, (saved_world, saved_batch)), 0
