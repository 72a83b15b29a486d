"""LSUN as torchvision's `LSUN` reads it: each category and split an LMDB environment, a folder holding `data.mdb`
(and `lock.mdb`), named `{category}_{split}_lmdb` (`bedroom_train_lmdb/`, `church_outdoor_val_lmdb/`), and the
unlabeled `test_lmdb/`; each value an encoded image (WebP), each key its id. Read where they lie: the lmdb package
walks an environment's keys once, in a child process, and says where each value lies in `data.mdb`; a work item's
payload is that range of the file (`spill.FileRange`), read with one pread by the worker that converts it.

- Classes: the categories of the environments SRC holds, sorted; with all ten, a category's label is torchvision's
  (`LSUN(root, classes="train")` lists them in that order). The split is the name's (`train`, `val`); a name without
  one (`{category}_lmdb`) goes to `--split`. SRC may be one environment itself (`bedroom_train_lmdb/`): its name
  gives its category and split the same way.
- `test_lmdb` has no labels (nor has any environment named by a split alone): beside labelled environments it is one
  rejection saying so; with `--unlabeled` every environment converts without labels (`test_lmdb` into `test`).
- LMDB trusts its file: a damaged `data.mdb` crashes the process that walks it (a segmentation fault), so the walk
  runs in a child (converters/lmdb_walk.py, child_process.py), whose crash rejects that environment. The lmdb
  package reads a value's pages as it gives its place, so the walk reads `data.mdb` once, with readahead; a value's
  place is its address less the address `data.mdb` is mapped at (Linux's /proc/self/maps), and one outside the file
  ends the walk as damage. Elsewhere than Linux an environment is rejected, saying so.
- A value longer than `--max-pixels` allows an image's bytes is rejected unread; an environment whose first value
  is no encoded image (a pickle of another tool's LMDB layout) is rejected whole, saying what it starts with; an
  environment that is damaged, of another LMDB version or empty is rejected with lmdb's reason, and one damaged
  part of the way keeps the keys before. An environment must not be written while it converts (LSUN's never are).
- An environment folder or a `data.mdb` that is a link is not read when links are not followed; files and folders
  beside the environments are rejected.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from converters import lmdb_walk
from converters.child_process import run_python
from converters.kind import Discovery
from converters.sample import Rejection, WorkItem
from converters.spill import FileRange, read_range
from converters.tree import outside_rejections, splits_named
from converters.walk import NOT_FOLLOWED, is_folder, listed
from fastdata.errors import ConvertError, MissingDependencyError, require

DATA = lmdb_walk.DATA
LOCK = "lock.mdb"
NAME = re.compile(r"^(?P<stem>.+)_lmdb$")
# the first bytes of the image formats the images kind decodes (Pillow's): JPEG, PNG, WebP (RIFF....WEBP), GIF,
# BMP, TIFF (both byte orders)
SIGNATURES = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"RIFF", b"GIF87a", b"GIF89a", b"BM", b"II*\x00", b"MM\x00*")
NO_LABELS = ("its name gives no category, so its images have no labels (LSUN's test set: test_lmdb); convert it "
             "apart with --unlabeled (or every environment, with --unlabeled, without labels)")


_CHILD = "import sys\nfrom converters.lmdb_walk import walk\nwalk(sys.argv[1])\nsys.stdout.buffer.flush()"
CHILD_TIMEOUT_S = 600  # and a second for each 10 MB of data.mdb: a walk that takes longer is refused


def _walked(env: Path) -> tuple[list[tuple[bytes, int, int]], str, str]:
    """(key, offset, length) of each key of the environment folder `env`, and the walk's verdict (stage, why): stage
    "" when every key was walked; "crash" when LMDB crashed the child (no key is then kept)."""
    timeout = CHILD_TIMEOUT_S + (env / DATA).stat().st_size / 10e6
    try:
        proc = run_python(_CHILD, [str(env)], timeout=timeout)
    except subprocess.TimeoutExpired:
        return [], "crash", f"the walk of its keys took more than {timeout:.0f} s; no key of it is read"
    if proc.returncode < 0:
        return [], "crash", (f"LMDB's reader crashed on it (signal {-proc.returncode}): a damaged environment; no key "
                             "of it is read")
    if proc.returncode != 0:  # an error nobody expected: not hidden as a damaged environment
        raise RuntimeError(f"walking the LMDB environment {env} failed: {proc.stderr.decode(errors='replace')[-600:]}")
    out, pos, entries = proc.stdout, 0, []
    while pos + lmdb_walk.RECORD.size <= len(out):
        length, offset, size = lmdb_walk.RECORD.unpack_from(out, pos)
        pos += lmdb_walk.RECORD.size
        if length == lmdb_walk.END:
            stage, why = json.loads(out[pos:])
            return entries, stage, why
        entries.append((out[pos:pos + length], offset, size))
        pos += length
    return entries, "walk", "the walk ended without its verdict"


def found(src: Path) -> list[Path]:
    """The LMDB environment folders SRC holds (`*_lmdb/` with a data.mdb), or SRC when it is one; [] else."""
    if (src / DATA).is_file():
        return [src]
    return [src / n for n in listed(src) if NAME.match(n) and (src / n / DATA).is_file()]


def _category_and_split(name: str, default: str) -> tuple[str | None, str]:
    """(category, split) of an environment folder's name: `bedroom_train_lmdb` -> (bedroom, train), `test_lmdb` ->
    (None, test): no category, no labels; `bedroom_lmdb` -> (bedroom, `default`)."""
    m = NAME.match(name)
    stem = m["stem"] if m else name
    head, _, last = stem.rpartition("_")
    named = splits_named(last)
    if len(named) != 1:
        return stem, default
    return (head or None), named.pop()


def _what(head: bytes) -> str:
    """What a value starting with `head` is, as a rejection names it."""
    if head[:1] == b"\x80":
        return "a Python pickle (another tool's LMDB layout: images and labels pickled together)"
    return f"bytes {head[:8]!r}"


class _Reader:
    def __init__(self, src: Path, max_bytes: int) -> None:
        self.src, self.max_bytes = src, max_bytes
        self.items: dict[str, list[WorkItem]] = {}
        self.rejected: list[Rejection] = []
        self.identity: list[list[object]] = []

    def rel(self, env: Path) -> str:
        """How an environment is named: by its folder's name (SRC itself, or a folder in it)."""
        return env.name

    def read(self, env: Path, split: str, label: int | None) -> None:
        """Take each key of the environment folder `env` as an image of `split` and `label`."""
        where = self.rel(env)
        entries, stage, why = _walked(env)
        data = str(env / DATA)
        self.identity.append([split, where, label, (env / DATA).stat().st_size, len(entries)])
        head = read_range(data, entries[0][1], min(8, entries[0][2])) if entries else b""
        if entries and not head.startswith(SIGNATURES):
            self.rejected.append(Rejection(split, where, f"its values are no encoded images: the first is "
                                                         f"{_what(head)}"))
            return
        for key, offset, length in entries:
            rel = f"{where}#{_key_text(key)}"
            if length > self.max_bytes:
                self.rejected.append(Rejection(split, rel, f"a value of {length} bytes, more than an image of "
                                                           f"--max-pixels may hold ({self.max_bytes})"))
                continue
            self.items.setdefault(split, []).append(WorkItem(split=split, rel=rel, source=data, label=label,
                                                             payload=FileRange(data, offset, length)))
        if stage == "open":
            self.rejected.append(Rejection(split, where, f"not a readable LMDB environment ({why})"))
        elif stage in ("map", "crash"):
            self.rejected.append(Rejection(split, where, why))
        elif stage:
            kept = f"; the {len(entries)} keys before are kept" if entries else ""
            self.rejected.append(Rejection(split, where, f"damaged LMDB environment ({why}){kept}"))
        elif not entries:
            self.rejected.append(Rejection(split, where, "an LMDB environment of no images (no key)"))


def _key_text(key: bytes) -> str:
    """A key as a sample's source names it: LSUN's are hex ids; any other key that is not printable ASCII is shown
    in hex."""
    text = key.decode("ascii", errors="replace")
    return text if text.isprintable() and "\ufffd" not in text and "#" not in text else "0x" + key.hex()


def discover_lsun(src: Path, split: str, *, unlabeled: bool, follow: bool, max_bytes: int) -> Discovery | None:
    """The images of the LMDB environments SRC holds (or is), each read where it lies; None when it holds none."""
    envs = found(src)
    if not envs:
        return None
    try:
        require("lmdb", "lmdb")
    except MissingDependencyError as exc:
        raise ConvertError(f"{src} holds LMDB environments (LSUN), which are read with lmdb: {exc}") from exc
    reader = _Reader(src, max_bytes)
    named: list[tuple[Path, str | None, str]] = []
    for env in envs:
        category, env_split = _category_and_split(env.name, split)
        if env != src and not is_folder(env, follow=follow) or not follow and (env / DATA).is_symlink():
            reader.rejected.append(Rejection(env_split, reader.rel(env), NOT_FOLLOWED))
        else:
            named.append((env, category, env_split))
    labelled = not unlabeled and any(c is not None for _, c, _ in named)
    classes = tuple(sorted({c for _, c, _ in named if c is not None})) if labelled else ()
    for env, category, env_split in named:
        if labelled and category is None:
            reader.rejected.append(Rejection(env_split, reader.rel(env), NO_LABELS))
        else:
            reader.read(env, env_split, classes.index(category) if labelled else None)
    if src not in envs:
        taken = {e.name for e in envs}
        beside = [n for n in listed(src) if n not in taken]
        reader.rejected += outside_rejections(src, beside, "beside the LMDB environments: not read", follow=follow,
                                              private=False)
    else:
        beside = [n for n in listed(src) if n not in (DATA, LOCK)]
        reader.rejected += outside_rejections(src, beside, "in the LMDB environment: not read", follow=follow,
                                              private=False)
    return Discovery(reader.items, classes, reader.rejected, "lsun", reader.identity)
