"""CelebA as torchvision's `CelebA` downloads it (`celeba/`): `img_align_celeba/000001.jpg` ... `202599.jpg`,
`list_attr_celeba.txt` and `list_eval_partition.txt`, beside `identity_CelebA.txt` and the box and landmark lists;
or as Kaggle's copy holds it: `img_align_celeba/img_align_celeba/`, `list_attr_celeba.csv`,
`list_eval_partition.csv`.

- The attributes file gives each image 40 attributes, 1 (has it) or -1: read with --multi-label (labels_csv.py
  reads the count line and the names line of the text file, labels_columns.py the 1s and -1s), the attributes are
  the classes, in the file's order, and an image's classes are those it has.
- The partition file gives each image's split: 0 train, 1 val, 2 test. Without it, every image goes to --split.
  Another code, a file listed twice, or an attributes row in no split stops the conversion, saying so.
- Without --multi-label the folder is refused, naming the option (and the identities' list, for a class a person):
  read as a tree of class folders, it was one class of 202,599 faces.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from converters.images.labels_csv import Labels, read_labels
from fastdata.errors import ConvertError

FOLDER = "img_align_celeba"
ATTRIBUTES = ("list_attr_celeba.txt", "list_attr_celeba.csv")
PARTITIONS = ("list_eval_partition.txt", "list_eval_partition.csv")
OTHERS = ("identity_CelebA.txt", "list_bbox_celeba.txt", "list_bbox_celeba.csv", "list_landmarks_align_celeba.txt",
          "list_landmarks_align_celeba.csv", "list_landmarks_celeba.txt")
FILES = (*ATTRIBUTES, *PARTITIONS, *OTHERS)  # read with the images, or CelebA's own: no images to reject
SPLITS = {"0": "train", "1": "val", "2": "test"}
MAX_FILE = 1 << 26  # bytes of the partition file read (the real one holds 202,599 lines, 3.4 MB)
NEEDS_OPTION = ("{src} is laid out as CelebA ({attributes} beside {folder}/): --multi-label converts its "
                "attributes, each image's classes those it has; --unlabeled converts the faces without labels, and "
                "`fastdata convert {folder}/ DST --labels identity_CelebA.txt` a class a person")


def found(src: Path) -> tuple[Path, Path] | None:
    """(the attributes file, the folder of the images) where `src` is laid out as CelebA, else None."""
    attributes = next((src / name for name in ATTRIBUTES if (src / name).is_file()), None)
    if attributes is None or not (src / FOLDER).is_dir():
        return None
    nested = src / FOLDER / FOLDER  # Kaggle's zip unpacks into a folder of its own name
    return attributes, nested if nested.is_dir() else src / FOLDER


def _partition(path: Path) -> dict[str, str]:
    """Each file's split, from `000001.jpg 0` lines (the text file) or `image_id,partition` rows (Kaggle's CSV)."""
    if path.stat().st_size > MAX_FILE:
        raise ConvertError(f"{path}: {path.stat().st_size} bytes, more than CelebA's partition list holds")
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            lines = [(n, row) for n, row in enumerate(csv.reader(f), 1)] if path.suffix == ".csv" else \
                [(n, line.split()) for n, line in enumerate(f, 1)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConvertError(f"cannot read {path}: {exc}") from exc
    splits: dict[str, str] = {}
    for n, row in lines:
        if not row or n == 1 and len(row) == 2 and not re.fullmatch(r"\s*\d+\s*", row[1]):  # Kaggle's header
            continue
        name, code = (row[0].strip(), row[1].strip()) if len(row) == 2 else ("", "")
        if code not in SPLITS:
            raise ConvertError(f"{path}:{n}: expected a file and its split (0 train, 1 val, 2 test), got {row!r}")
        if name in splits:
            raise ConvertError(f"{path}:{n}: {name!r} is listed again: an image has one split")
        splits[name] = SPLITS[code]
    return splits


def read_celeba(src: Path, attributes: Path, folder: Path) -> Labels:
    """The classes of the images under `folder`, named by their path under `src`, each with its split where the
    partition file gives them; ConvertError when a file is not what CelebA's is."""
    table = read_labels(attributes, multi=True)
    prefix = folder.relative_to(src).as_posix()
    rows = {f"{prefix}/{name}": classes for name, classes in table.rows.items()}
    partition = next((src / name for name in PARTITIONS if (src / name).is_file()), None)
    if partition is None:
        return Labels(rows, table.classes)
    splits = _partition(partition)
    missing = [name for name in table.rows if name not in splits]
    if missing:
        raise ConvertError(f"{partition.name}: {len(missing)} image(s) of {attributes.name} are in no split (first: "
                           f"{missing[0]}): the files are not CelebA's")
    return Labels(rows, table.classes, {f"{prefix}/{name}": splits[name] for name in table.rows})
