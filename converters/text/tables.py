"""The documents of a CSV or TSV table (Kaggle's `train.csv` with a `text` or `review` column): one a row, its cell
in the column `--text-field` (matched exactly, else whatever its case). Streamed from the (decompressed) file: a
row is `where` `:LINE`, the line it starts on. A cell over `--max-document-bytes` is a rejection of its row; a
byte that is not UTF-8, or a line longer than four documents and a MiB, stops the file there, recorded as one
rejection, the rows before it kept."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import BinaryIO

from converters.csv_lines import csv_lines
from converters.text.options import TextOptions
from converters.text.records import Reject, document


def _column(names: list[str], wanted: str) -> str | None:
    if wanted in names:
        return wanted
    return next((n for n in names if n.strip().lower() == wanted.strip().lower()), None)


def read_table(f: BinaryIO, opts: TextOptions, delimiter: str) -> Iterator[tuple[str, str | Reject, object]]:
    """(where, document or rejection, the row as {column: cell}) for each row."""
    cap = opts.max_document_bytes
    bound = 4 * cap + (1 << 20)  # a row: its document and the other cells
    limit = csv.field_size_limit()
    # a long cell is a rejection below, not csv's 128 KiB error; the limit is the process's: put back at the end
    # (the discovery reads one file at a time)
    csv.field_size_limit(max(limit, bound))
    line = 1
    try:
        reader = csv.reader(csv_lines(f, bound), delimiter=delimiter)
        header = next(reader, [])  # (a file that is read holds a line: the empty one is rejected before)
        column = _column(header, opts.text_field)
        if column is None:
            shown = ", ".join(header[:8]) or "none"
            yield "", Reject(f"missing text column {opts.text_field!r} (columns: {shown}); set --text-field"), None
            return
        k = header.index(column)
        line = reader.line_num + 1
        for row in reader:
            start, line = line, reader.line_num + 1
            if not row:
                continue
            yield f":{start}", document(row[k] if k < len(row) else "", cap), dict(zip(header, row))
    except (csv.Error, UnicodeDecodeError) as exc:
        yield f":{line}", Reject(f"the table cannot be read from line {line} on: {type(exc).__name__}: {exc}"), None
    finally:
        csv.field_size_limit(limit)
