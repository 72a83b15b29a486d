"""Walking a source folder, shared by every kind's discovery: hidden names (a leading '.') are
skipped, symlinks are followed, names are visited in sorted order; train/val/test folders are splits.
`Collector` gathers inputs, rejections and source identity; a kind says how one file is taken."""

from __future__ import annotations

import abc
import itertools
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from converters.sample import Rejection, WorkItem

log = logging.getLogger(__name__)

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


def split_classes(src: Path, split_dirs: list[str]) -> tuple[str, ...]:
    """The classes of a `SRC/<split>/<class>/` tree: train's class folders, or every split's without train."""
    return class_names([src / s for s in (["train"] if "train" in split_dirs else split_dirs)])


def broken_symlink(path: Path) -> str | None:
    """The rejection reason for a symlink whose target is gone, else None."""
    if path.is_symlink() and not path.exists():
        return f"broken symlink (points to {os.readlink(path)})"
    return None


class Collector(abc.ABC):
    """What a discovery gathers: work items per split, rejections, and the identity of the source."""

    def __init__(self, src: Path) -> None:
        self.src = src
        self.items: dict[str, list[WorkItem]] = {}
        self.rejected: list[Rejection] = []
        self.identity: list[list[object]] = []

    @abc.abstractmethod
    def add_file(self, path: Path, split: str, label: int | None) -> None:
        """Take one file as input(s) of `split`, or record why it cannot be."""

    def add_tree(self, folder: Path, split: str, label: int | None) -> None:
        for path in visible_files(folder):
            self.add_file(path, split, label)

    def reject(self, path: Path, split: str, reason: str) -> None:
        """Reject `path`, or every visible file under it when it is a folder."""
        for f in visible_files(path) if path.is_dir() else [path]:
            self.rejected.append(Rejection(split, f.relative_to(self.src).as_posix(), reason))

    def reject_outside(self, names: list[str], split_dirs: list[str]) -> None:
        """Reject the top-level entries of a split-folder source that are not split folders."""
        for name in names:
            if name not in split_dirs:
                path = self.src / name
                self.reject(path, name if path.is_dir() else "", f"not inside a split folder ({'/'.join(SPLIT_NAMES)})")

    def warn_unused(self, classes: tuple[str, ...], what: str) -> None:
        used = {it.label for items in self.items.values() for it in items}
        for i, c in enumerate(classes):
            if i not in used:
                log.warning("class %r has no %s", c, what)
