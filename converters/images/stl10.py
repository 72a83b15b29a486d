"""STL-10's binary files as torchvision's `STL10` downloads them (`stl10_binary/`): `train_X.bin` beside
`train_y.bin`, `test_X.bin` beside `test_y.bin`, `unlabeled_X.bin`, `class_names.txt` and `fold_indices.txt`.

- An `_X.bin` file is images of 96 x 96 pixels one after another, each its red plane, then its green, then its
  blue, each plane column after column (MATLAB's order). A file cut short keeps its whole images.
- A `_y.bin` file is one byte a label, 1 ... 10; `class_names.txt` names class 1 on its first line. Labels are read
  as class ids from 0, as torchvision reads them.
- `unlabeled_X.bin` (100,000 images) has no labels file: beside labelled files it is rejected, saying so; with
  `--unlabeled` every file converts unlabeled, its images in the `train` split (torchvision's `train+unlabeled`).
- `fold_indices.txt` (ten ways of choosing 1,000 training images) is not converted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from converters.table_files import TableError

NAME = re.compile(r"^(?P<stem>.+)_(?P<what>[Xy])\.bin$")
SIDE = 96
IMAGE = 3 * SIDE * SIDE  # bytes of one image
CLASS_NAMES = "class_names.txt"
FOLDS = "fold_indices.txt"
COMPANIONS = (CLASS_NAMES, FOLDS)
MAX_NAMES = 1 << 16  # bytes of class_names.txt
CHUNK = 1024  # images read at a time


@dataclass(frozen=True)
class StlName:
    stem: str  # `train`, `test`, `unlabeled`
    images: bool

    def partner(self, path: Path) -> Path:
        return path.with_name(f"{self.stem}_{'y' if self.images else 'X'}.bin")


def stl_name(name: str) -> StlName | None:
    m = NAME.match(name)
    return None if m is None else StlName(m["stem"], m["what"] == "X")


def is_images_file(path: Path) -> bool:
    """Whether `path` is named as STL-10's images are and holds at least one whole image."""
    name = stl_name(path.name)
    try:
        return name is not None and name.images and path.stat().st_size >= IMAGE
    except OSError:
        return False


def images(path: Path) -> Iterator[np.ndarray]:
    """The whole images of an `_X.bin` file, uint8 [96, 96, 3] each."""
    with open(path, "rb") as f:
        while data := f.read(CHUNK * IMAGE):
            n = len(data) // IMAGE
            planes = np.frombuffer(data, np.uint8, count=n * IMAGE).reshape(n, 3, SIDE, SIDE)
            yield from planes.transpose(0, 3, 2, 1)  # (channel, column, row) -> (row, column, channel)
            if n < CHUNK:
                return


def class_names(path: Path) -> tuple[str, ...]:
    """The class names of `class_names.txt` at `path`, one a line; TableError saying why it names none."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_NAMES + 1)
    except OSError as exc:
        raise TableError(f"{CLASS_NAMES} is unreadable: {exc}") from exc
    if len(data) > MAX_NAMES:
        raise TableError(f"{CLASS_NAMES} is longer than {MAX_NAMES} bytes: not a list of class names")
    try:
        names = tuple(line.strip() for line in data.decode("utf-8").splitlines())
    except UnicodeDecodeError as exc:
        raise TableError(f"{CLASS_NAMES} is no UTF-8 text") from exc
    while names and not names[-1]:
        names = names[:-1]
    if not names or not all(names):
        raise TableError(f"{CLASS_NAMES} names no class on a line of its own")
    return names


def labels(path: Path, count: int, classes: int, *, cut: bool) -> list[int | str]:
    """The labels of the `_y.bin` file at `path` for the `count` whole images of its images file, as class ids from
    0, or the reason one is none; TableError when the file does not hold a label an image (it may hold more when the
    images file is `cut` short)."""
    try:
        size = path.stat().st_size
        if size < count or (size > count and not cut):
            raise TableError(f"{count} images and {size} labels in {path.name}")
        with open(path, "rb") as f:
            values = f.read(count)
    except OSError as exc:
        raise TableError(f"{path.name} is unreadable: {exc}") from exc
    return [v - 1 if 1 <= v <= classes else f"label {v} in {path.name} is no class of {CLASS_NAMES} (1-{classes})"
            for v in values]
