"""The columns of the Arrow shards `fastdata convert` writes, checked where a loader opens a shard and by `verify`.

A shard damaged in place, or written by another tool, gets a ShardError that names each wrong column: never
pyarrow's KeyError for a name given twice, the `path` field read as the image's bytes, a float label cast to an
integer, a null read as whatever its slot holds, or one shard without labels so that every later sequence takes
another's label. The schema is checked once per shard (a stream has one schema); the values of each record batch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from fastdata.errors import ShardError

REMEDY = "re-run `fastdata convert`"


def column_type(schema: pa.Schema, name: str) -> pa.DataType | None:
    """The type of column `name`; None when the schema has no column of that name or has two."""
    found = schema.get_all_field_indices(name)
    return schema.field(found[0]).type if len(found) == 1 else None


def _integers(t: pa.DataType | None) -> bool:
    return t is not None and pa.types.is_integer(t)


def _label(schema: pa.Schema, labelled: bool) -> str | None:
    """What is wrong with the label column: present, once and integer exactly when the manifest lists classes."""
    label = column_type(schema, "label")
    if labelled and label is None:
        return "label: missing or given twice (the manifest lists classes)"
    if not labelled and "label" in schema.names:
        return "label: a column in a dataset without classes"
    if label is not None and not _integers(label):
        return f"label: {label}"
    return None


def _refuse(path: object, what: str, wrong: list[str | None], want: str) -> None:
    problems = [w for w in wrong if w]
    if problems:
        raise ShardError(f"shard {path} is not {what} fastdata can read ({'; '.join(problems)}; want {want}, "
                         f"each once); {REMEDY}")


def check_token_columns(schema: pa.Schema, path: object, *, labelled: bool) -> None:
    """A token shard holds input_ids (a list of integers a row), length and, when labelled, label (integers)."""
    ids, length = column_type(schema, "input_ids"), column_type(schema, "length")
    ids_ok = _int_lists(ids)
    _refuse(path, "a token shard", [
        None if ids_ok else f"input_ids: {ids or 'missing or given twice'}",
        None if _integers(length) else f"length: {length or 'missing or given twice'}",
        _label(schema, labelled),
    ], "input_ids a list of integers, length and label integers")


def image_bytes_field(image: pa.DataType) -> int | None:
    """The index of the `bytes` field of an image column's struct; None unless there is exactly one, binary."""
    if not pa.types.is_struct(image):
        return None
    found = image.get_all_field_indices("bytes")
    if len(found) != 1:
        return None
    t = image.field(found[0]).type
    return found[0] if pa.types.is_binary(t) or pa.types.is_large_binary(t) else None


def _int_lists(t: pa.DataType | None) -> bool:
    return t is not None and (pa.types.is_list(t) or pa.types.is_large_list(t)) and _integers(t.value_type)


def _labels(schema: pa.Schema) -> str | None:
    """What is wrong with a multi-label shard's labels column (a list of class indices a row), and its label column
    (none)."""
    labels = column_type(schema, "labels")
    if labels is None:
        return "labels: missing or given twice (the manifest says multi-label)"
    if "label" in schema.names:
        return "label: a column in a multi-label dataset, whose labels are the labels column"
    return None if _int_lists(labels) else f"labels: {labels}"


def check_image_columns(schema: pa.Schema, path: object, *, labelled: bool, multi: bool = False) -> None:
    """An image shard holds key (text), image (a struct whose `bytes` field is binary) and, when labelled, label;
    `multi` (a dataset converted --multi-label): labels, a list of integers a row, instead."""
    key, image = column_type(schema, "key"), column_type(schema, "image")
    key_ok = key is not None and (pa.types.is_string(key) or pa.types.is_large_string(key))
    _refuse(path, "an image shard", [
        None if key_ok else f"key: {key or 'missing or given twice'}",
        None if image is not None and image_bytes_field(image) is not None
        else f"image: {image or 'missing or given twice'}",
        _labels(schema) if multi else _label(schema, labelled),
    ], f"key text, image a struct with a binary field bytes, {'labels lists of' if multi else 'label'} integers")


COLUMN_CHECKS: dict[str, Callable[..., None]] = {"text": check_token_columns, "images": check_image_columns}


def _nulls(column: pa.Array, name: str, first_row: int) -> list[str]:
    """Where `column` (the image column: its bytes field; a list column: the lists and the ids in them) is null."""
    if pa.types.is_struct(column.type):  # flatten() carries a null image into its bytes field
        column, name = column.flatten()[image_bytes_field(column.type)], f"{name}.bytes"
    rows = np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))
    found = []
    if len(rows):
        found.append(f"column {name} holds {len(rows)} null value(s), the first in row {first_row + rows[0]}")
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        inner = column.flatten().null_count
        if inner:
            found.append(f"column {name} holds {inner} null id(s) inside its lists")
    return found


def value_problems(batch: pa.RecordBatch, *, classes: int, first_row: int) -> list[str]:
    """Every null where convert writes a value, and every label outside the manifest's classes (0..classes-1), in a
    record batch that begins at row `first_row` of its shard.

    Call after the kind's column check: every column named here is known to be there once and of its type."""
    names = batch.schema.names
    problems = [p for n in ("key", "image", "input_ids", "length", "label", "labels") if n in names
                for p in _nulls(batch.column(n), n, first_row)]
    if "labels" in names and classes and _int_lists(batch.schema.field("labels").type):
        problems.extend(_class_lists(batch.column("labels"), classes, first_row))
    if "label" in names and classes:
        column = batch.column("label")
        valid = ~column.is_null().to_numpy(zero_copy_only=False)
        labels = column.fill_null(0).to_numpy(zero_copy_only=False)
        problems.extend(f"row {first_row + i} has label {labels[i]}, outside 0..{classes - 1}"
                        for i in np.flatnonzero(valid & ((labels < 0) | (labels >= classes))))
    return problems


def _class_lists(column: pa.Array, classes: int, first_row: int) -> list[str]:
    """Each row of a multi-label shard's labels column that names a class outside 0..classes-1, or one twice."""
    found = []
    for i, row in enumerate(column.to_pylist()):
        outside = [c for c in row or () if c is not None and not 0 <= c < classes]
        if outside:
            found.append(f"row {first_row + i} has labels {outside}, outside 0..{classes - 1}")
        elif row and len(set(row)) != len(row):
            found.append(f"row {first_row + i} names a class twice in its labels {row[:8]}")
    return found


def numbered(batches: Sequence[pa.RecordBatch]) -> Iterator[tuple[int, pa.RecordBatch]]:
    """Each record batch with the row of its shard it begins at."""
    return zip(itertools.accumulate((len(b) for b in batches), initial=0), batches)


def check_shard(batches: Sequence[pa.RecordBatch], path: object, *, check: Callable[..., None], classes: int) -> None:
    """The loaders' check of a whole shard: its columns by the kind's `check`, once (a stream has one schema), then
    every record batch's values; a ShardError naming the first problem."""
    if batches:
        check(batches[0].schema, path, labelled=bool(classes))
    for first_row, batch in numbered(batches):
        problems = value_problems(batch, classes=classes, first_row=first_row)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ShardError(f"shard {path}: {problems[0]}{more}, which `fastdata convert` never writes; {REMEDY}")
