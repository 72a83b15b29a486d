"""`fastdata verify` on a volume shard (dicom, nifti): the checks the volume loader makes when it opens the shard
(store.py: every sample's npy, json and mask headers), and with `decode` every array read in full, as the loader
reads it (store.read_volume, read_mask), and checked against what its json says of it: values finite, the minimum
and maximum the json records, mask values within the dataset's classes. One volume is in memory at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fastdata.errors import ShardError
from fastdata.volumes.store import VolumeEntry, index_shard, read_mask, read_volume


def _same(recorded: Any, value: float) -> bool:
    """Whether a json number (rounded to 6 decimals by the converters) records `value`."""
    return (isinstance(recorded, int | float) and not isinstance(recorded, bool)
            and abs(float(recorded) - value) <= 1e-6 * max(1.0, abs(value)))


def _decoded(entry: VolumeEntry, classes: int) -> list[str]:
    where = f"{entry.shard}: sample {entry.key}"
    arr = read_volume(entry)
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        return [f"{where}: {int(np.count_nonzero(~np.isfinite(arr)))} voxel(s) are NaN or infinite"]
    problems = [f"{where}: the json records {name} {entry.meta.get(name)!r}, the array's is {value}"
                for name, value in (("min", float(arr.min())), ("max", float(arr.max())))
                if name in entry.meta and not _same(entry.meta[name], value)]
    if entry.label is not None:
        mask = read_mask(entry)
        top = int(mask.max())
        if classes and top >= classes:
            problems.append(f"{where}: mask value {top}, but the dataset names {classes} classes "
                            f"(0..{classes - 1})")
        if "label_max" in entry.meta and entry.meta["label_max"] != top:
            problems.append(f"{where}: the json records label_max {entry.meta['label_max']!r}, the mask's is {top}")
    return problems


def volume_problems(path: Path, classes: tuple[str, ...], *, decode: bool) -> list[str]:
    """Everything wrong with one volume shard, as `fastdata verify` lists it."""
    try:
        entries = index_shard(path)
    except ShardError as exc:
        return [str(exc)]
    problems: list[str] = []
    if decode:
        for entry in entries:
            try:
                problems.extend(_decoded(entry, len(classes)))
            except ShardError as exc:  # the member changed since it was indexed: the reason names it
                problems.append(str(exc))
    return problems

