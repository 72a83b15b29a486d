"""Reading the rows of a columnar file, shared by the kinds that take tables (text documents, images): Parquet (a
Hugging Face Hub export, `train-00000-of-00004.parquet`) a row group at a time, Arrow (a Hugging Face dataset saved
with `save_to_disk`: Arrow IPC stream files, `data-00000-of-00001.arrow`; or an Arrow IPC file) a record batch at a
time. Damage loses the rows it touches, reported as one `Damage`, and keeps every row before it; every batch is
validated (offsets, UTF-8, dictionary indices) before a value of it is read, so forged offsets are damage, not a
crash."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PARQUET = (".parquet",)
ARROW = (".arrow",)
BATCH_ROWS = 64  # rows turned into Python values at once
# what a Hugging Face download or `save_to_disk` folder holds beside its tables: metadata, never data
HF_METADATA = ("readme.md", "dataset_dict.json", "dataset_info.json", "dataset_infos.json", "state.json")


class TableError(Exception):
    """The file is no readable table; the message says why."""


@dataclass(frozen=True)
class Damage:
    """Rows of a table that could not be read: from `first` on, to the end of the file or of its row group."""

    first: int
    reason: str


Rows = Iterator[tuple[int, list[Any]] | Damage]  # what Table.rows yields


def _arrow_batches(path: Path) -> tuple[Iterator[Any], Any]:
    """(the record batches, the schema) of an Arrow IPC stream (what `save_to_disk` writes) or file."""
    import pyarrow as pa

    try:
        stream = pa.ipc.open_stream(pa.memory_map(str(path)))
        return iter(stream), stream.schema
    except pa.ArrowInvalid:  # not a stream: an IPC file ("ARROW1" magic and a footer)
        file = pa.ipc.open_file(pa.memory_map(str(path)))
        return (file.get_batch(i) for i in range(file.num_record_batches)), file.schema


def _check_names(schema: Any) -> None:
    """Raise TableError when a column's name, or the name of a field of a struct column, is not UTF-8 (an Arrow
    stream opens with such a schema, and `schema.names` raised UnicodeDecodeError), or when two columns share a
    name (which one would `--text-field` name?)."""

    try:
        names = schema.names
        for field in schema:
            for i in range(field.type.num_fields):  # the fields of a struct (a list: its value field)
                field.type.field(i).name  # noqa: B018 - decoded to check it
    except UnicodeDecodeError as exc:
        raise TableError(f"a column name is not UTF-8: {exc}") from exc
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TableError(f"the column name {twice[0]!r} is used twice")


class Table:
    """One columnar file, opened: its schema, and its rows read in batches of the columns asked for."""

    def __init__(self, path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.path = path
        self.is_parquet = path.suffix.lower() in PARQUET
        self._dictionary: list[str] = []
        try:
            if self.is_parquet:
                self._file = pq.ParquetFile(path)
                self.schema = self._file.schema_arrow
            else:
                self._batches, self.schema = _arrow_batches(path)
        except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:  # a column name that is not UTF-8, too
            raise TableError(f"not a readable {'Parquet' if self.is_parquet else 'Arrow'} file: {exc}") from exc
        _check_names(self.schema)

    def features(self) -> dict[str, Any]:
        """The Hugging Face features the schema's metadata declares (`{"image": {"_type": "Image"}, ...}`); {} when
        none, or when the metadata is not the JSON `datasets` writes."""
        raw = (self.schema.metadata or {}).get(b"huggingface")
        try:
            features = json.loads(raw)["info"]["features"]
        except (ValueError, KeyError, TypeError):  # TypeError: no metadata (None), or no dict where one belongs
            return {}
        return features if isinstance(features, dict) else {}

    def keep_dictionary(self, column: str) -> None:
        """Read the Parquet column at `column` (a dotted path: `image.bytes`) as a dictionary array, as it is
        stored when it repeats values: a value repeated in a thousand rows is then one value in memory, not a
        thousand (a dictionary bomb). An Arrow file keeps the types it has."""
        import pyarrow.parquet as pq

        if self.is_parquet:
            self._dictionary.append(column)
            self._file = pq.ParquetFile(self.path, read_dictionary=self._dictionary)

    def rows(self, columns: list[str], *, batch_rows: int = BATCH_ROWS,
             values: Callable[[Any], list[Any]] = lambda batch: batch.to_pylist()) -> Rows:
        """(row number of the batch's first row, `values` of the record batch of `columns`: by default its rows as
        {column: Python value}) for each batch of up to `batch_rows` rows, or a `Damage` for rows that could not be
        read or turned into values (a string that is not UTF-8). Read once: an Arrow stream is not read again."""
        if self.is_parquet:
            return self._parquet_rows(columns, batch_rows, values)
        return self._arrow_rows(columns, batch_rows, values)

    def _parquet_rows(self, columns: list[str], batch_rows: int,
                      values: Callable[[Any], list[Any]]) -> Rows:
        import pyarrow as pa

        row = 0
        for group in range(self._file.num_row_groups):  # a damaged row group loses its own rows after the damage
            end = row + self._file.metadata.row_group(group).num_rows
            try:
                for batch in self._file.iter_batches(batch_size=batch_rows, row_groups=[group], columns=columns):
                    batch.validate(full=True)  # a dictionary index past its dictionary, too (read_dictionary)
                    got = values(batch)
                    yield row, got
                    row += batch.num_rows
            except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
                yield Damage(row, f"corrupt Parquet data, rows {row} to {end - 1} of the file not read: "
                                  f"{type(exc).__name__}: {exc}")
                row = end

    def _arrow_rows(self, columns: list[str], batch_rows: int,
                    values: Callable[[Any], list[Any]]) -> Rows:
        import pyarrow as pa

        row = 0
        try:
            for batch in self._batches:
                part = pa.RecordBatch.from_arrays([batch.column(c) for c in columns], names=columns)
                part.validate(full=True)  # the columns read: offsets and UTF-8 checked before a value is read
                for start in range(0, part.num_rows, batch_rows):
                    piece = part.slice(start, batch_rows)
                    got = values(piece)
                    yield row, got
                    row += piece.num_rows
        except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
            yield Damage(row, f"corrupt Arrow data, the rows from {row} on not read: {type(exc).__name__}: {exc}")
