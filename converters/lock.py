"""One writer per destination: an exclusive, non-blocking lock held for a whole conversion.

The lock is an `flock` on a small file that also names its holder (host, pid, start time), so a second
`fastdata convert` into the same destination is refused at once with who holds it, instead of two runs
writing the same shards. The kernel releases the lock when its process dies (even by kill -9), so a
crashed run never leaves a stale lock behind; the rerun takes it and resumes.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from fastdata.errors import ConvertError


@contextlib.contextmanager
def exclusive_lock(path: Path, *, what: str) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = os.pread(fd, 300, 0).decode("utf-8", "replace").strip() or "another process"
            raise ConvertError(f"{what} is being written by another `fastdata convert` ({holder}); wait for it to "
                               "finish, or stop it (its rerun resumes)") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"host {socket.gethostname()}, pid {os.getpid()}, since {time.ctime()}".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
