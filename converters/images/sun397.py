"""SUN397 as torchvision's `SUN397` reads it (`SUN397/`): its images filed under a letter,
`a/abbey/sun_aaalbzqrimafwbiv.jpg`, `a/apartment_building/outdoor/sun_aabvrhdtmwnvnshy.jpg` ..., and `ClassName.txt`,
the 397 classes as `/a/abbey` lines.

- The classes are ClassName.txt's lines without their letter (`abbey`, `apartment_building/outdoor`), in its order:
  torchvision's classes and labels. An image's class is the folder holding it. Read as a tree, the classes had been
  the letters (`a`, `b`, ...), without a word.
- The dataset has one split: `--split`, or, with `--split-list`, the lists of its Partitions archive
  (`Training_01.txt`, `Testing_01.txt`: `/a/abbey/sun_aaalbzqrimafwbiv.jpg` lines) or `--val-fraction`.
- A ClassName.txt line that is no `/letter/name`, or a class twice, stops the conversion, naming the line. Images
  in no listed class folder (a letter folder, a folder ClassName.txt leaves out) are rejections, and so is what
  lies beside `SUN397/` when the source holds it.
"""

from __future__ import annotations

import re
from pathlib import Path

from converters.images.list_text import list_text
from converters.images.listed_files import ImageCollector
from converters.kind import Discovery
from converters.sample import Rejection
from fastdata.errors import ConvertError

FOLDER = "SUN397"  # what the archive unpacks to
NAMES = "ClassName.txt"
LINE = re.compile(r"/([a-z])/([^/\s]+(?:/[^/\s]+)*)")  # `/a/apartment_building/outdoor`
MAX_FILE = 1 << 20  # bytes of ClassName.txt read (the real one is about 9 KB)


def found(src: Path) -> Path | None:
    """The dataset's folder (SRC, or its `SUN397/`) when it holds ClassName.txt whose first line is a `/a/abbey`
    line; None for any other source."""
    for root in (src / FOLDER, src):
        if (root / NAMES).is_file():
            with open(root / NAMES, "rb") as f:
                first = f.readline(4096).decode("utf-8", "replace").strip()
            if LINE.fullmatch(first):
                return root
    return None


def read_classes(root: Path) -> dict[str, str]:
    """Each class's folder under the dataset's (`a/abbey`) -> its name (`abbey`), in ClassName.txt's order."""
    path = root / NAMES
    out: dict[str, str] = {}
    names: set[str] = set()
    for n, line in enumerate(list_text(path, MAX_FILE, "SUN397's ClassName.txt").splitlines(), 1):
        if not line.strip():
            continue
        match = LINE.fullmatch(line.strip())
        if match is None:
            raise ConvertError(f"{path}:{n}: expected a class as /letter/name (/a/abbey), got {line[:200]!r}")
        if match[2] in names:
            raise ConvertError(f"{path}:{n}: the class {match[2]} is named twice")
        out[f"{match[1]}/{match[2]}"] = match[2]
        names.add(match[2])
    return out


def discover_sun397(src: Path, split: str, follow: bool) -> Discovery | None:
    """Every image in a class folder of ClassName.txt, in `split`; None for a source that is not SUN397."""
    root = found(src)
    if root is None:
        return None
    folders = read_classes(root)
    index = {folder: i for i, folder in enumerate(folders)}
    col = ImageCollector(src, follow=follow)
    for path, problem in col.walk.files(root, root=src if root != src else None):
        if path.parent == root and path.name == NAMES:
            continue
        folder = path.parent.relative_to(root).as_posix()
        if problem is not None:
            col.rejected.append(Rejection(split, col.rel(path), problem))
        elif folder not in index:
            col.rejected.append(Rejection(split, col.rel(path), f"in no class folder {NAMES} names"))
        else:
            col.add_file(path, split, index[folder])
    col.reject_beside([root], split, f"beside {FOLDER}/: not read")
    classes = tuple(folders.values())
    col.warn_unused(classes, "image")
    return Discovery(col.items, classes, col.rejected, "sun397", col.identity)
