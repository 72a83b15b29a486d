"""The rejections of a NIfTI case: the file that names it, with the reason, and every other file of the case (its
other channel files, its masks), each with a reason that points to it. A rejected case keeps all of its files in
the manifest's list: before, only its first channel file and its mask were there (a case rejected at conversion
listed its first file alone), and a 4-channel BraTS case lost three files from the record."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from converters.sample import Rejection

MASK = "the mask of a case that was rejected"
STRUCTURE = "the structure mask of a case that was rejected"
CHANNEL = "a channel file of a case that was rejected"


def others(first: str, channels: Iterable[str] = (), masks: Iterable[str] = (),
           structures: Iterable[str] = ()) -> tuple[tuple[str, str], ...]:
    """(file, reason) for each file of a case besides `first`: its channel files, its mask, its per-structure
    masks, each once."""
    seen = {first}
    out = []
    for rels, reason in ((channels, CHANNEL), (masks, MASK), (structures, STRUCTURE)):
        for rel in rels:
            if rel not in seen:
                seen.add(rel)
                out.append((rel, reason))
    return tuple(out)


def case_rejections(split: str, first: str, reason: str, *, channels: Iterable[str] = (),
                    masks: Iterable[str] = (), structures: Iterable[str] = ()) -> list[Rejection]:
    """The rejection of the case named by its file `first`, and one of each of its other files."""
    return [Rejection(split, first, reason),
            *(Rejection(split, rel, why) for rel, why in others(first, channels, masks, structures))]


def files_of(case: Any) -> dict[str, list[str]]:
    """The channel files and masks of a work item's CaseFiles, by name: `others`' keyword arguments."""
    return {"channels": [rel for _, rel in (case.image, *case.channel_files)],
            "masks": [case.label[1]] if case.label is not None else [],
            "structures": [rel for _, rel in case.structures]}
