"""Two digit datasets torchvision downloads as text: USPS (`usps.bz2`, `usps.t.bz2`) and SEMEION (`semeion.data`),
each image 16 x 16 grey pixels on a line of numbers.

- USPS's files are LIBSVM lines, bzip2-compressed: `LABEL 1:VALUE 2:VALUE ... 256:VALUE`, the label 1 ... 10 and
  each pixel -1 ... 1. As torchvision's `USPS` reads them, the class is the label less one (0 ... 9) and a pixel is
  `(value + 1) / 2 * 255` in float32, cut to a byte; a pixel a line does not list is 0 (LIBSVM's sparse lines: grey).
  `usps.bz2` is the training file (`--split`), `usps.t.bz2` the test file.
- SEMEION's `semeion.data` (UCI) is 1,593 lines of 256 pixels, 0 or 1, then ten flags, one of them 1: the digit.
  As torchvision's `SEMEION` reads it, a pixel is `value * 255` and the class is the place of the 1.
- A line that is none of these (a label or value that is no number, a pixel out of range, an index twice or past
  256, digit flags that are not one 1) is a rejection of its image (`file#line`); the lines around it are kept. Lines
  longer than 64 KiB and files of more than a million lines are cut there, the rest rejected: bzip2 packs a
  repeated line a million times into a few hundred bytes.
"""

from __future__ import annotations

import bz2
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from converters.table_files import TableError

USPS = ("usps.bz2", "usps.t.bz2")  # torchvision's names: the training file (--split's), the test file
SEMEION = "semeion.data"
SIDE = 16
PIXELS = SIDE * SIDE
MAX_LINE = 1 << 16  # bytes of one line (USPS's are about 3 KB)
MAX_LINES = 1 << 20  # lines of one file (USPS: 7,291 and 2,007; SEMEION: 1,593)
Row = tuple[int, "np.ndarray | str", "int | None"]  # (line number, the image or why there is none, its class)


def is_digit_text(path: Path) -> bool:
    return path.name in USPS or path.name == SEMEION


def rows(path: Path) -> Iterator[Row]:
    """Each line's image and class; TableError (after the lines before it) where the file cannot be read on."""
    parse = _usps if path.name in USPS else _semeion
    try:
        with (bz2.open(path, "rb") if path.name in USPS else open(path, "rb")) as f:
            for number in range(1, MAX_LINES + 1):
                line = f.readline(MAX_LINE + 1)
                if not line:
                    return
                if len(line) > MAX_LINE:
                    raise TableError(f"line {number} is longer than {MAX_LINE} bytes: not a line of pixels")
                if line.strip():
                    yield (number, *parse(line))
            if f.readline(1):
                raise TableError(f"more than {MAX_LINES} lines: the rest is not read")
    except (OSError, EOFError, ValueError) as exc:
        raise TableError(f"cannot be read on: {type(exc).__name__}: {exc}") from exc


def _usps(line: bytes) -> tuple[np.ndarray | str, int | None]:
    tokens = line.split()
    try:
        label = int(tokens[0])
    except ValueError:
        return f"the label {_shown(tokens[0])} is no whole number", None
    if not 1 <= label <= 10:
        return f"the label {label}: USPS's are 1 ... 10", None
    values = np.zeros(PIXELS, np.float32)
    seen = set()
    for token in tokens[1:]:
        index, _, value = token.partition(b":")
        try:
            i, v = int(index), float(value)
        except ValueError:
            return f"{_shown(token)} is no INDEX:VALUE pair", None
        if not 1 <= i <= PIXELS or i in seen:
            return f"the index {i} is {'listed twice' if i in seen else f'outside 1 ... {PIXELS}'}", None
        if not -1 <= v <= 1:
            return f"the value {_shown(value)} of pixel {i} is outside -1 ... 1", None
        seen.add(i)
        values[i - 1] = v
    return ((values + 1) / 2 * 255).astype(np.uint8).reshape(SIDE, SIDE), label - 1


def _semeion(line: bytes) -> tuple[np.ndarray | str, int | None]:
    tokens = line.split()
    if len(tokens) != PIXELS + 10:
        return f"{len(tokens)} numbers, not SEMEION's {PIXELS} pixels and 10 digit flags", None
    try:
        values = np.array([float(t) for t in tokens])
    except ValueError:
        return "a value that is no number", None
    pixels, flags = values[:PIXELS], values[PIXELS:]
    if not ((pixels >= 0) & (pixels <= 1)).all():
        return "a pixel outside 0 ... 1", None
    ones = np.flatnonzero(flags)
    if len(ones) != 1 or flags[ones[0]] != 1:
        return f"digit flags {b' '.join(tokens[PIXELS:])[:60].decode('ascii', 'replace')}: not one 1", None
    return (pixels * 255).astype(np.uint8).reshape(SIDE, SIDE), int(ones[0])


def _shown(token: bytes) -> str:
    return repr(token[:20].decode("utf-8", "replace"))
