"""One shard written and committed: the processor results of its inputs go through the format's writer, the
file lands by rename, then its record is saved (a shard counts as finished only once its record exists).
Both executors (the engine's local loop and a Ray task, converters/executor.py) write shards through this."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from converters.destination import Destination
from converters.kind import Kind
from converters.plan import ShardPlan
from converters.sample import Rejection, Sample, add_counts
from converters.writers import WRITERS
from fastdata.label_members import label_classes
from fastdata.manifest import ShardInfo

log = logging.getLogger(__name__)

SUFFIX = {"wds": ".tar", "arrow": ".arrow"}
Progress = Callable[[int], None]


def samples_of(result: Sample | Rejection | list[Sample]) -> list[Sample]:
    """The samples of one processor result: none for a rejection, several when one input yields many."""
    if isinstance(result, Rejection):
        return []
    return list(result) if isinstance(result, list) else [result]


def write_shard(kind: Kind, fmt: str, dest: Destination, p: ShardPlan, results: Iterator[Any], layout: Any,
                progress: Progress | None = None) -> dict[str, Any]:
    """Write shard `p` from the next `p.stop - p.start` processor results and record it (the commit: a shard
    counts as finished only once its record exists). Returns the record."""
    name = p.name(SUFFIX[fmt])
    writer = WRITERS[fmt](dest.work / name, member_order=kind.member_order, layout=layout)
    class_counts: dict[str, int] = {}
    stats: dict[str, Any] = {}
    rejected: list[dict[str, str]] = []
    try:
        for _ in range(p.stop - p.start):
            r = next(results)
            if isinstance(r, Rejection):
                rejected.extend(r.records())  # a case's other files with it
                log.info("rejected %s: %s", r.source, r.reason)
            for sample in samples_of(r):
                writer.add(sample)
                for c in label_classes(sample.label):  # each class of a --multi-label image
                    class_counts[str(c)] = class_counts.get(str(c), 0) + 1
                add_counts(stats, sample.stats)
            if progress:
                progress(1)
        info: ShardInfo | None = writer.close() if writer.samples else None
        if info is None:
            writer.abort()
    except BaseException:
        writer.abort()
        raise
    record = {"split": p.split, "shard": info.to_dict() if info else None, "class_counts": class_counts,
              "stats": stats, "rejected": rejected}
    dest.save_record(name, record)
    log.info("wrote %s (%d samples, %d rejected)", name, info.samples if info else 0, len(rejected))
    return record
