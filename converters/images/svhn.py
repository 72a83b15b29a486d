"""SVHN's cropped digits as torchvision's `SVHN` downloads them: `train_32x32.mat`, `test_32x32.mat` and
`extra_32x32.mat`, MATLAB 5 files read by scipy's `loadmat` (as torchvision reads them).

- A file holds `X`, uint8 [32, 32, 3, N] (rows, columns, channels, images), and `y`, N labels. SVHN writes the digit
  0 as 10; it is read as 0, as torchvision reads it, so the classes are `0` ... `9`.
- Any MATLAB 5 file holding an `X` of that layout (one channel or three, any side up to 4,096) and a `y` is read the
  same way; one without `y` converts with `--unlabeled`.
- Splits: a file's name gives its split (`test_32x32.mat`: `test`). `extra_32x32.mat`, which SVHN gives "to use as
  extra training data", names none, so it goes to `--split`: `train` by default, with `train_32x32.mat`.
- A MATLAB 7.3 file is HDF5, which `loadmat` does not read: it is rejected, saying so.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from converters.table_files import TableError

MAT_HEAD = b"MATLAB "  # what the text every MATLAB 5 and 7.3 file starts with starts with
MAX_FILE = 1 << 31  # bytes of one file (SVHN's extra_32x32.mat: 1.3 GB)
MAX_SIDE = 4096
INSTALL = "MATLAB files are read with scipy: pip install 'fastdata[nifti]' (or pip install scipy)"
# what scipy's reader raises on a broken file: besides its own errors, whatever its code runs into (a fuzzed file
# made it raise UnboundLocalError, a NameError)
_MAT_ERRORS = (OSError, ValueError, TypeError, KeyError, IndexError, OverflowError, MemoryError, EOFError, zlib.error,
               NotImplementedError, AttributeError, RecursionError, NameError)


def is_mat(path: Path) -> bool:
    """Whether the file at `path` is named `.mat` and starts as a MATLAB 5 or 7.3 file does."""
    if path.suffix.lower() != ".mat":
        return False
    try:
        with open(path, "rb") as f:
            return f.read(len(MAT_HEAD)) == MAT_HEAD
    except OSError:
        return False


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
    out: list[int | None] = []
    for v in values.tolist():
        whole = isinstance(v, int) or float(v).is_integer()
        out.append(None if not whole else 0 if int(v) == 10 else int(v))  # SVHN's 10 is the digit 0
    return out


def read_digits(path: Path, *, labelled: bool) -> Digits:
    """The images (and, when `labelled`, the labels) of the MATLAB file at `path`; TableError saying why it holds
    none."""
    try:
        from scipy.io import loadmat
        from scipy.io.matlab import MatReadError, matfile_version
    except ImportError as exc:
        raise TableError(INSTALL) from exc
    size = path.stat().st_size
    if size > MAX_FILE:
        raise TableError(f"a file of {size} bytes, more than an SVHN file has ({MAX_FILE})")
    try:
        with open(path, "rb") as f:
            if matfile_version(f)[0] == 2:
                raise TableError("a MATLAB 7.3 file (HDF5), which is not read: save it with -v7 (SVHN's files are "
                                 "MATLAB 5)")
        held = loadmat(path, variable_names=["X", "y"])
    except (MatReadError, *_MAT_ERRORS) as exc:
        raise TableError(f"not a MATLAB 5 file: {str(exc)[:120] or type(exc).__name__}") from exc
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
