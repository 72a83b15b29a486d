"""The documents of a columnar file: one a row of its string column `--text-field`. Parquet (a Hugging Face Hub
export) is read a row group at a time; Arrow (a Hugging Face dataset saved with `save_to_disk`: Arrow IPC stream
files, `data-00000-of-00001.arrow`; or an Arrow IPC file) a record batch at a time. Damage loses the rows it
touches, recorded as one rejection, and keeps every row before it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def read_parquet(path: Path, opts: TextOptions) -> Iterator[tuple[str, str | Reject]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:  # a column name that is not UTF-8, too
        yield "", Reject(f"not a readable Parquet file: {exc}")
        return
    problem = _string_column(pf.schema_arrow, opts)
    if problem is not None:
        yield "", problem
        return
    row = 0
    for group in range(pf.num_row_groups):  # a damaged row group loses its own rows after the damage, no others
        end = row + pf.metadata.row_group(group).num_rows
        try:
            for batch in pf.iter_batches(row_groups=[group], columns=[opts.text_field]):
                for value in batch.column(0).to_pylist():
                    yield f"#{row}", document(value, opts.max_document_bytes)
                    row += 1
        except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
            yield f"#{row}", Reject(f"corrupt Parquet data, rows {row} to {end - 1} of the file not read: "
                                    f"{type(exc).__name__}: {exc}")
            row = end


def _arrow_batches(path: Path) -> tuple[Iterator[Any], Any]:
    """(the record batches, the schema) of an Arrow IPC stream (what `save_to_disk` writes) or file."""
    import pyarrow as pa

    try:
        stream = pa.ipc.open_stream(pa.memory_map(str(path)))
        return iter(stream), stream.schema
    except pa.ArrowInvalid:  # not a stream: an IPC file ("ARROW1" magic and a footer)
        file = pa.ipc.open_file(pa.memory_map(str(path)))
        return (file.get_batch(i) for i in range(file.num_record_batches)), file.schema


def read_arrow(path: Path, opts: TextOptions) -> Iterator[tuple[str, str | Reject]]:
    import pyarrow as pa

    try:
        batches, schema = _arrow_batches(path)
    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
        yield "", Reject(f"not a readable Arrow file: {exc}")
        return
    problem = _string_column(schema, opts)
    if problem is not None:
        yield "", problem
        return
    row = 0
    try:
        for batch in batches:
            batch.validate(full=True)  # offsets and UTF-8 checked before a value is read
            for value in batch.column(opts.text_field).to_pylist():
                yield f"#{row}", document(value, opts.max_document_bytes)
                row += 1
    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
        yield f"#{row}", Reject(f"corrupt Arrow data, the rows from {row} on not read: {type(exc).__name__}: {exc}")
