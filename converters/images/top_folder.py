"""A download's top folder: a source that holds one folder and no image, the folder holding the class or split
folders (EuroSAT's `2750/AnnualCrop/`, Kaggle's `chest_xray/train/NORMAL/`, an archive unpacked into a folder of
its name). Read as a tree, that one folder was the one class of every image (the split folders inside it splits
of that class): a dataset of one class, silently. Its contents are read as the source instead, each input named
under the source as before (`2750/AnnualCrop/AnnualCrop_1.jpg`); what lies beside it (a readme, the archive) is a
rejection.

Not a top folder: a folder holding images of its own (a class, or loose images), one holding nothing but split
folders of images (`cat/train/`, `cat/val/`: one class in two splits, as before), or a split folder itself
(`train/`, read as split folders are).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from converters.images.labels_csv import EXTENSIONS
from converters.kind import Discovery
from converters.sample import Rejection
from converters.tree import split_of_folder
from converters.walk import display, is_folder, listed, readable

log = logging.getLogger(__name__)
BESIDE = "beside {name}/, the one folder of the source, whose contents are read as the source"


def _images(names: list[str]) -> bool:
    return any(Path(n).suffix.lower() in EXTENSIONS for n in names)


def top_folder(src: Path, *, follow: bool) -> Path | None:
    """The one folder of `src` to read as the source (the module's rule), or None."""
    names = listed(src)
    folders = [n for n in names if is_folder(src / n, follow=follow)]
    if len(folders) != 1 or split_of_folder(folders[0]) is not None or _images(names):
        return None
    inner = src / folders[0]
    if not readable(inner):
        return None  # (a class folder, which the walk rejects, saying why)
    names = listed(inner)
    if _images(names):
        return None
    if all(split_of_folder(n) is not None and readable(inner / n) and
           not any(is_folder(inner / n / m, follow=follow) for m in listed(inner / n))
           for n in names if is_folder(inner / n, follow=follow)):
        return None  # no folder in it (all of none), or one class's split folders of images
    return inner  # (and where a split folder in it cannot be read, the source's split folders it holds)


def under(found: Discovery, src: Path, inner: Path) -> Discovery:
    """`found`, the discovery of `inner`, as the discovery of `src`: each input and rejection named under `src`, and
    what lies beside `inner` rejected in the split `found` has (`train` when it has none)."""
    prefix = display(inner.relative_to(src).as_posix()) + "/"

    def named(rel: str) -> str:
        return rel if rel.startswith("/") else prefix + rel  # (a path outside the source stays whole)

    splits = {s: [replace(it, rel=named(it.rel)) for it in items] for s, items in found.splits.items()}
    rejected = [replace(r, source=named(r.source), also=tuple((named(f), why) for f, why in r.also))
                for r in found.rejected]
    split = next(iter(found.splits), "train")
    rejected += [Rejection(split, display(name), BESIDE.format(name=inner.name))
                 for name in listed(src) if src / name != inner]
    log.warning("%s holds one folder, %s/, and no image: its contents are read as the source (as one class folder "
                "it would have been the class of every image)", src, inner.name)
    return replace(found, splits=splits, rejected=rejected, identity=[["folder", prefix], *found.identity])
