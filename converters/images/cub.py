"""CUB-200-2011 as it unpacks (`CUB_200_2011/`), and NABirds, which ships the same lists (`nabirds/`):
`images/<class folder>/<file>.jpg` and four lists of `id value` lines: `images.txt` (an image id and its path under
`images/`: `1 001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg`), `image_class_labels.txt` (its class
id: `1 1`), `train_test_split.txt` (1 train, 0 test) and `classes.txt` (`1 001.Black_footed_Albatross`).

- The classes are those `image_class_labels.txt` gives an image, named and ordered as `classes.txt` lists them
  (CUB's 200: label = class id - 1, as its loaders make it; NABirds' 555 leaves, not the hierarchy's other nodes).
- The splits are `train_test_split.txt`'s. The boxes, parts and attributes are not read.
- An image id twice, one a list lacks, a class id `classes.txt` lacks, a split flag other than 0 or 1 or a line
  without its value stops the conversion, naming file and line: the lists are not CUB's. Images no list names are
  rejected as not listed.
"""

from __future__ import annotations

from pathlib import Path

from converters.images.labels_csv import Labels
from converters.images.list_text import list_text
from fastdata.errors import ConvertError

IMAGES = "images"
LISTS = ("images.txt", "image_class_labels.txt", "train_test_split.txt", "classes.txt")
FOLDERS = ("CUB_200_2011", "nabirds")  # what the archives unpack to
SPLITS = {"1": "train", "0": "test"}
MAX_FILE = 1 << 24  # bytes of a list read (NABirds' images.txt is about 4 MB)


def found(src: Path) -> Path | None:
    """The folder of the images and lists (SRC, or its `CUB_200_2011/` or `nabirds/`), None for any other source."""
    for root in (*(src / f for f in FOLDERS), src):
        if (root / IMAGES).is_dir() and all((root / name).is_file() for name in LISTS):
            return root
    return None


def _pairs(path: Path) -> dict[str, tuple[int, str]]:
    """id -> (line, value) of a list of `id value` lines (the value may hold spaces: NABirds' class names)."""
    out: dict[str, tuple[int, str]] = {}
    for n, line in enumerate(list_text(path, MAX_FILE, f"a {path.name} of CUB's").splitlines(), 1):
        if not line.strip():
            continue
        key, _, value = line.strip().partition(" ")
        if not value.strip():
            raise ConvertError(f"{path}:{n}: expected an id and its value, got {line!r}")
        if key in out:
            raise ConvertError(f"{path}:{n}: the id {key} again (first on line {out[key][0]})")
        out[key] = (n, value.strip())
    return out


def read_cub(root: Path) -> Labels:
    """Each listed image's class and split, by its path under `images/`."""
    paths, labels, flags, names = (_pairs(root / name) for name in LISTS)
    for path, table in ((root / LISTS[1], labels), (root / LISTS[2], flags)):
        missing = next((i for i in paths if i not in table), None)
        if missing is not None:
            raise ConvertError(f"{path} gives the image {missing} ({root / LISTS[0]}:{paths[missing][0]}) nothing: "
                               "the lists are not CUB's")
    used = {class_id for _, class_id in labels.values()}
    unknown = sorted(used - set(names))
    if unknown:
        raise ConvertError(f"{root / LISTS[3]} does not list the class id {unknown[0]} that {root / LISTS[1]} gives")
    order = [c for c in names if c in used]  # classes.txt's order
    rows: dict[str, str] = {}
    splits: dict[str, str] = {}
    for image, (_, path) in paths.items():
        line, flag = flags[image]
        if flag not in SPLITS:
            raise ConvertError(f"{root / LISTS[2]}:{line}: expected 1 (train) or 0 (test), got {flag!r}")
        if path in rows:
            raise ConvertError(f"{root / LISTS[0]}:{paths[image][0]}: {path} is listed under another id too")
        rows[path], splits[path] = names[labels[image][1]][1], SPLITS[flag]
    classes = tuple(names[c][1] for c in order)
    if len(set(classes)) != len(classes):
        raise ConvertError(f"{root / LISTS[3]} names two classes alike: which one would a label be?")
    return Labels(rows, classes, splits)
