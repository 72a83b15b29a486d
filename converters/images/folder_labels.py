"""Images labelled by a table in each split folder (or one at the top of SRC), as two tools write them:

- Hugging Face ImageFolder metadata (`datasets.load_dataset("imagefolder", data_dir=SRC)`): `metadata.csv`,
  `metadata.jsonl` or `metadata.parquet`, a row an image: its `file_name`, relative to the metadata file's folder,
  and its class in a `label` column (or `labels`, `class`, `category`, `target`; --label-field and --image-field
  name others). A class is a name or a whole number (an id, kept as the label it is); with --multi-label a row's
  classes are a list (JSON Lines, Parquet; an empty list: no class) or a cell of classes separated as a labels
  CSV's are. Metadata at the top puts each image in the split of its `split` column, else in the one its path's
  first folder names.
- Roboflow's classification export: `_classes.csv` in `train/`, `valid/` and `test/`, `filename` and a one-hot
  column a class (read as any labels CSV: labels_csv.py), several marked with --multi-label.

The files a table does not name, those of a split folder without one, and those beside the split folders are
rejected, saying so; metadata of captions (`file_name`, `text`) is the image_text kind's."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, NamedTuple

from converters.images.labels_csv import Labels, label_order, read_labels
from converters.images.listed_files import ImageCollector, take_listed
from converters.kind import Discovery
from converters.metadata_files import METADATA, column_rows, header_names
from converters.tree import split_folders, split_of_folder
from converters.walk import is_folder, listed
from fastdata.errors import ConvertError

log = logging.getLogger(__name__)
FILE_COLUMN = "file_name"  # what Hugging Face's ImageFolder requires
ROBOFLOW = "_classes.csv"  # Roboflow's table of each split folder
LABEL_COLUMNS = ("label", "labels", "class", "category", "target")  # the first a metadata file has is its classes


class Metadata(NamedTuple):
    path: Path
    split: str | None  # the split folder's; None for metadata at the top of the source (each row's path says)
    columns: tuple[str | None, str | None]  # the file and label columns by name; (None, None): a labels CSV as it is
    labelled: bool  # False: Hugging Face metadata without a label column


def _column(names: list[str], wanted: tuple[str, ...]) -> str | None:
    """The first of `wanted` among `names`: written so, else in any case."""
    for w in wanted:
        found = [n for n in names if n == w] or [n for n in names if n.strip().lower() == w.lower()]
        if found:
            return found[0]
    return None


def _in_folder(folder: Path, split: str | None, fields: tuple[str | None, str | None],
               follow: bool) -> Metadata | None:
    """The labels table of `folder`: Roboflow's `_classes.csv`, or Hugging Face metadata with a file column; None
    for neither. ConvertError for two (which one holds the labels?), one that cannot be read, or a column
    --image-field or --label-field names that it lacks."""
    files = [folder / n for n in (*METADATA, ROBOFLOW)
             if (folder / n).is_file() and (follow or not (folder / n).is_symlink())]
    if len(files) > 1:
        raise ConvertError(f"{folder} holds {' and '.join(f.name for f in files)}: which one lists its images? "
                           "Keep one")
    if not files:
        return None
    if files[0].name == ROBOFLOW:
        return Metadata(files[0], split, fields, True)
    try:
        names = header_names(files[0])
    except Exception as exc:  # noqa: BLE001 - csv, JSON and pyarrow raise several types for a file they cannot read
        raise ConvertError(f"cannot read metadata file {files[0]}: {exc}") from exc
    file = _column(names, (fields[0] or FILE_COLUMN,))
    label = _column(names, (fields[1],) if fields[1] else LABEL_COLUMNS)
    for option, name, got in (("--image-field", fields[0], file), ("--label-field", fields[1], label)):
        if name and got is None:
            raise ConvertError(f"{files[0]}: {option} {name}: no column of that name (its columns: "
                               f"{', '.join(names) or 'none'})")
    return None if file is None else Metadata(files[0], split, (file, label), label is not None)


def _split_folders(src: Path, follow: bool) -> dict[str, str]:
    """The split folders at the top of `src`, folder -> split."""
    return split_folders([n for n in listed(src) if is_folder(src / n, follow=follow)])


def found(src: Path, follow: bool, image_field: str | None = None,
          label_field: str | None = None) -> list[Metadata] | None:
    """The tables that label the images of `src`: the one at its top, or those of its split folders; None when none
    is there, or only Hugging Face metadata without a label column (warned about). ConvertError for a table at the
    top and in a split folder both."""
    fields = (image_field, label_field)
    top = _in_folder(src, None, fields, follow)
    inner = [m for f, s in _split_folders(src, follow).items()
             if (m := _in_folder(src / f, s, fields, follow)) is not None]
    if top is not None and inner:
        raise ConvertError(f"{top.path} and {inner[0].path} both list images: a labels table sits at the top of the "
                           "source or in each split folder, not both")
    tables = [top] if top is not None else inner
    if tables and not any(m.labelled for m in tables):
        log.warning("%s: no label column (%s); its rows' other columns are not read. --label-field names the one "
                    "that holds each image's class", ", ".join(str(m.path) for m in tables), ", ".join(LABEL_COLUMNS))
        return None
    return tables or None


def _cell(value: Any, where: str, multi: bool) -> str | tuple[str, ...]:
    """A label cell as `read_labels` reads it: a name, a whole number as its digits, with --multi-label a list of
    them as a tuple. ConvertError naming the row for anything else."""
    if isinstance(value, list) and multi:
        return tuple(_class(v, where) for v in value)
    if isinstance(value, list):
        raise ConvertError(f"{where}: the label {str(value)[:80]!r} lists classes: convert with --multi-label")
    return _class(value, where)


def _class(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ConvertError(f"{where}: the class {str(value)[:80]!r} is no class name or whole number")


def read_metadata(table: Metadata, multi: bool) -> Labels:
    """The labels of one table, each file named relative to its folder (`read_labels` reads a CSV)."""
    if table.path.suffix.lower() == ".csv":
        return read_labels(table.path, None, table.path.parent, multi=multi, columns=table.columns)
    file_column, label_column = table.columns
    cells: list[tuple[Any, list[Any]]] = [(0, list(table.columns))]
    for where, (file, label) in column_rows(table.path, lambda names: list(table.columns), "metadata file"):
        at = f"{table.path}:{where}"
        if not isinstance(file, str):
            raise ConvertError(f"{at}: {file_column} is {str(file)[:80]!r}, not a file's name")
        if label is None:
            raise ConvertError(f"{at}: no {label_column} for {file!r}")
        cells.append((where, [file, _cell(label, at, multi)]))
    return read_labels(table.path, None, table.path.parent, multi=multi, columns=table.columns, rows=cells)


def _split_of(name: str, split: str) -> str:
    """The split of a file a top metadata file names: its first folder's, when that is a split folder."""
    return split_of_folder(name.partition("/")[0]) or split  # (`read_labels` wrote it as a path under the source)


def discover_metadata(src: Path, tables: list[Metadata], split: str, follow: bool, multi: bool) -> Discovery:
    """The images the tables name, each with its class, in its split. The classes are those of all tables: in the
    order they all give (one-hot columns), else in label order."""
    col = ImageCollector(src, follow=follow)
    for m in tables:
        if not m.labelled:
            col.reject(m.path.parent, m.split or split, f"no label: {col.rel(m.path)} has no label column "
                                                        f"({', '.join(LABEL_COLUMNS)})")
    read = [(m, read_metadata(m, multi)) for m in tables if m.labelled]
    orders = {labels.classes for _, labels in read}  # one order all tables give (one-hot columns') is kept
    classes = next(iter(orders)) if len(orders) == 1 else label_order({c for order in orders for c in order})
    if not classes:
        raise ConvertError(f"{', '.join(str(m.path) for m in tables)}: no image has a class; a dataset of no class "
                           "would yield -1 for every image (--unlabeled converts it so)")
    for m, labels in read:
        splits = labels.splits or {name: _split_of(name, split) for name in labels.rows} if m.split is None else None
        take_listed(col, m.path.parent, m.path, m.split or split, table=Labels(labels.rows, classes, splits),
                    skip=(m.path.name,), multi=multi, listing=col.rel(m.path))
    if tables[0].split is not None:
        folders = _split_folders(src, follow)
        for folder, s in folders.items():
            if src / folder not in {m.path.parent for m in tables}:
                names = f"metadata file ({', '.join(METADATA)})" if tables[0].path.name in METADATA else ROBOFLOW
                col.reject(src / folder, s, f"no label: {folder}/ holds no {names}, as "
                                            f"{', '.join(col.rel(m.path) for m in tables)} does")
        col.reject_outside(listed(src), list(folders))
    col.warn_unused(classes, "images")
    layout = "roboflow" if tables[0].path.name == ROBOFLOW else "hf_metadata"
    return Discovery(col.items, classes, col.rejected, layout, col.identity)
