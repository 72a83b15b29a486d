"""Caltech-101 as its archive unpacks (`101_ObjectCategories/accordion/image_0001.jpg` ..., and `Annotations/`
beside it) or as torchvision's `Caltech101` downloads it (`caltech101/101_ObjectCategories/`): its class folders,
and `BACKGROUND_Google/`, the background clutter.

- The classes are the class folders but `BACKGROUND_Google/`, sorted (torchvision's 101, its order: `Faces`,
  `Faces_easy`, `Leopards` and `Motorbikes` before `accordion`). Read as a tree, the clutter had been a class of its
  own; its images are rejected as such. (Renamed, `background/`, it is a class like any other: the 102 classes of
  the protocols that count it.)
- One split: `--split`, `--split-list` or `--val-fraction`, as for a tree. The object outlines of `Annotations/`,
  and anything else beside `101_ObjectCategories/` when the source holds it, are rejections.
"""

from __future__ import annotations

from pathlib import Path

from converters.class_folders import ClassFolders
from converters.images.listed_files import ImageCollector
from converters.kind import Discovery
from converters.walk import is_folder, listed

FOLDER = "101_ObjectCategories"  # what the archive's 101_ObjectCategories.tar.gz unpacks to
CLUTTER = "BACKGROUND_Google"
NOT_A_CLASS = f"Caltech-101's background clutter ({CLUTTER}/), not a class: torchvision's Caltech101 leaves it out"


def found(src: Path) -> Path | None:
    """The dataset's class folders (SRC, its `101_ObjectCategories/` or its `caltech101/101_ObjectCategories/`)
    when they hold `BACKGROUND_Google/`; None for any other source."""
    for root in (src / "caltech101" / FOLDER, src / FOLDER, src):
        if (root / CLUTTER).is_dir():
            return root
    return None


def discover_caltech101(src: Path, split: str, follow: bool) -> Discovery | None:
    """Every image of a class folder in `split`, the clutter's rejected; None for a source that is not Caltech-101."""
    root = found(src)
    if root is None:
        return None
    col = ImageCollector(src, follow=follow)
    names = listed(root)
    folders = ClassFolders.of([n for n in names if n != CLUTTER and is_folder(root / n, follow=follow)])
    classes = folders.classes
    for label, name in enumerate(classes):
        col.add_tree(root / name, split, label)
    for name in names:
        if name == CLUTTER:
            col.reject(root / name, split, NOT_A_CLASS)
        elif name not in classes:
            col.reject(root / name, split, folders.problems.get(name) or f"not inside a class folder of {FOLDER}/")
    col.reject_beside([root], split, f"beside {FOLDER}/: not read")
    col.warn_unused(classes, "images")
    return Discovery(col.items, classes, col.rejected, "caltech101", col.identity)
