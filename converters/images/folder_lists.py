"""Datasets whose images lie in class folders under `images/` and whose splits are lists of their paths, as
torchvision downloads them: Food-101 (`food-101/images/apple_pie/1005649.jpg`, `meta/train.txt` and `meta/test.txt`
of `apple_pie/1005649` lines) and DTD (`dtd/images/banded/banded_0002.jpg`, `labels/train1.txt`, `val1.txt` and
`test1.txt`: the first of its ten partitions, torchvision's default; another converts with `--split-list`).

- The classes are the class folders the lists name, sorted (torchvision's order for both); a listed image's class
  is its folder.
- A line that names no class folder, or an image two lists name, stops the conversion, naming file and line.
  Images no list names are rejected as not listed.
"""

from __future__ import annotations

from pathlib import Path

from converters.images.labels_csv import Labels
from converters.images.list_text import list_text
from fastdata.errors import ConvertError

IMAGES = "images"
# name -> (the folder its download unpacks to, each split's list under it)
DATASETS = {"food101": ("food-101", {"train": "meta/train.txt", "test": "meta/test.txt"}),
            "dtd": ("dtd", {"train": "labels/train1.txt", "val": "labels/val1.txt", "test": "labels/test1.txt"})}
MAX_FILE = 1 << 23  # bytes of a list read (Food-101's train.txt is about 1.4 MB)


def found(src: Path) -> tuple[str, Path] | None:
    """(the dataset, its folder: SRC or the folder its download unpacks to), None for any other source."""
    for name, (folder, lists) in DATASETS.items():
        for root in (src / folder, src):
            if (root / IMAGES).is_dir() and all((root / rel).is_file() for rel in lists.values()):
                return name, root
    return None


def read_lists(name: str, root: Path) -> Labels:
    """Each listed image's class (its folder) and split, by its path under `images/` as the list writes it."""
    rows: dict[str, str] = {}
    splits: dict[str, str] = {}
    where: dict[str, str] = {}
    for split, rel in DATASETS[name][1].items():
        path = root / rel
        for n, line in enumerate(list_text(path, MAX_FILE, f"a list of {name}'s").splitlines(), 1):
            entry = line.strip()
            if not entry:
                continue
            folder, _, image = entry.partition("/")
            if not folder or not image:
                raise ConvertError(f"{path}:{n}: expected a class folder and an image in it, got {line!r}")
            if entry in splits:
                raise ConvertError(f"{path}:{n}: {entry} is in {splits[entry]} too ({where[entry]}): an image has "
                                   "one split")
            rows[entry], splits[entry], where[entry] = folder, split, f"{path}:{n}"
    return Labels(rows, tuple(sorted(set(rows.values()))), splits)
