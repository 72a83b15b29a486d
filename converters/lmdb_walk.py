"""The walk of an LMDB environment's keys, run in a child process (images/lsun.py, converters/child_process.py):
LMDB trusts its file, and a damaged one crashes the process reading it. For each key the child writes where its
value lies in `data.mdb`, so that the parent and the workers read the values with pread and never open the
environment themselves. Kept apart from images/lsun.py so that the child imports only this module (and lmdb,
numpy): it starts in a tenth of a second."""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import Any

DATA = "data.mdb"
RECORD = struct.Struct("<HQQ")  # the child's record of a key: the key's length, its value's offset and length
END = 0xFFFF  # a key length no LMDB key has (511 bytes at most): the child's last record, then its verdict


def walk(path: str) -> None:
    """In a child process: a RECORD and the key for each key of the environment folder `path`, in LMDB's order, then an
    END record and the verdict as JSON: ["", ""] when every key was walked, else [stage, why]."""
    out = sys.stdout.buffer

    def end(stage: str, why: str) -> None:
        out.write(RECORD.pack(END, 0, 0) + json.dumps([stage, why]).encode())

    import lmdb
    import numpy as np

    try:
        env = _open(path)
    except lmdb.Error as exc:
        return end("open", f"{type(exc).__name__}: {str(exc)[:160]}")
    size = os.stat(os.path.join(path, DATA)).st_size
    base = _map_base(os.path.join(path, DATA))
    if base is None:
        return end("map", "where data.mdb is mapped cannot be found here (/proc/self/maps: LSUN's environments are "
                          "read on Linux)")
    try:
        with env.begin(buffers=True) as txn:
            for key, value in txn.cursor():
                length = len(value)
                offset = int(np.frombuffer(value, np.uint8).ctypes.data) - base if length else 0
                if not 0 <= offset <= size - length:
                    return end("walk", f"a value of {length} bytes lies outside data.mdb")
                out.write(RECORD.pack(len(key), offset, length) + bytes(key))
    except lmdb.Error as exc:
        return end("walk", f"{type(exc).__name__}: {str(exc)[:160]}")
    return end("", "")


def _open(path: str) -> Any:
    """The LMDB environment in the folder `path`, read only and without its lock file (a dataset on a read-only
    disk is read too). With readahead: the walk reads every value's pages (the lmdb package touches a value as it
    gives it), and in the order the keys were written, which readahead turns into long reads."""
    import lmdb

    return lmdb.open(path, readonly=True, lock=False, readahead=True, meminit=False, max_readers=1, subdir=True,
                     create=False)


def _map_base(data: str) -> int | None:
    """The address this process maps the file `data` at from its first byte (Linux's /proc/self/maps: a line of
    `start-end perms offset major:minor inode path`), None when it cannot be told."""
    st = os.stat(data)
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                fields = line.split(maxsplit=5)
                if len(fields) >= 5 and fields[4] == str(st.st_ino) and fields[3] == device and int(fields[2], 16) == 0:
                    return int(fields[0].split("-")[0], 16)
    except OSError:
        return None
    return None
