"""`fastdata index` of shards on remote storage (`s3://`, `gs://`, `az://`, `https://`): WebDataset shards as LAION,
DataComp or a Hugging Face dataset repository hand them out, named by a brace pattern or one URL each.

Each tar is downloaded into the local staging folder (`--staging`; by default under the user cache folder), scanned
(`scan.py`) and deleted: `-j` threads, so at most `-j` tars lie there at once. Each scan is saved there, so an
interrupted run resumes without downloading the tars it had scanned. The indexes then go into DST, and the
manifest last: an object store folder (by default the shards' own), or a local folder whose manifest's `shard_root` is
the shards' URL. `fastdata.loader(DST)` then streams the shards through its cache as it does a converted remote
dataset. fastdata never lists a bucket, so the shards are named, not found."""

from __future__ import annotations

import hashlib
import posixpath
import shutil
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from converters.adopt.scan import TarScan, save_scan, saved_scan, scan_stamp, scan_tar
from converters.sample import Rejection, WorkItem
from fastdata.atomic import dumps_json
from fastdata.errors import ConvertError, StorageError
from fastdata.manifest import MANIFEST_NAME, Manifest
from fastdata.reasons import shown_names
from fastdata.sources import is_glob
from fastdata.storage.url import all_urls, folder_url, is_url
from fastdata.storage.url import split as split_url

NAME_THEM = ("name the shards with a brace pattern, 's3://bucket/ds/shards-{000000..000099}.tar', or one URL each: "
             "fastdata never lists a bucket")


def is_remote(spec: object) -> bool:
    """Whether `spec` (a path, pattern, URL or list of them) names remote shards; a mix of both is refused."""
    remote = all_urls([spec] if isinstance(spec, str | Path) else list(spec) if isinstance(spec, Sequence) else [])
    if remote is None:
        raise ConvertError("the shards to index are local paths and URLs at once; a dataset's shards lie in one folder")
    return remote


def remote_tars(spec: str | Sequence[str]) -> tuple[str, list[str], list[Rejection]]:
    """(the shards' folder URL, the names of its tars in name order, the rejections of the other names given)."""
    from converters.adopt import PACKED  # the package imports this module
    from fastdata.storage.open import shard_urls
    from fastdata.wds_index import compressed_tar

    items = [spec] if isinstance(spec, str) else [str(s) for s in spec]
    for url in items:
        if is_glob(url.split("://", 1)[1]):
            raise ConvertError(f"{url!r}: globs cannot be expanded on remote storage; {NAME_THEM} (a name that holds "
                               "*, ? or [ is written percent-encoded: %2A, %3F, %5B)")
    urls = shard_urls(items)
    last = urls[0].rsplit("/", 1)[1]
    if len(urls) == 1 and (not last or "." not in last):  # a folder: 's3://b/ds/' or 's3://b/ds'
        raise ConvertError(f"{urls[0]} is a folder; {NAME_THEM}")
    folders = {split_url(u)[0] for u in urls}
    if len(folders) != 1:
        raise ConvertError("the shards to index must lie in one folder (the manifest records one shard folder)")
    names = list(dict.fromkeys(split_url(u)[1] for u in urls))
    rejected = [Rejection("", n, PACKED if compressed_tar(n) else "not a .tar file") for n in names
                if not n.endswith(".tar")]
    return folders.pop(), sorted(n for n in names if n.endswith(".tar")), rejected


def shard_root_between(dst: str, folder: str) -> str | None:
    """The manifest's `shard_root` for shards in `folder` and a manifest in `dst` (both folder URLs): None when they
    are one folder, a relative path on one bucket or host, else the shards' URL."""
    if dst == folder:
        return None
    a, b = urllib.parse.urlsplit(dst), urllib.parse.urlsplit(folder)
    if (a.scheme, a.netloc) != (b.scheme, b.netloc):
        return folder
    return posixpath.relpath(b.path, a.path) + "/"


class _RemoteScanner:
    """Download one tar into the staging folder, scan it and delete it; a saved scan of the same size is reused.
    Once `stopped` is set (the run failed or was interrupted), a tar still in hand is neither scanned nor saved: a
    thread the failed run left behind wrote its scan afterwards, with that run's options."""

    def __init__(self, store: Any, sizes: dict[str, int], work: Path, options: Any, stopped: threading.Event) -> None:
        self.store, self.sizes, self.work, self.options, self.stopped = store, sizes, work, options, stopped

    def __call__(self, name: str) -> TarScan:
        size = self.sizes[name]
        saved = self.work / "scans" / f"{name}.json"
        stamp = scan_stamp([size], self.options)
        kept = saved_scan(saved, stamp)
        if kept is not None:
            return kept
        local = self.work / "downloads" / name
        free = shutil.disk_usage(local.parent).free
        if size > free:
            raise ConvertError(f"{self.store.url}{name} is {size:,} bytes, more than the {free:,} free where it would "
                               f"be downloaded to be scanned ({local.parent}): free space there, or pass --staging DIR "
                               "(AdoptOptions.staging) on a larger disk")
        try:
            self.store.download(name, local, size=size)
            if self.stopped.is_set():
                raise ConvertError(f"the index of {self.store.url} stopped before {name} was scanned")
            scan = scan_tar(local, max_pixels=self.options.max_pixels, decode=self.options.decode,
                            label_field=self.options.label_field, multi_label=self.options.multi_label)
        finally:
            local.unlink(missing_ok=True)
        if not self.stopped.is_set():
            save_scan(saved, stamp, scan)
        return scan


def sizes_of(store: Any, names: list[str]) -> dict[str, int]:
    """Each tar's size, asked of the store at once (HEAD requests, 16 at a time): a range that names a missing
    shard is refused before hours of downloads, not when its turn comes."""
    with ThreadPoolExecutor(16, thread_name_prefix="fastdata-index-head") as pool:
        sizes = dict(zip(names, pool.map(store.size, names)))
    missing = [name for name, size in sizes.items() if size is None]
    if missing:
        shown = shown_names(missing)
        raise ConvertError(f"{len(missing)} of the {len(names)} shards named do not exist in {store.url} ({shown}); "
                           "check the range and the folder")
    return {name: size for name, size in sizes.items() if size is not None}


def scanned(store: Any, names: list[str], work: Path, options: Any) -> Iterator[TarScan]:
    """The scans of `names`, in order, made by `options.jobs` threads (downloads wait on the network, not the GIL).
    A failure or an interrupt (Ctrl-C) ends the run at once: the downloads in flight are cut, not waited for."""
    (work / "scans").mkdir(parents=True, exist_ok=True)
    (work / "downloads").mkdir(parents=True, exist_ok=True)
    sizes = sizes_of(store, names)
    pool = ThreadPoolExecutor(max(1, options.jobs), thread_name_prefix="fastdata-index")
    stopped = threading.Event()
    done = False
    try:
        scanner = _RemoteScanner(store, sizes, work, options, stopped)
        futures = [pool.submit(scanner, name) for name in names]
        for future in futures:
            yield future.result()
        done = True
    finally:
        if not done:  # a failure or an interrupt: what is still running saves nothing, and is not waited for
            stopped.set()
            store.abandon()  # the bodies being read end now; their threads then end with an error nobody waits for
        pool.shutdown(wait=done, cancel_futures=True)


def adopt_remote(spec: str | Sequence[str], dst: str | Path | None, *, options: Any,
                 progress: Callable[[int], None] | None) -> tuple[str | Path, Manifest]:
    """Index remote shards into `dst`, an object store folder (default: theirs) or a local folder; (DST, the
    manifest)."""
    from converters.adopt import assemble
    from converters.destination import staging_dir
    from fastdata.storage.client import RemoteStore

    folder, names, rejected = remote_tars(spec)
    if not names:
        raise ConvertError(f"no .tar file among the shards named in {folder}")
    if dst is not None and not is_url(dst):
        return _into_local_folder(Path(dst), folder, names, rejected, options=options, progress=progress)
    target = folder_url(dst) if dst is not None else folder
    source, out = RemoteStore(folder), RemoteStore(target)
    if out.http_only:
        raise ConvertError(f"{target} is read-only (HTTP): pass DST, a folder on s3://, gs:// or az:// for the "
                           "indexes and the manifest")
    earlier = _manifest_at(out)
    if earlier is not None and "adopted" not in earlier.extra:
        raise ConvertError(f"{target} already holds a dataset written by `fastdata convert`; index into another "
                           "folder (fastdata index SRC DST)")
    work = Path(options.staging) if options.staging else staging_dir("index:" + target)
    scans = _scans(source, folder, names, work, options, progress)

    def write_index(name: str, data: bytes) -> None:
        _upload_index(out, name, data, earlier)

    manifest = assemble(scans, rejected, options, write_index=write_index, where=folder,
                        shard_root=shard_root_between(target, folder))
    out.upload(MANIFEST_NAME, dumps_json(manifest.to_dict()).encode())
    shutil.rmtree(work, ignore_errors=True)
    return target, manifest


def _scans(source: Any, folder: str, names: list[str], work: Path, options: Any,
           progress: Callable[[int], None] | None) -> list[tuple[WorkItem, TarScan]]:
    from converters.adopt import split_of

    scans: list[tuple[WorkItem, TarScan]] = []
    for name, scan in zip(names, scanned(source, names, work, options)):
        scans.append((WorkItem(split=split_of(name, options), rel=name, source=folder + name), scan))
        if progress:
            progress(1)
    return scans


def _into_local_folder(dst: Path, folder: str, names: list[str], rejected: list[Rejection], *,
                       options: Any, progress: Callable[[int], None] | None) -> tuple[Path, Manifest]:
    """Remote shards indexed into the local folder `dst`: its manifest's `shard_root` is their URL, and
    `fastdata.loader(dst)` reads the indexes there and the shards through the node cache (read-only HTTPS shards,
    a Hugging Face dataset repository's, need no bucket of one's own)."""
    from converters.adopt import PARTIAL, assemble, check_destination, write_index_file
    from fastdata.manifest import write_manifest
    from fastdata.storage.client import RemoteStore

    check_destination(dst)
    dst.mkdir(parents=True, exist_ok=True)  # with --staging elsewhere nothing else makes it
    work = Path(options.staging) if options.staging else dst / PARTIAL / "remote"
    scans = _scans(RemoteStore(folder), folder, names, work, options, progress)
    manifest = assemble(scans, rejected, options, write_index=lambda name, data: write_index_file(dst / name, data),
                        where=folder, shard_root=folder)
    write_manifest(dst, manifest)
    shutil.rmtree(work, ignore_errors=True)
    try:
        (dst / PARTIAL).rmdir()  # only when nothing else is in it
    except OSError:
        pass
    return dst, manifest


def _manifest_at(store: Any) -> Manifest | None:
    """The manifest in `store`'s folder, None when there is none."""
    from fastdata.storage.open import manifest_at

    if store.size(MANIFEST_NAME) is None:
        return None
    return manifest_at(store)[0]


def _upload_index(store: Any, name: str, data: bytes, earlier: Manifest | None) -> None:
    """Upload an index unless an equal one is there; never replace a different one that an earlier `fastdata index`
    of this folder did not write."""
    try:
        there = store.read(name)
    except StorageError as exc:
        if exc.status != 404:
            raise
        there = None
    if there == data:
        return
    ours = earlier is not None and any(sh.index == name for s in earlier.splits.values() for sh in s.shards)
    if there is not None and not ours:
        raise ConvertError(f"{store.url}{name} exists and differs from the index of its tar (sha256 "
                           f"{hashlib.sha256(there).hexdigest()[:12]}...); pass a separate DST folder or remove it")
    store.upload(name, data)
