"""Resolve what a loader was given into manifest + shard files of one split.

A source is a dataset folder (the one holding `manifest.json`), one shard file, a glob, a brace
pattern, or a list of shard files; shards named by path must be listed in the manifest beside them.
The manifest's `shard_root` says where the shards lie when they are not beside it (`fastdata index
SRC DST` on read-only shards); index files always lie beside the manifest.

A source may also be a URL (`s3://`, `gs://`, `az://`, `https://`) of a dataset folder or of shards in
it (brace patterns expand without listing anything). Then the manifest is read with one GET, and
`view.local(ref)` downloads a shard and its index into the node-local cache (`fastdata/storage/`)
when a reader first needs it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fastdata.errors import ManifestError, ShardError
from fastdata.manifest import CONVERT_AGAIN, MANIFEST_NAME, Manifest, ShardInfo, read_manifest
from fastdata.manifest_splits import canonical_split
from fastdata.option_rules import refused
from fastdata.sources import Spec, expand, plain, split_joined
from fastdata.storage.url import all_urls, is_url
from fastdata.wds_index import compressed_tar, decompress_advice

SHARD_SUFFIXES = (".tar", ".arrow")
RAW_SUFFIXES = (".jpg", ".jpeg", ".jfif", ".jpe", ".png", ".webp", ".bmp", ".tif", ".tiff", ".gif", ".avif", ".ppm",
                ".pgm", ".pbm", ".pnm", ".txt",
                ".jsonl", ".json", ".csv", ".tsv", ".parquet", ".dcm", ".gz", ".zst")


@dataclass(frozen=True)
class ShardRef:
    """One shard of a split: its manifest entry, where the shard lies and where its index lies."""

    info: ShardInfo
    path: Path
    index_path: Path | None = None
    remedy: str = CONVERT_AGAIN  # what an error about a missing or changed shard tells the user to run

    @classmethod
    def of(cls, manifest: Manifest, info: ShardInfo, path: Path, index_path: Path | None) -> ShardRef:
        return cls(info=info, path=path, index_path=index_path, remedy=manifest.remedy)


@dataclass(frozen=True)
class RemoteOptions:
    """Where a remote dataset's shards are cached on this node, how much of the disk they may take, and the
    options of the storage client (obstore's config keys, plus connect_timeout/read_timeout/attempts/deadline)."""

    storage_options: dict | None = None
    cache_dir: str | Path | None = None
    cache_limit: int | str | None = None  # bytes, or "200GB"; None: 80% of the cache disk's free space

    def __post_init__(self) -> None:
        """Refused here, with the option named, rather than deep in a request or a mkdir."""
        if self.storage_options is not None and (not isinstance(self.storage_options, Mapping) or
                                                 not all(isinstance(k, str) for k in self.storage_options)):
            raise refused("storage_options", self.storage_options, "a dict of the storage client's options by name, "
                          "such as {'region': 'us-east-1'} (docs/remote.md)", cut=80)
        if self.cache_dir is not None and not isinstance(self.cache_dir, str | os.PathLike):
            raise refused("cache_dir", self.cache_dir, "a folder's path (made if missing)", cut=80)
        if self.cache_limit is not None:
            self.limit_bytes()

    @classmethod
    def pop(cls, options: dict) -> RemoteOptions:
        """Take the remote-storage options out of a loader's keyword options."""
        return cls(**{k: options.pop(k) for k in ("storage_options", "cache_dir", "cache_limit") if k in options})

    def limit_bytes(self) -> int | None:
        if self.cache_limit is None:
            return None
        if isinstance(self.cache_limit, str):
            from fastdata.cli.format import parse_size

            try:
                size = parse_size(self.cache_limit)
            except ValueError as exc:
                raise ValueError(f"cache_limit={self.cache_limit!r} is not allowed: {exc}") from None
            if size < 1:
                raise ValueError(f"cache_limit={self.cache_limit!r} is not allowed; give at least 1 byte")
            return size
        if not isinstance(self.cache_limit, int) or isinstance(self.cache_limit, bool) or self.cache_limit < 1:
            raise ValueError(f"cache_limit={self.cache_limit!r} is not allowed; give bytes (int) or a size such as "
                             "'200GB'")
        return self.cache_limit


@dataclass(frozen=True)
class DatasetView:
    """A manifest, the folder it lies in, and the shards of one split selected for loading."""

    root: Path | str  # a local folder, or the URL of a remote dataset folder
    manifest: Manifest
    split: str
    shards: tuple[ShardRef, ...]
    remote: Any = None  # RemoteFiles of a remote dataset (fastdata/storage/fetcher.py), else None
    split_by_default: bool = False  # no split was asked for and none named by shards: the default was taken

    @property
    def views(self) -> tuple[DatasetView, ...]:
        """The datasets this view reads: itself (a mixture's `MixedView.views` are its members)."""
        return (self,)

    def local(self, ref: ShardRef) -> ShardRef:
        """`ref` with its shard and index on local disk (downloaded into the node cache for a remote
        dataset, and held there until `release(ref)`)."""
        if self.remote is None:
            return ref
        path = self.remote.local(ref.info.name)
        index = self.remote.local(ref.info.index) if ref.info.index else None
        return replace(ref, path=path, index_path=index)

    def release(self, ref: ShardRef) -> None:
        if self.remote is not None:
            self.remote.release(ref.info.name)
            if ref.info.index:
                self.remote.release(ref.info.index)

    def close(self) -> None:
        if self.remote is not None:
            self.remote.close()

    def require_whole_split(self) -> None:
        """For loaders that map a whole split (text, volumes): refuse a remote cache_limit smaller than it."""
        if self.remote is None or self.remote.cache.limit is None:
            return
        need = sum(ref.info.bytes for ref in self.shards)
        if self.remote.cache.limit < need:
            raise ValueError(f"cache_limit={self.remote.cache.limit} bytes is too small: this loader holds the whole "
                             f"split ({need} bytes of shards) on the node; set cache_limit to at least {need} bytes")

    @property
    def num_samples(self) -> int:
        return sum(s.info.samples for s in self.shards)

    @property
    def classes(self) -> tuple[str, ...]:
        return self.manifest.classes


def shard_root(root: Path, manifest: Manifest) -> Path:
    """The folder holding the shards: the manifest's `shard_root` (relative to `root`), else `root`."""
    return root if manifest.shard_root is None else root / manifest.shard_root


def missing_manifest_hint(folder: Path, names: list[Path] | None = None, *, given: str | None = None) -> str:
    """What to run for a folder (or files in it) without a manifest: index foreign shards, convert raw files.
    `given` is what the user passed (a pattern is repeated in the advice, quoted)."""
    try:
        files = names if names is not None else [folder / n for n in sorted(os.listdir(folder))[:2000]]
    except OSError:
        files = []
    suffixes = {p.suffix.lower() for p in files}
    if (folder / ".partial" / "scans").exists() or (folder / ".partial" / "remote").exists():
        return f"an index into {folder} is unfinished: re-run the same `fastdata index` command to finish it"
    if (folder / ".partial").exists():
        return f"a conversion into {folder} is unfinished: re-run the same `fastdata convert` command to finish it"
    packed = [p.name for p in files if compressed_tar(p.name)]
    if packed and ".tar" not in suffixes:
        return decompress_advice(packed) + ", then `fastdata index` their folder and load that"
    if ".tar" in suffixes:
        what = f"'{given}'" if given else str(folder)
        return ("these look like WebDataset shards written by another tool: adopt them with "
                f"`fastdata index {what}` (or `fastdata index {what} DST/` to keep the shards read-only), "
                "then load that folder")
    if suffixes & set(RAW_SUFFIXES) or any(p.is_dir() for p in files):
        return f"to pack raw files into shards run `fastdata convert {folder} DST/`, then load DST/"
    return "pass the folder `fastdata convert` or `fastdata index` wrote (the one holding manifest.json)"


def _read(root: Path, names: list[Path] | None = None) -> Manifest:
    if not root.exists():
        raise ManifestError(f"dataset folder {str(root)!r} does not exist")
    if not root.is_dir():
        raise ManifestError(f"{str(root)!r} is neither a dataset folder nor a shard file; "
                            "pass the folder holding manifest.json, a shard, a glob or a list of shards")
    if not (root / MANIFEST_NAME).exists():
        raise ManifestError(f"no {MANIFEST_NAME} in {str(root)!r}: {missing_manifest_hint(root, names)}")
    return read_manifest(root)


def _select_named(files: list[Path], folder: Path, manifest: Manifest, root: Path,
                  split: str | None) -> tuple[str, list[ShardInfo]]:
    """The split and shards that `files` (shard paths, all in `folder`: `shard_folder`) pick out of the manifest."""
    where = shard_root(root, manifest).resolve()
    if folder != where:
        raise ManifestError(f"{[str(p) for p in files[:3]]} do not lie in {where}, where the manifest of {root} keeps "
                            "its shards")
    names = {p.name for p in files}
    by_split = {name: [sh for sh in s.shards if sh.name in names] for name, s in manifest.splits.items()}
    by_split = {k: v for k, v in by_split.items() if v}
    listed = {sh.name for v in by_split.values() for sh in v}
    unknown = sorted(names - listed)
    if unknown:
        raise ManifestError(f"{unknown[:3]} are not listed in {root / MANIFEST_NAME}; pass shards of that dataset, "
                            f"or adopt foreign shards with `fastdata index`")
    if split is None:
        if len(by_split) > 1:
            raise ManifestError(f"the shards given span splits {sorted(by_split)}; pass split=")
        split = next(iter(by_split))
    split = select_split(manifest, split)
    if split not in by_split:
        raise ManifestError(f"none of the shards given belongs to split {split!r} (they are in {sorted(by_split)})")
    return split, by_split[split]


def shard_folder(path: Path) -> Path:
    """The folder a shard is named in, resolved: a shard that is a link to a file elsewhere (shards gathered from
    several disks by links) lies beside its link, where the manifest lists it, not where the link points."""
    return path.parent.resolve()


def open_dataset(source: Spec, /, *, split: str | None = None, check_files: bool = True,
                 remote: RemoteOptions | None = None) -> DatasetView:
    """Open a dataset folder, or shards named by path, glob, brace pattern or list, and select one split.

    Missing, truncated or non-regular shard files raise ShardError naming the file. A URL opens a remote
    dataset (see the module docstring), with `remote` for its cache and client options.
    """
    source = split_joined(plain(source))
    if split is not None and not isinstance(split, str):  # a list raised "unhashable type", a number a lookup miss
        raise refused("split", split, "a split's name, a string such as 'train' (or None: train when there is one)",
                      cut=80)
    if _is_remote(source):
        from fastdata.storage.open import open_remote

        return open_remote(source, split=split, options=remote or RemoteOptions())
    paths = expand(source)
    if len(paths) == 1:
        _check_openable(paths[0])
    if len(paths) == 1 and paths[0].name == MANIFEST_NAME and paths[0].is_file():
        paths = [paths[0].parent]  # the dataset named by its manifest
    if len(paths) == 1 and not paths[0].exists():
        raise ManifestError(f"{str(paths[0])!r} does not exist; pass a dataset folder (the one holding "
                            f"{MANIFEST_NAME}), a shard file, a glob or a list of shards")
    by_default = split is None
    if len(paths) == 1 and paths[0].is_dir():
        root = paths[0]
        manifest = _read(root)
        split = select_split(manifest, split)
        selected = list(manifest.split(split).shards)
    else:
        dirs = [str(p) for p in paths if p.is_dir()]
        if dirs:
            raise ManifestError(f"{dirs[:3]} are folders; a list names shard files of one dataset "
                                "(to mix several datasets, give each dataset folder as its own entry)")
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise ManifestError(f"{missing[:3]} do not exist; check the path")
        folders = {shard_folder(p) for p in paths}
        if len(folders) != 1:
            raise ManifestError(f"the shards given lie in {len(folders)} folders; the shards of one dataset lie in one")
        root = paths[0].parent
        if not (root / MANIFEST_NAME).exists():
            given = str(source) if isinstance(source, str | Path) else None
            raise ManifestError(f"no {MANIFEST_NAME} beside {paths[0]}: "
                                f"{missing_manifest_hint(root, paths, given=given)}")
        manifest = _read(root)
        split, selected = _select_named(paths, folders.pop(), manifest, root, split)
        by_default = False  # the shards named chose the split
    root = root.absolute()  # shards are read later, perhaps after the process changed its working directory
    if is_url(manifest.shard_root):  # the indexes here, the shards on remote storage (`fastdata index URL DST`)
        from fastdata.storage.open import remote_shards

        return remote_shards(root, manifest, split, selected, options=remote or RemoteOptions(),
                             split_by_default=by_default)
    where = shard_root(root, manifest)
    refs = tuple(ShardRef.of(manifest, sh, where / sh.name, root / sh.index if sh.index else None) for sh in selected)
    if not refs:
        raise ManifestError(f"split {split!r} of {root} holds no shard (every input was rejected?); "
                            f"see `fastdata info {root} --rejected`")
    if check_files:
        for ref in refs:
            check_shard_file(ref)
    return DatasetView(root=root, manifest=manifest, split=split, shards=refs, split_by_default=by_default)


def _is_remote(source: object) -> bool:
    remote = all_urls(list(source) if isinstance(source, list | tuple) else [source])
    if remote is None:
        raise ManifestError("a source list mixes URLs and local paths; the shards of one dataset lie in one place")
    return remote


def _check_openable(path: Path) -> None:
    """ManifestError when the system cannot even look `path` up: a name too long or holding a NUL, a loop of links,
    no permission (a path that does not exist is said by the caller, with what to pass instead)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{str(path)!r} cannot be opened: {getattr(exc, 'strerror', None) or exc}") from None


def select_split(manifest: Manifest, split: str | None) -> str:
    """`split` (or, when the dataset has no split of that name, its one split of the same meaning: `validation` for
    val, as Hugging Face and timm name it, or `val` for a split named `validation` by hand), or by default train when
    the dataset has it, else the first split by name."""
    if split is None:
        split = "train" if "train" in manifest.splits else sorted(manifest.splits)[0]
    if split not in manifest.splits:
        meant = canonical_split(split)
        same = [s for s in manifest.splits if meant is not None and canonical_split(s) == meant]
        split = same[0] if len(same) == 1 else split
    manifest.split(split)
    return split


def regular_file_size(path: Path, what: str) -> int:
    """The size of a regular file; ShardError for a missing file, a FIFO, a device, a socket or a folder."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ShardError(f"{what} {path} listed in the manifest is missing") from None
    except OSError as exc:
        raise ShardError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise ShardError(f"{what} {path} is not a regular file (a FIFO, device, socket or folder); refusing to read it")
    return st.st_size


def check_shard_file(ref: ShardRef) -> None:
    """Cheap presence, type and size check; `fastdata verify` does the full hash check."""
    size = regular_file_size(ref.path, "shard")
    if size != ref.info.bytes:
        raise ShardError(
            f"shard {ref.path} has {size} bytes, the manifest says {ref.info.bytes}: it is truncated or "
            f"was changed; {ref.remedy} or restore the file"
        )
    if ref.index_path is not None:
        regular_file_size(ref.index_path, "index")
