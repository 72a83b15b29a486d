"""GTSRB, the German Traffic Sign Recognition Benchmark, as torchvision's `GTSRB` downloads it (`gtsrb/`) or as the
benchmark's archives unpack: the training signs in class folders, `GTSRB/Training/00000/00000_00000.ppm` ...
(`GTSRB/Final_Training/Images/00000/` in the benchmark's own archive), each folder with its `GT-00000.csv`; the test
signs in `GTSRB/Final_Test/Images/00000.ppm` ..., labelled by `GT-final_test.csv`, a separate download
(`Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId` rows; torchvision puts it in `gtsrb/`).

- The classes are the training folders (`00000` ... `00042`), in the order of their numbers: label = ClassId, as
  torchvision gives it. A training sign's class is its folder, a test sign's its row's ClassId. The boxes (Roi) are
  not read, nor are the training folders' own `GT-*.csv` files, which repeat the folder's class.
- Test signs without `GT-final_test.csv` stop the conversion (the test archive's `GT-final_test.test.csv` has no
  ClassId), and so does a row without a file or with a ClassId that is no number, or a file named twice. A test row
  whose class has no training folder is a rejection, as is every file beside the dataset's folders.

Kaggle's copy (`Train/0/00000_00000_00000.png` ..., `Test/00000.png` ..., `Meta/`, and `Train.csv`, `Test.csv`
whose rows give each image's `Path` and `ClassId`) is a dataset of own lists (own_lists.py): its classes are the
ClassIds, `0` ... `42`, in the order of their numbers (a tree's sort would put `10` before `2`), its splits the two
tables'; the sign pictograms of `Meta/` are rejected as not listed.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from converters.images.labels_csv import Labels
from converters.images.list_text import first_line, list_text
from converters.images.listed_files import ImageCollector, take_listed
from converters.kind import Discovery
from converters.sample import Rejection
from converters.walk import is_folder, listed_or_refused
from fastdata.errors import ConvertError

TRAINING = ("Training", "Final_Training/Images")  # torchvision's download, the benchmark's archive
TEST_IMAGES = "Final_Test/Images"
TEST_LABELS = "GT-final_test.csv"
ITS_OWN = ("GT-final_test.test.csv", TEST_LABELS)  # lists that lie among the test signs: read or skipped, not images
CLASS_FOLDER = re.compile(r"[0-9]{5}")
FOLDER_LIST = re.compile(r"GT-[0-9]{5}\.csv")  # a training folder's own list
CLASS_ID = re.compile(r"[0-9]{1,5}")  # ASCII digits, as many as a folder's name holds
MAX_FILE = 1 << 24  # bytes of a table read (Kaggle's Train.csv holds 39,209 rows, about 2 MB)
KAGGLE_LISTS = {"train": "Train.csv", "test": "Test.csv"}  # Kaggle's copy: `Path` and `ClassId` columns
KAGGLE_SKIP = ("Train.csv", "Test.csv", "Meta.csv")  # its tables, beside the images: no images to reject


@dataclass(frozen=True)
class Gtsrb:
    top: Path  # the folder holding the training and test folders (`GTSRB/`)
    training: Path  # its class folders
    test: Path | None  # the test signs, when there are
    labels: Path | None  # GT-final_test.csv, when found


def found(src: Path, follow: bool = True) -> Gtsrb | None:
    """The dataset's folders when SRC, its `GTSRB/` or its `gtsrb/GTSRB/` holds GTSRB's training folders (a
    `00000` class folder among them); None for any other source."""
    for top in (src / "gtsrb" / "GTSRB", src / "GTSRB", src):
        training = next((top / t for t in TRAINING if is_folder(top / t, follow=follow)), None)
        if training is None or not (training / "00000").is_dir():  # a link not followed is rejected, below
            continue
        test = top / TEST_IMAGES if is_folder(top / TEST_IMAGES, follow=follow) else None
        places = [top / TEST_IMAGES, top] + ([top.parent] if top != src else [])
        labels = next((p / TEST_LABELS for p in places if (p / TEST_LABELS).is_file()), None)
        return Gtsrb(top, training, test, labels)
    return None


def _class_rows(path: Path, delimiter: str, file_column: str, hint: str) -> Iterator[tuple[int, str, int]]:
    """(line number, file, class id) of each row of a GTSRB table of `file_column` and `ClassId` columns (rows of
    empty cells skipped); ConvertError for a header without them (`hint`: why), a row without a file or with a
    ClassId that is no number, or a file named twice."""
    text = list_text(path, MAX_FILE, f"GTSRB's {path.name}").lstrip("\ufeff")
    rows = csv.reader(text.splitlines(), delimiter=delimiter)
    header = [h.strip() for h in next(rows, [])]
    if file_column not in header or "ClassId" not in header:
        raise ConvertError(f"{path}: expected a header of {file_column} and ClassId columns (separated by "
                           f"{delimiter!r}), got {delimiter.join(header)[:200]!r}{hint}")
    file_col, class_col = header.index(file_column), header.index("ClassId")
    seen: set[str] = set()
    for n, row in enumerate(rows, 2):
        if not any(cell.strip() for cell in row):
            continue
        name = row[file_col].strip() if len(row) > file_col else ""
        class_id = row[class_col].strip() if len(row) > class_col else ""
        if not name or not CLASS_ID.fullmatch(class_id):
            raise ConvertError(f"{path}:{n}: expected a file name and a class id (a number), got "
                               f"{delimiter.join(row)!r}")
        if name in seen:
            raise ConvertError(f"{path}:{n}: {name} is named twice: a sign has one class")
        seen.add(name)
        yield n, name, int(class_id)


def read_test_labels(path: Path) -> dict[str, str]:
    """Each test sign's class folder (`00014`), by its file name, from GT-final_test.csv's rows."""
    hint = (": the test archive's GT-final_test.test.csv has no ClassId; the labels are GTSRB_Final_Test_GT.zip's")
    return {name: f"{class_id:05d}" for _, name, class_id in _class_rows(path, ";", "Filename", hint)}


def kaggle_found(src: Path) -> Path | None:
    """SRC when it is Kaggle's copy of GTSRB (`Train/`, and `Train.csv` and `Test.csv` whose header names `Path`
    and `ClassId`), None for any other source."""
    if not (src / "Train").is_dir() or not all((src / name).is_file() for name in KAGGLE_LISTS.values()):
        return None
    header = first_line(src / KAGGLE_LISTS["train"]).split(",")
    return src if {"Path", "ClassId"} <= {h.strip() for h in header} else None


def read_kaggle(root: Path) -> Labels:
    """Each listed sign's class (its ClassId, `0` ... `42`: the classes in the order of their numbers) and split,
    by its `Path` under SRC (`Train/20/00020_00000_00000.png`, `Test/00000.png`)."""
    rows: dict[str, str] = {}
    splits: dict[str, str] = {}
    for split, name in KAGGLE_LISTS.items():
        path = root / name
        for n, sign, class_id in _class_rows(path, ",", "Path", ""):
            if sign in splits:
                raise ConvertError(f"{path}:{n}: {sign} is in {splits[sign]} too: a sign has one split")
            rows[sign], splits[sign] = str(class_id), split
    return Labels(rows, tuple(sorted(set(rows.values()), key=int)), splits)


def discover_gtsrb(src: Path, follow: bool) -> Discovery | None:
    """The training signs in train, the test signs in test (GTSRB's folders say each sign's split, not --split);
    None for a source that is not GTSRB."""
    g = found(src, follow)
    if g is None:
        return None
    if g.test is not None and g.labels is None:
        raise ConvertError(f"{g.test}: GTSRB's test signs have no labels: {TEST_LABELS} (GTSRB_Final_Test_GT.zip) is "
                           f"neither there nor in {g.top}; put it there, or convert {g.training} alone")
    col = ImageCollector(src, follow=follow)
    names = listed_or_refused(g.training, "GTSRB's classes are the folders it holds")
    classes = tuple(n for n in names if CLASS_FOLDER.fullmatch(n) and is_folder(g.training / n, follow=follow))
    for label, name in enumerate(classes):
        folder = g.training / name
        for path, problem in col.walk.files(folder, root=src):
            if problem is not None:
                col.rejected.append(Rejection("train", col.rel(path), problem))
            elif path.parent != folder or not FOLDER_LIST.fullmatch(path.name):
                col.add_file(path, "train", label)
    for name in names:
        if name not in classes:
            col.reject(g.training / name, "train", "not a GTSRB class folder (00000 ... 00042)")
    taken = [g.training]
    if g.test is not None and g.labels is not None:
        rows = read_test_labels(g.labels)
        take_listed(col, g.test, g.labels, "test", table=Labels(rows, classes, None), skip=ITS_OWN)
        taken += [g.test, g.labels]
    col.reject_beside(taken, "train", "beside GTSRB's training and test folders: not read")
    return Discovery(col.items, classes, col.rejected, "gtsrb", col.identity)

