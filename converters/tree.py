"""Walking a source folder, shared by every kind's discovery: hidden names (a leading '.') are
skipped, symlinks are followed, names are visited in sorted order; train/val/test folders are splits."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

SPLIT_NAMES = ("train", "val", "test")


def visible(names: list[str]) -> list[str]:
    """`names` without hidden ones, sorted."""
    return sorted(n for n in names if not n.startswith("."))


def visible_files(folder: Path) -> Iterator[Path]:
    """Every visible file under `folder`, top-down (a folder's files, then its subfolders'), names sorted."""
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        dirnames[:] = visible(dirnames)
        for name in visible(filenames):
            yield Path(dirpath) / name


def first_files(src: Path, limit: int) -> Iterator[Path]:
    """The first `limit` files `visible_files` finds: what a kind's cheap `detect` looks at."""
    return itertools.islice(visible_files(src), limit)


def class_names(folders: list[Path]) -> tuple[str, ...]:
    """Sorted names of the visible subfolders of `folders` (ImageFolder-style classes)."""
    return tuple(sorted({c for f in folders for c in visible(os.listdir(f)) if (f / c).is_dir()}))


def broken_symlink(path: Path) -> str | None:
    """The rejection reason for a symlink whose target is gone, else None."""
    if path.is_symlink() and not path.exists():
        return f"broken symlink (points to {os.readlink(path)})"
    return None
