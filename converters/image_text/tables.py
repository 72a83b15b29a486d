"""Image-caption pairs as Hugging Face ships them: Parquet or Arrow tables (converters/table_files.py) with an image
column (the images kind's rule: converters/images/table_columns.py) and captions in a column of the table:
Flickr30k's `caption` (a list of five), Flickr8k's `caption_0` to `caption_4`, a `text` column of one each.

- The caption column is `--caption-field`, else the first of CAPTION_COLUMNS the table has (a string, or a list of
  strings), else the columns `caption_0`, `caption_1`, ... in their number's order.
- A string column named `split` gives each row its split (Flickr30k's Karpathy split: `train`, `val`, `test`;
  `restval` joins train, as in Karpathy's split files);
  without one, the file name's first word or the split folder above it, else `--split`.
- A row without an image (a path only, null), without a caption (every one empty or null), or whose `split` names
  no split is a recorded rejection; so is a table without an image or caption column, or damaged rows.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from converters.image_text.captions import CAPTION_COLUMNS, normalize_caption, split_named
from converters.image_text.discover import Captions
from converters.images.table_columns import (
    Columns,
    TableOptions,
    image_column,
    row_values,
)
from converters.images.tables import TableCollector, any_table, image_rows
from converters.kind import Discovery
from converters.sample import Rejection, WorkItem
from converters.table_files import Table, TableError
from converters.tree import SPLIT_FOLDERS
from fastdata.errors import ConvertError

TABLE_CAPTION_COLUMNS = (*CAPTION_COLUMNS, "captions", "sentences", "sentence")
NUMBERED = re.compile(r"caption_?(\d+)")


def _is_text(kind: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def caption_columns(schema: Any, field: str | None) -> list[str]:
    """The columns holding a table's captions (see the module docstring); raises TableError saying why none."""
    names = schema.names
    if field is not None:
        if field not in names:
            raise TableError(f"no column {field!r} (--caption-field; columns: {', '.join(names)})")
        if not _is_text(schema.field(field).type):
            raise TableError(f"caption column {field!r} has type {schema.field(field).type}, not strings or lists "
                             "of strings")
        return [field]
    lower = {n.lower(): n for n in names if _is_text(schema.field(n).type)}
    named = next((lower[c] for c in TABLE_CAPTION_COLUMNS if c in lower), None)
    if named is not None:
        return [named]
    numbered = sorted((int(m.group(1)), n) for n in lower.values() if (m := NUMBERED.fullmatch(n.lower())))
    if numbered:
        return [n for _, n in numbered]
    raise TableError(f"no caption column (columns: {', '.join(names)}): name it with --caption-field")


def _split_column(schema: Any) -> str | None:
    import pyarrow as pa

    if "split" in schema.names:
        kind = schema.field("split").type
        kind = kind.value_type if pa.types.is_dictionary(kind) else kind
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            return "split"
    return None


def _texts(row: dict[str, Any], columns: list[str]) -> tuple[str, ...]:
    """The row's captions, normalised, empty and null ones left out."""
    found = []
    for c in columns:
        value = row[c]
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and (text := normalize_caption(text)):
                found.append(text)
    return tuple(found)


def _rows(batch: Any, *, image: str, captions: list[str], split: str | None, limit: int) -> list[tuple]:
    """(image bytes or why none, captions, split value) for each row of a record batch."""
    images = row_values(batch, columns=Columns(image, None, None), limit=limit)
    rows = batch.select([*captions, *([split] if split else [])]).to_pylist()
    return [(im, _texts(row, captions), row.get(split) if split else None) for (im, _), row in zip(images, rows,
                                                                                                   strict=True)]


class _Pairs(TableCollector):
    """The pairs of every table of a source."""

    def __init__(self, src: Path, *, image_field: str | None, caption_field: str | None, split: str,
                 max_bytes: int, follow: bool) -> None:
        super().__init__(src, split=split, follow=follow, what="pairs")
        self.image_field, self.caption_field, self.max_bytes = image_field, caption_field, max_bytes

    def add_table(self, table: Table, rel: str, split: str) -> int:
        image = image_column(table, TableOptions(image_field=self.image_field))
        captions = caption_columns(table.schema, self.caption_field)
        by_row = _split_column(table.schema)
        read = functools.partial(_rows, image=image, captions=captions, split=by_row, limit=self.max_bytes)
        return sum(self._add(data, texts, named, split, where, str(table.path))
                   for where, (data, texts, named) in image_rows(table, image, [image, *captions, by_row], read,
                                                                 rel=rel, split=split, rejected=self.rejected))

    def _add(self, data: bytes | str, texts: tuple[str, ...], named: Any, split: str, rel: str, source: str) -> int:
        if named is not None:
            split = split_named(str(named)) or ""
            if not split:
                self.rejected.append(Rejection(self.split, rel, f"the split column names no split ({SPLIT_FOLDERS}): "
                                                                f"{str(named)!r}"))
                return 0
        if isinstance(data, str):
            self.rejected.append(Rejection(split, rel, data))
            return 0
        if not texts:
            self.rejected.append(Rejection(split, rel, "no caption (every caption empty or null)"))
            return 0
        self.items.setdefault(split, []).append(
            WorkItem(split=split, rel=rel, source=source, payload=Captions(texts, self.spill.add(data))))
        return 1


def has_caption_tables(src: Path, *, limit: int) -> bool:
    """Whether a table with an image column and a caption column is among the first tables of `src`: a source for
    the image_text kind (`fastdata convert --kind auto`, asked before the images kind)."""
    return any_table(src, limit=limit, fits=lambda table: (image_column(table, TableOptions()),
                                                           caption_columns(table.schema, None)))


def discover_caption_tables(src: Path, *, image_field: str | None, caption_field: str | None, split: str,
                            max_bytes: int, follow_symlinks: bool = True) -> Discovery:
    """The pairs of the Parquet and Arrow tables under `src`, in file and row order."""
    if not src.is_dir():
        raise ConvertError(f"source {src} is not a directory")
    pairs = _Pairs(src, image_field=image_field, caption_field=caption_field, split=split, max_bytes=max_bytes,
                   follow=follow_symlinks)
    pairs.add_tree(src, split, None)
    pairs.spill.flush()
    return Discovery(pairs.items, (), pairs.rejected, "tables", pairs.identity, keep=pairs.spill)
