"""iNaturalist 2017, 2018 and 2019 as their archives unpack into one folder: the training and validation images
together under a super category and a category, `train_val2018/Plantae/2856/<image>.jpg` (2017:
`train_val_images/Plantae/Abies concolor/`; 2019: `train_val2019/`), and `train2018.json` and `val2018.json`, files in
COCO's shape whose images name their file (`train_val2018/Plantae/2856/<image>.jpg`) and whose one annotation each
gives its category. The test images (`test2018/`, `test2018.json`) have no published labels.

- The classes are the categories, in the order of their ids (0 ... 8141 in 2018: a label is the category id). The
  2018 and 2019 files obfuscate the names; `categories.json`, the names released after the competitions, renames
  them when it lies beside the files.
- The training file's images are train, the validation file's val. Images neither names (the test images, anything
  else in the folder) are rejections, and so is what lies beside the folders and files.
- A file that is not in COCO's shape (coco.py says which) stops the conversion, as do two files whose categories
  differ, an image of no category or of several, an image in both files or outside the images' folder, the files of
  two years, a categories.json that does not name each category once, and files without their images' folder.
  (iNaturalist 2021's `train/`, `val/` and `train.json` convert as split folders of class folders: its folder
  names sort in the order of its ids.)
"""

from __future__ import annotations

import re
from pathlib import Path

from converters.images import coco
from converters.images.labels_csv import Labels
from converters.images.listed_files import ImageCollector, take_listed
from converters.kind import Discovery
from fastdata.errors import ConvertError
from fastdata.json_text import BadJSON, parse_json

FILES = re.compile(r"(train|val|test)(2017|2018|2019)\.json")
IMAGES = {"2017": "train_val_images", "2018": "train_val2018", "2019": "train_val2019"}
TEST = {"2017": "test2017", "2018": "test2018", "2019": "test2019"}
NAMES = "categories.json"  # the names released after the 2018 and 2019 competitions
NO_TEST_LABELS = "iNaturalist's test images have no published labels: not read"


def found(src: Path) -> tuple[str, dict[str, Path]] | None:
    """(the year, each split's file: `train`, `val`, `test`) when SRC holds iNaturalist 2017, 2018 or 2019's
    training or validation file; None for any other source. ConvertError for the files of two years, or files
    without their images' folder."""
    years: dict[str, dict[str, Path]] = {}
    for path in sorted(src.iterdir()):
        match = FILES.fullmatch(path.name)
        if match is not None and path.is_file():
            years.setdefault(match[2], {})[match[1]] = path
    years = {year: files for year, files in years.items() if set(files) - {"test"}}
    if not years:
        return None
    if len(years) > 1:
        raise ConvertError(f"{src} holds the files of iNaturalist {' and '.join(sorted(years))}: convert one year "
                           "apart (move the other's files and folders out)")
    year, files = next(iter(years.items()))
    if not (src / IMAGES[year]).is_dir():
        raise ConvertError(f"{' and '.join(p.name for p in files.values())} name the images of {IMAGES[year]}/, "
                           f"which is not in {src}")
    return year, files


def _names(path: Path, ids: list[int]) -> list[str]:
    """The names categories.json gives the category `ids`, in their order."""
    try:
        data = parse_json(path.read_bytes())
    except (OSError, BadJSON) as exc:
        raise ConvertError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, list):
        raise ConvertError(f"{path}: expected a list of categories (each with its id and name), as iNaturalist "
                           f"released them; got {type(data).__name__}")
    names = coco.categories_of({"categories": data}, path)
    if sorted(names) != sorted(ids):
        missing = sorted(set(ids) - set(names)) or sorted(set(names) - set(ids))
        raise ConvertError(f"{path}: its categories are not those of the dataset's files (the id {missing[0]} is in "
                           "one only): is it another year's?")
    return [names[i] for i in ids]


def read_inaturalist(src: Path, year: str, files: dict[str, Path]) -> Labels:
    """Each image's class and split, by its path under the images' folder (`Plantae/2856/<image>.jpg`)."""
    rows: dict[str, str] = {}
    splits: dict[str, str] = {}
    categories: dict[int, str] | None = None
    prefix = IMAGES[year] + "/"
    for split in ("train", "val"):
        if split not in files:
            continue
        path = files[split]
        those, images = coco.read_instances(path)
        if categories is not None and those != categories:
            raise ConvertError(f"{path.name}: its categories are not those of {files['train'].name}")
        categories = those
        for name, classes in images.items():
            if len(classes) != 1:
                raise ConvertError(f"{path}: the image {name} has {len(classes)} categories; an iNaturalist image has "
                                   "one")
            if not name.startswith(prefix):
                raise ConvertError(f"{path}: the image {name} is not in {prefix}, where its images lie")
            rel = name[len(prefix):]
            if rel in splits:
                raise ConvertError(f"{path}: the image {name} is in {splits[rel]} too: an image has one split")
            rows[rel], splits[rel] = classes[0], split
    assert categories is not None  # found() saw a training or validation file
    classes = tuple(categories.values())
    if (src / NAMES).is_file():
        names = dict(zip(classes, _names(src / NAMES, list(categories)), strict=True))
        rows = {rel: names[c] for rel, c in rows.items()}
        classes = tuple(names.values())
    return Labels(rows, classes, splits)


def discover_inaturalist(src: Path, follow: bool) -> Discovery | None:
    """The training file's images in train and the validation file's in val (the files say each image's split, not
    --split); None for a source that is not iNaturalist 2017, 2018 or 2019."""
    got = found(src)
    if got is None:
        return None
    year, files = got
    table = read_inaturalist(src, year, files)
    col = ImageCollector(src, follow=follow)
    images = src / IMAGES[year]
    listing = " and ".join(files[s].name for s in ("train", "val") if s in files)
    take_listed(col, images, files.get("train") or files["val"], "train", table=table, listing=listing)
    taken = [images, *files.values()] + ([src / NAMES] if (src / NAMES).is_file() else [])
    if (src / TEST[year]).is_dir():
        col.reject(src / TEST[year], "test", NO_TEST_LABELS)
        taken.append(src / TEST[year])
    col.reject_beside(taken, "train", "beside iNaturalist's folders and files: not read")
    col.warn_unused(table.classes, "image")
    return Discovery(col.items, table.classes, col.rejected, "inaturalist", col.identity)
