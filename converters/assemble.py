"""The manifest of a conversion, assembled from its plan and the record of every shard: at the end of a run, or by
`merge()` once every part of a `--num-parts` conversion is done (`fastdata convert --merge DST`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from converters.destination import Destination, LocalDestination, RemoteDestination, destination
from converters.plan import ShardPlan
from converters.sample import add_counts
from fastdata.errors import ConvertError
from fastdata.manifest import Manifest, ShardInfo, SplitInfo
from fastdata.reasons import reason_group, shown_names


def assemble(dest: Destination, plan: dict[str, Any]) -> Manifest:
    """Build the manifest from the plan and every shard record; ConvertError names missing shards."""
    base = plan["manifest"]
    shards = [ShardPlan(**d) for d in plan["shards"]]
    missing, by_split = [], {}
    rejected = list(plan["discovery_rejected"])
    for p in shards:
        name = p.name(plan["suffix"])
        record = dest.load_record(name)
        if record is None:
            missing.append(name)
            continue
        infos, counts, stats = by_split.setdefault(p.split, ([], [0] * len(base["classes"]), {}))
        if record["shard"]:
            infos.append(ShardInfo(**record["shard"]))
        for label, n in record["class_counts"].items():
            counts[int(label)] += n
        add_counts(stats, record["stats"])
        rejected.extend(record["rejected"])
    if missing:
        shown = shown_names(missing, 5)
        raise ConvertError(f"cannot merge {dest.label}: {len(missing)} shard(s) not converted yet ({shown}); "
                           "run the missing --part jobs (or rerun without --part), then merge again")
    splits = {s: SplitInfo(name=s, shards=tuple(i), class_counts=tuple(c), stats=st)
              for s, (i, c, st) in by_split.items() if i}
    if not splits:
        common = Counter(reason_group(r["reason"]) for r in rejected).most_common(3)
        shown = "; ".join(f"{n} x {why}" for why, n in common)
        raise ConvertError(f"the conversion kept no sample: all {len(rejected)} input(s) were rejected ({shown}); "
                           f"the records of every rejection are in {dest.label}/.partial/records/")
    rejected.sort(key=lambda r: (r["split"], r["source"]))
    return Manifest(
        kind=base["kind"], shard_format=base["shard_format"], classes=tuple(base["classes"]), splits=splits,
        preprocessing=base["preprocessing"], rejected=tuple(rejected), extra=base["extra"],
        fingerprint=base["fingerprint"], tool_version=base["tool_version"],
    )


def merge(dst: Path | str | Destination, *, storage_options: dict[str, Any] | None = None) -> Manifest:
    """Write the final manifest once every part of a `--num-parts` conversion is done."""
    dest = dst if isinstance(dst, LocalDestination | RemoteDestination) else destination(
        dst, storage_options=storage_options)
    if not dest.has_plan():
        return dest.read_manifest()  # already merged (or a clear error naming what is missing)
    manifest = assemble(dest, dest.load_plan())
    dest.write_manifest(manifest)
    dest.cleanup()
    return manifest
