"""Images kept as CSV tables of pixel values, as Kaggle hands out MNIST-like datasets: Digit Recognizer's `train.csv`
(`label,pixel0,...,pixel783`), Fashion-MNIST's and Sign Language MNIST's `*_train.csv` (`label,pixel1,...`),
`mnist_train.csv` (`label,1x1,...,28x28`, or no header at all: a label and 784 values a row), and FER2013's
`fer2013.csv` (`emotion,pixels,Usage`: the pixels one space-separated cell, the split in `Usage`).

- `pixel_layout` reads a file's first line: the pixel columns (a square number of them, at least 16, in row-major
  order), the label column (`label`, or another name of LABEL_COLUMNS; none: an unlabeled table, Digit Recognizer's
  `test.csv`) and the split column (`Usage`, `split`). A table with any other column is none of these.
- `pixel_rows` reads the rows one at a time: each row's grey image (uint8, side x side) or why it has none (a value
  that is not a whole number from 0 to 255, a missing cell), its label, its split.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from converters.csv_lines import csv_lines
from converters.table_files import TableError
from fastdata.manifest_splits import canonical_split

PIXEL = re.compile(r"^(pixel_?\d+|\d+x\d+)$", re.IGNORECASE)
LABEL_COLUMNS = ("label", "emotion", "class", "target", "y")
SPLIT_COLUMNS = ("usage", "split")
PACKED = "pixels"  # FER2013: every pixel of a row in one cell, space-separated
FER_SPLITS = {"training": "train", "publictest": "val", "privatetest": "test"}
MIN_PIXELS = 16
MAX_SIDE = 256  # pixels a side (a table of 784 columns a row is MNIST's 28 x 28)
MAX_LINE = 1 << 20  # bytes of a row: 65,536 values of up to 3 digits and a comma, and some; a longer one stops
FIRST_LINE = 1 << 20  # bytes of a first line read to tell a table of pixels
INTEGER = re.compile(r"^\s*[-+]?\d+\s*$")


@dataclass(frozen=True)
class PixelLayout:
    """Where a table's pixels, label and split are: column indices (the label's and split's None when absent)."""

    header: bool
    pixels: tuple[int, ...]  # the pixel columns, or the one packed column
    packed: bool
    side: int
    label: int | None
    label_name: str | None  # as messages name it
    split: int | None


def _side(n: int) -> int | None:
    side = math.isqrt(n)
    return side if side * side == n and n >= MIN_PIXELS and side <= MAX_SIDE else None


def pixel_layout(cells: list[str]) -> PixelLayout | None:
    """The layout of a table of pixels whose first row is `cells`; None when it is no such table."""
    names = [c.strip().lower() for c in cells]
    if all(INTEGER.match(c) for c in cells):  # no header: a label, then the pixels
        side = _side(len(cells) - 1)
        return None if side is None else PixelLayout(False, tuple(range(1, len(cells))), False, side, 0, "column 0",
                                                     None)
    pixels = tuple(i for i, n in enumerate(names) if PIXEL.match(n))
    packed = not pixels and PACKED in names
    side = 0 if packed else _side(len(pixels))  # a packed cell's count is each row's own
    if packed:
        pixels = (names.index(PACKED),)
    elif side is None:
        return None
    label = next((names.index(n) for n in LABEL_COLUMNS if n in names), None)
    split = next((names.index(n) for n in SPLIT_COLUMNS if n in names), None)
    if len(names) != len(pixels) + (label is not None) + (split is not None):
        return None  # a column that is none of these: some other table
    return PixelLayout(True, pixels, packed, side, label,
                       None if label is None else cells[label].strip(), split)


def first_row(path: Path) -> list[str] | None:
    """The cells of a CSV file's first line (None when it cannot be read, or is longer than FIRST_LINE)."""
    try:
        with open(path, "rb") as f:
            line = f.readline(FIRST_LINE + 1)
    except OSError:
        return None
    if len(line) > FIRST_LINE:
        return None
    try:
        return next(csv.reader([line.decode("utf-8-sig").rstrip("\r\n")]), None)
    except (UnicodeDecodeError, csv.Error):
        return None


def table_layout(path: Path) -> PixelLayout | None:
    """The layout of the CSV file at `path`, if it is a table of pixels."""
    if not path.name.lower().endswith(".csv"):
        return None
    cells = first_row(path)
    return None if cells is None else pixel_layout(cells)


@dataclass(frozen=True)
class PixelRow:
    image: np.ndarray | str  # uint8 [side, side], or why the row has none
    label: str | None
    split: str | None  # from the split column; None without one


def _image(values: list[str], side: int) -> np.ndarray | str:
    try:
        pixels = [int(v) for v in values]  # Python's integers: a value of any size is read, and refused below
    except ValueError:
        bad = next((v for v in values if not INTEGER.match(v)), "")
        return f"a pixel value that is no whole number: {bad[:20]!r}"
    low, high = min(pixels), max(pixels)
    if low < 0 or high > 255:
        return f"a pixel value out of 0-255: {str(high if high > 255 else low)[:20]}"
    return np.array(pixels, dtype=np.uint8).reshape(side, side)


def _split(value: str) -> str | None:
    name = value.strip()
    return FER_SPLITS.get(name.lower()) or canonical_split(name)


def pixel_rows(path: Path, layout: PixelLayout) -> Iterator[tuple[int, PixelRow]]:
    """(row number, counted from 0 after the header, the row) for every row of the table at `path`; TableError
    where the file stops being readable (the rows before it were yielded)."""
    done = 0  # rows read
    try:
        with open(path, "rb") as f:
            reader = csv.reader(csv_lines(f, MAX_LINE))
            if layout.header:
                next(reader, None)
            width = max((*layout.pixels, *(i for i in (layout.label, layout.split) if i is not None))) + 1
            for cells in reader:
                n, done = done, done + 1
                if not cells:
                    continue
                if len(cells) < width:
                    yield n, PixelRow(f"{len(cells)} cells, not {width}", None, None)
                    continue
                values = cells[layout.pixels[0]].split() if layout.packed else [cells[i] for i in layout.pixels]
                side = _side(len(values)) if layout.packed else layout.side
                image = _image(values, side) if side else f"{len(values)} pixel values: no square image"
                label = None if layout.label is None else cells[layout.label].strip() or None
                split = None if layout.split is None else (_split(cells[layout.split]) or cells[layout.split])
                yield n, PixelRow(image, label, split)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise TableError(f"unreadable from row {done} on: {type(exc).__name__}: {exc}") from exc
