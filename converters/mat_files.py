"""MATLAB files, read with scipy's `loadmat` as torchvision reads them: SVHN's images (images/svhn.py), Oxford
Flowers-102's labels and splits (images/flowers102.py), Stanford Dogs' lists (images/stanford_dogs.py) and Stanford
Cars' devkit (images/stanford_cars.py). MATLAB 5
files are read; a MATLAB 7.3 file is HDF5, which `loadmat` does not read, and is refused, saying so. Only the
variables asked for are loaded, in a child process: scipy's reader crashes the process (a segmentation fault) on
some damaged files, and such a file is then refused like any other that is no MATLAB file."""

from __future__ import annotations

import pickle
import subprocess
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from converters.child_process import run_python
from converters.table_files import TableError

MAT_HEAD = b"MATLAB "  # what the text every MATLAB 5 and 7.3 file starts with starts with
INSTALL = "MATLAB files are read with scipy: pip install 'fastdata[nifti]' (or pip install scipy)"
# what scipy's reader raises on a broken file: besides its own errors, whatever its code runs into (a fuzzed file
# made it raise UnboundLocalError, a NameError)
_MAT_ERRORS = (OSError, ValueError, TypeError, KeyError, IndexError, OverflowError, MemoryError, EOFError, zlib.error,
               NotImplementedError, AttributeError, RecursionError, NameError)


def cell_text(cell: object) -> str | None:
    """The one string a MATLAB cell or struct field holds (`loadmat` gives an array of one str), None for anything
    else: a number, several strings, a blank one."""
    if isinstance(cell, np.ndarray) and cell.size == 1 and cell.dtype.kind == "U":
        text = str(cell.reshape(-1)[0])
        return text if text.strip() else None
    return None


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
    no such file, or bigger than `limit` bytes (`what`, a file of the dataset, has no more). scipy reads it in a
    child process (`_answer`), whose crash is a TableError too."""
    try:
        from scipy.io import loadmat  # noqa: F401 - the child reads with it: scipy must be installed
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
    except (MatReadError, *_MAT_ERRORS) as exc:
        raise TableError(f"not a MATLAB 5 file: {str(exc)[:120] or type(exc).__name__}") from exc
    try:
        proc = run_python(_CHILD, [str(path), *variables], timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise TableError(f"not a MATLAB 5 file scipy can read: it read for more than {CHILD_TIMEOUT_S} s") from exc
    if proc.returncode < 0:
        raise TableError(f"not a MATLAB 5 file scipy can read: its reader crashed on it (signal {-proc.returncode})")
    if proc.returncode != 0:  # an error nobody expected: not hidden as a damaged file
        raise RuntimeError(f"reading the MATLAB file {path} failed: {proc.stderr.decode(errors='replace')[-600:]}")
    kind, value = pickle.loads(proc.stdout)  # (what our own child wrote: `_answer`'s result)
    if kind == "bad":
        raise TableError(value)
    return value


CHILD_TIMEOUT_S = 600  # a file read longer is refused (the 1.3 GB SVHN extra file reads in seconds)
_CHILD = ("import pickle, sys\nfrom converters.mat_files import _answer\n"
          "sys.stdout.buffer.write(pickle.dumps(_answer(sys.argv[1], sys.argv[2:]), protocol=5))")


def _answer(path: str, variables: list[str]) -> tuple[str, Any]:
    """In the child: ("ok", the variables) or ("bad", why the file is no MATLAB 5 file). Any other error is raised,
    and the parent says so."""
    from scipy.io import loadmat
    from scipy.io.matlab import MatReadError

    try:
        return "ok", loadmat(path, variable_names=variables)
    except (MatReadError, *_MAT_ERRORS) as exc:
        return "bad", f"not a MATLAB 5 file: {str(exc)[:120] or type(exc).__name__}"
