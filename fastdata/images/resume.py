"""The resumable position of an image loader and its `state_dict()` form, checked on load.

A position is (epoch, batch, cursor): `batch` batches of `epoch` were handed to the user, and `cursor`
sequence positions were consumed by them (cursor differs from batch * batch_size only when corrupt
samples were skipped with on_error="skip"). The state also records what the plan depends on, so a
state from a different seed, world size, window or dataset is refused with a clear message instead of
silently resuming at the wrong place. Both backends execute the same plan, so a state saved with one
resumes the other at the same sample.

A state saved on another number of ranks resumes elastically (fastdata/planning/elastic.py): the rest of the
interrupted epoch is dealt again to this loader's ranks, and `lineage` records where it was interrupted.
Ranks advance in lockstep, so any rank's state will do; a state from another rank of the same world size
resumes at the same batch (its cursor then assumes no sample was skipped).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastdata.distributed import check_world_size
from fastdata.images.options import ImageLoaderOptions
from fastdata.loader_state import check_shared, shared_fields
from fastdata.planning.elastic import Step, check_lineage, resumed_lineage
from fastdata.planning.epochs import MAX_EPOCH, valid_epoch

STATE_VERSION = 2
_CHECKED = ("seed", "batch_size", "train", "num_samples", "shuffle_window", "drop_last")


@dataclass(frozen=True)
class ResumePoint:
    epoch: int
    batch: int
    cursor: int
    lineage: tuple[Step, ...] = ()  # where `epoch` was interrupted on other world sizes (planning/elastic.py)


def _settings(opts: ImageLoaderOptions, num_samples: int) -> dict[str, Any]:
    return {"seed": opts.seed, "rank": opts.rank, "world_size": opts.world_size, "batch_size": opts.batch_size,
            "train": opts.train, "num_samples": num_samples, "shuffle_window": opts.shuffle_window,
            "drop_last": not opts.keep_last}


def make_state(point: ResumePoint, opts: ImageLoaderOptions, *, num_samples: int, skipped: int,
               mixture: dict[str, Any] | None = None, data: str | None = None,
               kind: str | None = None) -> dict[str, Any]:
    return {**shared_fields(STATE_VERSION, kind=kind, epoch=point.epoch, lineage=point.lineage, mixture=mixture,
                            data=data),
            "batch": point.batch, "cursor": point.cursor, "skipped": skipped, **_settings(opts, num_samples)}


def _count(state: dict[str, Any], key: str) -> int:
    value = state[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"state_dict field {key!r} must be an integer >= 0, got {value!r}")
    return value


def check_state(state: Any, opts: ImageLoaderOptions, *, num_samples: int,
                mixture: dict[str, Any] | None = None, data: str | None = None,
                kind: str | None = None) -> ResumePoint:
    """The ResumePoint of `state`, or ValueError/TypeError saying why it cannot resume this loader."""
    check_shared(state, STATE_VERSION, kind=kind, mixture=mixture, data=data)
    here = _settings(opts, num_samples)
    missing = [k for k in ("epoch", "batch", "cursor", "skipped", *here) if k not in state]
    if missing:
        raise ValueError(f"state_dict lacks {missing}; pass what Loader.state_dict() returned")
    diff = {k: (state[k], here[k]) for k in _CHECKED if state[k] != here[k] or type(state[k]) is not type(here[k])}
    if diff:
        detail = ", ".join(f"{k}: saved {a!r}, now {b!r}" for k, (a, b) in diff.items())
        raise ValueError(f"state_dict does not match this loader ({detail}); build the loader with the "
                         "same dataset, seed, batch_size, train, drop_last and shuffle_window")
    _count(state, "skipped")
    saved_world = check_world_size(state["world_size"], "state_dict field 'world_size'")
    saved_rank = _count(state, "rank")
    if not saved_rank < saved_world:
        raise ValueError(f"state_dict has rank {saved_rank} of world_size {saved_world}")
    epoch, batch, cursor = _count(state, "epoch"), _count(state, "batch"), _count(state, "cursor")
    if not valid_epoch(epoch):
        raise ValueError(f"state_dict field 'epoch' must be at most {MAX_EPOCH}, got {epoch!r}")
    lineage, batch = resumed_lineage(check_lineage(state.get("elastic")), saved_world=saved_world, saved_batch=batch,
                                     world_size=opts.world_size)
    if saved_world != opts.world_size or saved_rank != opts.rank:
        cursor = batch * opts.batch_size  # another rank's cursor: exact unless samples were skipped there
    return ResumePoint(epoch=epoch, batch=batch, cursor=cursor, lineage=lineage)
