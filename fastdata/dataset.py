"""Resolve what a loader was given (a dataset directory or a glob of shards) into manifest + shard paths."""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path

from fastdata.errors import ManifestError, ShardError
from fastdata.manifest import Manifest, ShardInfo, read_manifest


@dataclass(frozen=True)
class ShardRef:
    """One shard of a split: its manifest entry and where it lies on disk."""

    info: ShardInfo
    path: Path

    @property
    def index_path(self) -> Path | None:
        return self.path.with_name(self.info.index) if self.info.index else None


@dataclass(frozen=True)
class DatasetView:
    """A manifest, the directory it lies in, and the shards of one split selected for loading."""

    root: Path
    manifest: Manifest
    split: str
    shards: tuple[ShardRef, ...]

    @property
    def num_samples(self) -> int:
        return sum(s.info.samples for s in self.shards)

    @property
    def classes(self) -> tuple[str, ...]:
        return self.manifest.classes


def _is_glob(source: str) -> bool:
    return any(ch in source for ch in "*?[")


def open_dataset(source: str | Path, /, *, split: str | None = None, check_files: bool = True) -> DatasetView:
    """Open a dataset directory or a shard glob (`shards/train-*.tar`) and select one split.

    With a glob, the manifest beside the matched shards is read and the split is the one the
    shards belong to. Missing or truncated shards raise ShardError naming the file.
    """
    text = str(source)
    if _is_glob(text):
        matches = sorted(Path(p) for p in glob.glob(text))
        if not matches:
            raise ManifestError(f"the glob {text!r} matches no file; check the path and pattern")
        roots = {p.parent for p in matches}
        if len(roots) != 1:
            raise ManifestError(f"the glob {text!r} matches shards in {len(roots)} directories; use one dataset")
        root = roots.pop()
        manifest = read_manifest(root)
        names = {p.name for p in matches}
        by_split = {
            name: [sh for sh in s.shards if sh.name in names] for name, s in manifest.splits.items()
        }
        by_split = {k: v for k, v in by_split.items() if v}
        if not by_split:
            raise ManifestError(f"the glob {text!r} matches no shard listed in {root / 'manifest.json'}")
        if split is None:
            if len(by_split) > 1:
                raise ManifestError(f"the glob {text!r} spans splits {sorted(by_split)}; pass split=")
            split = next(iter(by_split))
        manifest.split(split)
        selected = by_split.get(split, [])
        if not selected:
            raise ManifestError(f"the glob {text!r} matches no shard of split {split!r}")
    else:
        root = Path(text)
        manifest = read_manifest(root)
        if split is None:
            split = "train" if "train" in manifest.splits else sorted(manifest.splits)[0]
        selected = list(manifest.split(split).shards)
    refs = tuple(ShardRef(info=sh, path=root / sh.name) for sh in selected)
    if check_files:
        for ref in refs:
            check_shard_file(ref)
    return DatasetView(root=root, manifest=manifest, split=split, shards=refs)


def check_shard_file(ref: ShardRef) -> None:
    """Cheap presence and size check; `fastdata verify` does the full hash check."""
    if not ref.path.exists():
        raise ShardError(f"shard {ref.path} listed in the manifest is missing")
    size = ref.path.stat().st_size
    if size != ref.info.bytes:
        raise ShardError(
            f"shard {ref.path} has {size} bytes, the manifest says {ref.info.bytes}: it is truncated or "
            "was changed; re-run `fastdata convert` or restore the file"
        )
    idx = ref.index_path
    if idx is not None and not idx.exists():
        raise ShardError(f"index {idx} for shard {ref.path} is missing; re-run `fastdata convert`")
