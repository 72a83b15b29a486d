"""A manifest's splits and shards (`SplitInfo`, `ShardInfo`) and the checks a manifest's fields pass when it is read:
names that stay inside the dataset (`plain_file_name`, `check_split_name`), typed fields whose errors name the
field, what it holds and what is allowed (`FieldCheck`), and counts a forged manifest cannot inflate."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fastdata.errors import ManifestError


@dataclass(frozen=True)
class ShardInfo:
    name: str
    samples: int
    bytes: int
    sha256: str
    index: str | None = None  # DALI index file beside a .tar shard
    index_sha256: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "samples": self.samples, "bytes": self.bytes, "sha256": self.sha256}
        if self.index is not None:
            d["index"] = self.index
            d["index_sha256"] = self.index_sha256
        return d


@dataclass(frozen=True)
class SplitInfo:
    name: str
    shards: tuple[ShardInfo, ...]
    class_counts: tuple[int, ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def samples(self) -> int:
        return sum(s.samples for s in self.shards)

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.shards)

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "bytes": self.bytes,
            "class_counts": list(self.class_counts),
            "stats": self.stats,
            "shards": [s.to_dict() for s in self.shards],
        }


SPLIT_NAME = re.compile(r"[A-Za-z0-9_-]+")
SPLIT_NAMES = ("train", "val", "test")  # what converters call the splits they find
SPLIT_ALIASES = {"training": "train", "valid": "val", "validation": "val", "testing": "test"}  # Kaggle's, HF's


def canonical_split(name: str) -> str | None:
    """The split `name` means, whatever its case and among its aliases (`Validation` -> val), else None."""
    lower = name.lower()
    split = SPLIT_ALIASES.get(lower, lower)
    return split if split in SPLIT_NAMES else None


def check_split_name(name: object, *, option: str = "--split") -> str:
    """`name` if it is a valid split name (letters, digits, '_' and '-': it becomes part of shard file
    names, so it can never name a folder), else ValueError."""
    if not isinstance(name, str) or not SPLIT_NAME.fullmatch(name) or len(name) > 64:
        raise ValueError(f"{option} {name!r} is not allowed; a split name is 1-64 letters, digits, '_' or '-' "
                         "(it becomes part of the shard file names)")
    return name


def plain_file_name(name: object) -> bool:
    """A file name with no folder part: nothing a manifest names can lie outside its dataset."""
    return (isinstance(name, str) and 0 < len(name) <= 255 and name not in (".", "..")
            and not any(ch in name for ch in "/\\\0") and name.strip() == name)


class FieldCheck:
    """Typed field access for one manifest; errors say which field, what it holds and what is allowed."""

    def __init__(self, where: str) -> None:
        self.where = where

    def error(self, field_name: str, value: object, allowed: str) -> ManifestError:
        return ManifestError(f"{self.where}: {field_name} is {str(value)[:80]!r}, it must be {allowed}; "
                             "the manifest was edited or damaged: restore it or re-run the command that wrote it")

    def mapping(self, d: dict[str, Any], key: str, *, required: bool = True) -> dict[str, Any]:
        if key not in d and not required:
            return {}
        value = d.get(key)
        if not isinstance(value, dict):
            raise self.error(key, value, "an object")
        return dict(value)

    def count(self, field_name: str, value: object, *, minimum: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.error(field_name, value, f"an integer >= {minimum}")
        return value


MIN_SAMPLE_BYTES = 16  # no shard format stores a sample in fewer (a tar member alone takes 512)


def shard_from_dict(check: FieldCheck, split: str, sh: Any) -> ShardInfo:
    if not isinstance(sh, dict):
        raise check.error(f"a shard of split {split!r}", sh, "an object")
    name = sh.get("name")
    if not plain_file_name(name):
        raise check.error(f"shard name in split {split!r}", name, "a plain file name (no folder, no '..')")
    index = sh.get("index")
    if index is not None and not plain_file_name(index):
        raise check.error(f"index of shard {name}", index, "a plain file name (no folder, no '..')")
    sha = sh.get("sha256")
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise check.error(f"sha256 of shard {name}", sha, "64 lower-case hex digits")
    index_sha = sh.get("index_sha256")
    if index is not None and (not isinstance(index_sha, str) or not re.fullmatch(r"[0-9a-f]{64}", index_sha)):
        raise check.error(f"index_sha256 of shard {name}", index_sha, "64 lower-case hex digits")
    unknown = set(sh) - {"name", "samples", "bytes", "sha256", "index", "index_sha256"}
    if unknown:
        raise check.error(f"shard {name}", sorted(unknown), "free of unknown fields")
    samples = check.count(f"samples of shard {name}", sh.get("samples"), minimum=1)
    size = check.count(f"bytes of shard {name}", sh.get("bytes"), minimum=0)
    if samples > size // MIN_SAMPLE_BYTES:  # a plan is allocated per sample: a forged count must not reach it
        raise check.error(f"samples of shard {name}", samples,
                          f"at most one per {MIN_SAMPLE_BYTES} bytes of the shard's {size} bytes")
    return ShardInfo(name=name, samples=samples, bytes=size, sha256=sha, index=index,
                     index_sha256=index_sha if index is not None else None)


def split_from_dict(check: FieldCheck, name: str, s: Any) -> SplitInfo:
    if not SPLIT_NAME.fullmatch(name):
        raise check.error("split name", name, "letters, digits, '_' or '-'")
    if not isinstance(s, dict) or not isinstance(s.get("shards"), list):
        raise check.error(f"split {name!r}", s, "an object with a list of shards")
    counts = s.get("class_counts", [])
    if not isinstance(counts, list) or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0
                                               for c in counts):
        raise check.error(f"class_counts of split {name!r}", counts, "a list of integers >= 0")
    stats = s.get("stats", {})
    if not isinstance(stats, dict):
        raise check.error(f"stats of split {name!r}", stats, "an object")
    return SplitInfo(name=name, shards=tuple(shard_from_dict(check, name, sh) for sh in s["shards"]),
                     class_counts=tuple(counts), stats=dict(stats))
