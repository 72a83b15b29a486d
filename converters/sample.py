"""The records that flow through a conversion: work items in, samples or rejections out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One input to convert: where it is, which split and label it has, and its place in the split.

    `source` is what the kind opens (usually an absolute path); `rel` is how the manifest names
    it. `position` is the index in the split's shuffled order and determines the sample key.
    `payload` carries kind-specific data (e.g. a text record already read, a list of DICOM files).
    """

    split: str
    rel: str
    source: str
    label: int | tuple[int, ...] | None = None  # a tuple: the classes of an image labelled --multi-label
    position: int = -1
    payload: Any = None

    @property
    def key(self) -> str:
        return f"{self.position:08d}"


@dataclass(frozen=True)
class Sample:
    """A converted sample. `members` maps extension to payload (bytes for tar shards); `row` holds
    the Arrow column values; `stats` is a nested dict of counts summed into the manifest."""

    key: str
    label: int | tuple[int, ...] | None
    members: dict[str, Any]
    row: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return sum(len(v) for v in self.members.values() if isinstance(v, bytes | bytearray))


@dataclass(frozen=True)
class Rejection:
    """An input that could not be converted, and why. Listed in the manifest; never dropped."""

    split: str
    source: str
    reason: str
    also: tuple[tuple[str, str], ...] = ()  # (file, reason) of the input's other files, rejected with it

    def to_dict(self) -> dict[str, str]:
        return {"split": self.split, "source": self.source, "reason": self.reason}

    def records(self) -> list[dict[str, str]]:
        """This rejection and one of each file `also` names, as the manifest lists them."""
        return [self.to_dict(), *({"split": self.split, "source": rel, "reason": why} for rel, why in self.also)]


def add_counts(total: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """Sum nested dicts of numbers in place (used for per-shard and per-split stats)."""
    for k, v in more.items():
        if isinstance(v, dict):
            add_counts(total.setdefault(k, {}), v)
        else:
            total[k] = total.get(k, 0) + v
    return total
