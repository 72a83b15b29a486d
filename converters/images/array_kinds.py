"""What each file of an image dataset kept as arrays is (array_files.py reads them): its kind (an IDX file, a CIFAR
batch, a NumPy array, a table of pixels, ...), the dataset it belongs to, its split, the class map that names its
classes; and whether a source holds such files at all."""

from __future__ import annotations

import re
from pathlib import Path

from converters.images import cifar, class_maps, digit_texts, idx_files, npz_files, pcam, pixel_tables, stl10
from converters.images.labels_csv import EXTENSIONS
from converters.mat_files import is_mat
from converters.tree import splits_named
from converters.walk import first_files

LOOK_AT = 8  # files named like CIFAR batches, CSV or MATLAB files, whose first bytes `has_array_files` reads
WHAT = {"idx": "an IDX file", "cifar": "a CIFAR batch", "cifar meta": "a CIFAR meta file", "mat": "a MATLAB file",
        "stl": "an STL-10 file", "h5": "a PatchCamelyon file", "npz": "a NumPy .npz file", "npy": "a NumPy array file",
        "digits": "a USPS or SEMEION file", "map": "a class map",
        "table": "a table of pixels"}  # a file's kind -> what messages call it


def has_array_files(src: Path, *, limit: int) -> bool:
    """Whether an IDX images file, a CIFAR batch, an SVHN or STL-10 images file or a table of pixels is among the
    first `limit` files of `src`, and no image file."""
    sniffed, found = [], False
    for path in first_files(src, limit):
        if path.suffix.lower() in EXTENSIONS:
            return False
        name = idx_files.idx_name(path.name)
        found = (found or (name is not None and name.images) or stl10.is_images_file(path) or pcam.is_images_file(path)
                 or npz_files.holds_images(path) or digit_texts.is_digit_text(path))
        if path.suffix.lower() == ".mat":
            from converters.nifti.pairs import HEADERS  # here: a tree of images never imports the nifti kind

            if any(path.with_suffix(h).is_file() for h in HEADERS):
                continue  # SPM's affine beside an Analyze pair (NAME.hdr + NAME.img): the nifti kind reads it
        if cifar.BATCH.match(path.name) or path.suffix.lower() in (".csv", ".mat"):
            sniffed.append(path)
    return found or any(file_kind(p)[0] in ("cifar", "mat", "table") for p in sniffed[:LOOK_AT])


def has_numpy_files(src: Path, *, limit: int) -> bool:
    """Whether a NumPy `.npz` file or a `.npy` file of images or labels is among the first `limit` files of `src`
    (the one kind of them whose labels may be several classes an image, --multi-label)."""
    return any(npz_files.is_npz(p) or npz_files.array_key(p) is not None for p in first_files(src, limit))


def file_kind(path: Path) -> tuple[str | None, object]:
    """(what the file at `path` is among the files this module reads, a key of WHAT, or None; what its name or
    first bytes told: the IDX or STL-10 name read, the table's layout)."""
    idx = idx_files.idx_name(path.name)
    if idx is not None:
        return "idx", idx
    stl = stl10.stl_name(path.name)
    if stl is not None:
        return "stl", stl
    h5 = pcam.pcam_name(path.name)
    if h5 is not None:
        return "h5", h5
    if class_maps.family(path) is not None:
        return "map", None
    if (cifar.BATCH.match(path.name) or path.name in cifar.META) and cifar.is_pickle(path):
        return ("cifar meta" if path.name in cifar.META else "cifar"), None
    if is_mat(path):
        return "mat", None
    array = npz_files.array_key(path)
    if array is not None:
        return "npy", array
    if npz_files.is_npz(path):
        return "npz", None
    if digit_texts.is_digit_text(path):
        return "digits", None
    layout = pixel_tables.table_layout(path)
    return ("table", layout) if layout is not None else (None, None)


def dataset_of(kind: str, told: object, path: Path) -> str:
    """Which dataset the file at `path` (of `kind`, its name read as `told`) belongs to: files of two datasets in one
    folder (EMNIST's six in `EMNIST/raw/`, MedMNIST's `~/.medmnist/`, torchvision's root with `usps.bz2` beside
    `semeion.data`) would merge into one wrong dataset. A dataset's files differ by their split's word only."""
    if isinstance(told, idx_files.Idx):  # emnist-letters-train, t10k, qmnist-test: the name without its split
        words = re.split(r"[-_.]", told.stem.lower())
        family = "-".join(w for w in words if w != "t10k" and not splits_named(w))
        return "idx:" + ("qmnist" if family == "xnist" else family)  # (NIST's digits beside QMNIST's: refused apart)
    if kind == "npz":  # pathmnist.npz: a dataset a file; train.npz beside test.npz: one
        return f"npz:{path.name}" if not splits_named(path.stem) else "npz"
    if isinstance(told, npz_files.Key):  # k49-train-imgs.npz, kuzushiji50_train_labels.npy: the name before its roles
        return f"arrays:{told.family}"
    if kind == "digits":
        return path.name.split(".")[0]  # usps (usps.bz2, usps.t.bz2), semeion
    return "cifar" if kind == "cifar meta" else kind


def class_map_of(path: Path, kind: str | None, told: object) -> Path | None:
    """The class map beside the images file at `path` (of `kind`, its name read as `told`) that names its classes,
    or None (class_maps.py)."""
    if kind == "idx" and isinstance(told, idx_files.Idx) and told.images:
        return class_maps.for_idx(path, told.stem)
    if kind == "npy" and isinstance(told, npz_files.Key) and told.images:
        return class_maps.for_arrays(path, told.family)
    return None


def named_by(class_map: Path) -> Path | None:
    """The first images file beside `class_map` whose classes it names, or None."""
    beside = sorted(p for p in class_map.parent.iterdir() if p != class_map and p.is_file())
    return next((p for p in beside if class_map_of(p, *file_kind(p)) == class_map), None)


def what_file(path: Path) -> str | None:
    """What the file at `path` is among the files this module reads ("a CIFAR batch", "an IDX file", ...), or
    None."""
    kind = file_kind(path)[0]
    return None if kind is None else WHAT[kind]


def split_of_stem(stem: str, default: str) -> str:
    """The split a dataset file's name (less its suffix) names, else `default`."""
    if stem.lower() in ("t10k", "usps.t"):  # MNIST's test files, USPS's (`usps.t.bz2`)
        return "test"
    named = splits_named(stem)
    return named.pop() if len(named) == 1 else default
