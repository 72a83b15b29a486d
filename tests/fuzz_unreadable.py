"""The `unreadable` fuzz target (tests/mutation_fuzz.py): a valid source of any kind (an image tree of each layout,
a dataset with its own lists, a text corpus, DICOM series, NIfTI and other volume files, image-text pairs) with
one or two of its folders that cannot be listed (no read permission, a dropped network mount), surveyed as
`fastdata convert --dry-run` surveys it: kind detected, options parsed, the discovery run.

The oracle: the survey's discovery, or a fastdata error (a usage error of --kind aside); never the raw OSError of
a look into the folder to tell the layout. Where a discovery is made, each folder that could not be listed is said:
a rejection of it, of a folder above it, or of a file in it (its files may still be taken where a dataset's
lists name them, which open without a listing). The run is root's, who may read anything: the denial is simulated
where folders are listed (os.scandir, os.listdir) for the case's duration only."""

from __future__ import annotations

import contextlib
import errno
import os
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

DENIALS = (errno.EACCES, errno.EPERM, errno.ENOTCONN, errno.EIO)


@contextlib.contextmanager
def unlisted(folders: dict[str, int]) -> Iterator[None]:
    """While inside: listing any of `folders` (path -> errno) fails with its errno."""
    real_scandir, real_listdir = os.scandir, os.listdir

    def refuse(path: Any) -> None:
        code = None if isinstance(path, int) else folders.get(os.fsdecode(os.fspath(path)))
        if code is not None:
            raise OSError(code, os.strerror(code), os.fspath(path))

    def scandir(path: Any = ".") -> Any:
        refuse(path)
        return real_scandir(path)

    def listdir(path: Any = ".") -> Any:
        refuse(path)
        return real_listdir(path)

    os.scandir, os.listdir = scandir, listdir  # type: ignore[assignment]
    try:
        yield
    finally:
        os.scandir, os.listdir = real_scandir, real_listdir  # type: ignore[assignment]


def _said(locked: Path, src: Path, discovery: Any) -> bool:
    """Whether a rejection of `discovery` names `locked`, a folder above it, or a file in it."""
    rel = locked.relative_to(src).as_posix()
    for r in discovery.rejected:
        for source in (r.source, *(f for f, _ in r.also)):
            if source == rel or rel.startswith(source.rstrip("/") + "/") or source.startswith(rel + "/"):
                return True
    return False


def survey_unreadable(src: Path, rng: random.Random, options: list[str], kind: str) -> str:
    """Lock one or two folders of the source `src` (already made, of `kind`), survey it with the convert `options`
    (and --kind, in half the cases: auto-detection refuses a source with folders it cannot read), and check the
    oracle. Returns what was done; raises AssertionError for a finding (the caller makes it one)."""
    from converters import get_kind
    from converters.engine import ConvertConfig
    from converters.survey import local_source, survey
    from fastdata.cli import build_parser
    from fastdata.cli.convert import _detect
    from fastdata.errors import FastdataError

    folders = sorted(p for p in src.rglob("*") if p.is_dir() and not p.is_symlink())
    chosen = rng.sample(folders, min(len(folders), rng.choice((1, 1, 2))))
    locked = {str(p): rng.choice(DENIALS) for p in chosen}
    shown = ", ".join(f"{Path(p).relative_to(src).as_posix()} ({errno.errorcode[c]})" for p, c in locked.items())
    args = build_parser().parse_args(["convert", str(src), str(src.parent / "never-written"), "--dry-run", *options,
                                      *(["--kind", kind] if rng.random() < 0.5 else [])])
    with unlisted(locked):
        try:
            path = local_source(str(src))
            told = get_kind(_detect(path, args) if args.kind == "auto" else args.kind)
            found = survey(told, path, options=told.options_from_args(args), config=ConvertConfig())
        except FastdataError as exc:
            return f"locked {shown}: refused: {str(exc)[:80]}"
        except OSError as exc:
            raise AssertionError(f"locked {shown}: {type(exc).__name__}: {exc}") from exc
    unsaid = [p for p in chosen if not _said(p, src, found)]
    if unsaid and not _taken_whole(unsaid, src, found, kind):
        raise AssertionError(f"locked {shown}: {', '.join(str(p.relative_to(src)) for p in unsaid)} neither "
                             "rejected nor read (what it holds is lost unsaid)")
    return f"locked {shown}: {sum(map(len, found.splits.values()))} inputs, {len(found.rejected)} rejected"


def _taken_whole(folders: list[Path], src: Path, discovery: Any, kind: str) -> bool:
    """Whether every visible file in `folders` is an input of `discovery` (named in a dataset's lists, opened
    without a listing), or a folder holds nothing visible at all. Of images, only image files count: a dataset's
    lists (`meta/train.txt`) are read, not converted."""
    taken = {it.rel for items in discovery.splits.values() for it in items}
    for folder in folders:
        for p in folder.rglob("*"):
            rel = p.relative_to(src).as_posix()
            if not p.is_file() or any(part.startswith(".") for part in p.relative_to(src).parts) or \
                    kind == "images" and p.suffix.lower() in LISTS:
                continue
            if not any(t == rel or rel.startswith(t + "/") for t in taken):
                return False
    return True


LISTS = (".txt", ".csv", ".json", ".jsonl", ".mat")


def copier(origin: Path) -> Callable[[Path], None]:
    """A maker of the source: a copy of `origin`."""
    return lambda dst: shutil.copytree(origin, dst, symlinks=True)


TREES = {  # image trees of each layout a discovery tells by looking into folders (file -> what it holds)
    "class": ("cat/a.jpg", "cat/x/y/b.jpg", "dog/c.jpg", "owl/d.jpg"),
    "split/class": ("train/cat/a.jpg", "train/dog/b.jpg", "val/cat/c.jpg", "val/dog/d.jpg", "test/e.jpg"),
    "split/loose": ("train/a.jpg", "val/b.jpg", "test/c.jpg"),
    "class/split": ("cat/train/a.jpg", "cat/val/b.jpg", "dog/train/c.jpg", "dog/val/d.jpg"),
    "top folder": ("data/train/cat/a.jpg", "data/train/dog/b.jpg", "data/val/cat/c.jpg", "data/README.txt"),
    "kaggle": ("seg_train/seg_train/cat/a.jpg", "seg_train/seg_train/dog/b.jpg", "seg_test/seg_test/cat/c.jpg"),
    "tiny imagenet": ("train/n01/images/a.jpg", "train/n02/images/b.jpg", "val/images/c.jpg", "val/images/d.jpg",
                      "val/images/e.jpg"),
}
TINY_LABELS = "c.jpg\tn01\t0\t0\t1\t1\nd.jpg\tn02\t0\t0\t1\t1\ne.jpg\tn01\t0\t0\t1\t1\n"


def tree_maker(layout: str, jpg: bytes) -> Callable[[Path], None]:
    """A maker of the image tree `layout` (TREES), each image `jpg`."""
    def make(dst: Path) -> None:
        for name in TREES[layout]:
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            (dst / name).write_bytes(jpg if name.endswith(".jpg") else b"notes\n")
        if layout == "tiny imagenet":
            (dst / "val" / "val_annotations.txt").write_text(TINY_LABELS)
    return make
