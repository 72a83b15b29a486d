"""`--channel all`: every channel of a case, stacked into one (C, z, y, x) volume (BraTS's flair, t1, t1ce and t2;
nnU-Net's NAME_0000 .. NAME_0003; a 4D file's 4th axis); `--channel CTres,SUV`: the named ones, in that order.
Every case of a dataset must hold the same channels, in the same order: the network reads channel c as one
modality. Discovery names each case's channels (from dataset.json, the file names, or their numbers) and rejects
the cases whose channels differ from most cases'."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from converters.nifti.dataset_json import DatasetInfo
from converters.nifti.rejected_cases import case_rejections, files_of
from converters.sample import Rejection, WorkItem

ALL = "all"  # --channel all


def picked(channel: int | str | None) -> tuple[str, ...]:
    """The channels `--channel CTres,SUV` names, in that order (stacked as --channel all stacks every one); ()
    for any other --channel."""
    return tuple(channel.split(",")) if isinstance(channel, str) and "," in channel else ()


def stacks(channel: int | str | None) -> bool:
    """Whether a case converts to a (C, z, y, x) volume of several channels: --channel all or NAME,NAME."""
    return channel == ALL or bool(picked(channel))


def absent_reason(absent: list[str], channel: str, listed: str) -> str:
    """Why a case lacking some channels `--channel NAME,NAME` (or NAME) names is rejected; `listed`: its channels."""
    return f"no channel {', '.join(absent)} (--channel {channel}) in this case; its channels are {listed}"


def several_reason(count: int, listed: str) -> str:
    """Why a case of several named channel files is rejected without --channel."""
    return (f"a case of {count} channel files ({listed}); pick one by name with --channel NAME, stack some with "
            "--channel NAME,NAME or all of them with --channel all")


def numbered(count: int, info: DatasetInfo) -> tuple[str, ...]:
    """Names of a 4D file's `count` channels: dataset.json's where it names exactly as many, else 0, 1, ..."""
    if count > 1 and sorted(info.modalities) == list(range(count)):
        return tuple(info.modalities[c] for c in range(count))
    return tuple(str(c) for c in range(count)) if count > 1 else ()


def _header_channels(path: str, max_voxels: int) -> int | None:
    """The channels of a volume file by its header (a MINC file is read whole: minc.py, within `max_voxels`); None
    where it cannot be read: the conversion then rejects the case with the reason."""
    from converters.dicom.geometry import RejectSeries
    from converters.nifti.volume import channels, load

    try:
        return channels(load(path, path, max_voxels))
    except RejectSeries:  # any damage: the case's conversion says which
        return None


def _shown(names: tuple[str, ...]) -> str:
    return ", ".join(names) if names else "one channel"


def same_channels(splits: dict[str, list[WorkItem]], info: DatasetInfo, rejected: list[Rejection],
                  max_voxels: int) -> dict[str, list[WorkItem]]:
    """The work items with their channel names set (() for one channel), those whose channels are not most cases'
    rejected with their masks."""
    named: dict[str, list[tuple[WorkItem, tuple[str, ...] | None]]] = {}
    for split, items in splits.items():
        for it in items:
            case = it.payload
            if case.channel_files:
                names: tuple[str, ...] | None = case.channel_names
            else:
                count = _header_channels(case.image[0], max_voxels)
                names = None if count is None else numbered(count, info)
            named.setdefault(split, []).append((it, names))
    counts = Counter(names for pairs in named.values() for _, names in pairs if names is not None)
    usual = max(counts, key=lambda n: (counts[n], len(n), n)) if counts else ()
    out: dict[str, list[WorkItem]] = {}
    for split, pairs in named.items():
        kept = out.setdefault(split, [])
        for it, names in pairs:
            if names is None or names == usual:
                kept.append(replace(it, payload=replace(it.payload, channel_names=usual)))
                continue
            rejected.extend(case_rejections(split, it.rel, f"a case of channels ({_shown(names)}) where most cases "
                                                           f"have ({_shown(usual)}): --channel all stacks the same "
                                                           "channels, in the same order, in every case",
                                            **files_of(it.payload)))
    return out
