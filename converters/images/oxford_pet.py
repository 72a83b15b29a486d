"""Oxford-IIIT Pet as torchvision's `OxfordIIITPet` downloads it (`oxford-iiit-pet/`): `images/Abyssinian_100.jpg`
... and, in `annotations/`, `trainval.txt` and `test.txt` of `Abyssinian_100 1 1 1` lines (an image id, its class id
from 1 to 37, the species, the breed's id within it), besides the trimaps and boxes.

- The classes are the breeds, ordered by class id (label = class id - 1, as torchvision makes it), each named as its
  images are (`Abyssinian`, `american_bulldog`). The splits are the lists': trainval is train, test is test.
- An image in both lists, a line without a class id, or a class id whose images name two breeds stops the
  conversion, naming file and line: the lists are not Oxford-IIIT Pet's. Images no list names are rejected as not
  listed; the trimaps (PNG images too) are never read as images.
"""

from __future__ import annotations

import re
from pathlib import Path

from converters.images.labels_csv import Labels
from converters.images.list_text import list_text
from fastdata.errors import ConvertError

IMAGES = "images"
LISTS = {"train": "annotations/trainval.txt", "test": "annotations/test.txt"}
FOLDER = "oxford-iiit-pet"  # what torchvision downloads into
MAX_FILE = 1 << 22  # bytes of a list read (the real ones hold a few thousand lines)
CLASS_ID = re.compile(r"[1-9][0-9]{0,5}")  # ASCII digits, from 1


def found(src: Path) -> Path | None:
    """The dataset's folder (SRC, or its `oxford-iiit-pet/`), None for any other source."""
    for root in (src / FOLDER, src):
        if (root / IMAGES).is_dir() and all((root / name).is_file() for name in LISTS.values()):
            return root
    return None


def read_pets(root: Path) -> Labels:
    """Each listed image's breed and split, by its id (`Abyssinian_100`, the file `images/Abyssinian_100.jpg`)."""
    rows: dict[str, str] = {}
    splits: dict[str, str] = {}
    breeds: dict[int, tuple[str, str]] = {}  # class id -> (its breed, where first named)
    for split, name in LISTS.items():
        path = root / name
        for n, line in enumerate(list_text(path, MAX_FILE, "an Oxford-IIIT Pet list").splitlines(), 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if len(words) < 2 or not CLASS_ID.fullmatch(words[1]):
                raise ConvertError(f"{path}:{n}: expected an image id and its class id (from 1), got {line!r}")
            image, class_id = words[0], int(words[1])
            if image in splits:
                raise ConvertError(f"{path}:{n}: image {image} is in {splits[image]} too: an image has one split")
            breed = image.rsplit("_", 1)[0]
            first = breeds.setdefault(class_id, (breed, f"{path}:{n}"))
            if first[0] != breed:
                raise ConvertError(f"{path}:{n}: class {class_id} is {breed!r} here and {first[0]!r} at {first[1]}: "
                                   "the lists are not Oxford-IIIT Pet's")
            rows[image], splits[image] = breed, split
    classes = tuple(breeds[c][0] for c in sorted(breeds))
    if len(set(classes)) != len(classes):
        raise ConvertError(f"{root / 'annotations'}: one breed has two class ids: the lists are not Oxford-IIIT Pet's")
    return Labels(rows, classes, splits)
