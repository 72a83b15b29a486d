"""CIFAR-10 and CIFAR-100 as their Python versions unpack (the folders torchvision's `CIFAR10` and `CIFAR100`
download): `cifar-10-batches-py/data_batch_1` ... `data_batch_5`, `test_batch` and `batches.meta`;
`cifar-100-python/train`, `test` and `meta`.

- A batch is a pickled dict: `data`, a uint8 array of N rows of 3,072 bytes (the red plane of a 32x32 image, then
  the green, then the blue), and `labels` (CIFAR-100: `fine_labels` and `coarse_labels`), N class ids. The meta
  file names the classes in id order (`label_names`; `fine_label_names`, `coarse_label_names`).
- Pickles can run code when loaded. They are loaded by an unpickler that finds only numpy's array reconstruction
  (what the files hold) and refuses any other global, naming it; nothing else in a file is ever called. A file is
  checked to be what a batch is (a dict, a uint8 array of N x 3,072, N labels) before any of it is used.
"""

from __future__ import annotations

import importlib.util
import io
import pickle
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from converters.table_files import TableError

BATCH = re.compile(r"^(data_batch_\d+|test_batch|train|test)$")  # CIFAR-10's batches, CIFAR-100's two files
META = {"batches.meta": "label_names", "meta": "fine_label_names"}  # meta file -> the default label's names
LABELS = {"batches.meta": "labels", "meta": "fine_labels"}  # meta file -> the default label field of its batches
SIDE = 32
ROW = 3 * SIDE * SIDE
MAX_FILE = 1 << 30  # bytes of one pickle read (CIFAR-100's train file: 158 MB)
PICKLE_PROTOCOL = re.compile(rb"^\x80[\x02-\x05]")  # what a pickle written with protocol 2 or later starts with
_ARRAYS = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
           ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}  # (the last: bytes pickled by Python 3)
_PICKLE_ERRORS = (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
                  RecursionError, struct.error, OverflowError, MemoryError,
                  LookupError)  # (`_codecs.encode` called with an encoding a broken file names)


class _ArraysOnly(pickle.Unpickler):
    """An unpickler that finds numpy's array reconstruction and nothing else."""

    def find_class(self, module: str, name: str) -> object:
        if (module, name) not in _ARRAYS:
            raise pickle.UnpicklingError(f"it holds a pickled {module}.{name}, which is never loaded (only numpy "
                                         "arrays are)")
        if module.startswith("numpy.") and module.endswith(".multiarray"):  # numpy 2 renamed numpy.core
            module = "numpy._core.multiarray" if importlib.util.find_spec("numpy._core") else "numpy.core.multiarray"
        return super().find_class(module, name)


def is_pickle(path: Path) -> bool:
    """Whether the file at `path` starts as a pickle of protocol 2 or later does."""
    try:
        with open(path, "rb") as f:
            return PICKLE_PROTOCOL.match(f.read(2)) is not None
    except OSError:
        return False


def load(path: Path) -> dict[str, object]:
    """The dict a CIFAR pickle holds, its keys as text; TableError saying why it holds none."""
    size = path.stat().st_size
    if size > MAX_FILE:
        raise TableError(f"a file of {size} bytes, more than a CIFAR file has ({MAX_FILE})")
    try:
        with open(path, "rb") as f:
            data = f.read()
        # Python 2 wrote the files: their byte strings are read as latin-1 text, as numpy expects of them
        value = _ArraysOnly(io.BytesIO(data), encoding="latin1").load()
    except OSError as exc:
        raise TableError(f"unreadable: {exc}") from exc
    except _PICKLE_ERRORS as exc:
        raise TableError(f"not a CIFAR pickle: {str(exc)[:120] or type(exc).__name__}") from exc
    if not isinstance(value, dict):
        raise TableError(f"not a CIFAR pickle: it holds a {type(value).__name__}, not a dict")
    return {k.decode("latin1") if isinstance(k, bytes) else str(k): v for k, v in value.items()}


def class_names(meta: Path, field: str | None) -> tuple[tuple[str, ...], str]:
    """(the class names of the label field `field`, or of the meta file's default label; that label field)."""
    held = load(meta)
    label = field or LABELS[meta.name]
    names_key = META[meta.name] if field is None else re.sub(r"(labels)?$", "", field, count=1) + (
        "label_names" if field.endswith("labels") else "_names")
    names = held.get(names_key)
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        fields = ", ".join(sorted(k for k in held if k.endswith("_names"))) or "none"
        raise TableError(f"no class names {names_key!r} for label field {label!r} (names held: {fields})")
    return tuple(names), label


@dataclass(frozen=True)
class Batch:
    images: np.ndarray  # uint8 [N, 32, 32, 3]
    labels: list[int | None]  # None: a value that is no class id


def read_batch(path: Path, label: str) -> Batch:
    """The images and the `label` field of the CIFAR batch at `path`; TableError saying what it lacks."""
    held = load(path)
    data = held.get("data")
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != ROW:
        what = f"{data.dtype} {list(data.shape)}" if isinstance(data, np.ndarray) else type(data).__name__
        raise TableError(f"no images: 'data' is no uint8 array of rows of {ROW} bytes ({what})")
    labels = held.get(label)
    if not isinstance(labels, list | np.ndarray):
        fields = ", ".join(sorted(k for k in held if "label" in k and not k.endswith("_names"))) or "none"
        raise TableError(f"no label field {label!r} (label fields: {fields}); name it with --label-field")
    labels = [int(v) if isinstance(v, int | np.integer) and not isinstance(v, bool) else None for v in labels]
    if len(labels) != len(data):
        raise TableError(f"{len(data)} images and {len(labels)} labels in {label!r}")
    return Batch(data.reshape(-1, 3, SIDE, SIDE).transpose(0, 2, 3, 1), labels)
