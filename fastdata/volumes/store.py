"""Random access to the volumes (and masks) of a converted dicom or nifti dataset: index the tar shards once
(member offsets from the tar headers), then read a sample's bytes with one positioned read.

Nothing is extracted to disk and nothing is unpickled: `.npy` members are read with
`np.load(..., allow_pickle=False)` and `.json` members with `parse_json` (json_text.py).
"""

from __future__ import annotations

import math
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fastdata.dataset import DatasetView
from fastdata.errors import ShardError
from fastdata.json_text import BadJSON, parse_json
from fastdata.npy import MAX_HEADER_BYTES, check_fills, load_npy, npy_header
from fastdata.wds_index import split_name


@dataclass(frozen=True)
class VolumeEntry:
    key: str
    shard: Path
    npy: tuple[int, int]  # (offset, size) in the shard
    meta: dict[str, Any]
    label: tuple[int, int] | None = None  # the mask's label.npy member (nifti kind), (offset, size)
    channels: tuple[str, ...] = ()  # a (C, D, H, W) volume's channel names (nifti --channel all); () for one channel

    @property
    def shape(self) -> tuple[int, int, int]:
        """The volume's shape as (D, H, W); 2D images count as one slice."""
        shape = [int(v) for v in self.meta["shape"]]
        return tuple([1] * (3 - len(shape)) + shape)  # type: ignore[return-value]

    @property
    def spacing(self) -> tuple[float, float, float]:
        sp = [float(v) for v in self.meta["spacing"]]
        return tuple([float(self.meta.get("spacing_z", 1.0))] * (3 - len(sp)) + sp)  # type: ignore[return-value]


def read_member(path: Path, offset: int, size: int) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.pread(fd, size, offset)
    finally:
        os.close(fd)
    if len(data) != size:
        raise ShardError(f"shard {path} is truncated: wanted {size} bytes at offset {offset}, got {len(data)}")
    return data


MAX_JSON_BYTES = 1 << 20  # a sample's metadata is a few hundred bytes; a larger member is not ours


def _npy_header(path: Path, key: str, offset: int, size: int) -> tuple[tuple[int, ...], np.dtype, int]:
    """(shape, dtype, header length) of an npy member, read from its header alone (fastdata/npy.py); ShardError
    unless the header is a plain numeric 2D/3D array whose data fills the member exactly."""
    try:
        shape, dtype, fortran, start = npy_header(read_member(path, offset, min(size, MAX_HEADER_BYTES)))
    except ValueError as exc:
        raise ShardError(f"sample {key} in {path}: {exc}") from exc
    if dtype.kind not in "iuf" or len(shape) not in (2, 3, 4) or fortran:
        raise ShardError(f"sample {key} in {path}: expected a 2D, 3D or (channels first) 4D numeric C-order array, "
                         f"got {dtype} with shape {list(shape)}")
    try:
        check_fills(shape, dtype, start, size)
    except ValueError as exc:
        raise ShardError(f"sample {key} in {path}: {exc}") from exc
    return shape, dtype, start


def _channels(path: Path, key: str, meta: Any, shape: tuple[int, ...]) -> tuple[str, ...]:
    """The channel names a 4D array's json gives, one per channel (two or more); () for a 2D or 3D array."""
    if len(shape) < 4:
        return ()
    names = meta.get("channels") if isinstance(meta, dict) else None
    if not (isinstance(names, list) and len(names) == shape[0] > 1 and all(isinstance(n, str) for n in names)
            and len(set(names)) == len(names)):
        raise ShardError(f"sample {key} in {path}: a 4D npy array of {shape[0]} channels, but its json names the "
                         f"channels {names!r:.200}")
    return tuple(names)


def _checked_meta(path: Path, key: str, meta: Any, shape: tuple[int, ...]) -> dict[str, Any]:
    """The json member, checked against the array it describes (the loader plans with its shape/spacing); a 4D
    array's first axis is its channels, the json's shape the rest."""
    if not isinstance(meta, dict):
        raise ShardError(f"sample {key} in {path}: the json member is not an object")
    shape = shape[1:] if len(shape) == 4 else shape
    if meta.get("shape") != list(shape) or any(n < 1 for n in shape):
        raise ShardError(f"sample {key} in {path}: json shape {meta.get('shape')!r} does not match the npy "
                         f"array's {list(shape)}")
    spacing = meta.get("spacing")
    if (not isinstance(spacing, list) or len(spacing) != len(shape)
            or not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0
                       for v in spacing)):
        raise ShardError(f"sample {key} in {path}: json spacing {spacing!r} is not {len(shape)} positive numbers")
    return meta


def _mask_header(path: Path, key: str, member: tuple[int, int], shape: tuple[int, ...]) -> None:
    """ShardError unless the label.npy member is an unsigned integer array of its image's shape."""
    mask_shape, dtype, _ = _npy_header(path, f"{key} (label.npy)", *member)
    if dtype.kind != "u" or dtype.itemsize > 2 or mask_shape != shape:
        raise ShardError(f"sample {key} in {path}: its mask is {dtype} of shape {list(mask_shape)}, not uint8 or "
                         f"uint16 of its image's shape {list(shape)}")


def index_shard(path: Path) -> list[VolumeEntry]:
    members: dict[str, dict[str, tuple[int, int]]] = {}
    try:
        with tarfile.open(path, "r:") as tar:
            for m in tar:
                if not m.isfile() or "/" in m.name or "." not in m.name:
                    raise ShardError(f"shard {path} holds an unexpected member {m.name!r}")
                key, ext = split_name(m.name)
                members.setdefault(key, {})[ext] = (m.offset_data, m.size)
    except tarfile.TarError as exc:
        raise ShardError(f"cannot read shard {path}: {exc}") from exc
    entries = []
    for key, parts in members.items():
        if "npy" not in parts or "json" not in parts:
            raise ShardError(f"sample {key} in {path} lacks its npy or json member (has {sorted(parts)})")
        if parts["json"][1] > MAX_JSON_BYTES:
            raise ShardError(f"sample {key} in {path} has a json member of {parts['json'][1]} bytes (at most "
                             f"{MAX_JSON_BYTES})")
        shape, _, _ = _npy_header(path, key, *parts["npy"])
        if "label.npy" in parts:
            _mask_header(path, key, parts["label.npy"], shape[1:] if len(shape) == 4 else shape)
        try:
            meta = parse_json(read_member(path, *parts["json"]))
        except BadJSON as exc:
            raise ShardError(f"sample {key} in {path} has an unreadable json member: {exc}") from exc
        channels = _channels(path, key, meta, shape)
        entries.append(VolumeEntry(key=key, shard=path, npy=parts["npy"], meta=_checked_meta(path, key, meta, shape),
                                   label=parts.get("label.npy"), channels=channels))
    return entries


def _one_layout(entries: list[VolumeEntry], where: str) -> tuple[str, ...]:
    """The channel names every volume of a split shares; ShardError where they differ."""
    layouts = {e.channels for e in entries}
    if len(layouts) > 1:
        raise ShardError(f"{where} holds volumes of other channels ({sorted(list(c) or ['one'] for c in layouts)}): "
                         "a patch's channel c must be one modality in every volume")
    return next(iter(layouts), ())


class VolumeStore:
    """All volumes of the selected split, in key order (the order is part of the loader contract)."""

    def __init__(self, view: DatasetView) -> None:
        view.require_whole_split()  # a remote split is held whole in the node cache
        entries = [e for ref in view.shards for e in index_shard(view.local(ref).path)]
        self.entries: list[VolumeEntry] = sorted(entries, key=lambda e: e.key)
        self.channels = _one_layout(self.entries, f"{view.root} ({view.split})")

    @classmethod
    def merged(cls, stores: list[VolumeStore], names: list[str] | None = None) -> VolumeStore:
        """The volumes of a mixture's datasets as one store (volume ids: dataset offset + index in it); their
        channels must be the same, in the same order (`names`: the datasets', for the error)."""
        out = cls.__new__(cls)
        out.entries = [e for s in stores for e in s.entries]
        layouts = {s.channels for s in stores}
        if len(layouts) > 1:
            shown = "; ".join(f"{n}: {list(s.channels) or 'one channel'}"
                              for n, s in zip(names or map(str, range(len(stores))), stores))
            raise ValueError(f"the mixed datasets' volumes have other channels ({shown}): a patch's channel c must be "
                             "one modality in every dataset; convert them with the same channels")
        out.channels = stores[0].channels if stores else ()
        return out

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def masked(self) -> bool:
        """Whether the volumes have masks: all of them (a store where only some have one is refused)."""
        have = sum(e.label is not None for e in self.entries)
        if 0 < have < len(self.entries):
            raise ShardError(f"{have} of {len(self.entries)} volumes have a mask (label.npy): a loader yields masks "
                             "for every patch or for none; load the masked and the unmasked volumes apart")
        return have > 0

    def read(self, index: int) -> np.ndarray:
        """The volume as a (D, H, W) array of its stored type (2D images get D = 1), or (C, D, H, W) with channels."""
        return read_volume(self.entries[index])

    def read_mask(self, index: int) -> np.ndarray:
        """The volume's mask as a uint8 or uint16 (D, H, W) array."""
        return read_mask(self.entries[index])


def read_volume(e: VolumeEntry) -> np.ndarray:
    """An indexed sample's volume, checked again against its entry (the loader's, and `verify --decode`'s)."""
    return _array(e, e.npy, "npy", "iuf", len(e.channels))


def read_mask(e: VolumeEntry) -> np.ndarray:
    if e.label is None:
        raise ShardError(f"sample {e.key} in {e.shard} has no mask (label.npy)")
    return _array(e, e.label, "label.npy", "u", 0)


def _array(e: VolumeEntry, member: tuple[int, int], ext: str, kinds: str, channels: int) -> np.ndarray:
    try:  # checked again: the file may have changed since it was opened
        arr = load_npy(read_member(e.shard, *member)).copy()  # writable, as np.load's was
    except ValueError as exc:
        raise ShardError(f"sample {e.key} in {e.shard} has an unreadable {ext} member: {exc}") from exc
    expected = ([channels] if channels else []) + list(e.meta["shape"])
    if arr.dtype.kind not in kinds or list(arr.shape) != expected:  # the file changed since indexing
        raise ShardError(f"sample {e.key} in {e.shard}: expected {expected}, got {arr.dtype} with "
                         f"shape {list(arr.shape)} in its {ext} member")
    return arr.reshape(((channels,) if channels else ()) + e.shape)
