"""Open a remote dataset: the manifest with one GET (no LIST), then a view whose shards come through the
node-local cache (`cache.py`) on first use (`fetcher.py`)."""

from __future__ import annotations

import hashlib
import logging
import shutil
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastdata.dataset import SHARD_SUFFIXES, DatasetView, RemoteOptions, ShardRef, select_split
from fastdata.errors import ManifestError, StorageError
from fastdata.json_text import BadJSON, parse_json
from fastdata.manifest import MANIFEST_NAME, Manifest, ShardInfo
from fastdata.sources import brace_names, is_brace, is_glob
from fastdata.storage.cache import ShardCache, default_cache_dir
from fastdata.storage.client import RemoteStore
from fastdata.storage.fetcher import RemoteFile, RemoteFiles
from fastdata.storage.url import folder_at, folder_url
from fastdata.storage.url import split as split_url

log = logging.getLogger(__name__)

DEFAULT_DISK_SHARE = 0.8  # without cache_limit: this share of the cache disk's free space (plus what is cached)


def shard_urls(source: str | Sequence[str]) -> list[str]:
    """The URLs `source` names (a URL, a brace pattern, a list of them); ManifestError for a glob or no host."""
    items = [source] if isinstance(source, str) else list(source)
    out = []
    for url in items:
        url = str(url)
        if is_glob(url.split("://", 1)[1]):
            raise ManifestError(f"{url!r}: globs cannot be expanded on remote storage (fastdata never lists it); "
                                "pass the dataset folder, shard URLs or a brace pattern such as "
                                "'s3://bucket/ds/train-{000000..000009}.tar' (a name that holds *, ? or [ is "
                                "written percent-encoded: %2A, %3F, %5B)")
        if not urllib.parse.urlsplit(url).netloc:
            raise ManifestError(f"{url!r} names no host or bucket; pass a URL such as 's3://bucket/ds/' or "
                                "'https://host/ds/'")
        out.extend(brace_names(url) if is_brace(url) else [url])
    return out


def manifest_at(store: RemoteStore) -> tuple[Manifest, bytes]:
    try:
        raw = store.read(MANIFEST_NAME)
    except StorageError as exc:
        if exc.status == 404:
            raise ManifestError(f"no {MANIFEST_NAME} at {store.url}: pass the URL of the folder `fastdata convert` "
                                f"or `fastdata index` wrote (a conversion still running uploads it last)") from exc
        raise
    try:
        data = parse_json(raw)
    except BadJSON as exc:
        raise ManifestError(f"{store.url}{MANIFEST_NAME} is not JSON: {exc}") from exc
    return Manifest.from_dict(data, where=store.url + MANIFEST_NAME), raw


def open_remote(source: str | Sequence[str], /, *, split: str | None, options: RemoteOptions) -> DatasetView:
    urls = shard_urls(source)
    names: set[str] | None = None
    if len(urls) == 1 and urls[0].endswith("/" + MANIFEST_NAME):
        base = urls[0].removesuffix(MANIFEST_NAME)  # the dataset named by its manifest
    elif len(urls) == 1 and not urls[0].rstrip("/").endswith(SHARD_SUFFIXES):
        base = folder_url(urls[0])
    else:
        bases = {split_url(u)[0] for u in urls}
        if len(bases) != 1:
            braces = " (a name that holds braces is written percent-encoded: %7B, %7D)" \
                if isinstance(source, str) and is_brace(source) else ""
            raise ManifestError(f"the shard URLs given lie in {len(bases)} folders; a dataset's shards lie in one"
                                f"{braces}")
        base, names = bases.pop(), {split_url(u)[1] for u in urls}
    store = RemoteStore(base, options.storage_options)
    try:
        manifest, raw = manifest_at(store)
    except ManifestError:
        if names is None or not all(n.endswith(".tar") for n in names) or store.size(MANIFEST_NAME) is not None:
            raise
        given = source if isinstance(source, str) else "::".join(map(str, source))  # as index takes a list
        raise ManifestError(f"no {MANIFEST_NAME} beside the shards in {base}: shards written by another tool are "
                            f"indexed where they lie with `fastdata index '{given}'`, or into a local folder with "
                            f"`fastdata index '{given}' meta/`; then load that folder") from None
    if names is None:
        split_name = select_split(manifest, split)
        selected = list(manifest.split(split_name).shards)
    else:
        found = {s: [sh for sh in manifest.splits[s].shards if sh.name in names] for s in manifest.splits}
        found = {s: v for s, v in found.items() if v}
        unknown = names - {sh.name for v in found.values() for sh in v}
        if unknown:
            raise ManifestError(f"{sorted(unknown)[:3]} are not listed in {base}{MANIFEST_NAME}")
        if split is None and len(found) > 1:
            raise ManifestError(f"the shards given span splits {sorted(found)}; pass split=")
        split_name = split or next(iter(found))
        selected = found.get(split_name, [])
    if not selected:
        raise ManifestError(f"split {split_name!r} of {base} holds no shard")
    shard_store = store
    if manifest.shard_root is not None:
        shard_store = RemoteStore(folder_at(base, manifest.shard_root), options.storage_options)
    return _view(base, manifest, raw, split_name, selected, index_store=store, shard_store=shard_store,
                 options=options, split_by_default=split is None and names is None)


def remote_shards(root: Path, manifest: Manifest, split: str, selected: Sequence[ShardInfo], *,
                  options: RemoteOptions, split_by_default: bool) -> DatasetView:
    """A local dataset folder whose shards lie on remote storage (`fastdata index URL DST`: the manifest and indexes
    in DST, `shard_root` the shards' URL): the indexes read from the folder, the shards through the node cache."""
    raw = (root / MANIFEST_NAME).read_bytes()
    shard_store = RemoteStore(folder_url(str(manifest.shard_root)), options.storage_options)
    return _view(root, manifest, raw, split, selected, index_store=LocalFolder(root), shard_store=shard_store,
                 options=options, split_by_default=split_by_default)


def _view(root: Path | str, manifest: Manifest, raw: bytes, split_name: str, selected: Sequence[ShardInfo], *,
          index_store: Any, shard_store: RemoteStore, options: RemoteOptions, split_by_default: bool) -> DatasetView:
    cache_root = options.cache_dir or default_cache_dir()
    fingerprint = hashlib.sha256(raw).hexdigest()
    limit = options.limit_bytes()
    try:
        cache = ShardCache(cache_root, fingerprint=fingerprint, limit=limit)
    except OSError as exc:  # a file, a read-only or virtual file system (/proc), no permission
        given = "" if options.cache_dir else " (the default)"
        raise ValueError(f"cache_dir={str(cache_root)!r}{given} cannot hold the node's shard cache: "
                         f"{exc.strerror or exc} ({exc.filename}); pass cache_dir= a folder this process can write"
                         ) from None
    if limit is None:
        cache.limit = int(DEFAULT_DISK_SHARE * shutil.disk_usage(cache.dir).free) + cache.used()
    files = [RemoteFile(sh.name, sh.bytes, sh.sha256, shard_store) for sh in selected]
    files += [RemoteFile(sh.index, None, sh.index_sha256, index_store) for sh in selected if sh.index]
    refs = tuple(ShardRef.of(manifest, sh, cache.path(sh.name), cache.path(sh.index) if sh.index else None)
                 for sh in selected)
    log.info("%s: %d shard(s) of split %s, cached in %s (limit %s bytes)", root, len(refs), split_name, cache.dir,
             cache.limit)
    return DatasetView(root=root, manifest=manifest, split=split_name, shards=refs, remote=RemoteFiles(cache, files),
                       split_by_default=split_by_default)


class LocalFolder:
    """The indexes of `remote_shards`: a local folder read as the fetcher reads a store (small files whole)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = f"{root}/"

    def read(self, name: str) -> bytes:
        try:
            return (self.root / name).read_bytes()
        except OSError as exc:
            raise StorageError(f"cannot read {self.root / name}: {exc.strerror or exc}") from None

    def abandon(self) -> None:
        """Nothing is in flight: reads of a local file end by themselves."""
