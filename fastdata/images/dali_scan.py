"""Corrupt JPEGs and the DALI backend: name the failing sample, or exclude bad samples up front.

DALI's decoders stop the whole pipeline on an undecodable image and their error does not say
which sample it was ("nvImageCodec failure: '#4'"), and DALI has no "skip this sample" for decode
errors. So:
- on_error="raise": when the pipeline fails, the samples it can have read are decoded again here
  (libjpeg-turbo, in reading order) and the error names the first bad shard file and key;
- on_error="skip": the split is checked once before loading (libjpeg-turbo at 1/8 scale, which
  still entropy-decodes every block, in a thread pool), bad samples are logged and left out of
  filtered copies of the `.idx` files that DALI then reads. Every rank scans the same split and
  removes the same samples, so the rank blocks stay consistent. The result per shard is cached in
  $FASTDATA_CACHE (default ~/.cache/fastdata) under the shard's sha256, size and mtime, so the
  other ranks and later runs do not decode it again.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import logging
import mmap
import os
import tempfile
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fastdata.images.dali_plan import ShardSource
from fastdata.images.pixels import open_image, other_format
from fastdata.wds_index import parse_line, split_name

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BadSample:
    shard: Path
    key: str
    reason: str


def read_index(path: Path) -> tuple[str, list[str]]:
    """The header and the sample lines of a DALI webdataset index (`v1.2 N` then one line per sample)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or not lines[0].startswith("v"):
        raise ValueError(f"{path} is not a DALI webdataset index (no version header)")
    return lines[0], [ln for ln in lines[1:] if ln.strip()]


def _image_span(line: str, image_members: tuple[str, ...]) -> tuple[str, int, int]:
    """(key, offset, size) of the image member of one index line (`ext offset size name ...`)."""
    members = {m.ext: m for m in parse_line(line, where="index", lineno=0)}
    image = next((members[e] for e in image_members if e in members), None)
    if image is None:
        raise ValueError(f"index line has no {'/'.join(image_members)} member: {line[:120]!r}")
    return split_name(image.name)[0], image.offset, image.size


def decode_problem(data: bytes) -> str | None:
    """Why `data` is not a decodable JPEG (None when it decodes); decodes at reduced scale."""
    if not data:
        return "empty image member"
    if other_format(data) is not None:  # PNG, WebP, ... in adopted shards: Pillow decodes them
        return _other_problem(data)
    try:
        import simplejpeg
    except ImportError:
        simplejpeg = None
    try:
        if simplejpeg is not None:
            simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True, min_height=1, min_width=1)
        else:
            from PIL import Image

            with Image.open(io.BytesIO(data)) as im:
                im.draft("RGB", (max(1, im.width // 8), max(1, im.height // 8)))
                im.load()
    except Exception as exc:  # noqa: BLE001 - any decode failure is the finding
        return f"{type(exc).__name__}: {exc}"
    return None


def _other_problem(data: bytes) -> str | None:

    try:
        with open_image(data) as im:
            im.load()
    except Exception as exc:  # noqa: BLE001 - any decode failure is the finding
        return f"{type(exc).__name__}: {exc}"
    return None


def _bad_lines(shard: ShardSource, lines: Iterable[tuple[int, str]],
               image_members: tuple[str, ...]) -> Iterator[tuple[int, BadSample]]:
    """The undecodable samples among (line index, index line) pairs of `shard`, in order, found lazily."""
    with open(shard.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for i, line in lines:
            key, offset, size = _image_span(line, image_members)
            reason = decode_problem(mm[offset:offset + size])
            if reason is not None:
                yield i, BadSample(shard.path, key, reason)


def first_bad(stream: Iterable[tuple[ShardSource, int]], image_members: tuple[str, ...] = ("jpg",)) -> BadSample | None:
    """The first undecodable sample among (shard, index line) pairs, in the given order.

    Consecutive pairs of one shard are checked through one mapping of the shard, up to the first bad one."""
    cache: dict[Path, list[str]] = {}
    for shard, run in itertools.groupby(stream, key=lambda pair: pair[0]):
        if shard.index_path not in cache:
            cache[shard.index_path] = read_index(shard.index_path)[1]
        lines = cache[shard.index_path]
        with contextlib.closing(_bad_lines(shard, ((i, lines[i]) for _, i in run), image_members)) as bad:
            found = next(bad, None)
        if found is not None:
            return found[1]
    return None


def _cache_file(shard: ShardSource) -> Path | None:
    if not shard.sha256:
        return None
    root = Path(os.environ.get("FASTDATA_CACHE") or Path.home() / ".cache" / "fastdata")
    st = shard.path.stat()
    return root / "jpeg-check" / f"{shard.sha256}-{st.st_size}-{st.st_mtime_ns}.json"


def check_shard(shard: ShardSource, lines: list[str],
                image_members: tuple[str, ...] = ("jpg",)) -> list[tuple[int, BadSample]]:
    """The undecodable samples of one shard (line index, sample), from the cache when it has them."""
    cache = _cache_file(shard)
    if cache is not None and cache.exists():
        try:
            return [(i, BadSample(shard.path, key, reason)) for i, key, reason in json.loads(cache.read_text())]
        except (OSError, ValueError, TypeError) as exc:
            log.debug("ignoring unreadable cache %s: %s", cache, exc)
    bad = list(_bad_lines(shard, enumerate(lines), image_members))
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")  # ranks may write at once
            tmp.write_text(json.dumps([[i, b.key, b.reason] for i, b in bad]))
            os.replace(tmp, cache)
        except OSError as exc:
            log.debug("cannot cache the JPEG check of %s: %s", shard.path, exc)
    return bad


class SkipFilter:
    """Scans shards once and writes `.idx` copies without the undecodable samples (kept in a temp dir)."""

    def __init__(self, shards: tuple[ShardSource, ...], *, num_threads: int,
                 image_members: tuple[str, ...] = ("jpg",)) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="fastdata-dali-")
        self.bad: list[BadSample] = []
        with ThreadPoolExecutor(max_workers=num_threads) as pool:
            jobs = [(s, read_index(s.index_path)) for s in shards]
            results = list(pool.map(lambda job: check_shard(job[0], job[1][1], image_members), jobs))
        kept: list[ShardSource] = []
        for n, ((shard, (header, lines)), bad) in enumerate(zip(jobs, results)):
            for _, sample in bad:
                log.warning("skipping corrupt JPEG in %s, key %s: %s", sample.shard, sample.key, sample.reason)
            self.bad.extend(b for _, b in bad)
            if not bad:
                kept.append(shard)
                continue
            drop = {i for i, _ in bad}
            keep = [ln for i, ln in enumerate(lines) if i not in drop]
            if not keep:
                continue
            idx = Path(self._tmp.name) / f"{n:06d}-{shard.index_path.name}"
            idx.write_text(f"{header.split()[0]} {len(keep)}\n" + "".join(ln + "\n" for ln in keep), encoding="utf-8")
            kept.append(ShardSource(path=shard.path, index_path=idx, samples=len(keep)))
        self.shards = tuple(kept)
        if self.bad:
            log.warning("left out %d corrupt samples of %d shards", len(self.bad), len(shards))

    def close(self) -> None:
        self._tmp.cleanup()
