"""Stanford Dogs as its three archives unpack side by side: `Images/n02085620-Chihuahua/n02085620_10074.jpg` ...
(images.tar), `Annotation/` (annotation.tar: the boxes) and `train_list.mat`, `test_list.mat` and `file_list.mat`
(lists.tar: MATLAB files whose `file_list` names each image by its path under `Images/`; converters/mat_files.py).

- The classes are the breed folders the lists name, sorted: the order of the lists' own `labels` (1 ... 120), which
  are not read otherwise. The splits are `train_list.mat`'s and `test_list.mat`'s; the boxes are not read.
- A list that names an image twice, or a path outside a breed folder, or a file that is not such a MATLAB file stops
  the conversion, saying so. Images no list names are rejected as not listed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from converters.images.labels_csv import Labels
from converters.mat_files import cell_text, load_mat
from converters.table_files import TableError
from fastdata.errors import ConvertError

IMAGES = "Images"
LISTS = {"train": "train_list.mat", "test": "test_list.mat"}
MAX_FILE = 1 << 24  # bytes of a list read (the real train_list.mat is about 1 MB)


def found(src: Path) -> Path | None:
    """SRC when it holds `Images/` and the two split lists, None for any other source."""
    if (src / IMAGES).is_dir() and all((src / name).is_file() for name in LISTS.values()):
        return src
    return None


def _paths(path: Path) -> list[str]:
    """The `file_list` of a list: each cell's one string."""
    try:
        held = load_mat(path, ["file_list"], limit=MAX_FILE, what=f"Stanford Dogs' {path.name}")
    except TableError as exc:
        raise ConvertError(f"{path}: {exc}") from exc
    cells = held.get("file_list")
    if not isinstance(cells, np.ndarray) or cells.dtype != object:
        raise ConvertError(f"{path}: no 'file_list' of image paths (a cell array): the file is not Stanford Dogs'")
    out = []
    for n, cell in enumerate(cells.reshape(-1), 1):
        entry = cell_text(cell)
        if entry is None:
            raise ConvertError(f"{path}: 'file_list' cell {n} holds no image path")
        out.append(entry)
    return out


def read_dogs(root: Path) -> Labels:
    """Each listed image's breed (its folder) and split, by its path under `Images/`."""
    rows: dict[str, str] = {}
    splits: dict[str, str] = {}
    for split, name in LISTS.items():
        for n, entry in enumerate(_paths(root / name), 1):
            breed, _, image = entry.partition("/")
            if not breed or not image:
                raise ConvertError(f"{root / name}: 'file_list' cell {n}, {entry!r}, names no image in a breed folder")
            if entry in splits:
                raise ConvertError(f"{root / name}: 'file_list' cell {n}, {entry}, is in {splits[entry]} too: an "
                                   "image has one split")
            rows[entry], splits[entry] = breed, split
    return Labels(rows, tuple(sorted(set(rows.values()))), splits)
