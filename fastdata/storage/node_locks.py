"""The locks the processes of one node share in a shard cache's folder (cache.py), and how a file there names the
live or dead process it belongs to.

- `flock` on a file (`lock`): exclusive or shared, waiting or not; a lock goes with the descriptor that holds it,
  so a process that dies lets go of its locks.
- `Budget`: `locks/.budget`, held exclusively while the cache's bytes are counted and space reserved or freed.
- `Slot`: one of `NODE_DOWNLOADS` files `locks/.slot-<k>`, held exclusively while downloading, so that at most
  that many downloads run at once on a node, across every process.
- `pid_of` and `alive`: users, schedules and temporary files are named after their process (`<pid>-<n>...`); those
  of a process that is gone are stale.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from fastdata.exiting import stop_if_exiting
from fastdata.numerals import parse_int

WAIT_POLL_S = 0.2
PID_DIGITS = 10  # a pid_t holds at most 2**31 - 1
NODE_DOWNLOADS = 4  # downloads in flight per node, across every process using the cache


def pid_of(name: str) -> int | None:
    """The process id a user, schedule or temporary file is named after (`<pid>`, `<pid>-<n>`, `<pid>-<n>.json...`)."""
    return parse_int(name.split(".", 1)[0].split("-", 1)[0], max_digits=PID_DIGITS)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: more than a pid_t holds, no process's
        return False
    except PermissionError:
        return True
    return True


def lock(fd: int, mode: int, *, block: bool = True) -> bool:
    """`flock(fd, mode)`; without `block`, False when another descriptor holds a lock in the way."""
    try:
        fcntl.flock(fd, mode | (0 if block else fcntl.LOCK_NB))
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


class Budget:
    """`with Budget(path):` holds `path` exclusively (the cache's `locks/.budget`)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        lock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # closing releases the lock


class Slot:
    """`with Slot(locks):` holds one of the node's download slots in the folder `locks`, waiting for one."""

    def __init__(self, locks: Path) -> None:
        self.locks = locks

    def __enter__(self) -> None:
        while True:
            for k in range(NODE_DOWNLOADS):
                fd = os.open(self.locks / f".slot-{k}", os.O_RDWR | os.O_CREAT, 0o644)
                if lock(fd, fcntl.LOCK_EX, block=False):
                    self.fd = fd
                    return
                os.close(fd)
            stop_if_exiting("the wait for a download slot")
            time.sleep(WAIT_POLL_S / 4)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)
