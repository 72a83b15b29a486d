"""WebDataset tar shards with a DALI index, written deterministically and atomically.

The tar holds `{key}.{ext}` members, a sample's members adjacent, with fixed metadata (mtime 0,
uid/gid 0, mode 0644) so equal input gives equal bytes. The `.idx` file is the one DALI's
`wds2idx` writes for that tar: we know every member's offset as we write it, so no re-parse.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path
from typing import BinaryIO

from converters.sample import Sample
from fastdata.atomic import commit, tmp_path
from fastdata.manifest import ShardInfo
from fastdata.wds_index import Member, format_index


class _HashingFile:
    """A write-only file wrapper that hashes and counts what passes through."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self.sha = hashlib.sha256()
        self.pos = 0

    def write(self, data: bytes) -> int:
        self._f.write(data)
        self.sha.update(data)
        self.pos += len(data)
        return len(data)

    def tell(self) -> int:
        return self.pos


def index_path_for(tar_path: Path) -> Path:
    return tar_path.with_suffix(".idx")


class WdsShardWriter:
    """Writes one `.tar` shard and its `.idx`; both appear under their final names only on close()."""

    suffix = ".tar"

    def __init__(self, path: Path, *, member_order: tuple[str, ...], layout: object = None) -> None:
        self.path = path
        self.idx_path = index_path_for(path)
        self._member_order = member_order
        self._raw = open(tmp_path(path), "wb")
        self._out = _HashingFile(self._raw)
        self._tar = tarfile.open(fileobj=self._out, mode="w", format=tarfile.USTAR_FORMAT)  # type: ignore[arg-type]
        self._index: list[list[Member]] = []
        self.samples = 0

    def _ordered(self, sample: Sample) -> list[tuple[str, bytes]]:
        rank = {ext: i for i, ext in enumerate(self._member_order)}
        items = sorted(sample.members.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0]))
        for ext, data in items:
            if not isinstance(data, bytes | bytearray):
                raise TypeError(f"tar member {sample.key}.{ext} must be bytes, got {type(data).__name__}")
        return items

    def add(self, sample: Sample) -> None:
        parts = []
        for ext, data in self._ordered(sample):
            info = tarfile.TarInfo(f"{sample.key}.{ext}")
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            header = info.tobuf(self._tar.format, self._tar.encoding, self._tar.errors)
            offset = self._tar.offset + len(header)
            self._tar.addfile(info, io.BytesIO(data))
            parts.append(Member(ext, offset, len(data), info.name))
        self._index.append(parts)
        self.samples += 1

    def close(self) -> ShardInfo:
        self._tar.close()
        self._raw.close()
        index_bytes = format_index(self._index)
        idx_tmp = tmp_path(self.idx_path)
        idx_tmp.write_bytes(index_bytes)
        # The index lands first: a tar under its final name always has its index beside it.
        commit(idx_tmp, self.idx_path)
        commit(tmp_path(self.path), self.path)
        return ShardInfo(
            name=self.path.name,
            samples=self.samples,
            bytes=self._out.pos,
            sha256=self._out.sha.hexdigest(),
            index=self.idx_path.name,
            index_sha256=hashlib.sha256(index_bytes).hexdigest(),
        )

    def abort(self) -> None:
        """Drop the shard: its temporary files go (the index's may not be written yet, or already moved into place
        when close() failed moving the tar)."""
        self._raw.close()
        tmp_path(self.path).unlink(missing_ok=True)
        tmp_path(self.idx_path).unlink(missing_ok=True)
