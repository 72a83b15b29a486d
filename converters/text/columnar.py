"""The documents of a columnar file (Parquet, Arrow: read by converters/table_files.py): one a row of its string
column `--text-field`, or of its column of token ids `--ids-field` (ids.py), labelled by the table's label column
when the source has no class folders. Damage loses the rows it touches, recorded as one rejection, and keeps every
row before it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from converters.images.table_columns import TableOptions, label_column
from converters.table_files import Damage, Table, TableError
from converters.table_labels import TableLabels
from converters.text.ids import IDS_COLUMNS, ids_column_problem, ids_document, ids_rows
from converters.text.options import TextOptions
from converters.text.records import Reject, document


def _string_column(schema: Any, opts: TextOptions) -> Reject | None:
    """Why `schema` holds no string column `--text-field` (None: it does; dictionary-encoded strings, pandas'
    categoricals, are strings too)."""
    import pyarrow as pa

    if opts.text_field not in schema.names:
        ids = next((n for n in IDS_COLUMNS if ids_column_problem(schema, n) is None), None)
        hint = f", or read its token ids with --ids-field {ids}" if ids else ""
        return Reject(f"missing text column {opts.text_field!r} (columns: {', '.join(schema.names[:8])}); set "
                      f"--text-field{hint}")
    kind = schema.field(opts.text_field).type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    is_view = getattr(pa.types, "is_string_view", lambda _: False)
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or is_view(kind)):
        return Reject(f"column {opts.text_field!r} has type {kind}, not string")
    return None


def labeled_documents(path: Path, opts: TextOptions, labels: TableLabels | None = None,
                      rel: str = "") -> Iterator[tuple[str, str | bytes | Reject, Any]]:
    """(where, document or rejection, label value or None) for each row of a Parquet or Arrow file. With `labels`,
    the table's label column (`--label-field`, its ClassLabel, or `label`/`labels`: the images kind's rule) labels
    its rows, and must agree with the first table's (`TableLabels`); a row whose label is none is a rejection."""
    try:
        table = Table(path)
        problem = _string_column(table.schema, opts) if opts.ids_field is None else ids_column_problem(
            table.schema, opts.ids_field)
        column, names = None, None
        if labels is not None and problem is None:
            column, names = label_column(table, TableOptions(label_field=opts.label_field))
            labels.agree(rel, column, names)
    except TableError as exc:
        yield "", Reject(str(exc)), None
        return
    if problem is not None:
        yield "", problem, None
        return
    field = opts.ids_field or opts.text_field
    columns = [field, *([column] if column else [])]
    for part in table.rows(columns) if opts.ids_field is None else table.rows(columns, values=ids_rows(field)):
        if isinstance(part, Damage):
            yield f"#{part.first}", Reject(part.reason), None
            continue
        first, values = part
        for i, row in enumerate(values):
            doc = (document(row[field], opts.max_document_bytes) if opts.ids_field is None
                   else ids_document(row[field], opts.max_document_bytes))
            label = row[column] if column else None
            if column and not isinstance(doc, Reject):
                why = labels.take(label, column, names)
                doc = Reject(why) if why else doc
            yield f"#{first + i}", doc, label


def read_columns(path: Path, opts: TextOptions) -> Iterator[tuple[str, str | bytes | Reject]]:
    """(where, document or rejection) for each row of a Parquet or Arrow file, no label read."""
    for where, doc, _ in labeled_documents(path, opts):
        yield where, doc
