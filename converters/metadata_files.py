"""Small tables of named columns read whole, as Hugging Face ImageFolder keeps its metadata (`metadata.jsonl`,
`metadata.csv` or `metadata.parquet` at the top of a source or in a split folder: a row an image, its `file_name`
relative to the metadata file's folder, then a caption (the image_text kind) or a class (the images kind)), and as
captions files are written. Shared by both kinds: the names of a table's columns and the rows of the columns asked
for, from JSON Lines and Parquet (a CSV is read by each kind's own CSV reader)."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastdata.errors import ConvertError
from fastdata.json_text import BadJSON, parse_json

METADATA = ("metadata.jsonl", "metadata.csv", "metadata.parquet")  # Hugging Face ImageFolder's, in its order


def header_names(path: Path, delimiter: str = ",") -> list[str]:
    """The column names of a table as its first line or footer gives them: a CSV/TSV header split by `delimiter`,
    the first JSON Lines record's keys (after blank lines), a Parquet schema's names. Raises what csv, JSON or
    pyarrow raise for a file they cannot read (callers that only detect catch it)."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    with open(path, encoding="utf-8-sig") as f:
        if suffix == ".jsonl":
            head = next((line for line in iter(lambda: f.readline(1 << 16), "") if line.strip()), "")
            record = parse_json(head) if head else {}
            return list(record) if isinstance(record, dict) else []
        head = f.readline(1 << 16)
    return next(csv.reader([head], delimiter=delimiter), [])


Pick = Callable[[list[str]], list[str]]  # the column names of a table -> the columns to read (ConvertError if none)


def column_rows(path: Path, pick: Pick, what: str) -> list[tuple[int | str, list[Any]]]:
    """(where, the values of the columns `pick` chooses) for each row of a JSON Lines file (where: the line number;
    a blank line skipped, a field a record lacks None; `pick` sees the first record's keys) or a Parquet file
    (where: `row N`, from 0). ConvertError naming the file (`what`: "captions file") and the line for a line
    that is no JSON object, a file pyarrow cannot read, or a column that cannot be turned into Python values."""
    if path.suffix.lower() == ".parquet":
        return _parquet_rows(path, pick, what)
    rows: list[tuple[int | str, list[Any]]] = []
    columns: list[str] | None = None
    with open(path, encoding="utf-8-sig") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = parse_json(line)
            except BadJSON as exc:
                raise ConvertError(f"{path}:{lineno}: not a JSON object: {exc}") from exc
            if not isinstance(record, dict):
                raise ConvertError(f"{path}:{lineno}: expected a JSON object, a row of the {what}")
            if columns is None:
                columns = pick(list(record))
            rows.append((lineno, [record.get(c) for c in columns]))
    return rows


def _parquet_rows(path: Path, pick: Pick, what: str) -> list[tuple[int | str, list[Any]]]:
    import pyarrow.parquet as pq

    not_utf8 = f"cannot read {what} {path}: a column's name, or the name of a field of one, is not UTF-8"
    try:
        names = pq.read_schema(path).names
    except UnicodeDecodeError as exc:
        raise ConvertError(f"{not_utf8} ({exc})") from exc
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
        raise ConvertError(f"cannot read {what} {path}: {exc}") from exc
    columns = pick(names)
    try:
        table = pq.read_table(path, columns=columns)
        values = [table.column(c).to_pylist() for c in columns]
    except UnicodeDecodeError as exc:  # a struct column with a field name that is not UTF-8
        raise ConvertError(f"{not_utf8} ({exc})") from exc
    except Exception as exc:  # noqa: BLE001 - as above
        raise ConvertError(f"cannot read {what} {path}: {exc}") from exc
    return [(f"row {i}", list(row)) for i, row in enumerate(zip(*values))]
