"""The columns of a Hugging Face table of images (tables.py) and their values.

- `image_column`: the one the schema's Hugging Face features call `Image` (a struct of `bytes` and `path`), else the
  one struct column with a binary `bytes` child; `--image-field` names it (a plain binary column too).
- `label_column`: the one `ClassLabel` feature, whose names are the classes; else a whole-number or string column
  named `label` or `labels`; `--label-field` names it; `--unlabeled` reads none.
- `split_of_table`: the split the file's name names (`train-…`, `validation-…`) or the nearest split folder above it.
- `row_values`: each row's image bytes (or why it has none) and label, a value over `bytes_limit` measured, never
  copied. A reason puts what varies (a path, a size, a label) after its
  first colon, where `fastdata convert` and `info` group reasons: a thousand rows of paths are one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from converters.images.encode import DEFAULT_MAX_PIXELS, bytes_limit
from converters.table_files import Table, TableError
from converters.tree import split_of_folder, splits_named

LABEL_NAMES = ("label", "labels")
EMBED = ("save the dataset with its images embedded (`push_to_hub`, `save_to_disk`, or `embed_table_storage` before "
         "`to_parquet`)")


@dataclass(frozen=True)
class TableOptions:
    """What picks a table's columns and its split: the `--image-field`, `--label-field`, `--unlabeled` and
    `--split` of `fastdata convert`."""

    image_field: str | None = None
    label_field: str | None = None
    unlabeled: bool = False
    split: str = "train"
    max_bytes: int = bytes_limit(DEFAULT_MAX_PIXELS)  # an image's bytes (bytes_limit of --max-pixels)
    multi_label: bool = False  # --multi-label: the label column holds a list of classes a row


@dataclass(frozen=True)
class Columns:
    """The columns of a table that a conversion reads, and the class names its ClassLabel gives (None: classes
    from the label values)."""

    image: str
    label: str | None
    names: tuple[str, ...] | None


def _is_binary(kind: Any) -> bool:
    """Binary values, plain or dictionary-encoded."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_binary(kind) or pa.types.is_large_binary(kind)


def is_image_struct(kind: Any) -> bool:
    import pyarrow as pa

    return (pa.types.is_struct(kind) and kind.get_field_index("bytes") >= 0
            and _is_binary(kind.field(kind.get_field_index("bytes")).type))


def image_column(table: Table, opts: TableOptions) -> str:
    """The name of the column that holds the images; raises TableError saying why there is none."""
    schema, features = table.schema, table.features()
    if opts.image_field is not None:
        if opts.image_field not in schema.names:
            raise TableError(f"no column {opts.image_field!r} (--image-field; columns: {', '.join(schema.names)})")
        kind = schema.field(opts.image_field).type
        if not (is_image_struct(kind) or _is_binary(kind)):
            raise TableError(f"column {opts.image_field!r} has type {kind}, not image bytes (a binary column, or a "
                             "struct of bytes and path)")
        return opts.image_field
    found = [n for n in schema.names if isinstance(features.get(n), dict) and features[n].get("_type") == "Image"
             and is_image_struct(schema.field(n).type)] or \
        [n for n in schema.names if is_image_struct(schema.field(n).type)]
    if len(found) != 1:
        what = "several image columns" if found else "no image column"
        raise TableError(f"{what} ({', '.join(found or schema.names)}): name the one to convert with --image-field")
    return found[0]


def label_column(table: Table, opts: TableOptions) -> tuple[str | None, tuple[str, ...] | None]:
    """(the label column or None, its ClassLabel names or None); raises TableError saying why the one named is
    unusable, or which ClassLabel columns there are to choose from."""
    import pyarrow as pa

    if opts.unlabeled:
        return None, None
    if opts.multi_label:
        return _label_lists(table, opts.label_field)
    schema, features = table.schema, table.features()
    class_labels = [n for n in schema.names if isinstance(features.get(n), dict)
                    and features[n].get("_type") == "ClassLabel"]
    name = opts.label_field
    if name is None:
        if len(class_labels) > 1:
            raise TableError(f"several ClassLabel columns ({', '.join(class_labels)}): choose one with --label-field")
        name = next(iter(class_labels), None) or next((n for n in LABEL_NAMES if n in schema.names), None)
        if name is None:
            return None, None
    elif name not in schema.names:
        raise TableError(f"no column {name!r} (--label-field; columns: {', '.join(schema.names)})")
    kind = schema.field(name).type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if not _is_label_type(kind):
        lists = " (a list of classes a row: convert with --multi-label)" if _is_list(kind) else ""
        raise TableError(f"label column {name!r} has type {kind}, not whole numbers or strings{lists}")
    names = features[name].get("names") if name in class_labels else None
    if names is not None:
        if not (isinstance(names, list) and names and all(isinstance(c, str) for c in names)):
            raise TableError(f"the ClassLabel of column {name!r} has no list of class names")
        if not pa.types.is_integer(kind):
            raise TableError(f"ClassLabel column {name!r} has type {kind}, not whole numbers")
        names = tuple(names)
    return name, names


def _is_label_type(kind: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _is_list(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)


def _class_label_list(feature: Any) -> bool:
    """Whether a Hugging Face feature is a list of a ClassLabel (`Sequence(ClassLabel)`, written `List` by datasets
    4 and later)."""
    return (isinstance(feature, dict) and feature.get("_type") in ("Sequence", "List")
            and isinstance(feature.get("feature"), dict) and feature["feature"].get("_type") == "ClassLabel")


def _label_lists(table: Table, field: str | None) -> tuple[str | None, tuple[str, ...] | None]:
    """--multi-label: (the column of a list of classes a row, its ClassLabel's names or None): the one list of a
    ClassLabel (NIH ChestX-ray14 on the Hub: `labels: Sequence(ClassLabel)`), else a `labels` or `label` column of
    lists of whole numbers or strings; `--label-field` names it. TableError when there is none or it holds no lists."""
    import pyarrow as pa

    schema, features = table.schema, table.features()
    lists = [n for n in schema.names if _class_label_list(features.get(n))]
    name = field
    if name is None:
        if len(lists) > 1:
            raise TableError(f"several columns of lists of a ClassLabel ({', '.join(lists)}): choose one with "
                             "--label-field")
        name = next(iter(lists), None) or next((n for n in ("labels", "label") if n in schema.names), None)
        if name is None:
            raise TableError(f"no column of a list of classes a row (--multi-label; columns: {', '.join(schema.names)})"
                             "; name it with --label-field")
    elif name not in schema.names:
        raise TableError(f"no column {name!r} (--label-field; columns: {', '.join(schema.names)})")
    kind = schema.field(name).type
    if not (_is_list(kind) and _is_label_type(kind.value_type)):
        raise TableError(f"label column {name!r} has type {kind}, not lists of whole numbers or strings "
                         "(--multi-label reads a list of classes a row)")
    if name not in lists:
        return name, None
    names = features[name]["feature"].get("names")
    if not (isinstance(names, list) and names and all(isinstance(c, str) for c in names)):
        raise TableError(f"the ClassLabel of column {name!r} has no list of class names")
    if not pa.types.is_integer(kind.value_type):
        raise TableError(f"the lists of ClassLabel column {name!r} hold {kind.value_type}, not whole numbers")
    return name, tuple(names)


def split_of_table(rel: str, default: str) -> str:
    """The split of the table at `rel` (a POSIX path under the source): the one its name names (`train-00000-of-00004`,
    `validation.parquet`, `mnist-test.parquet`: `splits_named`), else the nearest folder above it that is a split
    folder (`train/data-00000-of-00001`), else `default`."""
    parts = rel.split("/")
    named = splits_named(parts[-1])
    if len(named) == 1:
        return named.pop()
    for name in reversed(parts[:-1]):
        split = split_of_folder(name)
        if split is not None:
            return split
    return default


def row_values(batch: Any, *, columns: Columns, limit: int) -> list[tuple[bytes | str, Any]]:
    """(image bytes, or why the row has none; label value) for each row of a record batch. A value repeated through
    the batch's dictionary is one Python object; a value over `limit` bytes is measured, never copied."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = batch.column(columns.image)
    data, paths = (column.field("bytes"), column.field("path") if column.type.get_field_index("path") >= 0 else None) \
        if pa.types.is_struct(column.type) else (column, None)
    present = column.is_valid().to_pylist() if pa.types.is_struct(column.type) else [True] * len(column)
    if pa.types.is_dictionary(data.type):
        sizes = pc.binary_length(data.dictionary).to_pylist()
        values = {}
        indices = data.indices.to_pylist()
        got: list[bytes | str | None] = []
        for index in indices:
            if index is not None and index not in values:
                n = sizes[index]
                values[index] = None if n is None else data.dictionary[index].as_py() if n <= limit else n
            got.append(None if index is None else values[index])
    else:
        sizes = pc.binary_length(data).to_pylist()
        got = [None if n is None else data[i].as_py() if n <= limit else n for i, n in enumerate(sizes)]
    labels = batch.column(columns.label).to_pylist() if columns.label else [None] * len(got)
    out: list[tuple[bytes | str, Any]] = []
    for i, value in enumerate(got):
        if not present[i] or value is None:
            path = paths[i].as_py() if paths is not None and present[i] else None
            out.append((f"image stored as a path only, not its bytes; {EMBED}: {path!r}" if path else
                        "no image (null)", labels[i]))
        elif isinstance(value, int):
            out.append((f"image larger than --max-pixels lets any be ({limit} bytes: 8 a pixel, and 1 MiB): {value} "
                        "bytes", labels[i]))
        else:
            out.append((value, labels[i]))
    return out
