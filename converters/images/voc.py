"""Pascal VOC's classification task as its devkit holds it (`VOCdevkit/VOC2007/`, `VOC2012/`): the images in
`JPEGImages/` (`000005.jpg`), and in `ImageSets/Main/` each split's list of images (`train.txt`, `val.txt`, and
`test.txt` where the VOC2007 test set is unpacked beside them) and each class's list of marks for a split
(`aeroplane_train.txt`: `000005 -1`, `000007  1`, `000009  0`).

- The classes are those the class lists are named by, sorted (VOC's 20: aeroplane ... tvmonitor). An image's
  classes are those whose list marks it 1, or 0: the image holds only difficult objects of that class, which are
  there all the same (TensorFlow Datasets' `labels` counts them too).
- The splits are the split lists' (`trainval.txt` and the `_trainval` lists are their union: not read). A split
  whose images no class list marks (VOC2012's test set, its marks unpublished) is rejected image by image.
- A mark other than -1, 0 and 1, a class list that lacks an image of its split or names one not in it, a split
  some classes mark and others do not, or an image in two splits stops the conversion, saying so: the lists are not
  VOC's.
- Without --multi-label the folder is refused, naming the option: VOC's images have several classes.
"""

from __future__ import annotations

import re
from pathlib import Path

from converters.images.labels_csv import Labels
from converters.images.list_text import list_text
from converters.walk import listed_or_refused
from fastdata.errors import ConvertError

IMAGES = "JPEGImages"
LISTS = Path("ImageSets") / "Main"
SPLITS = {"train": "train", "val": "val", "test": "test"}  # a list's name -> its split (trainval: not read)
CLASS_LIST = re.compile(r"(.+)_(train|val|test)\.txt")  # `cat_trainval.txt` is none
MARKS = {"1": True, "0": True, "-1": False}  # 0: only difficult objects of the class, which are there
MAX_FILE = 1 << 24  # bytes of one list read (VOC2012's largest holds 11,540 lines)
NEEDS_OPTION = ("{src} is laid out as Pascal VOC (JPEGImages/ beside ImageSets/Main/): its images have several "
                "classes each; --multi-label converts them so, --unlabeled converts the images without labels")
UNMARKED = "in {split}.txt, which no class list marks (the split's labels are not published)"


def found(src: Path) -> bool:
    """Whether `src` is laid out as a VOC year of the devkit: `JPEGImages/` beside `ImageSets/Main/`."""
    return (src / IMAGES).is_dir() and (src / LISTS).is_dir()


def _lines(path: Path) -> list[tuple[int, list[str]]]:
    """The words of each line of a list that is not blank, with its line number."""
    text = list_text(path, MAX_FILE, "a VOC list")
    return [(n, line.split()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _split_images(path: Path) -> list[str]:
    images = []
    for n, words in _lines(path):
        if len(words) != 1:
            raise ConvertError(f"{path}:{n}: expected an image id (000005), got {' '.join(words)!r}")
        images.append(words[0])
    return images


def _marks(path: Path, images: list[str]) -> set[str]:
    """The images a class list marks 1 or 0, once every image of its split, and no other, is marked once."""
    marked: dict[str, bool] = {}
    for n, words in _lines(path):
        if len(words) != 2 or words[1] not in MARKS:
            raise ConvertError(f"{path}:{n}: expected an image id and its mark (1, 0 or -1), got {' '.join(words)!r}")
        if words[0] in marked:
            raise ConvertError(f"{path}:{n}: {words[0]!r} is marked again")
        marked[words[0]] = MARKS[words[1]]
    unknown = sorted(set(marked) - set(images))
    missing = [i for i in images if i not in marked]
    if unknown or missing:
        what = f"marks {unknown[0]}, which its split's list lacks" if unknown else f"does not mark {missing[0]}"
        raise ConvertError(f"{path}: {what}: the lists are not VOC's")
    return {i for i, present in marked.items() if present}


def read_voc(src: Path) -> tuple[Labels, dict[str, str]]:
    """(the classes of the images the split lists name, by id, with their splits; the ids of splits no class list
    marks -> those splits)."""
    lists = src / LISTS
    names = [n for n in listed_or_refused(lists, "VOC's lists of its splits are there") if (lists / n).is_file()]
    splits = {SPLITS[n[:-4]]: _split_images(lists / n) for n in names if n[:-4] in SPLITS}
    if not splits:
        raise ConvertError(f"{lists}: no list of a split's images (train.txt, val.txt, test.txt)")
    class_lists: dict[str, set[str]] = {}
    for n in names:
        match = CLASS_LIST.fullmatch(n)
        if match and match[2] in splits:
            class_lists.setdefault(match[2], set()).add(match[1])
    classes = tuple(sorted(set().union(*class_lists.values())))
    if not classes:
        raise ConvertError(f"{lists}: no class list (aeroplane_train.txt: `000005 -1` a line)")
    rows: dict[str, tuple[str, ...]] = {}
    split_of: dict[str, str] = {}
    unmarked: dict[str, str] = {}
    for split, images in splits.items():
        for image in images:
            first = split_of.get(image) or unmarked.get(image)
            if first is not None:
                raise ConvertError(f"{lists}: {image} is in {first}.txt and in {split}.txt: an image has one split")
            (split_of if split in class_lists else unmarked)[image] = split
        if split not in class_lists:
            continue
        lacking = [c for c in classes if c not in class_lists[split]]
        if lacking:
            raise ConvertError(f"{lists}: no {lacking[0]}_{split}.txt where the other classes have their {split} "
                               "list: the lists are not VOC's")
        has = {c: _marks(lists / f"{c}_{split}.txt", images) for c in classes}
        rows.update((image, tuple(c for c in classes if image in has[c])) for image in images)
    return Labels(rows, classes, {image: split_of[image] for image in rows}), unmarked
