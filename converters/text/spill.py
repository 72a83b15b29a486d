"""Documents found by discovery are written to a spill file, not held in memory: a work item carries
a DocRef (offset and length in that file) and the worker reads its document back with one pread.

So discovery's memory grows with the number of documents (a few hundred bytes each for the work
item), never with their text. The spill file lives in the temporary folder (`TMPDIR`), holds the
corpus' text once (decompressed), and is deleted when the conversion's discovery is released.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DocRef:
    """Where one document's UTF-8 text lies in a spill file."""

    path: str
    offset: int
    length: int

    def read(self) -> str:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            data = os.pread(fd, self.length, self.offset)
        finally:
            os.close(fd)
        if len(data) != self.length:
            raise OSError(f"spill file {self.path} lost its data (wanted {self.length} bytes at {self.offset})")
        return data.decode("utf-8")


class Spill:
    """An append-only temporary file of document texts; removed when closed or garbage-collected."""

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="fastdata-text-", suffix=".spill")
        self._file = os.fdopen(fd, "wb")
        self._size = 0
        self._finalizer = weakref.finalize(self, _remove, self._file, self.path)

    def add(self, text: str) -> DocRef:
        data = text.encode("utf-8")
        ref = DocRef(self.path, self._size, len(data))
        self._file.write(data)
        self._size += len(data)
        return ref

    def flush(self) -> None:
        """Make everything added readable by other processes (called once discovery is done)."""
        self._file.flush()

    @property
    def size(self) -> int:
        return self._size

    def close(self) -> None:
        self._finalizer()


def _remove(file, path: str) -> None:
    file.close()
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
