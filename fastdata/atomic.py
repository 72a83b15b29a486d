"""Atomic file writes and content hashes: write `*.tmp`, fsync, then `os.replace`."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

CHUNK = 1 << 20


def tmp_path(path: Path) -> Path:
    """The temporary name a file is written under before it is renamed into place: unique to the process, so
    two attempts at the same file (a retried task, a duplicate one on another machine) never share it."""
    return path.with_name(f"{path.name}.{os.getpid()}.tmp")


def commit(tmp: Path, path: Path) -> None:
    """Flush `tmp` to disk and rename it to `path` in one atomic step."""
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    tmp = tmp_path(path)
    tmp.write_bytes(data)
    commit(tmp, path)


def dumps_json(obj: Any) -> str:
    """Canonical JSON: sorted keys, fixed indentation, so equal content gives equal bytes."""
    return json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_json_atomic(path: Path, obj: Any) -> None:
    write_bytes_atomic(path, dumps_json(obj).encode("utf-8"))


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_json(path: Path) -> Any:
    """The JSON value in `path`, or None when the file is missing or unreadable (state files we wrote)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
