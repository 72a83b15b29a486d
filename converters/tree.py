"""Walking a source folder, shared by every kind's discovery: hidden names (a leading '.') are skipped,
names are visited in sorted order; train/val/test folders are splits (class folders: class_folders.py).
`Collector` gathers inputs, rejections and source identity; a kind says how one file is taken.

Containment: only regular files are ever opened. Symbolic links are the user's own choice and are
followed to regular files and folders (`follow=False`, `--no-follow-symlinks`, rejects them instead,
for trees from someone else); every real file is taken once however many links reach it, a link back
into a folder being walked (a loop) is rejected, and FIFOs, devices and sockets are rejected without
being opened, so nothing can block or stream forever.
"""

from __future__ import annotations

import abc
import errno
import itertools
import logging
import os
import posixpath
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from converters.sample import Rejection, WorkItem
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
NOT_FOLLOWED = "symbolic link not followed (--no-follow-symlinks)"
# the folder a zip made on macOS (Finder's "Compress", Kaggle's uploads) unpacks beside its files: `._NAME` resource
# forks mirroring the tree, never data; read as a class before (empty, sorted before lower-case names: their labels
# one too high)
MACOS_METADATA = "__MACOSX"
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device"}


UNREADABLE = "unreadable folder"  # the walk's rejection of a folder it cannot list ("unreadable folder: why")
AROUND = "symlink to a folder that holds the source"  # a link to `/` in a class folder walked the whole machine


def listed(folder: Path) -> list[str]:
    """The names a discovery reads in `folder`: the visible ones, sorted, less macOS's archive metadata
    (MACOS_METADATA) and what fastdata wrote there (a dataset, a private report: outputs.py)."""
    from converters.outputs import may_be_output, written_by_fastdata  # lazy: outputs.py imports this module

    with os.scandir(folder) as found:  # a file's type comes with its name: no stat for each of a million images
        entries = sorted(found, key=lambda e: e.name)
    if any(e.name == MACOS_METADATA for e in entries):
        log.info("%s/%s/ skipped: the resource forks a zip made on macOS holds beside its files, no data",
                 display(folder), MACOS_METADATA)
    return [e.name for e in entries if _is_read(e.name)
            and not (may_be_output(e) and written_by_fastdata(Path(folder) / e.name))]


_PERMISSION = " (the user who converts needs read and search permission on it and its folders: chmod -R u+rX)"
_DROPPED = " (a network or FUSE mount that has dropped, or a failing disk: remount it and try again)"
_TOO_DEEP = f" (its path is longer than the {os.pathconf('/', 'PC_PATH_MAX'):,} bytes the system takes: nest it less " \
    "deeply)"
_MENDS = {errno.EACCES: _PERMISSION, errno.EPERM: _PERMISSION, errno.ENOTCONN: _DROPPED, errno.ESTALE: _DROPPED,
          errno.EIO: _DROPPED, errno.ENAMETOOLONG: _TOO_DEEP}
_MENDS_SAID = {os.strerror(code): words for code, words in _MENDS.items()}  # by the words of the failure


def unlistable(folder: Path) -> str | None:
    """Why `folder` cannot be listed, with what mends it ('Permission denied (the user who converts needs ...)');
    None when it can be, or is no folder."""
    try:
        with os.scandir(folder):
            return None
    except (FileNotFoundError, NotADirectoryError):
        return None  # (said where it matters: a source that does not exist, a file)
    except OSError as exc:
        return f"{exc.strerror or exc}{_MENDS.get(exc.errno, '')}"


def mend(why: str) -> str:
    """What mends the failure a walk's rejection gives as `why` ('Permission denied'), as `unlistable` words it
    (' (the user who converts needs ...)'); '' for one it has no advice for."""
    return _MENDS_SAID.get(why, "")


def readable(folder: Path) -> bool:
    """Whether the names in the folder `folder` can be listed. A discovery that looks into folders to tell the
    layout leaves a folder it cannot read to the walk, which rejects it saying why ('unreadable folder: Permission
    denied'), instead of stopping on it."""
    return unlistable(folder) is None


def listed_or_refused(folder: Path, what: str) -> list[str]:
    """`listed(folder)` for a folder whose names a layout needs (`what` says what they are); ConvertError saying why
    for one that cannot be read: converted without them, the layout would be misread (a label lost, a class
    missing)."""
    problem = unlistable(folder)
    if problem is not None:
        raise ConvertError(f"{display(folder)} cannot be read: {problem}; {what}")
    return listed(folder)


def _is_read(name: str) -> bool:
    """Whether a discovery reads what is named `name`: not a hidden file or folder, nor MACOS_METADATA."""
    return not name.startswith(".") and name != MACOS_METADATA


def display(path: Path | str) -> str:
    """A path as text that is always valid UTF-8 (undecodable bytes of a file name shown as \\xNN)."""
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


@dataclass
class Walk:
    """The state of one discovery's walk: whether links are followed, and the real files already taken.
    `private`: reasons never show a path (a link's target, the first path of a file), for sources whose
    paths may identify people (DICOM exports name folders after patients)."""

    follow: bool = True
    private: bool = False
    seen_files: dict[tuple[int, int], Path] = field(default_factory=dict)

    def _show(self, path: Path | str) -> str:
        return "a path withheld" if self.private else display(path)

    def problem(self, path: Path) -> str | None:
        """Why the entry at `path` is not a file to take (None: a regular file, not taken before)."""
        try:
            lst = os.lstat(path)
        except OSError as exc:
            return f"unreadable: {exc.strerror or exc}"
        if stat.S_ISLNK(lst.st_mode):
            if not self.follow:
                return NOT_FOLLOWED
            try:
                st = os.stat(path)
            except OSError:
                try:
                    return f"broken symlink (points to {self._show(os.readlink(path))})"
                except OSError as exc:  # (gone since: a folder of temporary files)
                    return f"unreadable: {exc.strerror or exc}"
        else:
            st = lst
        kind = stat.S_IFMT(st.st_mode)
        if kind in _KINDS:
            return f"{_KINDS[kind]}, not a regular file: never opened"
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        first = self.seen_files.setdefault((st.st_dev, st.st_ino), path)
        if first != path:
            return f"the same file as {self._show(first)} (reached through a link): taken once"
        return None

    def files(self, folder: Path, *, root: Path | None = None) -> Iterator[tuple[Path, str | None]]:
        """(path, problem) of every visible entry under `folder` that is not a folder, top-down (a folder's
        files, then its subfolders'), names sorted. Folders reached through links are walked once, never in
        a loop (a link to `folder` or to any folder between `root` and it is one); what cannot be walked is
        reported as the problem of that path."""
        ancestors = []
        if root is not None and root in folder.parents:
            between = reversed(folder.relative_to(root).parents[:-1])  # below root, above folder, top-down
            for parent in [root, *(root / p for p in between)]:
                st = os.stat(parent)
                ancestors.append((st.st_dev, st.st_ino))
        yield from self._files(folder, ancestors=tuple(ancestors), top_real=os.path.realpath(folder))

    def _files(self, top: Path, ancestors: tuple[tuple[int, int], ...],
               top_real: str) -> Iterator[tuple[Path, str | None]]:
        # the folders still to walk, each with the (device, inode) of the folders above it, the next on top: a loop,
        # not a call a folder (a chain of a thousand nested folders passed Python's recursion limit, RecursionError).
        # `top_real`: the real path of `top`; a link to a folder that holds it is not followed (the walk would take
        # all that lies around the source: a link to `/` took the whole machine)
        stack = [(top, ancestors)]
        while stack:
            folder, above = stack.pop()
            try:
                st = os.stat(folder)
                names = listed(folder)
            except OSError as exc:
                yield folder, f"{UNREADABLE}: {exc.strerror or exc}"
                continue
            here = (*above, (st.st_dev, st.st_ino))
            subfolders = []
            for name in names:
                path = folder / name
                is_link = os.path.islink(path)
                if is_link and not self.follow:
                    yield path, NOT_FOLLOWED
                    continue
                if os.path.isdir(path):
                    try:
                        target = os.stat(path)
                    except OSError as exc:  # gone since it was listed (a folder of /proc, of temporary files)
                        yield path, f"{UNREADABLE}: {exc.strerror or exc}"
                        continue
                    if (target.st_dev, target.st_ino) in here:
                        target_path = self._show(os.path.realpath(path))
                        yield path, f"symlink loop: points back to {target_path}, a folder being walked"
                        continue
                    real = os.path.realpath(path) if is_link else ""  # (a folder itself lies below the source)
                    if real and top_real.startswith(real.rstrip(os.sep) + os.sep):  # `/`, a home folder
                        yield path, (f"{AROUND}: {self._show(real)} (followed, the walk would take all that lies "
                                     "around the source)")
                        continue
                    subfolders.append(path)
                    continue
                yield path, self.problem(path)
            stack.extend((sub, here) for sub in reversed(subfolders))  # the first subfolder walked next, whole


def is_folder(path: Path, *, follow: bool) -> bool:
    """A folder to walk into: a real one, or a link to one when links are followed."""
    return path.is_dir() and (follow or not path.is_symlink())


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


def first_files(src: Path, limit: int) -> Iterator[Path]:
    """The first `limit` regular files `Walk.files` takes under `src`: what a kind's cheap `detect` looks at."""
    return itertools.islice((p for p, problem in Walk().files(src) if problem is None), limit)


def first_unreadable(src: Path, limit: int) -> list[tuple[Path, str]]:
    """(folder, why) of the folders under `src` that cannot be read, among the walk's first `limit` paths: what kind
    detection names rather than tell a kind from the rest."""
    walked = itertools.islice(Walk().files(src), limit)
    found = [(p, problem.partition(": ")[2]) for p, problem in walked if problem and problem.startswith(UNREADABLE)]
    return [(p, why) for p, why in found if why != os.strerror(errno.ENOENT)]  # (one gone since hides nothing)


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
                if _is_read(entry.name):
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
