"""An Arrow IPC stream shard opened safely: a file from someone else, or one that changes while it is read.

The structure is read through a memory map once, at open, while the file is checked: every record batch
is validated fully (offsets within their buffers and monotonic, lengths consistent), so a forged offset
can never hand memory outside the shard to a decoder or a collate. Sample data is then read with `pread`
at the file offsets of the validated buffers, never by touching the map: a file truncated or shrunk in
place after open gives a short read and a clear ShardError, not SIGBUS.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from collections import OrderedDict, deque
from pathlib import Path

import numpy as np
import pyarrow as pa

from fastdata.errors import ShardError

BLOCK = 1 << 20  # bytes per cached block
CACHED_BLOCKS = 64  # blocks kept, for all open shards together: 64 MiB at most


class _Blocks:
    """The blocks recently read from every open shard, least recently used first, bounded in number.

    A shard's blocks are dropped by its finalizer, which runs wherever a garbage collection happens: on any
    thread, and perhaps on a thread that holds the lock at that moment (a collection set off by an allocation
    inside `get`, `put` or `drop` itself). Waiting for the lock there waits for ever (a fuzz run hung so: a
    decode thread, a collection inside `drop`, a second `drop`). So `drop` never waits: it notes the shard, and
    whoever holds the lock, now or next (in `drop` or `get`), drops the blocks of every shard noted."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.data: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self.dropped: deque[int] = deque()  # shards whose blocks are to go (appending is atomic: no lock)

    def _drop_noted(self) -> None:
        """Drop the blocks of every shard noted (the lock held); a shard noted meanwhile is dropped too."""
        while self.dropped:
            owner = self.dropped.popleft()
            for key in [k for k in self.data if k[0] == owner]:
                del self.data[key]

    def get(self, key: tuple[int, int]) -> bytes | None:
        with self.lock:
            self._drop_noted()
            block = self.data.get(key)
            if block is not None:
                self.data.move_to_end(key)
            return block

    def put(self, key: tuple[int, int], block: bytes) -> None:
        with self.lock:  # `get` came first, and dropped what was noted
            self.data[key] = block
            while len(self.data) > CACHED_BLOCKS:
                self.data.popitem(last=False)

    def drop(self, owner: int) -> None:
        """Let the blocks of shard `owner` go: now if the lock is free, else when its holder next takes it."""
        self.dropped.append(owner)
        if self.lock.acquire(blocking=False):
            try:
                self._drop_noted()
            finally:
                self.lock.release()


_BLOCKS = _Blocks()
_OWNERS = itertools.count()  # a unique number per opened file: cached blocks never outlive their file's identity


def _release(owner: int, fd: int) -> None:
    """What an open shard holds outside Python's objects: its descriptor and its cached blocks."""
    _BLOCKS.drop(owner)
    os.close(fd)


class ArrowFile:
    def __init__(self, path: Path | str, *, remedy: str = "re-run `fastdata convert` or restore the file") -> None:
        self.path = Path(path)
        self._remedy = remedy
        self._owner = next(_OWNERS)
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError as exc:
            raise ShardError(f"shard {self.path} listed in the manifest is missing") from exc
        except OSError as exc:
            raise ShardError(f"cannot open shard {self.path}: {exc.strerror or exc}") from exc
        # closed by close(), or when the shard is garbage-collected: a loader dropped without close() (a new one
        # per epoch, or per trial of a search) must not leave one descriptor a shard behind each time
        self._released = weakref.finalize(self, _release, self._owner, self._fd)
        self.size = os.fstat(self._fd).st_size
        try:
            self._map = pa.memory_map(str(self.path), "r")
            self._base = self._map.read_buffer(1).address if self.size else 0
            self._map.seek(0)
            self.batches = list(pa.ipc.open_stream(self._map))
            for batch in self.batches:
                batch.validate(full=True)
                _ = batch.schema.names  # field names must be UTF-8: decoded once here rather than on first use
        except (OSError, pa.ArrowInvalid, pa.ArrowIndexError, pa.ArrowException, UnicodeDecodeError) as exc:
            self.close()
            raise ShardError(f"shard {self.path} is truncated, damaged or not an Arrow IPC stream: {exc}; "
                             f"{self._remedy}") from exc

    def file_offset(self, buf: pa.Buffer) -> int:
        """Where a buffer of this shard's record batches starts in the file."""
        offset = buf.address - self._base
        if not 0 <= offset <= self.size or offset + buf.size > self.size:
            raise ShardError(f"shard {self.path}: a buffer lies outside the file (offset {offset}, {buf.size} bytes, "
                             f"file {self.size} bytes); {self._remedy}")
        return offset

    def pread(self, offset: int, length: int) -> bytes:
        data = os.pread(self._fd, length, offset)
        if len(data) != length:
            raise ShardError(f"shard {self.path} shrank while it was read (wanted {length} bytes at {offset}, got "
                             f"{len(data)}); {self._remedy}")
        return data

    def _block(self, k: int) -> bytes:
        block = _BLOCKS.get((self._owner, k))
        if block is None:
            block = self.pread(k * BLOCK, min(BLOCK, self.size - k * BLOCK))
            _BLOCKS.put((self._owner, k), block)
        return block

    def read(self, offset: int, length: int) -> bytes | memoryview:
        """`length` bytes at `offset` through a small cache of blocks read with pread (many short reads of
        nearby data, such as token sequences, cost one system call per block)."""
        if length > BLOCK:
            return self.pread(offset, length)
        k, end = offset // BLOCK, offset + length
        first = self._block(k)
        if end <= (k + 1) * BLOCK:
            return memoryview(first)[offset - k * BLOCK:end - k * BLOCK]
        second = memoryview(self._block(k + 1))[:end - (k + 1) * BLOCK]
        return bytes(memoryview(first)[offset - k * BLOCK:]) + bytes(second)

    def close(self) -> None:
        released = getattr(self, "_released", None)
        if released is not None:
            released()  # runs once: a second close, or the collection after it, does nothing
        self._fd = None
        m = getattr(self, "_map", None)
        if m is not None:
            m.close()


class BinaryColumn:
    """The values of a (large_)binary or (large_)list array of one record batch, read by position with pread."""

    def __init__(self, file: ArrowFile, arr: pa.Array) -> None:
        self.file = file
        large = pa.types.is_large_binary(arr.type) or pa.types.is_large_list(arr.type)
        _, offsets_buf, *rest = arr.buffers()
        # the offsets this array uses (the full validation at open saw that they fit): the buffer may be longer, and
        # a forged length need not be a whole number of offsets
        raw = np.frombuffer(offsets_buf, dtype=np.int64 if large else np.int32, count=arr.offset + len(arr) + 1)
        self.offsets = raw[arr.offset:].astype(np.int64)  # a copy, read at open
        if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
            child = arr.values
            self.itemsize = child.type.bit_width // 8
            data = child.buffers()[1]
            self.data_offset = file.file_offset(data) + child.offset * self.itemsize
        else:
            self.itemsize = 1
            self.data_offset = file.file_offset(rest[0]) if rest and rest[0] is not None else 0

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def read(self, i: int) -> bytes:
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.file.pread(self.data_offset + start * self.itemsize, (end - start) * self.itemsize)
