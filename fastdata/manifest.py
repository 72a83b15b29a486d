"""The manifest: the one file a loader reads first. Written last and atomically by `fastdata convert`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastdata.atomic import write_json_atomic
from fastdata.errors import ManifestError

FORMAT_NAME = "fastdata"
FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
SHARD_FORMATS = ("wds", "arrow")


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


@dataclass(frozen=True)
class Manifest:
    kind: str
    shard_format: str
    classes: tuple[str, ...]
    splits: dict[str, SplitInfo]
    preprocessing: dict[str, Any]
    rejected: tuple[dict[str, str], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    tool_version: str = ""
    format_version: int = FORMAT_VERSION

    @property
    def num_samples(self) -> int:
        return sum(s.samples for s in self.splits.values())

    def split(self, name: str) -> SplitInfo:
        if name not in self.splits:
            raise ManifestError(f"unknown split {name!r}; this dataset has splits {sorted(self.splits)}")
        return self.splits[name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "format_version": self.format_version,
            "kind": self.kind,
            "shard_format": self.shard_format,
            "tool_version": self.tool_version,
            "fingerprint": self.fingerprint,
            "classes": list(self.classes),
            "preprocessing": self.preprocessing,
            "splits": {name: s.to_dict() for name, s in sorted(self.splits.items())},
            "rejected": list(self.rejected),
            "extra": self.extra,
        }

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "manifest") -> Manifest:
        if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
            raise ManifestError(f"{where} is not a fastdata manifest (missing \"format\": \"{FORMAT_NAME}\")")
        version = d.get("format_version")
        if version != FORMAT_VERSION:
            raise ManifestError(
                f"{where} has format_version {version!r}, this fastdata reads version {FORMAT_VERSION}; "
                "re-run `fastdata convert` with this version, or install the fastdata that wrote it"
            )
        try:
            splits = {
                name: SplitInfo(
                    name=name,
                    shards=tuple(ShardInfo(**sh) for sh in s["shards"]),
                    class_counts=tuple(s.get("class_counts", ())),
                    stats=dict(s.get("stats", {})),
                )
                for name, s in d["splits"].items()
            }
            return cls(
                kind=d["kind"],
                shard_format=d["shard_format"],
                classes=tuple(d["classes"]),
                splits=splits,
                preprocessing=dict(d["preprocessing"]),
                rejected=tuple(d.get("rejected", ())),
                extra=dict(d.get("extra", {})),
                fingerprint=d.get("fingerprint", ""),
                tool_version=d.get("tool_version", ""),
                format_version=version,
            )
        except (KeyError, TypeError) as exc:
            raise ManifestError(f"{where} is malformed: {exc!r}") from exc


def read_manifest(root: Path | str) -> Manifest:
    """Read `root/manifest.json`, with errors that name the path and the fix."""
    root = Path(root)
    path = root / MANIFEST_NAME
    if not root.exists():
        raise ManifestError(f"dataset directory {str(root)!r} does not exist")
    if not root.is_dir():
        raise ManifestError(f"{str(root)!r} is not a directory; pass the directory `fastdata convert` wrote")
    if not path.exists():
        in_progress = (root / ".partial").exists()
        hint = " (a conversion is still in progress or was interrupted: re-run it)" if in_progress else ""
        raise ManifestError(f"no {MANIFEST_NAME} in {str(root)!r}{hint}; create one with `fastdata convert SRC {root}`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ManifestError(f"cannot read {path}: {exc}") from exc
    return Manifest.from_dict(data, where=str(path))


def write_manifest(root: Path | str, manifest: Manifest) -> Path:
    path = Path(root) / MANIFEST_NAME
    write_json_atomic(path, manifest.to_dict())
    return path
