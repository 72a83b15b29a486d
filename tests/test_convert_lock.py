"""The destination lock of a conversion (`converters/lock.py`): who holds it is written into it, a second writer
is refused with that holder named, and the lock goes with its holder."""

from __future__ import annotations

import fcntl
import os
import re
import socket
from pathlib import Path

import pytest

from converters.lock import exclusive_lock
from fastdata.errors import ConvertError

REFUSED = ("DST is being written by another `fastdata convert` ({holder}); wait for it to finish, or stop it (its "
           "rerun resumes)")


def test_the_holder_is_written_into_the_lock_and_named_to_a_second_writer(tmp_path: Path) -> None:
    path = tmp_path / "dst" / ".partial" / "lock"  # its folders are made
    path.parent.mkdir(parents=True)
    path.write_text("x" * 400)  # a longer holder line from an earlier run is replaced, not overwritten in part
    with exclusive_lock(path, what="DST"):
        holder = path.read_text()
        assert re.fullmatch(rf"host {re.escape(socket.gethostname())}, pid {os.getpid()}, since \w{{3}} \w{{3}} "
                            r"[ \d]\d \d\d:\d\d:\d\d \d{4}", holder), holder
        with pytest.raises(ConvertError) as err, exclusive_lock(path, what="DST"):
            pass
        assert str(err.value) == REFUSED.format(holder=holder)
        assert err.value.__cause__ is None and err.value.__suppress_context__
    with exclusive_lock(path, what="DST"):  # released when its holder is done
        pass


def test_a_lock_held_without_a_holder_line_names_another_process(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held by a writer that has not written its line yet
        with pytest.raises(ConvertError) as err, exclusive_lock(path, what="DST"):
            pass
        assert str(err.value) == REFUSED.format(holder="another process")
    finally:
        os.close(fd)


def test_the_folder_of_the_lock_is_made(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "lock"
    with exclusive_lock(path, what="DST"):
        assert path.is_file()
