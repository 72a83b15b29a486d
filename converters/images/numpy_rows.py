"""The rows a conversion takes from NumPy arrays of images (npz_files.py): each member of a `.npz` file, or each
file of one array (`.npy`; `.npz` of one member), named as images are, read with its labels; each image a row of
array_files.py's collector (`ArrayFiles`, a tables.py `ImageRows`), encoded as PNG into its spill file. Sources are
`FILE/MEMBER#i` for a member, `FILE#i` for a file."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from converters.images import class_maps, npz_files
from converters.images.table_columns import Columns
from converters.images.tables import png_bytes
from converters.sample import Rejection
from converters.table_files import TableError

if TYPE_CHECKING:
    from converters.images.array_files import ArrayFiles

NO_LABEL_FIELD = "NumPy arrays' labels are the array named as its images are, with y or labels"
UNNAMED = "not named as images (x, images, x_SPLIT, SPLIT_images) or their labels (y, labels, ...) are: not read"


def add_npz(col: ArrayFiles, path: Path, rel: str, split: str) -> int:
    """Take the images of each member of the `.npz` file at `path` that holds them; record why each other member is
    not read. The images taken."""
    col.no_label_field(NO_LABEL_FIELD)
    found = 0
    with npz_files.opened(path) as arrays:
        for name in arrays.others:
            col.rejected.append(Rejection(split, f"{rel}/{name}", "not an .npy array: not read"))
        for key in arrays.members:
            named = npz_files.key_of(key)
            where = f"{rel}/{key}"
            if named is None:
                col.rejected.append(Rejection(split, where, UNNAMED))
                continue
            member_split = named.split or split
            if named.images:
                try:
                    found += _add_images(col, arrays, key, named, member_split, where, path)
                except TableError as exc:
                    col.rejected.append(Rejection(member_split, where, str(exc)))
            elif arrays.find(named.partners) is None:
                col.rejected.append(Rejection(member_split, where, f"labels without their images "
                                                                   f"({named.partners[0]})"))
    return found


def add_array_file(col: ArrayFiles, path: Path, rel: str, named: npz_files.Key, split: str) -> int:
    """Take the images of the file of one array at `path` (`.npy`, or `.npz` of one member), whose name reads as
    `named`, with the labels file beside it (a labels file is read with its images). The images taken; TableError
    saying why there are none."""
    col.no_label_field(NO_LABEL_FIELD)
    arrays = npz_files.array_files(path.parent)
    if not named.images:
        if arrays.find(named.partners) is None:
            raise TableError(f"labels without their images file ({named.partners[0]}{path.suffix.lower()})")
        return 0  # read with its images
    mapped = class_maps.for_arrays(path, named.family)  # (a .npz of several arrays has none: they name no dataset)
    return _add_images(col, arrays, path.name[:-4], named, split, rel, path, mapped)  # (`split`: its name's)


def _add_images(col: ArrayFiles, arrays: npz_files.Arrays, key: str, named: npz_files.Key, split: str, where: str,
                path: Path, mapped: Path | None = None) -> int:
    """The images of the array `key`, whose name reads as `named`, each with its label from its labels' array,
    their classes named by the class map at `mapped` (None: none): the images taken."""
    partner = arrays.find(named.partners)
    with arrays.images(key) as (head, images):
        labels: Iterable[Any] = repeat(None)  # (not a list of the count: a header may promise billions)
        label, names = None, None
        if not col.opts.unlabeled:
            if partner is None:
                raise TableError(f"no labels beside it ({named.partners[0]}); --unlabeled converts it without labels")
            labels, width = arrays.labels(partner, head.shape[0], multi=col.opts.multi_label)
            label, names = partner, _names(mapped, width)
        columns = Columns(key, label, names)
        col.labels.agree(where, label, names)
        found = taken = 0
        try:
            for taken, (image, y) in enumerate(zip(images, labels, strict=False), start=1):
                if label is not None and y is None:
                    col.rejected.append(Rejection(split, f"{where}#{taken - 1}", f"its row of {partner!r} holds "
                                                                                 "values other than 0 and 1"))
                    continue
                found += col.add_row(png_bytes(image), y, columns, split, f"{where}#{taken - 1}", str(path))
        except TableError as exc:  # the images before it are kept
            col.rejected.append(Rejection(split, f"{where}#{taken}", str(exc)))
    return found


def _names(mapped: Path | None, width: int | None) -> tuple[str, ...] | None:
    """The class names of images whose labels are ids, or rows of `width` flags: those of the class map at `mapped`
    (class_maps.py), else `0` ... `width - 1` for flags, and None for ids (their values are the classes).
    TableError where the map and the rows disagree."""
    if mapped is None:
        return tuple(str(i) for i in range(width)) if width else None
    names = class_maps.read(mapped)
    if width and len(names) != width:
        raise TableError(f"{mapped.name} names {len(names)} classes, and each label is a row of {width} flags")
    return names
