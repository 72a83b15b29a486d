"""Oxford Flowers-102 as torchvision's `Flowers102` downloads it (`flowers-102/`): `jpg/image_00001.jpg` ...
`image_08189.jpg`, `imagelabels.mat` and `setid.mat`, MATLAB files (converters/mat_files.py).

- `imagelabels.mat` holds `labels`, one class an image in image-number order, 1 ... 102; they are read as class ids
  from 0, as torchvision reads them, so the classes are `0` ... `101` (the dataset names none).
- `setid.mat` holds each split's image numbers: `trnid` (train), `valid` (val), `tstid` (test). Without it, every
  image goes to `--split`. A `setid.mat` that puts an image in two splits, in none, or past the labels stops the
  conversion, saying so: it is not Flowers-102's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from converters.images.labels_csv import Labels
from converters.mat_files import load_mat
from converters.table_files import TableError
from fastdata.errors import ConvertError

FOLDER = "jpg"
LABELS = "imagelabels.mat"
SETID = "setid.mat"
SPLITS = {"trnid": "train", "valid": "val", "tstid": "test"}
MAX_FILE = 1 << 24  # bytes of either file read (the real ones hold 8,189 numbers each)


def is_flowers(src: Path) -> bool:
    """Whether `src` is laid out as Flowers-102: `imagelabels.mat` beside `jpg/`."""
    return (src / LABELS).is_file() and (src / FOLDER).is_dir()


def image_name(number: int) -> str:
    return f"{FOLDER}/image_{number:05d}.jpg"


def _numbers(held: dict, name: str, file: str) -> list[int]:
    values = held.get(name)
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iuf" or values.size == 0:
        held_names = ", ".join(sorted(k for k in held if not k.startswith("__"))) or "none"
        raise ConvertError(f"{file}: no '{name}' of image numbers (variables held: {held_names})")
    flat = values.reshape(-1)
    if not np.all(flat == np.rint(flat)) or flat.min() < 1:
        raise ConvertError(f"{file}: '{name}' holds a value that is no image number (1 or more)")
    return [int(v) for v in flat]


def read_flowers(src: Path) -> Labels:
    """The labels of the images under `src/jpg/`, named by their path under `src`, each with its split where
    `setid.mat` gives them; ConvertError when either file is not what Flowers-102's is."""
    try:
        held = load_mat(src / LABELS, ["labels"], limit=MAX_FILE, what=f"Flowers-102's {LABELS}")
    except TableError as exc:
        raise ConvertError(f"{src / LABELS}: {exc}") from exc
    labels = _numbers(held, "labels", LABELS)  # class numbers from 1, in image order
    rows = {image_name(n): str(label - 1) for n, label in enumerate(labels, start=1)}
    classes = tuple(str(i) for i in range(max(labels)))
    if not (src / SETID).is_file():
        return Labels(rows, classes)
    try:
        sets = load_mat(src / SETID, list(SPLITS), limit=MAX_FILE, what=f"Flowers-102's {SETID}")
    except TableError as exc:
        raise ConvertError(f"{src / SETID}: {exc}") from exc
    splits: dict[str, str] = {}
    for name, split in SPLITS.items():
        for n in _numbers(sets, name, SETID):
            if splits.setdefault(image_name(n), split) != split or n > len(labels):
                why = "in two of its splits" if n <= len(labels) else f"past the {len(labels)} {LABELS} labels"
                raise ConvertError(f"{SETID}: image {n} is {why}: the files are not Flowers-102's")
    missing = [n for n in rows if n not in splits]
    if missing:
        raise ConvertError(f"{SETID}: {len(missing)} labelled image(s) are in none of its splits (first: "
                           f"{missing[0]}): the files are not Flowers-102's")
    return Labels(rows, classes, splits)
