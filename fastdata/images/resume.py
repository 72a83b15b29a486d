"""The resumable position of an image loader and its `state_dict()` form, checked on load.

A position is (epoch, batch, cursor): `batch` batches of `epoch` were handed to the user, and `cursor`
sequence positions were consumed by them (cursor differs from batch * batch_size only when corrupt
samples were skipped with on_error="skip"). The state also records what the plan depends on, so a
state from a different seed, world size or dataset is refused with a clear message instead of
silently resuming at the wrong place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastdata.images.options import ImageLoaderOptions

_CHECKED = ("seed", "rank", "world_size", "batch_size", "train", "num_samples")


@dataclass(frozen=True)
class ResumePoint:
    epoch: int
    batch: int
    cursor: int


def make_state(backend: str, point: ResumePoint, opts: ImageLoaderOptions, *, num_samples: int,
               skipped: int) -> dict[str, Any]:
    return {
        "backend": backend,
        "epoch": point.epoch,
        "batch": point.batch,
        "cursor": point.cursor,
        "seed": opts.seed,
        "rank": opts.rank,
        "world_size": opts.world_size,
        "batch_size": opts.batch_size,
        "train": opts.train,
        "num_samples": num_samples,
        "skipped": skipped,
    }


def check_state(state: Any, backend: str, opts: ImageLoaderOptions, *, num_samples: int) -> ResumePoint:
    """The ResumePoint of `state`, or ValueError/TypeError saying why it cannot resume this loader."""
    if not isinstance(state, dict):
        raise TypeError(f"state_dict must be a dict, got {type(state).__name__}")
    missing = [k for k in ("backend", "epoch", "batch", "cursor", *_CHECKED) if k not in state]
    if missing:
        raise ValueError(f"state_dict lacks {missing}; pass what Loader.state_dict() returned")
    if state["backend"] != backend:
        raise ValueError(f"state_dict comes from backend {state['backend']!r}; this loader uses {backend!r}")
    here = {"seed": opts.seed, "rank": opts.rank, "world_size": opts.world_size, "batch_size": opts.batch_size,
            "train": opts.train, "num_samples": num_samples}
    diff = {k: (state[k], here[k]) for k in _CHECKED if state[k] != here[k]}
    if diff:
        detail = ", ".join(f"{k}: saved {a!r}, now {b!r}" for k, (a, b) in diff.items())
        raise ValueError(f"state_dict does not match this loader ({detail}); build the loader with the "
                         "same dataset, seed, batch_size, train and rank/world_size to resume")
    values = [state["epoch"], state["batch"], state["cursor"]]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise ValueError(f"state_dict epoch/batch/cursor must be integers >= 0, got {values}")
    return ResumePoint(epoch=state["epoch"], batch=state["batch"], cursor=state["cursor"])
