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

The dataset's first release, `car_ims/000001.jpg` ... and `cars_annos.mat` (its `class_names`, and `annotations` of
`relative_im_path`, `class` and `test`: 1 for a test image), converts as it lies too, in the same classes and splits.
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
RELEASE = "cars_annos.mat"  # the first release's annotations of every image, beside `car_ims/`
RELEASE_IMAGES = "car_ims"
MAX_FILE = 1 << 24  # bytes of an annotation file read (the real ones are under 1 MB)


def found(src: Path) -> Path | None:
    """The dataset's folder (SRC, or its `stanford_cars/`) when it holds `cars_train/`, the class names and the
    training annotations; None for any other source."""
    for root in (src / FOLDER, src):
        if (root / IMAGES["train"]).is_dir() and (root / META).is_file() and (root / ANNOTATIONS["train"]).is_file():
            return root
    return None


def release_found(src: Path) -> Path | None:
    """The folder of the dataset's first release (SRC, or its `stanford_cars/`) when it holds `car_ims/` and
    `cars_annos.mat`; None for any other source."""
    for root in (src / FOLDER, src):
        if (root / RELEASE_IMAGES).is_dir() and (root / RELEASE).is_file():
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


def _class_id(value: object, count: int, low: int = 1) -> int | None:
    """The class id (`low` ... `count`) a struct field holds: an integer, or a whole double as MATLAB saves numbers
    by default (the devkit's own are uint8); None for anything else."""
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "iuf":
        number = value.reshape(-1)[0]
        if value.dtype.kind == "f" and not float(number).is_integer():  # NaN and infinities are not whole either
            return None
        return int(number) if low <= number <= count else None
    return None


def read_names(path: Path) -> tuple[str, ...]:
    """The class names of the `class_names` cell array of `path` (the devkit's cars_meta.mat, or cars_annos.mat)."""
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
    classes = read_names(root / META)
    rows: dict[str, str] = {}
    splits: dict[str, str] = {}
    for split, name in ANNOTATIONS.items():
        path = root / name
        if split == "test" and not (root / IMAGES["test"]).is_dir():
            continue
        records = _annotations(path, ("fname", "class"), "Stanford Cars' with labels")
        for n, record in enumerate(records, 1):
            image, class_id = cell_text(record["fname"]), _class_id(record["class"], len(classes))
            if image is None or class_id is None:
                raise ConvertError(f"{path}: annotation {n} has no file name, or no class from 1 to {len(classes)}")
            entry = f"{IMAGES[split]}/{image}"
            if entry in splits:
                raise ConvertError(f"{path}: annotation {n} names {image} again: an image has one class")
            rows[entry], splits[entry] = classes[class_id - 1], split
    return Labels(rows, classes, splits)


def _annotations(path: Path, fields: tuple[str, ...], what: str) -> np.ndarray:
    records = _load(path, "annotations")
    if records.dtype.names is None or not set(fields) <= set(records.dtype.names):
        raise ConvertError(f"{path}: 'annotations' is no struct array of {' and '.join(fields)}: the file is not "
                           f"{what}")
    return records


def read_release(root: Path) -> Labels:
    """Each image of the first release's cars_annos.mat: its class name and split (`test` 1: test), by its path
    under the dataset's folder (`car_ims/000001.jpg`)."""
    path = root / RELEASE
    classes = read_names(path)
    rows: dict[str, str] = {}
    splits: dict[str, str] = {}
    for n, record in enumerate(_annotations(path, ("relative_im_path", "class", "test"), "Stanford Cars'"), 1):
        image, class_id = cell_text(record["relative_im_path"]), _class_id(record["class"], len(classes))
        test = _class_id(record["test"], 1, low=0)  # 1: a test image
        if image is None or class_id is None or test is None:
            raise ConvertError(f"{path}: annotation {n} has no image path, no class from 1 to {len(classes)}, or a "
                               "test flag that is neither 0 nor 1")
        if image in splits:
            raise ConvertError(f"{path}: annotation {n} names {image} again: an image has one class")
        rows[image], splits[image] = classes[class_id - 1], "test" if test == 1 else "train"
    return Labels(rows, classes, splits)


def why_unlisted(name: str) -> tuple[str, str] | None:
    """The devkit's files (its scripts, readme, annotation files) are read or not, never images."""
    return ("train", "Stanford Cars' devkit: not read as images") if name.startswith(DEVKIT) else None
