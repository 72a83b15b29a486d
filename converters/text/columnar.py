"""The documents of a columnar file (Parquet, Arrow: read by converters/table_files.py): one a row of its string
column `--text-field`. Damage loses the rows it touches, recorded as one rejection, and keeps every row before it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from converters.table_files import Damage, Table, TableError
from converters.text.options import TextOptions
from converters.text.records import Reject, document


def _string_column(schema: Any, opts: TextOptions) -> Reject | None:
    """Why `schema` holds no string column `--text-field` (None: it does; dictionary-encoded strings, pandas'
    categoricals, are strings too)."""
    import pyarrow as pa

    if opts.text_field not in schema.names:
        return Reject(f"missing text column {opts.text_field!r} (columns: {', '.join(schema.names[:8])}); set "
                      "--text-field")
    kind = schema.field(opts.text_field).type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    is_view = getattr(pa.types, "is_string_view", lambda _: False)
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or is_view(kind)):
        return Reject(f"column {opts.text_field!r} has type {kind}, not string")
    return None


def read_columns(path: Path, opts: TextOptions) -> Iterator[tuple[str, str | Reject]]:
    """(where, document or rejection) for each row of a Parquet or Arrow file."""
    try:
        table = Table(path)
    except TableError as exc:
        yield "", Reject(str(exc))
        return
    problem = _string_column(table.schema, opts)
    if problem is not None:
        yield "", problem
        return
    for part in table.rows([opts.text_field]):
        if isinstance(part, Damage):
            yield f"#{part.first}", Reject(part.reason)
            continue
        first, values = part
        for i, value in enumerate(values):
            yield f"#{first + i}", document(value[opts.text_field], opts.max_document_bytes)
