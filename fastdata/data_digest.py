"""Which data a loader state was saved on: a digest of the shards it reads, checked when the state is loaded.

A loader's order, and so where a state resumes, is a function of its options and of the samples it reads: the
shards' bytes, in the order its view lists them. The digest hashes each shard's sha256 and sample count from the
manifest, dataset by dataset (a mixture: member by member). It names the data, not where they lie: a dataset
copied to object storage, or converted again from the same sources to the same bytes, keeps its digest, and a
state saved on it resumes there. Data re-converted with other options, other shards of a dataset, another split
or another dataset of the same size get another digest, and `load_state_dict` refuses the state, where it would
otherwise resume at the same position in other samples.

A state saved by a fastdata that did not record the digest has none: it resumes as before, with a warning that
its data could not be checked. To resume on other data deliberately, delete the field from the state.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from typing import Any

log = logging.getLogger(__name__)

KEY = "data_digest"


def data_digest(view: Any) -> str | None:
    """The digest of the data a loader over `view` (a DatasetView or a MixedView) reads; None without a view."""
    if view is None:
        return None
    members = getattr(view, "views", (view,))  # a mixture's member datasets, in its order
    return digest_of([[ref.info for ref in member.shards] for member in members])


def digest_of(datasets: Sequence[Sequence[Any]]) -> str:
    """The digest of datasets given as their shards' manifest entries (ShardInfo), in reading order: what
    `fastdata info` shows for each split, and what a loader over a whole split records."""
    listing = [[[info.sha256, info.samples] for info in shards] for shards in datasets]
    return hashlib.sha256(json.dumps(listing, separators=(",", ":")).encode()).hexdigest()[:32]


def check_data_digest(state: dict[str, Any], here: str | None) -> None:
    """Refuse `state` when it was saved on other data than `here` names; accept one that records none."""
    if KEY not in state:
        log.warning("the loader state records no %s (saved by an older fastdata): resuming without checking that "
                    "it was saved on these data", KEY)
        return
    saved = state[KEY]
    if saved is not None and not isinstance(saved, str):
        raise ValueError(f"state_dict field {KEY!r} must be a string, got {saved!r}")
    if saved is None or here is None or saved == here:
        return
    raise ValueError(f"cannot resume: the state was saved on other data ({KEY}: saved {saved!r}, now {here!r}); "
                     "the shards' contents or their order differ (another dataset, split, selection of shards, or a "
                     "conversion with other options; `fastdata info DATASET` shows each split's digest), or the "
                     "loader reads other samples of them (indices=, sample_weights=). Build the "
                     f"loader on the data it was saved on, or delete the state's {KEY!r} field to resume on these "
                     "data anyway")
