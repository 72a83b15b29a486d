"""Image datasets as tables, as Hugging Face ships them: Parquet files from the Hub
(`data/train-00000-of-00004.parquet`, `default/train/0000.parquet`) or Arrow files written by `save_to_disk`
(`train/data-00000-of-00001.arrow`), read by converters/table_files.py.

- Columns, splits and values: table_columns.py. Labels without a ClassLabel become classes in `label_order`, as a
  labels CSV's do. Every table must agree with the first: the same label column and the same class names.
- Each image's bytes go to a spill file (converters/spill.py) and are converted like an image file. A row without
  bytes (an image stored as a path only), without a label (-1, null), with a label no class has, or with more bytes
  than `bytes_limit`, and a table that is damaged or holds no image column, are recorded rejections.
- Bounded: BATCH_ROWS rows are read at once; a Parquet image column is read as the dictionary it is stored as, so
  a value repeated in every row (a dictionary bomb: kilobytes of file, gigabytes decoded) is in memory once per
  batch, and spilled once (converters/spill.py).
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from converters.images.labels_csv import EXTENSIONS
from converters.images.table_columns import (
    Columns,
    TableOptions,
    image_column,
    is_image_struct,
    label_column,
    row_values,
    split_of_table,
)
from converters.kind import Discovery
from converters.sample import Rejection, WorkItem
from converters.spill import Spill
from converters.table_files import ARROW, HF_METADATA, PARQUET, Damage, Table, TableError
from converters.table_labels import TableLabels
from converters.tree import Collector
from converters.walk import first_files
from fastdata.errors import ConvertError

SUFFIXES = (*PARQUET, *ARROW)
LOOK_AT = 8  # tables whose schema `has_image_tables` reads
BATCH_ROWS = 8  # rows read at once: at most 8 images in memory, each under TableOptions.max_bytes


def not_a_table(path: Path) -> str:
    """Why a file of a source read as tables is not read: no table, and the Hugging Face metadata said to be it."""
    meta = ": Hugging Face metadata, not data" if path.name.lower() in HF_METADATA else ""
    return "not a Parquet or Arrow table (this source is read as tables of images)" + meta


def image_rows(table: Table, image: str, columns: list[str | None], values: Callable[[Any], list[Any]], *,
               rel: str, split: str, rejected: list[Rejection]) -> Iterator[tuple[str, Any]]:
    """(`rel#row`, `values`' item for the row) for each row of a table of images, BATCH_ROWS rows at a time, the
    `image` column read as the dictionary it is stored as; damaged rows are recorded among `rejected`."""
    table.keep_dictionary(f"{image}.bytes" if is_image_struct(table.schema.field(image).type) else image)
    for part in table.rows([c for c in columns if c is not None], batch_rows=BATCH_ROWS, values=values):
        if isinstance(part, Damage):
            rejected.append(Rejection(split, f"{rel}#{part.first}", part.reason))
            continue
        first, rows = part
        for i, row in enumerate(rows):
            yield f"{rel}#{first + i}", row


def table_files(src: Path, *, limit: int) -> list[Path]:
    """The Parquet and Arrow files among the first `limit` files of `src`; none when an image file is among them
    (a folder of images, whose tables are not read)."""
    tables = []
    for path in first_files(src, limit):
        suffix = path.suffix.lower()
        if suffix in EXTENSIONS:
            return []
        if suffix in SUFFIXES:
            tables.append(path)
    return tables


def any_table(src: Path, *, limit: int, fits: Callable[[Table], object]) -> bool:
    """Whether one of the first LOOK_AT tables of `table_files` opens and `fits` (raises no TableError): what
    `--kind auto` reads of a tree of tables."""
    for path in table_files(src, limit=limit)[:LOOK_AT]:
        try:
            fits(Table(path))
            return True
        except TableError:
            continue
    return False


def has_image_tables(src: Path, *, limit: int, options: TableOptions | None = None) -> bool:
    """Whether a table with an image column (`options.image_field`, or the one there is) is among the first tables
    of `src`: a source for the images kind."""
    return any_table(src, limit=limit, fits=lambda table: image_column(table, options or TableOptions()))


class TableCollector(Collector):
    """What the discovery of a tree of tables gathers: every table is read by `add_table`, which a kind defines
    (images, image_text); a file that is no table, or a table that cannot be read, is one rejection. The split of a
    table is its name's (`split_of_table`), else `split`; its rows' images wait in a spill file."""

    def __init__(self, src: Path, *, split: str, follow: bool, what: str) -> None:
        super().__init__(src, follow=follow)
        self.split = split
        self.spill = Spill(what)

    def add_file(self, path: Path, split: str, label: int | None) -> None:
        rel = self.rel(path)
        split = split_of_table(rel, self.split)
        if path.suffix.lower() not in SUFFIXES:
            self.rejected.append(Rejection(split, rel, not_a_table(path)))
            return
        found = 0
        try:
            found = self.add_table(Table(path), rel, split)
        except TableError as exc:
            self.rejected.append(Rejection(split, rel, str(exc)))
        self.identity.append([split, rel, None, path.stat().st_size, found])

    @abc.abstractmethod
    def add_table(self, table: Table, rel: str, split: str) -> int:
        """Take the rows of one table (its rows' rejections recorded); how many it took. TableError: none."""


class ImageRows(TableCollector):
    """The rows of every table: work items whose payload is the image's place in the spill file; labels are the
    raw values until `TableLabels.relabel` turns them into class indices."""

    label_field = "column"  # what a row's label is found in, as messages name it
    row = "row"  # what holds an image, as messages name it

    def __init__(self, src: Path, opts: TableOptions, *, follow: bool) -> None:
        super().__init__(src, split=opts.split, follow=follow, what="images")
        self.opts = opts
        self.labels = TableLabels(self.label_field)  # the first usable table's, which every other must agree with

    def add_table(self, table: Table, rel: str, split: str) -> int:
        columns = self._columns(table, rel)
        read = functools.partial(row_values, columns=columns, limit=self.opts.max_bytes)
        return sum(self.add_row(image, label, columns, split, where, str(table.path))
                   for where, (image, label) in image_rows(table, columns.image, [columns.image, columns.label], read,
                                                           rel=rel, split=split, rejected=self.rejected))

    def _columns(self, table: Table, rel: str) -> Columns:
        label, names = label_column(table, self.opts)
        columns = Columns(image_column(table, self.opts), label, names)
        self.labels.agree(rel, label, names)
        return columns

    def add_row(self, image: bytes | str, label: Any, columns: Columns, split: str, rel: str, source: str) -> int:
        """Take one row (1) or record why not (0)."""
        if isinstance(image, str):
            self.rejected.append(Rejection(split, rel, image))
            return 0
        if columns.label is not None:
            take = self.labels.take_many if self.opts.multi_label else self.labels.take
            problem = take(label, columns.label, columns.names)
            if problem is not None:
                self.rejected.append(Rejection(split, rel, problem))
                return 0
        self.items.setdefault(split, []).append(
            WorkItem(split=split, rel=rel, source=source, label=label, payload=self.spill.add(image)))
        return 1


def png_bytes(image: Any) -> bytes:
    """A uint8 array of pixels ([rows, columns] or [rows, columns, 3]), as the bytes of a PNG (lossless): how the
    images of datasets kept as arrays go to the spill file."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def discover_tables(src: Path, opts: TableOptions, *, follow_symlinks: bool = True) -> Discovery:
    """The images of the Parquet and Arrow tables under `src`."""
    return collected(ImageRows(src, opts, follow=follow_symlinks), "tables")


def collected(col: ImageRows, layout: str) -> Discovery:
    """The discovery of the rows `col` takes from every file of its source: their labels made class indices."""
    col.add_tree(col.src, col.opts.split, None)
    classes = col.labels.classes()
    if col.opts.multi_label and col.labels.column is not None and not classes and any(col.items.values()):
        raise ConvertError(f"--multi-label: the {col.label_field} {col.labels.column!r} of every {col.row} lists no "
                           "class (every list is empty), so there is no class to learn; --unlabeled converts the "
                           "images without labels")
    col.items = col.labels.relabel(col.items, classes)
    if classes:
        col.warn_unused(classes, "images")
    col.spill.flush()
    return Discovery(col.items, classes, col.rejected, layout, col.identity, keep=col.spill)
