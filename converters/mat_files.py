"""MATLAB files, read with scipy's `loadmat` as torchvision reads them: SVHN's images (images/svhn.py) and Oxford
Flowers-102's labels and splits (images/flowers102.py). MATLAB 5 files are read; a MATLAB 7.3 file is HDF5, which
`loadmat` does not read, and is refused, saying so. Only the variables asked for are loaded."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from converters.table_files import TableError

MAT_HEAD = b"MATLAB "  # what the text every MATLAB 5 and 7.3 file starts with starts with
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


def load_mat(path: Path, variables: list[str], *, limit: int, what: str) -> dict[str, Any]:
    """The `variables` the MATLAB 5 file at `path` holds (those it lacks are left out); TableError saying why it is
    no such file, or bigger than `limit` bytes (`what`, a file of the dataset, has no more)."""
    try:
        from scipy.io import loadmat
        from scipy.io.matlab import MatReadError, matfile_version
    except ImportError as exc:
        raise TableError(INSTALL) from exc
    size = path.stat().st_size
    if size > limit:
        raise TableError(f"a file of {size} bytes, more than {what} has ({limit})")
    try:
        with open(path, "rb") as f:
            if matfile_version(f)[0] == 2:
                raise TableError("a MATLAB 7.3 file (HDF5), which is not read: save it with -v7 (the datasets' own "
                                 "files are MATLAB 5)")
        return loadmat(path, variable_names=variables)
    except (MatReadError, *_MAT_ERRORS) as exc:
        raise TableError(f"not a MATLAB 5 file: {str(exc)[:120] or type(exc).__name__}") from exc
