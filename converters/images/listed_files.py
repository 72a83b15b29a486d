"""The image files of a source and the files a list labels: `ImageCollector` takes an image file as a work item
(or records why not: an extension that is no image's, a file that cannot be stat'ed, a name --label-pattern does
not match), `take_listed` takes the files under a folder that a labels file (or a dataset's own lists, read into
`Labels`) names, each in its split, and rejects the rest, and the names no file has."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from converters.images.imagenet_archives import devkit_labels, is_devkit
from converters.images.labels_csv import EXTENSIONS, Labels, listed_names, read_labels
from converters.images.name_labels import class_of_name
from converters.sample import Rejection, WorkItem
from converters.tree import Collector
from fastdata.errors import ConvertError


def check_file(path: Path, rel: str, split: str) -> tuple[int | None, Rejection | None]:
    """(size, None) for a usable file, or (None, rejection) saying why it is not (a regular file: `Walk.problem`
    was asked before)."""
    if path.suffix.lower() not in EXTENSIONS:
        return None, Rejection(split, rel, f"unsupported extension {path.suffix!r}; allowed: {', '.join(EXTENSIONS)}")
    try:
        return path.stat().st_size, None
    except OSError as exc:
        return None, Rejection(split, rel, f"unreadable: {exc.strerror or exc}")


class ImageCollector(Collector):
    """The image files of a source as work items (`check_file`), each with its label."""

    pattern: re.Pattern[str] | None = None  # --label-pattern: each file's class from its name (a string, for now)

    def add_file(self, path: Path, split: str, label: int | str | tuple[int, ...] | None) -> None:
        rel = self.rel(path)
        size, rejection = check_file(path, rel, split)
        if rejection is None and self.pattern is not None:
            label, problem = class_of_name(self.pattern, path.name)
            rejection = None if problem is None else Rejection(split, rel, problem)
        if rejection is not None:
            self.rejected.append(rejection)
            return
        self.items.setdefault(split, []).append(WorkItem(split=split, rel=rel, source=str(path), label=label))
        self.identity.append([split, rel, label, size])


def take_listed(col: ImageCollector, folder: Path, csv_path: Path, split: str,
                classes: tuple[str, ...] | None = None, table: Labels | None = None,
                skip: tuple[str, ...] = (), multi: bool = False, listing: str | None = None,
                why_unlisted: Callable[[str], tuple[str, str] | None] | None = None,
                columns: tuple[str | None, str | None] = (None, None)) -> tuple[str, ...]:
    """Take the files under `folder` a labels CSV lists, named by their paths relative to `folder` (`a.jpg`,
    `part_1/a.jpg`), each in the split its row gives (a split column's, else `split`); every other file is rejected
    as not listed, and so is a row whose class is not among `classes` (None: the CSV's own classes are the classes).
    `table`: the labels, read already from `csv_path`; `skip`: the files directly under `folder` read with them,
    which are no images to reject. `multi` (--multi-label): a row names several classes, and a file's label is the
    sorted tuple of their indices. `listing`: what rejections name as the list (`csv_path`'s name);
    `why_unlisted`: (split, reason) of a file the list leaves out for a reason of the dataset's (its name under
    `folder`), None for one merely not listed; `columns`: the CSV's file and label columns by name (`read_labels`).
    Returns the classes."""
    prefix = "" if folder == col.src else col.rel(folder) + "/"
    found = [(col.rel(path), path, problem) for path, problem in col.walk.files(folder, root=col.src)]
    found = [(rel, path, problem) for rel, path, problem in found if path.parent != folder or path.name not in skip]
    names = [rel[len(prefix):] for rel, _, _ in found]
    if table is None and is_devkit(csv_path):  # ImageNet's devkit: the val images' ground truth
        if multi or columns != (None, None):
            raise ValueError(f"{csv_path} is ImageNet's devkit, which gives each val image one class by its file "
                             "name: --multi-label, --image-field and --label-field do not apply")
        table = devkit_labels(csv_path)
    labels, own, splits = table or read_labels(csv_path, names, folder, multi=multi, columns=columns)
    listing = listing or csv_path.name
    if splits is not None and prefix and table is None:
        raise ConvertError(f"{csv_path} has a split column: --labels {split}=FILE puts every file it lists in "
                           f"{split}; give it as --labels FILE instead")
    row_split = splits or dict.fromkeys(labels, split)  # a split column's, else the one split of the folder
    classes = own if classes is None else classes
    index = {c: i for i, c in enumerate(classes)}
    seen = set()
    listed, ambiguous = listed_names(labels, names)
    for name, (rel, path, problem) in zip(names, found):
        row = listed.get(name)
        if row is not None:
            seen.add(row)
        if problem is not None:  # a link not followed, a loop, a special file: said, never opened
            col.rejected.append(Rejection(split if row is None else row_split[row], rel, problem))
        elif row is None:
            other = why_unlisted(name) if why_unlisted is not None else None
            col.rejected.append(Rejection(other[0], rel, other[1]) if other else
                                Rejection(split, rel, f"not listed in labels file {listing}"))
        elif multi:
            col.add_file(path, row_split[row], tuple(sorted(index[c] for c in labels[row])))
        elif labels[row] not in index:
            col.rejected.append(Rejection(split, rel, f"class not among train's classes: {labels[row]!r}"))
        else:
            col.add_file(path, row_split[row], index[labels[row]])
    for name in sorted(set(labels) - seen):
        if name in ambiguous:
            col.rejected.append(Rejection(row_split[name], prefix + name, f"listed in {listing} by a name "
                                          f"several files have ({', '.join(ambiguous[name])}): name the file whole"))
        else:
            col.rejected.append(Rejection(row_split[name], prefix + name, f"listed in {listing} but no such "
                                          "file in the source"))
    return classes
