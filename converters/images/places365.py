"""Places365 as torchvision's `Places365` downloads it, or as its archives unpack into one folder:
`categories_places365.txt`, the 365 classes as `/a/airfield 0` lines; the lists `places365_train_standard.txt` (or
`places365_train_challenge.txt`) of `/a/airfield/00000001.jpg 0` lines and `places365_val.txt` of
`Places365_val_00000001.jpg 165` lines; the training images under `data_256/` (`data_large/`; torchvision renames it
`data_256_standard/` ...), filed under a letter, and the validation images in `val_256/` (`val_large/`).

- The classes are the categories' names without their letter (`airfield`, `apartment_building/outdoor`), in the
  order of their ids (which is torchvision's). A listed image's label is its line's id; a training line whose folder
  is not its id's class stops the conversion (a list of another release), as do a line that is no `path id`, an id
  no category has, an image listed twice, and categories that are not ids 0..K-1 once each.
- The training images are train, the validation images val. The test images (`test_256/`) have no published labels
  (`places365_test.txt` names them only): rejected as such. Images a list leaves out are rejections, and so is what
  lies beside the dataset's folders and lists.
- One training folder and one validation folder: the same images at two sizes (`data_256/`, `data_large/`) or the
  standard and challenge sets side by side stop the conversion, as does an images folder without its list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from converters.images.labels_csv import Labels
from converters.images.list_text import first_line, list_text
from converters.images.listed_files import ImageCollector, take_listed
from converters.kind import Discovery
from fastdata.errors import ConvertError

CATEGORIES = "categories_places365.txt"
CATEGORY = re.compile(r"(/[a-z]/([^/\s]+(?:/[^/\s]+)*))\s+(0|[1-9][0-9]{0,5})")  # `/a/apartment_building/outdoor 8`
ID = re.compile(r"0|[1-9][0-9]{0,5}")
TRAIN_LISTS = {"standard": "places365_train_standard.txt", "challenge": "places365_train_challenge.txt"}
VAL_LIST = "places365_val.txt"
TEST_LIST = "places365_test.txt"
# the training images' folder -> the set whose list names them (None: either, by the list that is there)
TRAINING = {f"data_{size}{variant and '_' + variant}": variant or None for variant in ("standard", "challenge", "")
            for size in ("256", "large")}
VALIDATION = ("val_256", "val_large")
TEST = ("test_256", "test_large")
MAX_CATEGORIES = 1 << 20  # bytes read of categories_places365.txt (the real one is about 6 KB)
MAX_LIST = 1 << 30  # bytes read of a list (the challenge set's names about 8 million images)
NO_TEST_LABELS = f"Places365's test images have no published labels ({TEST_LIST} names them only): not read"


@dataclass(frozen=True)
class Places:
    root: Path  # the folder holding the categories, the lists and the images' folders
    train: Path | None  # the training images' folder, when there is one
    train_list: Path | None  # its list
    val: Path | None  # the validation images' folder, when there is one
    test: Path | None  # the test images' folder, when there is one


def _one(root: Path, names: tuple[str, ...] | list[str], what: str) -> Path | None:
    """The one folder of `names` under `root`, None when there is none; ConvertError for several."""
    there = [root / n for n in names if (root / n).is_dir()]  # a link the walk does not follow is rejected as that
    if len(there) > 1:
        raise ConvertError(f"{root} holds {' and '.join(p.name + '/' for p in there)}, {what}: convert one of them "
                           "(move the others out of the folder)")
    return there[0] if there else None


def _train_list(root: Path, train: Path) -> Path:
    """The list naming the images of the training folder `train`: its set's (`data_256_challenge/`), or for a folder
    of neither name (`data_256/`, as the archives unpack) the one list there."""
    variant = TRAINING[train.name]
    lists = [root / TRAIN_LISTS[variant]] if variant else [root / n for n in TRAIN_LISTS.values()
                                                           if (root / n).is_file()]
    if len(lists) > 1:
        raise ConvertError(f"{root} holds {' and '.join(p.name for p in lists)}: which one lists {train.name}/? Name "
                           f"the folder data_{train.name.split('_')[1]}_standard or ..._challenge, as torchvision does")
    if not lists or not lists[0].is_file():
        wanted = lists[0].name if lists else " or ".join(TRAIN_LISTS.values())
        raise ConvertError(f"{train}: Places365's training images have no labels: {wanted} is not in {root}; put it "
                           f"there (filelist_places365-standard.tar), or move {train.name}/ away")
    return lists[0]


def found(src: Path) -> Places | None:
    """Places365's folders when SRC (or its `places365/`) holds categories_places365.txt, whose first line is an
    `/a/airfield 0` line, and an images folder of the dataset; None for any other source. ConvertError for two
    training or two validation folders, or an images folder without its list."""
    for root in (src / "places365", src):
        if not (root / CATEGORIES).is_file():
            continue
        if not CATEGORY.fullmatch(first_line(root / CATEGORIES)):
            continue
        train = _one(root, list(TRAINING), "Places365's training images at two sizes or of two sets")
        val = _one(root, VALIDATION, "Places365's validation images at two sizes")
        test = _one(root, TEST, "Places365's test images at two sizes")
        if train is None and val is None:
            continue
        if val is not None and not (root / VAL_LIST).is_file():
            raise ConvertError(f"{val}: Places365's validation images have no labels: {VAL_LIST} is not in {root}; "
                               f"put it there (filelist_places365-standard.tar), or move {val.name}/ away")
        return Places(root, train, None if train is None else _train_list(root, train), val, test)
    return None


def read_categories(path: Path) -> list[str]:
    """Each class's folder under the training images' (`/a/airfield`), in the order of the ids the lines give."""
    by_id: dict[int, str] = {}
    where: dict[str, int] = {}
    for n, line in enumerate(list_text(path, MAX_CATEGORIES, f"Places365's {CATEGORIES}").splitlines(), 1):
        entry = line.lstrip("\ufeff").strip()
        if not entry:
            continue
        match = CATEGORY.fullmatch(entry)
        if match is None:
            raise ConvertError(f"{path}:{n}: expected a class and its id (/a/airfield 0), got {line[:200]!r}")
        folder, name, class_id = match[1], match[2], int(match[3])
        if class_id in by_id:
            raise ConvertError(f"{path}:{n}: the id {class_id} is {by_id[class_id]}'s too")
        if name in where:
            raise ConvertError(f"{path}:{n}: the class {name} is named twice (line {where[name]} too)")
        by_id[class_id], where[name] = folder, n
    if sorted(by_id) != list(range(len(by_id))):
        missing = next(i for i in range(len(by_id) + 1) if i not in by_id)
        raise ConvertError(f"{path}: the ids are not 0..{len(by_id) - 1}: no class has the id {missing}")
    return [by_id[i] for i in range(len(by_id))]


def read_list(path: Path, folders: list[str], training: bool) -> dict[str, str]:
    """Each listed image's class name by its path under its images folder, from `path`'s `image id` lines. A
    training list names its images by their path below the letter (`/a/airfield/00000001.jpg`), which must be the
    folder of their id's class."""
    names = [f.split("/", 2)[2] for f in folders]
    rows: dict[str, str] = {}
    where: dict[str, int] = {}
    for n, line in enumerate(list_text(path, MAX_LIST, "a list of Places365's").splitlines(), 1):
        words = line.split()
        if not words:
            continue
        if len(words) != 2 or not ID.fullmatch(words[1]) or training and not words[0].startswith("/"):
            shape = "/a/airfield/00000001.jpg 0" if training else "Places365_val_00000001.jpg 165"
            raise ConvertError(f"{path}:{n}: expected an image and its class id ({shape}), got {line[:200]!r}")
        image, class_id = words[0], int(words[1])
        if class_id >= len(folders):
            raise ConvertError(f"{path}:{n}: the class id {class_id} is none of {CATEGORIES}'s (0..{len(folders) - 1})")
        folder = image.rpartition("/")[0]
        if training and folder != folders[class_id]:
            raise ConvertError(f"{path}:{n}: {image} lies in {folder or '/'}, but its id {class_id} is the class "
                               f"{folders[class_id]}: is the list of another release?")
        rel = image.lstrip("/")
        if rel in where:
            raise ConvertError(f"{path}:{n}: {image} is listed twice (line {where[rel]} too): an image has one class")
        rows[rel], where[rel] = names[class_id], n
    return rows


def discover_places365(src: Path, follow: bool) -> Discovery | None:
    """The training images in train and the validation images in val, labelled by their lists (Places365's folders
    say each image's split, not --split); None for a source that is not Places365."""
    p = found(src)
    if p is None:
        return None
    folders = read_categories(p.root / CATEGORIES)
    classes = tuple(f.split("/", 2)[2] for f in folders)
    col = ImageCollector(src, follow=follow)
    taken = [p.root / name for name in (CATEGORIES, VAL_LIST, TEST_LIST, *TRAIN_LISTS.values())
             if (p.root / name).is_file()]
    for split, images, listing in (("train", p.train, p.train_list), ("val", p.val, p.root / VAL_LIST)):
        if images is None or listing is None:
            continue
        taken.append(images)
        if images.is_symlink() and not follow:
            col.reject(images, split, "")  # a link not followed: rejected as that
            continue
        table = Labels(read_list(listing, folders, training=split == "train"), classes, None)
        take_listed(col, images, listing, split, table=table)
    if p.test is not None:
        col.reject(p.test, "test", NO_TEST_LABELS)
        taken.append(p.test)
    col.reject_beside(taken, "train", "beside Places365's folders and lists: not read")
    col.warn_unused(classes, "image")
    return Discovery(col.items, classes, col.rejected, "places365", col.identity)
