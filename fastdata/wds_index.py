"""WebDataset member names and DALI index files (`.idx`): the one parser and writer every part uses.

A member `dir/abc.seg.jpg` belongs to sample `dir/abc` with extension `seg.jpg`: WebDataset, DALI's
`wds2idx` and `fn.readers.webdataset` all split at the first dot after the last slash. An index file is
`v1.2 N` followed by one line per sample, `ext offset size name` for each of its members, in tar order;
it is byte for byte what `wds2idx` writes for the same tar.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fastdata.errors import ShardError
from fastdata.numerals import parse_int
from fastdata.reasons import shown_names

INDEX_VERSION = "v1.2"

# Tars that WebDataset streams through a decompressor, by name and by their first bytes; fastdata reads them once
# decompressed (DECOMPRESS).
COMPRESSED_TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar.zst", ".tar.zstd", ".tar.xz", ".txz", ".tar.bz2", ".tbz2",
                           ".tar.lz4")
COMPRESSION_MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"\xfd7zXZ\x00": "xz", b"BZh": "bzip2",
                     b"\x04\x22\x4d\x18": "lz4"}
DECOMPRESS = ("DALI and fastdata read uncompressed tars, seeking to each sample: decompress (`gunzip -k`, `zstd -d`, "
              "`xz -dk`, `bunzip2 -k`, `lz4 -d`)")


def compressed_tar(name: str) -> bool:
    return name.lower().endswith(COMPRESSED_TAR_SUFFIXES)


def compression(head: bytes) -> str | None:
    """The compressor whose magic number `head` (a file's first 6 bytes or more) starts with, else None."""
    return next((name for magic, name in COMPRESSION_MAGIC.items() if head.startswith(magic)), None)


def decompress_advice(names: Sequence[str]) -> str:
    """Why compressed tars (`names`, at least one) cannot be read as they are, and what to run first."""
    shown = shown_names(names)
    return f"{shown} {'is a compressed tar' if len(names) == 1 else 'are compressed tars'}: {DECOMPRESS}"


@dataclass(frozen=True)
class Member:
    """One regular file of a tar: its extension, where its data starts, its size, its full name."""

    ext: str
    offset: int
    size: int
    name: str

    @property
    def end(self) -> int:
        return self.offset + self.size


def split_name(name: str) -> tuple[str, str]:
    """(key, extension) of a member name, split at the first dot after the last slash ('' if none)."""
    dot = name.find(".", name.rfind("/") + 1)
    return (name, "") if dot < 0 else (name[:dot], name[dot + 1:])


def sample_key(sample: Sequence[Member]) -> str:
    return split_name(sample[0].name)[0]


def format_index(samples: Sequence[Sequence[Member]]) -> bytes:
    """The `.idx` bytes for these samples (each a sequence of members in tar order)."""
    lines = [f"{INDEX_VERSION} {len(samples)}\n"]
    lines += [" ".join(f"{m.ext} {m.offset} {m.size} {m.name}" for m in sample) + "\n" for sample in samples]
    return "".join(lines).encode("utf-8")


def parse_line(line: str, *, where: str, lineno: int) -> tuple[Member, ...]:
    fields = line.split()
    if not fields or len(fields) % 4:
        raise ShardError(f"{where} line {lineno} is malformed (want 'ext offset size name' groups): {line[:80]!r}")
    members = []
    for i in range(0, len(fields), 4):
        ext, offset, size, name = fields[i:i + 4]
        start, length = parse_int(offset), parse_int(size)
        if start is None or length is None:
            raise ShardError(f"{where} line {lineno} has an offset or size that is not a number of at most "
                             f"18 ASCII digits: {line[:80]!r}")
        members.append(Member(ext, start, length, name))
    return tuple(members)


def parse_index(text: str, *, where: str) -> list[tuple[Member, ...]]:
    """The samples of an index file; ShardError names the file and line of anything malformed."""
    lines = text.splitlines()
    head = lines[0].split() if lines else []
    count = parse_int(head[1]) if len(head) == 2 else None
    if count is None or not head[0].startswith("v"):
        raise ShardError(f"{where} is not a DALI webdataset index (first line {lines[0][:40] if lines else ''!r}, "
                          f"want '{INDEX_VERSION} N')")
    samples = [parse_line(line, where=where, lineno=n) for n, line in enumerate(lines[1:], start=2) if line.strip()]
    if len(samples) != count:
        raise ShardError(f"{where} declares {head[1]} samples and lists {len(samples)}")
    return samples
