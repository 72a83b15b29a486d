"""Omniglot as torchvision's `Omniglot` downloads it (`omniglot-py/images_background/`, `images_evaluation/`) or as
its repository's `images_background.zip` and `images_evaluation.zip` unpack: `ALPHABET/characterNN/NNNN_NN.png`,
1,623 handwritten characters of 50 alphabets, 20 images each.

- A class is a character of an alphabet, `Greek/character01`, as torchvision's `Omniglot` names its targets (two
  folders deep: read as a tree, the classes had been the two sets, `images_background` and `images_evaluation`).
- `images_background` (30 alphabets, 964 characters) is `train`, `images_evaluation` (20 alphabets, 659 characters,
  others than the background's: few-shot learning's meta-test) is `test`. The classes are the background's, sorted,
  then the evaluation's, sorted: a train label is torchvision's `Omniglot(background=True)` target where the folders
  list sorted (its order is the file system's listing). One set as the source (`omniglot-py/images_evaluation/`)
  is one split, `--split`.
- Lake's smaller training sets (`images_background_small1`, `_small2`: 5 of the background's alphabets each) beside
  a full set are rejections (their images are the background's again); without one, the first converts and the
  other is a rejection. Anything else beside the sets (`strokes_background/`, the zip archives) and any file that
  is not in a character folder are rejections.
"""

from __future__ import annotations

from pathlib import Path

from converters.class_folders import class_folder_problem
from converters.images.listed_files import ImageCollector
from converters.kind import Discovery
from converters.sample import Rejection
from converters.walk import is_folder

FOLDER = "omniglot-py"  # where torchvision's Omniglot unpacks its archives
SETS = {"images_background": "train", "images_evaluation": "test"}
SMALL = ("images_background_small1", "images_background_small2")  # subsets of images_background's alphabets
SUBSET = ("one of Lake's smaller training sets, a subset of images_background's alphabets: beside a full set its "
          "images would be converted twice; convert it as a source of its own")
ANOTHER_SMALL = "another of Lake's smaller training sets: convert each as a source of its own"
OUTSIDE = "not in a character folder of an alphabet (ALPHABET/characterNN/IMAGE)"


def _sets(src: Path, follow: bool) -> tuple[Path, list[Path]] | None:
    """(the folder holding the sets, the set folders that convert) of a source that is Omniglot, or None."""
    if src.name in SETS or src.name in SMALL:
        return src.parent, [src]
    for root in (src / FOLDER, src):
        full = [root / n for n in SETS if is_folder(root / n, follow=follow)]
        small = [root / n for n in SMALL if is_folder(root / n, follow=follow)]
        if full or small:
            return root, full or small[:1]
    return None


def discover_omniglot(src: Path, split: str, follow: bool) -> Discovery | None:
    """Every image of a character folder, each character a class; None for a source that is not Omniglot."""
    found = _sets(src, follow)
    if found is None:
        return None
    root, sets = found
    col = ImageCollector(src, follow=follow)
    files: list[tuple[Path, str, str]] = []  # (image, its split, its class)
    classes: dict[str, int] = {}
    for folder in sets:
        in_split = split if folder == src else SETS.get(folder.name, split)
        taken = []
        for path, problem in col.walk.files(folder, root=src):
            parts = path.relative_to(folder).parts
            why = problem or (OUTSIDE if len(parts) != 3 else
                              class_folder_problem(parts[0]) or class_folder_problem(parts[1]))
            if why is not None:
                col.rejected.append(Rejection(in_split, col.rel(path), why))
                continue
            taken.append((path, in_split, f"{parts[0]}/{parts[1]}"))
        for name in sorted({c for _, _, c in taken}):  # this set's characters after the sets before it
            classes.setdefault(name, len(classes))
        files += taken
    for path, in_split, name in files:
        col.add_file(path, in_split, classes[name])
    if sets != [src]:
        for name in SMALL:
            if (root / name) not in sets and (root / name).exists():
                col.reject(root / name, split, ANOTHER_SMALL if sets[0].name in SMALL else SUBSET)
        col.reject_beside([*sets, *(root / n for n in SMALL)], split, "beside Omniglot's image sets: not read")
    names = tuple(classes)
    col.warn_unused(names, "images")
    return Discovery(col.items, names, col.rejected, "omniglot", col.identity)
