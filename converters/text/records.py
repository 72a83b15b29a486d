"""Read one source file into documents: plain text (whole file, per line, or separator-split
records), JSON Lines, JSON and Parquet, each optionally gzip-compressed (except Parquet).

`read_documents` yields `(where, text)` for every document and `(where, Reject(reason))` for every
record that cannot be used; `where` is "" for the whole file or "#N" / ":LINE" inside it.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from converters.text.options import TextOptions

PLAIN = (".txt", ".text", "")
JSONL = (".jsonl", ".ndjson")
JSON = (".json",)
PARQUET = (".parquet",)
EXTENSIONS = (*[e for e in PLAIN if e], *JSONL, *JSON, *PARQUET)


@dataclass(frozen=True)
class Reject:
    reason: str


def file_format(name: str) -> tuple[str | None, bool]:
    """(format, gzipped) from a file name; format None for unsupported names."""
    lower = name.lower()
    gz = lower.endswith(".gz")
    stem = lower[:-3] if gz else lower
    suffix = Path(stem).suffix
    if suffix in PLAIN:
        return "plain", gz
    if suffix in JSONL:
        return "jsonl", gz
    if suffix in JSON:
        return "json", gz
    if suffix in PARQUET and not gz:
        return "parquet", gz
    return None, gz


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start:exc.start + 1].hex()
        raise ValueError(f"not UTF-8 text: undecodable byte 0x{bad} at offset {exc.start}") from exc


def lines_of(text: str) -> list[str]:
    """The lines of `text`, split at "\n" only (with a "\r" before it removed): U+2028, U+2029, U+0085 and
    the other characters `str.splitlines` also splits at may sit inside a JSON string or a sentence."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _plain(text: str, opts: TextOptions) -> Iterator[tuple[str, str | Reject]]:
    if opts.per_line:
        for n, line in enumerate(lines_of(text), 1):
            if line.strip():
                yield f":{n}", line
        return
    if opts.separator is None:
        yield "", text
        return
    record: list[str] = []
    count = 0
    for line in [*lines_of(text), opts.separator]:
        if line.rstrip() == opts.separator:
            body = "\n".join(record)
            record = []
            if body.strip():
                yield f"#{count}", body
                count += 1
        else:
            record.append(line)


def _field(obj: object, opts: TextOptions) -> str | Reject:
    if not isinstance(obj, dict):
        return Reject(f"expected a JSON object with a {opts.text_field!r} field, got {type(obj).__name__}")
    if opts.text_field not in obj:
        shown = ", ".join(sorted(map(str, obj))[:8]) or "none"
        return Reject(f"missing text field {opts.text_field!r} (fields: {shown}); set --text-field")
    value = obj[opts.text_field]
    if not isinstance(value, str):
        return Reject(f"text field {opts.text_field!r} holds {type(value).__name__}, not a string")
    if not value.strip():
        return Reject("empty document (only whitespace)")
    return value


def _jsonl(text: str, opts: TextOptions) -> Iterator[tuple[str, str | Reject]]:
    for n, line in enumerate(lines_of(text), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            yield f":{n}", Reject(f"invalid JSON: {exc.msg} at column {exc.colno}")
            continue
        except RecursionError:
            yield f":{n}", Reject("JSON nested too deeply to read")
            continue
        yield f":{n}", _field(obj, opts)


def _json(text: str, opts: TextOptions) -> Iterator[tuple[str, str | Reject]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        yield "", Reject(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
        return
    except RecursionError:
        yield "", Reject("JSON nested too deeply to read")
        return
    if isinstance(data, list):
        for n, obj in enumerate(data):
            yield f"#{n}", _field(obj, opts)
    else:
        yield "", _field(data, opts)


def _parquet(path: Path, opts: TextOptions) -> Iterator[tuple[str, str | Reject]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        yield "", Reject(f"not a readable Parquet file: {exc}")
        return
    names = pf.schema_arrow.names
    if opts.text_field not in names:
        yield "", Reject(f"missing text column {opts.text_field!r} (columns: {', '.join(names[:8])}); set --text-field")
        return
    kind = pf.schema_arrow.field(opts.text_field).type
    if pa.types.is_dictionary(kind):  # dictionary-encoded strings (pandas categoricals) are strings too
        kind = kind.value_type
    is_view = getattr(pa.types, "is_string_view", lambda _: False)
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or is_view(kind)):
        yield "", Reject(f"column {opts.text_field!r} has type {kind}, not string")
        return
    row = 0
    for batch in pf.iter_batches(columns=[opts.text_field]):
        for value in batch.column(0).to_pylist():
            if not isinstance(value, str):
                yield f"#{row}", Reject("null text")
            else:
                yield f"#{row}", value if value.strip() else Reject("empty document (only whitespace)")
            row += 1


def read_documents(path: Path, opts: TextOptions) -> Iterator[tuple[str, str | Reject]]:
    """Every document (or rejected record) of one file, in file order."""
    fmt, gz = file_format(path.name)
    if fmt is None:
        yield "", Reject(f"unsupported file type; allowed: {', '.join(EXTENSIONS)}, no extension, or + .gz")
        return
    if fmt == "parquet":
        yield from _parquet(path, opts)
        return
    try:
        data = path.read_bytes()
        if gz:
            data = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        what = "corrupt gzip data" if gz and not isinstance(exc, FileNotFoundError) else "unreadable"
        yield "", Reject(f"{what}: {exc}")
        return
    if not data:
        yield "", Reject("empty file (0 bytes)")
        return
    try:
        text = _decode(data)
    except ValueError as exc:
        yield "", Reject(str(exc))
        return
    if not text.strip():
        yield "", Reject("empty document (only whitespace)")
        return
    reader = {"plain": _plain, "jsonl": _jsonl, "json": _json}[fmt]
    yield from reader(text, opts)
