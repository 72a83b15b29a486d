"""`--channel CT,PT` at discovery: the series of one study that share a frame of reference (FrameOfReferenceUID: a
PET/CT scanner writes one for both series, as their positions are in one patient coordinate system) are grouped into
one stack, one series per named modality, in that order. What cannot be stacked is recorded, never guessed: a series
of another modality, a localizer, a series without a frame of reference, a group that lacks a named modality or holds
two series of one (which is meant is for the user to say, by moving the other out), or two masks in one group. The
stack is converted by channels.py."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from converters.dicom.options import MODALITY
from converters.sample import Rejection, WorkItem


@dataclass(frozen=True)
class Place:
    """What a series is grouped by, from its first file: its study and frame of reference (UIDs, kept in memory: the
    grouping writes neither), its Modality code and whether it is a localizer (ImageType LOCALIZER: a scout, not a
    volume)."""

    study: str
    frame: str
    modality: str
    localizer: bool


def text_of(ds: Any, keyword: str) -> str:
    """An attribute's value as text; '' when absent or malformed (pydicom parses a value when it is first read)."""
    try:
        value = ds.get(keyword)
        return "" if value is None else str(value).strip()
    except Exception:  # noqa: BLE001 - pydicom raises many types for malformed values
        return ""


def place_of(ds: Any) -> Place:
    modality = text_of(ds, "Modality")
    try:
        kinds = ds.get("ImageType")
        values = [] if kinds is None else [kinds] if isinstance(kinds, str) else list(kinds)
        localizer = "LOCALIZER" in [str(v).strip().upper() for v in values]
    except Exception:  # noqa: BLE001 - a malformed ImageType: not known to be a localizer
        localizer = False
    return Place(text_of(ds, "StudyInstanceUID"), text_of(ds, "FrameOfReferenceUID"),
                 modality if MODALITY.fullmatch(modality) else "", localizer)


def _unstackable(place: Place, channels: tuple[str, ...]) -> str | None:
    """Why a series is no channel of any stack, or None."""
    named = ",".join(channels)
    if place.modality not in channels:
        return (f"modality {place.modality or '(none)'} is not among --channel {named}: only those series are "
                "stacked")
    if place.localizer:
        return "a localizer (ImageType LOCALIZER), not a volume: --channel stacks volumes"
    if not place.frame or not place.study:
        return (f"no {'FrameOfReferenceUID' if not place.frame else 'StudyInstanceUID'}: --channel stacks the series "
                "of one study that say they share a frame of reference")
    return None


def _group_reason(members: list[WorkItem], places: dict[str, Place], channels: tuple[str, ...]) -> str | None:
    named = ",".join(channels)
    counts = {m: sum(places[it.payload.uid].modality == m for it in members) for m in channels}
    missing = [m for m in channels if not counts[m]]
    if missing:
        return (f"its study's frame of reference holds no {' or '.join(missing)} series to stack with it "
                f"(--channel {named})")
    several = [f"{counts[m]} {m}" for m in channels if counts[m] > 1]
    if several:
        return (f"{' and '.join(several)} series share its study's frame of reference: which one is a channel is "
                f"yours to say (move the others out of the source; --channel {named})")
    masked = sum(it.payload.seg is not None for it in members)
    if masked > 1:
        return f"{masked} of the series stacked with it have a mask (SEG, RTSTRUCT): a stack converts with one"
    return None


def grouped(items: list[WorkItem], places: dict[str, Place], channels: tuple[str, ...],
            rejected: list[Rejection]) -> list[tuple[WorkItem, ...]]:
    """The stacks of `items` (each series' work item, `places` by SeriesInstanceUID): one tuple per stack, its
    series in `channels` order, in the order of their first series. Every series of no stack is a rejection."""
    groups: dict[tuple[str, str, str], list[WorkItem]] = defaultdict(list)
    for it in items:
        place = places[it.payload.uid]
        reason = _unstackable(place, channels)
        if reason is not None:
            rejected.append(Rejection(it.split, it.rel, reason))
        else:
            groups[(it.split, place.study, place.frame)].append(it)
    out = []
    for members in groups.values():
        reason = _group_reason(members, places, channels)
        if reason is not None:
            rejected.extend(Rejection(it.split, it.rel, reason) for it in members)
            continue
        out.append(tuple(next(it for it in members if places[it.payload.uid].modality == m) for m in channels))
    return out
