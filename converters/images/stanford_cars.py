"""Stanford Cars as torchvision's `StanfordCars` expects it (`stanford_cars/`): `cars_train/00001.jpg` ...,
`cars_test/00001.jpg` ..., the devkit (`devkit/cars_meta.mat`: the 196 class names; `devkit/cars_train_annos.mat`:
an `annotations` struct array of boxes, `class` and `fname`) and `cars_test_annos_withlabels.mat`, the test
annotations with their classes (a download of its own: the devkit's `cars_test_annos.mat` has no class). MATLAB
files are read by converters/mat_files.py.

- The classes are `cars_meta.mat`'s names, in their order: label = class - 1, as torchvision gives it. The splits are
  the two annotation files'; the boxes are not read.
- A test folder without `cars_test_annos_withlabels.mat`, an annotation without a file name or with a class outside
  the names, a file named twice, a blank or repeated class name, or a file that is no such MATLAB file stops the
  conversion, saying so. Images no annotation names are rejected as not listed; the devkit's files are rejected as
  not read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from converters.images.labels_csv import Labels
from converters.mat_files import cell_text, load_mat
from converters.table_files import TableError
from fastdata.errors import ConvertError

FOLDER = "stanford_cars"  # what torchvision's `root` holds
META = "devkit/cars_meta.mat"
ANNOTATIONS = {"train": "devkit/cars_train_annos.mat", "test": "cars_test_annos_withlabels.mat"}
IMAGES = {"train": "cars_train", "test": "cars_test"}
DEVKIT = "devkit/"
MAX_FILE = 1 << 24  # bytes of an annotation file read (the real ones are under 1 MB)


def found(src: Path) -> Path | None:
    """The dataset's folder (SRC, or its `stanford_cars/`) when it holds `cars_train/`, the class names and the
    training annotations; None for any other source."""
    for root in (src / FOLDER, src):
        if (root / IMAGES["train"]).is_dir() and (root / META).is_file() and (root / ANNOTATIONS["train"]).is_file():
            return root
    return None


def _load(path: Path, variable: str) -> np.ndarray:
    try:
        held = load_mat(path, [variable], limit=MAX_FILE, what=f"Stanford Cars' {path.name}")
    except TableError as exc:
        raise ConvertError(f"{path}: {exc}") from exc
    value = held.get(variable)
    if not isinstance(value, np.ndarray):
        raise ConvertError(f"{path}: no '{variable}': the file is not Stanford Cars'")
    return value.reshape(-1)


def _class_id(value: object, count: int) -> int | None:
    """The class id (1 ... `count`) a struct field holds: an integer, or a whole double as MATLAB saves numbers by
    default (the devkit's own are uint8); None for anything else."""
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "iuf":
        number = value.reshape(-1)[0]
        if value.dtype.kind == "f" and not float(number).is_integer():  # NaN and infinities are not whole either
            return None
        return int(number) if 1 <= number <= count else None
    return None


def read_names(root: Path) -> tuple[str, ...]:
    path = root / META
    names = []
    for n, cell in enumerate(_load(path, "class_names"), 1):
        name = cell_text(cell)
        if name is None:
            raise ConvertError(f"{path}: 'class_names' cell {n} holds no class name")
        if name in names:
            raise ConvertError(f"{path}: 'class_names' cell {n}, {name!r}, is cell {names.index(name) + 1} too")
        names.append(name)
    return tuple(names)


def read_cars(root: Path) -> Labels:
    """Each annotated image's class name and split, by its path under the dataset's folder (`cars_train/00001.jpg`)."""
    if (root / IMAGES["test"]).is_dir() and not (root / ANNOTATIONS["test"]).is_file():
        raise ConvertError(f"{root / IMAGES['test']}: Stanford Cars' test images have no labels: "
                           f"{ANNOTATIONS['test']} (a download of its own; devkit/cars_test_annos.mat has no class) "
                           f"is not in {root}; put it there, or move {IMAGES['test']} away to convert train alone")
    classes = read_names(root)
    rows: dict[str, str] = {}
    splits: dict[str, str] = {}
    for split, name in ANNOTATIONS.items():
        path = root / name
        if split == "test" and not (root / IMAGES["test"]).is_dir():
            continue
        records = _load(path, "annotations")
        if records.dtype.names is None or not {"fname", "class"} <= set(records.dtype.names):
            raise ConvertError(f"{path}: 'annotations' is no struct array of fname and class: the file is not "
                               "Stanford Cars' with labels")
        for n, record in enumerate(records, 1):
            image, class_id = cell_text(record["fname"]), _class_id(record["class"], len(classes))
            if image is None or class_id is None:
                raise ConvertError(f"{path}: annotation {n} has no file name, or no class from 1 to {len(classes)}")
            entry = f"{IMAGES[split]}/{image}"
            if entry in splits:
                raise ConvertError(f"{path}: annotation {n} names {image} again: an image has one class")
            rows[entry], splits[entry] = classes[class_id - 1], split
    return Labels(rows, classes, splits)


def why_unlisted(name: str) -> tuple[str, str] | None:
    """The devkit's files (its scripts, readme, annotation files) are read or not, never images."""
    return ("train", "Stanford Cars' devkit: not read as images") if name.startswith(DEVKIT) else None
