"""SVHN's cropped digits as torchvision's `SVHN` downloads them: `train_32x32.mat`, `test_32x32.mat` and
`extra_32x32.mat`, MATLAB 5 files read by scipy's `loadmat` (as torchvision reads them).

- A file holds `X`, uint8 [32, 32, 3, N] (rows, columns, channels, images), and `y`, N labels. SVHN writes the digit
  0 as 10; it is read as 0, as torchvision reads it, so the classes are `0` ... `9`. (Only labels of 1 ... 10 with
  no 0 are read so: another file's 10 stays a class of its own.)
- Any MATLAB 5 file holding an `X` of that layout (one channel or three, any side up to 4,096) and a `y` is read the
  same way; one without `y` converts with `--unlabeled`.
- Splits: a file's name gives its split (`test_32x32.mat`: `test`). `extra_32x32.mat`, which SVHN gives "to use as
  extra training data", names none, so it goes to `--split`: `train` by default, with `train_32x32.mat`.
- A MATLAB 7.3 file is HDF5, which `loadmat` does not read: it is rejected, saying so (converters/mat_files.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from converters.mat_files import load_mat
from converters.table_files import TableError

MAX_FILE = 1 << 31  # bytes of one file (SVHN's extra_32x32.mat: 1.3 GB)
MAX_SIDE = 4096


@dataclass(frozen=True)
class Digits:
    images: np.ndarray  # uint8 [N, rows, columns, channels]
    labels: list[int | None] | None  # None: the file has no `y`; an item None: a value that is no class id


def _labels(y: object, count: int) -> list[int | None]:
    if not isinstance(y, np.ndarray) or y.dtype.kind not in "uif":
        what = f"{y.dtype} array" if isinstance(y, np.ndarray) else type(y).__name__
        raise TableError(f"'y' is no array of numbers ({what})")
    values = y.reshape(-1)
    if len(values) != count:
        raise TableError(f"{count} images and {len(values)} labels in 'y'")
    out = [int(v) if isinstance(v, int) or float(v).is_integer() else None for v in values.tolist()]
    digits = set(out) - {None}
    if 0 not in digits and max(digits, default=0) == 10:  # SVHN's labels, 1 ... 10: its 10 is the digit 0
        out = [0 if v == 10 else v for v in out]
    return out


def read_digits(path: Path, *, labelled: bool) -> Digits:
    """The images (and, when `labelled`, the labels) of the MATLAB file at `path`; TableError saying why it holds
    none."""
    held = load_mat(path, ["X", "y"], limit=MAX_FILE, what="an SVHN file")
    x = held.get("X")
    if (not isinstance(x, np.ndarray) or x.dtype != np.uint8 or x.ndim != 4 or x.shape[2] not in (1, 3)
            or not (0 < x.shape[0] <= MAX_SIDE and 0 < x.shape[1] <= MAX_SIDE)):
        what = f"{x.dtype} {list(x.shape)}" if isinstance(x, np.ndarray) else type(x).__name__
        raise TableError(f"no images: 'X' is no uint8 array of [rows, columns, 1 or 3 channels, images] ({what})")
    images = x.transpose(3, 0, 1, 2)
    if not labelled:
        return Digits(images, None)
    if "y" not in held:
        raise TableError("no labels: the file holds no 'y'; --unlabeled converts it without labels")
    return Digits(images, _labels(held["y"], len(images)))
