"""One label volume painted structure by structure (a SEG's segments, a structure set's ROIs, TotalSegmentator's
per-structure files), and what becomes of a voxel that two structures claim (`--overlap`).

A label volume holds one class per voxel. `--overlap reject` (the default) rejects the case, naming the structures
and counting their shared voxels: no voxel changes class without the user asking. `--overlap later` gives a shared
voxel to the structure painted later, in class order (the order of `--structures`, or of dataset.json's labels), as
a radiotherapy planner gives the organs priority over the body they lie in; each sample's json then lists how many
voxels each structure took from which (`overlaps`), counted on the source's grid, before any resampling, and the
split's stats sum them (`overlap_voxels`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from converters.dicom.geometry import RejectSeries

POLICIES = ("reject", "later")  # --overlap


def check_policy(policy: Any) -> None:
    if policy not in POLICIES:
        raise ValueError(f"--overlap must be one of {', '.join(POLICIES)}, got {policy!r}")


def overlap_rule(policy: str) -> str:
    """The manifest's words for a policy (preprocessing "overlap")."""
    if policy == "later":
        return ("later: a voxel two structures claim takes the later class in class order; each sample's json lists "
                "the voxels taken (overlaps)")
    return "reject: a voxel two structures claim rejects its case"


class LabelVolume:
    """`labels`, painted by `paint`; `overlaps`: what `--overlap later` gave a later structure, as
    {"class", "from", "voxels"} (a sample's json keeps them). `rel`, `what` (ROI, segment) and `hint`
    word the rejection of `--overlap reject`."""

    def __init__(self, shape: tuple[int, ...], dtype: Any, *, policy: str, rel: str, what: str,
                 hint: str = "") -> None:
        check_policy(policy)
        self.labels = np.zeros(shape, dtype)
        self.overlaps: list[dict[str, Any]] = []
        self._policy, self._rel, self._what, self._hint = policy, rel, what, hint
        self._names: dict[int, str] = {}

    def paint(self, inside: np.ndarray, value: int, name: str) -> None:
        """Structure `name` (class value `value`) on the voxels where `inside` is true. Two structures of one class
        (a name written in two cases) share voxels freely."""
        claimed = self.labels[inside]
        held, counts = np.unique(claimed[(claimed != 0) & (claimed != value)], return_counts=True)
        if held.size and self._policy == "reject":
            others = " and ".join(repr(self._names[int(v)]) for v in held)
            raise RejectSeries(f"{self._rel}: {self._what} {name!r} overlaps {others} in {int(counts.sum())} "
                               f"voxels, and a label volume holds one class per voxel; "
                               f"{self._hint + ', or ' if self._hint else ''}--overlap later gives a shared voxel to "
                               "the later class")
        self.overlaps += [{"class": name, "from": self._names[int(v)], "voxels": int(n)} for v, n in zip(held, counts)]
        self.labels[inside] = value
        self._names[value] = name


def overlap_stats(meta: dict[str, Any]) -> dict[str, int]:
    """A sample's stats of its json's `overlaps`: the voxels a later structure took ({} when none was shared)."""
    overlaps = meta.get("overlaps") or []
    return {"overlap_voxels": sum(o["voxels"] for o in overlaps)} if overlaps else {}
