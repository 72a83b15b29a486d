"""Walking a source folder, shared by every kind's discovery: the names a discovery reads in a folder (`listed`:
hidden names and macOS's archive metadata skipped, sorted), every file under a folder (`Walk`), and what a folder
that cannot be listed is said as (`unlistable`, `readable`, `listed_or_refused`).

Containment: only regular files are ever opened. Symbolic links are the user's own choice and are
followed to regular files and folders (`follow=False`, `--no-follow-symlinks`, rejects them instead,
for trees from someone else); every real file is taken once however many links reach it, a link back
into a folder being walked (a loop) is rejected, and so is a link to a folder that holds the source (`/`);
FIFOs, devices and sockets are rejected without being opened, so nothing can block or stream forever.
The walk is a loop, not a call a folder: a chain of folders of any depth is walked.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fastdata.errors import ConvertError

log = logging.getLogger(__name__)

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
    return [e.name for e in entries if is_read(e.name)
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


def is_read(name: str) -> bool:
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


def first_files(src: Path, limit: int) -> Iterator[Path]:
    """The first `limit` regular files `Walk.files` takes under `src`: what a kind's cheap `detect` looks at."""
    return itertools.islice((p for p, problem in Walk().files(src) if problem is None), limit)


def first_unreadable(src: Path, limit: int) -> list[tuple[Path, str]]:
    """(folder, why) of the folders under `src` that cannot be read, among the walk's first `limit` paths: what kind
    detection names rather than tell a kind from the rest."""
    walked = itertools.islice(Walk().files(src), limit)
    found = [(p, problem.partition(": ")[2]) for p, problem in walked if problem and problem.startswith(UNREADABLE)]
    return [(p, why) for p, why in found if why != os.strerror(errno.ENOENT)]  # (one gone since hides nothing)
