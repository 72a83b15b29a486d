"""A source's tree as every kind's discovery reads it: train/val/test folders are splits (and the names Kaggle's
zips give them; class folders: class_folders.py), what lies outside them is rejected, and `Collector` gathers
inputs, rejections and source identity; a kind says how one file is taken. The walk itself (links, loops,
special files, folders that cannot be read) is walk.py's.
"""

from __future__ import annotations

import abc
import logging
import os
import posixpath
import re
from pathlib import Path

from converters.sample import Rejection, WorkItem
from converters.walk import NOT_FOLLOWED, Walk, display, is_folder, is_read, listed, readable
from fastdata.errors import ConvertError
from fastdata.manifest_splits import SPLIT_ALIASES, canonical_split

log = logging.getLogger(__name__)

SPLIT_WORD = re.compile(r"(?<![^-_.])(train|training|val|valid|validation|test|testing)(?![^-_.])", re.IGNORECASE)
# what rejections name; no colon in it: a summary groups reasons by their words before the first colon, and cut
# "not inside a split folder (train, val, test, or an alias" there
SPLIT_FOLDERS = "train, val, test, or an alias of theirs such as training, valid, validation, testing"
# words that may stand beside a split's in a split folder's name: Kaggle's `training_set/` and `test_set/` (Cat and
# Dog), `seg_train/` and `seg_test/` (Intel Image Classification), `train_data/`, `Train_Set/`, `test_images/`
SPLIT_FILLERS = frozenset({"set", "data", "dataset", "images", "imgs", "seg", "split"})
SPLIT_HELP = ("split name for a source without train/val/test folders (default: train); a table, or a text file of "
              "many documents, whose name names a split goes there")  # --split, shared by the kinds
def outside_rejections(src: Path, names: list[str], reason: str, *, follow: bool, private: bool) -> list[Rejection]:
    """The rejections (split "") of the top-level entries `names` of `src`, which lie outside what a layout reads:
    each file, or every visible file under a folder. A folder is walked apart from the discovery's own walk, which
    must still take the files that a link here reaches too."""
    out = []
    for name in names:
        path = src / name
        files = [p for p, _ in Walk(follow=follow, private=private).files(path)] if is_folder(path, follow=follow) \
            else [path]
        out.extend(Rejection("", display(p.relative_to(src).as_posix()), reason) for p in files)
    return out


def under_source(path: str, src: Path) -> str:
    """`path` (a POSIX path from a labels or captions table) relative to `src` when it is absolute and lies under
    `src`, as written or through the links `src` is reached by (a table exported with full paths); else `path`
    unchanged. Callers only look the result up among the files a walk of `src` found: nothing is opened by it."""
    if not path.startswith("/"):
        return path
    norm = posixpath.normpath(path)
    for root in {src.absolute().as_posix().rstrip("/"), src.resolve().as_posix().rstrip("/")}:
        if norm.startswith(root + "/"):
            return norm[len(root) + 1:]
    return path


def splits_named(name: str) -> set[str]:
    """The splits whose words a file's name holds, each set apart by '-', '_', '.' or the name's ends
    (`train-00000-of-00004.parquet`, timm's `imagenet1k-validation-0000.tar`, PTB's `ptb.valid.txt`); a word
    inside another (`pretrain`, `contest`) is none."""
    return {SPLIT_ALIASES.get(m.group(1).lower(), m.group(1).lower()) for m in SPLIT_WORD.finditer(name)}


def split_of_folder(name: str) -> str | None:
    """The split a folder named `name` holds: `train`, `val` or `test`, whatever the case, and their aliases
    (`Training`, `valid`, `validation`, `Testing`: Kaggle's and Hugging Face's names), alone or with words of
    SPLIT_FILLERS set apart by '_', '-' or a space (`training_set`, `seg_test`, `Train Set`); None for any other
    name (`test_tube`, `pretrain`, `train_2`: a class's)."""
    split = canonical_split(name)
    if split is not None:
        return split
    words = re.split(r"[-_ ]", name.lower())
    splits = [w for w in words if w not in SPLIT_FILLERS]
    return canonical_split(splits[0]) if len(splits) == 1 else None


def split_folders(names: list[str]) -> dict[str, str]:
    """The split folders among the folder `names`, folder -> split (`split_of_folder`). Two folders of one split
    (`val` and `validation`) are an error: which one would be meant?"""
    found: dict[str, str] = {}
    for name in sorted(names):
        split = split_of_folder(name)
        if split is None:
            continue
        other = next((f for f, s in found.items() if s == split), None)
        if other is not None:
            raise ConvertError(f"the folders {other!r} and {name!r} both name the split {split!r}: merge them or "
                               "rename one")
        found[name] = split
    return found


def split_folders_in(src: Path, names: list[str], *, follow: bool) -> dict[str, str]:
    """The split folders among the folder `names` of `src` (`split_folders`), each as the path under `src` of the
    folder that holds its contents: itself, or the one folder of its own split it holds and nothing beside (a
    Kaggle zip's `seg_train/seg_train/`, `training_set/training_set/`, `train/train/`), so that this inner folder's
    name is not read as the split's one class."""
    found = {}
    for folder, split in split_folders(names).items():
        inner = _sole_entry(src / folder)
        if inner is not None and split_of_folder(inner) == split and is_folder(src / folder / inner, follow=follow):
            log.info("%s/ holds nothing but %s/: the %s split is read from it", display(folder), display(inner), split)
            folder = f"{folder}/{inner}"
        found[folder] = split
    return found


def _sole_entry(folder: Path) -> str | None:
    """The one name a discovery reads in `folder` (as `listed`, less its look for fastdata's outputs), without
    listing a split folder of a million images to the end; None for none, more than one, or a folder that cannot be
    read (the walk rejects it, saying why)."""
    names: list[str] = []
    try:
        with os.scandir(folder) as found:
            for entry in found:
                if is_read(entry.name):
                    names.append(entry.name)
                    if len(names) > 1:
                        return None
    except OSError:
        return None
    return names[0] if names else None


class Collector(abc.ABC):
    """What a discovery gathers: work items per split, rejections, and the identity of the source."""

    def __init__(self, src: Path, *, follow: bool) -> None:
        self.src = src
        self.walk = Walk(follow=follow)
        self.items: dict[str, list[WorkItem]] = {}
        self.rejected: list[Rejection] = []
        self.identity: list[list[object]] = []

    def rel(self, path: Path) -> str:
        """How the manifest names `path`: relative to the source, always valid UTF-8."""
        try:
            return display(path.relative_to(self.src).as_posix())
        except ValueError:
            return display(path)

    @abc.abstractmethod
    def add_file(self, path: Path, split: str, label: int | None) -> None:
        """Take one regular file as input(s) of `split`, or record why it cannot be."""

    def take(self, path: Path, split: str, label: int | None) -> None:
        """`add_file` for a file that is safe to open; the rejection of anything else."""
        problem = self.walk.problem(path)
        if problem is not None:
            self.rejected.append(Rejection(split, self.rel(path), problem))
        else:
            self.add_file(path, split, label)

    def add_tree(self, folder: Path, split: str, label: int | None) -> None:
        for path, problem in self.walk.files(folder, root=self.src):
            if problem is not None:
                self.rejected.append(Rejection(split, self.rel(path), problem))
            else:
                self.add_file(path, split, label)

    def reject(self, path: Path, split: str, reason: str) -> None:
        """Reject `path`, or every visible file under it when it is a folder (nothing is opened). A link the walk
        does not follow is rejected as that, wherever it is."""
        if path.is_symlink() and not self.walk.follow:
            self.rejected.append(Rejection(split, self.rel(path), NOT_FOLLOWED))
        elif path.is_dir():
            for f, _ in Walk(follow=self.walk.follow).files(path):
                self.rejected.append(Rejection(split, self.rel(f), reason))
        else:
            self.rejected.append(Rejection(split, self.rel(path), reason))

    def reject_outside(self, names: list[str], split_dirs: list[str]) -> None:
        """Reject the top-level entries of a split-folder source that are not split folders (`split_dirs`, paths
        under the source: `split_folders_in`)."""
        tops = {d.split("/")[0] for d in split_dirs}
        for name in names:
            if name not in tops:
                path = self.src / name
                # the folder's name, as text (a name that is not UTF-8 crashed the plan's JSON); a link not followed
                # is not looked into
                split = display(name) if is_folder(path, follow=self.walk.follow) else ""
                self.reject(path, split, f"not inside a split folder ({SPLIT_FOLDERS})")

    def reject_beside(self, taken: list[Path], split: str, reason: str) -> None:
        """Reject what lies in the folders from the source down to the folders and files `taken`, beside them (a
        dataset's archives and readme beside its folders)."""
        around = {p for t in taken for p in [t, *t.parents] if p == self.src or self.src in p.parents}
        for parent in sorted(around):
            if parent in taken or not parent.is_dir() or not readable(parent):  # (nothing to be seen beside)
                continue
            for name in listed(parent):
                if parent / name not in around:
                    self.reject(parent / name, split, reason)

    def warn_unused(self, classes: tuple[str, ...], what: str) -> None:
        """One warning naming the classes no input has (the first 10 of them, and how many more)."""
        used = {c for items in self.items.values() for it in items  # a --multi-label input's label: its classes
                for c in (it.label if isinstance(it.label, tuple | list) else (it.label,))}
        empty = [c for i, c in enumerate(classes) if i not in used]
        if len(empty) == 1:
            log.warning("class %r has no %s", empty[0], what)
        elif empty:
            more = f" and {len(empty) - 10} more" if len(empty) > 10 else ""
            log.warning("%d classes have no %s: %s%s", len(empty), what, ", ".join(map(repr, empty[:10])), more)
