"""COCO's images with the classes of their objects, several an image (the multi-label task ML-GCN and ASL train
on): `coco/annotations/instances_train2017.json` and `instances_val2017.json` beside `train2017/` and `val2017/`
(2014: `instances_train2014.json` beside `train2014/COCO_train2014_000000000009.jpg`).

- An instances file's `categories` are the classes, in the order of their ids (COCO's 80: person ... toothbrush);
  an image's classes are the categories of its annotations (crowd regions too), each once; an image of no
  annotation is an image of no class. Every instances file must hold the same categories.
- The split is the word of the file's name (`instances_train2017.json`: train), the images those of the folder
  named by that word and year (`train2017/`), each by its `file_name`. Other folders (`test2017/`, whose instances
  are not published) are not read, nor are the captions and keypoints files; an instances file of another word
  (`instances_minival2014.json`) is skipped with a warning.
- Each instances file is read whole, as pycocotools reads it. One that is not COCO's (no `images`, `annotations` or
  `categories` list, an image without a whole-number id or a file name, an id twice, an annotation of an image or
  category the file lacks, two categories of one name) stops the conversion, saying so; so does a missing folder.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from converters.images.labels_csv import Labels
from converters.tree import split_of_folder
from converters.walk import listed_or_refused
from fastdata.errors import ConvertError
from fastdata.json_text import BadJSON, parse_json

log = logging.getLogger(__name__)
ANNOTATIONS = "annotations"
INSTANCES = re.compile(r"instances_([A-Za-z]+)(\d{4})\.json")
NEEDS_OPTION = ("{src} is laid out as COCO (annotations/instances_*.json beside the images' folders): its images "
                "have the classes of their objects, several each; --multi-label converts them so, --unlabeled "
                "converts the images without labels")


def found(src: Path) -> list[tuple[str, Path, Path]]:
    """(split, instances file, images folder) of each split `src/annotations/` has an instances file of, in name
    order; [] when `src` is not laid out as COCO."""
    folder = src / ANNOTATIONS
    if not folder.is_dir():
        return []
    out = []
    names = listed_or_refused(folder, "a dataset's annotations are looked for there (COCO's instances files, "
                                      "Oxford-IIIT Pet's lists)")
    for path in (folder / n for n in names):
        match = INSTANCES.fullmatch(path.name)
        if match is None or not path.is_file():
            continue
        split = split_of_folder(match[1])
        if split is None:
            log.warning("%s: not the instances of a train, val or test split: not read", path)
            continue
        out.append((split, path, src / f"{match[1]}{match[2]}"))
    return out


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _listed(data: Any, key: str, path: Path) -> list[Any]:
    values = data.get(key) if isinstance(data, dict) else None
    if not isinstance(values, list):
        raise ConvertError(f"{path}: no '{key}' list: not a COCO instances file")
    return values


def categories_of(data: Any, path: Path) -> dict[int, str]:
    """Category id -> name, in the order of the ids, of the `categories` list of `data` (an instances file)."""
    names: dict[int, str] = {}
    for i, cat in enumerate(_listed(data, "categories", path)):
        if not isinstance(cat, dict) or not _whole(cat.get("id")) or not isinstance(cat.get("name"), str):
            raise ConvertError(f"{path}: category {i} has no whole-number id and name: {str(cat)[:80]}")
        if cat["id"] in names or cat["name"] in names.values():
            raise ConvertError(f"{path}: category {i} ({cat['id']}, {cat['name']!r}) repeats an id or a name")
        names[cat["id"]] = cat["name"]
    return dict(sorted(names.items()))


def read_instances(path: Path) -> tuple[dict[int, str], dict[str, tuple[str, ...]]]:
    """(the categories: id -> name, in the order of the ids; each image's file name -> the names of its
    annotations' categories) of one instances file."""
    try:
        data = parse_json(path.read_bytes())
    except (OSError, BadJSON) as exc:
        raise ConvertError(f"cannot read {path}: {exc}") from exc
    categories = categories_of(data, path)
    names: dict[int, str] = {}
    for i, image in enumerate(_listed(data, "images", path)):
        if not isinstance(image, dict) or not _whole(image.get("id")) or not isinstance(image.get("file_name"), str):
            raise ConvertError(f"{path}: image {i} has no whole-number id and file name: {str(image)[:80]}")
        if image["id"] in names:
            raise ConvertError(f"{path}: image {i} repeats the id {image['id']}")
        names[image["id"]] = image["file_name"]
    has: dict[int, set[int]] = {}
    for i, ann in enumerate(_listed(data, "annotations", path)):
        image_id, category = (ann.get("image_id"), ann.get("category_id")) if isinstance(ann, dict) else (None, None)
        if not _whole(image_id) or image_id not in names or not _whole(category) or category not in categories:
            raise ConvertError(f"{path}: annotation {i} is of an image or a category the file lacks (image_id "
                               f"{str(image_id)[:40]}, category_id {str(category)[:40]})")
        has.setdefault(image_id, set()).add(category)
    rows = {name: tuple(categories[c] for c in sorted(has.get(i, ()))) for i, name in names.items()}
    return categories, rows


def read_coco(src: Path, splits: list[tuple[str, Path, Path]]) -> list[tuple[str, Path, Path, Labels]]:
    """(split, instances file, images folder, the labels of its images named by their path under the folder) of
    each instances file; ConvertError where the files are not COCO's."""
    out = []
    for split, path, folder in splits:
        if not folder.is_dir():
            raise ConvertError(f"{path.name} names the images of {folder.name}/, which is not in {src}")
        categories, rows = read_instances(path)
        classes = tuple(categories.values())
        if out and classes != out[0][3].classes:
            raise ConvertError(f"{path.name}: its categories are not those of {out[0][1].name}: convert them apart")
        out.append((split, path, folder, Labels(rows, classes)))
    return out
