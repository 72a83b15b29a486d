"""Untrusted `.npy` members (volume shards, the token ids of image-text shards): the header is parsed alone and
checked against the member's size before any array exists. `np.load` allocates whatever shape a forged header
claims before it reads a byte, and numpy's header parser raises SyntaxError or tokenize's TokenError as well as
ValueError; here every bad header is one ValueError."""

from __future__ import annotations

import io
import math

import numpy as np

MAX_HEADER_BYTES = 4096  # the header (magic, version, dict, padding) of any array fastdata writes is far smaller


def npy_header(head: bytes) -> tuple[tuple[int, ...], np.dtype, bool, int]:
    """(shape, dtype, Fortran order, header length) of an npy member that begins with `head` (its first
    MAX_HEADER_BYTES at least); ValueError unless the header parses. The dtype is the caller's to judge."""
    stream = io.BytesIO(head)
    try:
        version = np.lib.format.read_magic(stream)
        read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(f"npy format version {version} is not 1.0 or 2.0")
        shape, fortran, dtype = read(stream, max_header_size=MAX_HEADER_BYTES)
    except Exception as exc:  # noqa: BLE001 - numpy parses the header with ast: ValueError, SyntaxError, TokenError
        raise ValueError(f"unreadable npy header: {exc}") from exc
    return tuple(int(v) for v in shape), dtype, bool(fortran), stream.tell()


def check_fills(shape: tuple[int, ...], dtype: np.dtype, start: int, size: int) -> None:
    """ValueError unless the array the header describes fills the member of `size` bytes exactly."""
    if start + math.prod(shape) * dtype.itemsize != size:
        raise ValueError(f"its npy member holds {size} bytes, not what the header's {dtype} {list(shape)} needs")


def load_npy(data: bytes) -> np.ndarray:
    """The array of a whole npy member (read-only, no copy), its header checked first: no object dtype (nothing
    is unpickled), data filling the member exactly."""
    shape, dtype, fortran, start = npy_header(data[:MAX_HEADER_BYTES])
    if dtype.hasobject:
        raise ValueError(f"an npy array of {dtype} holds Python objects")
    check_fills(shape, dtype, start, len(data))
    flat = np.frombuffer(data, dtype=dtype, count=math.prod(shape), offset=start)
    return flat.reshape(shape, order="F" if fortran else "C")
