"""What discovery reads out of a container file (a text corpus' documents, the images of a Parquet table) is written
to a spill file, not held in memory: a work item carries a SpillRef (offset and length in that file) and the worker
reads its input back with one pread.

So discovery's memory grows with the number of inputs (a few hundred bytes each for the work item), never with
their bytes. The spill file lives in the temporary folder (`TMPDIR`), holds the inputs once (decompressed), and is
deleted when the conversion's discovery is released.

A part of a conversion in parts (`--num-parts K --part I`) converts about 1/K of the inputs, so it spills only those:
inside `spilling_only(ordinals)` a Spill writes the inputs of those ordinals (the n-th `add`, from 0) and hands the
others a SpillRef that knows their size but holds no bytes (converters/engine.py discovers again for the ones it
needs).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

SAME_FROM = 1 << 20  # inputs of this many bytes or more are spilled once however often they are added
_ONLY: ContextVar[frozenset[int] | None] = ContextVar("fastdata_spill_only", default=None)


@contextmanager
def spilling_only(ordinals: Iterable[int]) -> Iterator[None]:
    """Spills made inside write only the inputs of these ordinals (the n-th `add` of a spill, from 0); `()`: none."""
    token = _ONLY.set(frozenset(ordinals))
    try:
        yield
    finally:
        _ONLY.reset(token)


def read_range(path: str, offset: int, length: int) -> bytes:
    """The `length` bytes at `offset` of the file at `path`, with one pread (fewer where the file ends first)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class FileRange:
    """Where one image lies inside a file it is read from in place (an uncompressed tar, LMDB's data.mdb):
    `length` bytes at `offset` of the file at `path`."""

    path: str
    offset: int
    length: int

    def read_bytes(self) -> bytes:
        data = read_range(self.path, self.offset, self.length)
        if len(data) != self.length:
            raise OSError(f"{self.path} ends before this image's {self.length} bytes at {self.offset} (truncated)")
        return data


@dataclass(frozen=True, slots=True)
class SpillRef:
    """Where one input's bytes (a document's UTF-8 text) lie in a spill file; `ordinal`: the input's place among
    the spill's inputs. An offset of -1: the input was not written (`spilling_only`)."""

    path: str
    offset: int
    length: int
    ordinal: int = -1

    def read_bytes(self) -> bytes:
        if self.offset < 0:
            raise OSError(f"input {self.ordinal} of spill file {self.path} was not written: this process spilled only "
                          "the inputs it converts")
        data = read_range(self.path, self.offset, self.length)
        if len(data) != self.length:
            raise OSError(f"spill file {self.path} lost its data (wanted {self.length} bytes at {self.offset})")
        return data

    def read(self) -> str:
        """The input as text (a document)."""
        return self.read_bytes().decode("utf-8")


class Spill:
    """An append-only temporary file of inputs (`fastdata-<what>-*.spill`); removed when closed or
    garbage-collected."""

    def __init__(self, what: str) -> None:
        fd, self.path = tempfile.mkstemp(prefix=f"fastdata-{what}-", suffix=".spill")
        self._file = os.fdopen(fd, "wb")
        self._size = 0
        self._added = 0
        self.only = _ONLY.get()  # the ordinals written (spilling_only); None: every input
        self._large: dict[tuple[int, bytes], SpillRef] = {}  # inputs of SAME_FROM bytes or more, by size and digest
        self._finalizer = weakref.finalize(self, _remove, self._file, self.path)

    def add(self, data: str | bytes) -> SpillRef:
        """Append `data` (text as UTF-8); where it lies. An input of SAME_FROM bytes or more that was added before
        lies where it was written first: a table that repeats one large value in every row (a dictionary bomb) is
        spilled once, not once a row."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        ordinal, self._added = self._added, self._added + 1
        if self.only is not None and ordinal not in self.only:
            return SpillRef(self.path, -1, len(data), ordinal)
        key = (len(data), hashlib.blake2b(data).digest()) if len(data) >= SAME_FROM else None
        if key in self._large:
            return dataclasses.replace(self._large[key], ordinal=ordinal)
        ref = SpillRef(self.path, self._size, len(data), ordinal)
        self._file.write(data)
        self._size += len(data)
        if key is not None:
            self._large[key] = ref
        return ref

    def flush(self) -> None:
        """Make everything added readable by other processes (called once discovery is done)."""
        self._file.flush()

    @property
    def size(self) -> int:
        return self._size

    def close(self) -> None:
        self._finalizer()


def spilled(payload: Any) -> Iterator[SpillRef]:
    """The SpillRefs of a work item's payload: the payload itself, or its dataclass fields that are SpillRefs (an
    image-text pair's image)."""
    if isinstance(payload, SpillRef):
        yield payload
    elif dataclasses.is_dataclass(payload) and not isinstance(payload, type):
        for f in dataclasses.fields(payload):
            value = getattr(payload, f.name)
            if isinstance(value, SpillRef):
                yield value


def _remove(file, path: str) -> None:
    file.close()
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
