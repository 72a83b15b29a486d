"""Untrusted `.npy` members (fastdata/npy.py): the header is judged before any array exists. `np.load` on these
bytes raised tokenize's TokenError (a finding of `make fuzz` on image-text shards, seeds 2, 3, 777 and
20261125) or allocated the shape a forged header claims."""

from __future__ import annotations

import io
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from fastdata.errors import ShardError
from fastdata.images.reader import RawSample
from fastdata.npy import load_npy, npy_header


def npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def forged(header: bytes, data: bytes = b"") -> bytes:
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


@pytest.mark.parametrize("arr", [
    np.arange(12, dtype=np.int32).reshape(3, 4),
    np.arange(6, dtype=">u2").reshape(2, 3),
    np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)),
    np.zeros((0, 5), dtype=np.int64),
])
def test_an_array_loads_as_np_load_reads_it(arr):
    got = load_npy(npy(arr))
    want = np.load(io.BytesIO(npy(arr)))
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize(("data", "message"), [
    (forged(b"{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3, '"), "unreadable npy header: "),
    (forged(b"{'descr': '<i4', 'fortran_order': False, 'shape': (1099511627776,), }\n", b"\0" * 16),
     r"its npy member holds \d+ bytes, not what the header's int32 \[1099511627776\] needs"),
    (b"\x93NUMPY\x09\x00" + npy(np.zeros(2))[8:], "unreadable npy header: .*version"),
    (b"not an npy file at all", "unreadable npy header: "),
    (npy(np.zeros(3, dtype=np.int32))[:-2], "not what the header's int32 \\[3\\] needs"),
])
def test_a_bad_header_is_one_value_error_before_any_allocation(data, message):
    tracemalloc.start()
    with pytest.raises(ValueError, match=message):
        load_npy(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1 << 20  # np.load would have allocated the 4 TiB the second header claims


def test_an_object_array_is_refused_unread():
    buf = io.BytesIO()
    np.save(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="holds Python objects"):
        load_npy(buf.getvalue())
    shape, dtype, fortran, start = npy_header(buf.getvalue())
    assert dtype.hasobject and shape == (1,) and not fortran and start % 64 == 0


def test_the_stored_ids_of_a_pair_with_a_header_that_does_not_tokenize_are_a_shard_error():
    from fastdata.pairs.captions import _stored_ids

    bad = forged(b"{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3, '")
    raw = RawSample(data=b"", label=-1, key="k", shard=Path("s.tar"), extra=(b"a", bad), index=0)
    with pytest.raises(ShardError, match=r"^sample k in s.tar: its token ids are not a readable .npy \(unreadable npy "
                                         r"header: "):
        _stored_ids(raw, 1, 0, -1, 2**63)
