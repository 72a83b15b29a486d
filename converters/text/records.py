"""Read one source file into documents: plain text (whole file, per line, or separator-split records), WikiText's
`wiki.train.raw` / `.tokens` (one document per article, an article starting at its ` = Title = ` line), JSON Lines,
JSON and CSV/TSV tables (tables.py), each optionally compressed with gzip (`.gz`) or Zstandard (`.zst`, as The
Pile, RedPajama and SlimPajama ship their JSON Lines; decompressed by pyarrow's codec), and the string column of
Parquet and Arrow files (columnar.py: a Hugging Face dataset saved with `save_to_disk`).

`read_documents` yields `(where, text)` for every document and `(where, Reject(reason))` for every
record that cannot be used; `where` is "" for the whole file or "#N" / ":LINE" inside it. `read_records` yields the
record each came from as well (a JSON object, a CSV row as {column: cell}; None for plain text and columnar files),
for its label (record_labels.py). Files are
streamed (gzip too): memory is bounded by `--max-document-bytes`, not by the file's size, and a
document larger than that is a rejection, not a MemoryError.
"""

from __future__ import annotations

import functools
import gzip
import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from converters.table_files import ARROW, PARQUET
from converters.text.options import TextOptions
from fastdata.json_text import BadJSON, parse_json

PLAIN = (".txt", ".text", "")
WIKITEXT = (".raw", ".tokens")  # WikiText-2 / -103: plain text whose articles start at a ` = Title = ` line
JSONL = (".jsonl", ".ndjson")
JSON = (".json",)
TABLES = {".csv": ",", ".tsv": "\t"}  # a table with a text column (tables.py)
TOKENS = (".bin",)  # llm.c's token shards (token_files.py)
EXTENSIONS = (*[e for e in PLAIN if e], *WIKITEXT, *JSONL, *JSON, *TABLES, *PARQUET, *ARROW, *TOKENS)
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd"}
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Reject:
    reason: str


def file_format(name: str) -> tuple[str | None, str | None]:
    """(format, compression: None, "gzip" or "zstd") from a file name; format None for unsupported names."""
    lower = name.lower()
    codec = COMPRESSIONS.get(Path(lower).suffix)
    stem = lower[:-len(Path(lower).suffix)] if codec else lower
    suffix = Path(stem).suffix
    if suffix in PLAIN:
        return "plain", codec
    if suffix in WIKITEXT:
        return "wikitext", codec
    if suffix in JSONL:
        return "jsonl", codec
    if suffix in JSON:
        return "json", codec
    if suffix in TABLES:
        return suffix[1:], codec
    if suffix in PARQUET and codec is None:
        return "parquet", codec
    if suffix in ARROW and codec is None:
        return "arrow", codec
    if suffix in TOKENS and codec is None:
        return "tokens", codec
    return None, codec


def _decompressed(raw: BinaryIO, codec: str | None) -> BinaryIO:
    """`raw` read through its compression (buffered: the readers peek and read lines)."""
    if codec == "gzip":
        return gzip.open(raw, "rb")  # type: ignore[return-value]
    if codec == "zstd":
        import pyarrow as pa

        return io.BufferedReader(pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd"))  # type: ignore
    return raw


def _decode(data: bytes, offset: int = 0) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start:exc.start + 1].hex()
        raise ValueError(f"not UTF-8 text: undecodable byte 0x{bad} at offset {offset + exc.start}") from exc


def too_large(cap: int) -> Reject:
    return Reject(f"document larger than --max-document-bytes ({cap} bytes)")


def document(value: object, cap: int) -> str | Reject:
    """A cell of a table or column as a document: rejected when it is null, over `cap` bytes (encoded only when its
    length says it may be) or only whitespace."""
    if not isinstance(value, str):
        return Reject("null text")
    if len(value) > cap // 4 and len(value.encode()) > cap:
        return too_large(cap)
    return value if value.strip() else Reject("empty document (only whitespace)")


def _lines(f: BinaryIO, cap: int) -> Iterator[tuple[int, int, bytes | None]]:
    """(line number, byte offset, line) of a binary stream, split at b"\n" only (a "\r" before it removed;
    U+2028, U+2029 and U+0085 may sit inside a JSON string or a sentence). A line longer than `cap` bytes
    is None, its bytes skipped in chunks: memory stays within `cap` whatever the file holds."""
    number, offset = 0, 0
    while True:
        line = f.readline(cap + 2)
        if not line:
            return
        number += 1
        start = offset
        offset += len(line)
        if not line.endswith(b"\n") and len(line) == cap + 2:
            while (more := f.readline(1 << 20)) and not more.endswith(b"\n"):
                offset += len(more)
            offset += len(more)
            yield number, start, None
            continue
        body = line[:-1] if line.endswith(b"\n") else line
        body = body[:-1] if body.endswith(b"\r") else body
        yield number, start, None if len(body) > cap else body  # cap + 1 bytes and "\n" fit the readline


def _text_lines(f: BinaryIO, cap: int) -> Iterator[tuple[int, str | Reject]]:
    """(line number, text or the reason it is unusable), the UTF-8 byte order mark of line 1 dropped."""
    for number, start, raw in _lines(f, cap):
        if raw is None:
            yield number, too_large(cap)
            continue
        if number == 1 and raw.startswith(BOM):
            raw, start = raw[len(BOM):], start + len(BOM)
        try:
            yield number, _decode(raw, start)
        except ValueError as exc:
            yield number, Reject(str(exc))


def _whole(f: BinaryIO, cap: int, what: str, head: bytes = b"") -> str | Reject:
    """The whole file as one text, `head` the bytes of it already read."""
    data = head + f.read(max(0, cap + 1 - len(head)))  # (read(-1) would read it all; an empty file never comes)
    if len(data) > cap:
        return Reject(f"{what} larger than --max-document-bytes ({cap} bytes)")
    try:
        text = _decode(data[len(BOM):] if data.startswith(BOM) else data)
    except ValueError as exc:
        return Reject(str(exc))
    return text if text.strip() else Reject("empty document (only whitespace)")


def is_article_title(line: str) -> bool:
    """Whether `line` starts a WikiText article: ` = Title = `, one `=` either side (` = = Section = = ` does not)."""
    s = line.strip()
    return len(s) > 4 and s.startswith("= ") and s.endswith(" =") and not s.startswith("= =")


def _plain(f: BinaryIO, opts: TextOptions, *, articles: bool = False) -> Iterator[tuple[str, str | Reject]]:
    """The documents of a plain text file: the whole file, each non-blank line (`--per-line`), the records between
    lines holding only `--separator`, or (`articles`, WikiText's default) each article with its title line."""
    cap = opts.max_document_bytes
    if opts.per_line:
        for n, line in _text_lines(f, cap):
            if isinstance(line, Reject) or line.strip():
                yield f":{n}", line
        return
    if opts.separator is None and not articles:
        yield "", _whole(f, cap, "document")
        return
    record: list[str] = []
    size, problem, count = 0, None, 0
    for _, line in [*_text_lines(f, cap), (0, None)]:  # (0, None): the end of the file ends the last record
        title = articles and opts.separator is None and isinstance(line, str) and is_article_title(line)
        if line is None or title or (isinstance(line, str) and line.rstrip() == opts.separator):
            body = "\n".join(record)
            if problem is not None or body.strip():
                yield f"#{count}", problem or body
                count += 1
            record, size, problem = [], 0, None
            if not title:
                continue
        if problem is None:
            size += len(line.encode()) + 1 if isinstance(line, str) else 0
            if isinstance(line, Reject) or size > cap:
                problem, record = (line if isinstance(line, Reject) else too_large(cap)), []
            else:
                record.append(line)


def fields_of(record: dict) -> str:
    """A JSON record's first field names, sorted, as a reason lists them ("none" for an empty record)."""
    return ", ".join(sorted(map(str, record))[:8]) or "none"


def _field(obj: object, opts: TextOptions) -> str | bytes | Reject:
    if opts.ids_field is not None:
        from converters.text.ids import json_ids  # (ids.py imports this module)

        return json_ids(obj, opts.ids_field, opts.max_document_bytes)
    if not isinstance(obj, dict):
        return Reject(f"expected a JSON object with a {opts.text_field!r} field, got {type(obj).__name__}")
    if opts.text_field not in obj:
        return Reject(f"missing text field {opts.text_field!r} (fields: {fields_of(obj)}); set --text-field")
    value = obj[opts.text_field]
    if not isinstance(value, str):
        return Reject(f"text field {opts.text_field!r} holds {type(value).__name__}, not a string")
    if not value.strip():
        return Reject("empty document (only whitespace)")
    return value


def _jsonl(f: BinaryIO, opts: TextOptions) -> Iterator[tuple[str, str | bytes | Reject, object]]:
    for n, line in _text_lines(f, opts.max_document_bytes):
        if isinstance(line, Reject):
            yield f":{n}", line, None
            continue
        if not line.strip():
            continue
        try:
            obj = parse_json(line)
        except BadJSON as exc:
            yield f":{n}", Reject(str(exc)), None
            continue
        yield f":{n}", _field(obj, opts), obj


class _Prefixed(io.RawIOBase):
    """A stream whose first bytes were read already: `head`, then the rest of `rest`."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head, self.rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        data, self.head = (self.head[:len(buffer)], self.head[len(buffer):]) if self.head else (
            self.rest.read(len(buffer)), b"")
        buffer[:len(data)] = data
        return len(data)


def _head(f: BinaryIO, cap: int) -> tuple[bytes, bool]:
    """The first bytes of a `.json` file, read to tell its form, and whether it holds one object a line: its first
    line holds a whole object and a value follows, or it starts an object longer than `cap`, or more than `cap`
    blank bytes follow it (the file parsed whole would be rejected whole; at most 2 `cap` + 2 bytes are read)."""
    head = f.readline(cap + 2)
    first = head.removeprefix(BOM).strip()
    if not first.startswith(b"{"):
        return head, False
    if len(first) > cap:
        return head, True
    try:
        parse_json(first.decode("utf-8"))  # starting with "{", it is an object if it parses
    except (UnicodeDecodeError, BadJSON):
        return head, False
    while line := f.readline(cap + 2):
        head += line
        if line.strip() or len(head) > cap:  # a value follows; or more blank bytes than a file parsed whole may hold
            return head, True
    return head, False


def _json(f: BinaryIO, opts: TextOptions) -> Iterator[tuple[str, str | bytes | Reject, object]]:
    """A JSON file: a list of objects or one object, parsed whole; or JSON Lines named `.json` (C4's
    `c4-train.00000-of-01024.json.gz`, Dolma's `.json.gz`)."""
    cap = opts.max_document_bytes
    head, one_a_line = _head(f, cap)
    if one_a_line:
        yield from _jsonl(io.BufferedReader(_Prefixed(head, f)), opts)
        return
    text = _whole(f, cap, "a .json file is parsed whole: it is", head)
    if isinstance(text, Reject):
        yield "", text, None
        return
    try:
        data = parse_json(text)
    except BadJSON as exc:
        yield "", Reject(str(exc)), None
        return
    if isinstance(data, list):
        for n, obj in enumerate(data):
            yield f"#{n}", _field(obj, opts), obj
    else:
        yield "", _field(data, opts), data


def read_documents(path: Path, opts: TextOptions) -> Iterator[tuple[str, str | bytes | Reject]]:
    """Every document (or rejected record) of one file, in file order."""
    for where, doc, _ in read_records(path, opts):
        yield where, doc


def _plain_records(f: BinaryIO, opts: TextOptions) -> Iterator[tuple[str, str | Reject, None]]:
    for where, doc in _plain(f, opts):
        yield where, doc, None


def _wikitext_records(f: BinaryIO, opts: TextOptions) -> Iterator[tuple[str, str | Reject, None]]:
    for where, doc in _plain(f, opts, articles=True):
        yield where, doc, None


def read_records(path: Path, opts: TextOptions) -> Iterator[tuple[str, str | bytes | Reject, object]]:
    """(where, document or rejection, the record it came from) for every record of one file, in file order."""
    fmt, codec = file_format(path.name)
    if fmt is None:
        allowed = f"{', '.join(EXTENSIONS)}, no extension, or + .gz or .zst"
        yield "", Reject(f"unsupported file type; allowed: {allowed}"), None
        return
    if fmt in ("parquet", "arrow"):
        from converters.text.columnar import read_columns  # (columnar.py imports this module)

        for where, doc in read_columns(path, opts):
            yield where, doc, None
        return
    if fmt == "tokens":
        from converters.text.token_files import token_documents  # (token_files.py imports this module)
        from converters.text.tokenize import tokenizer_info

        info = tokenizer_info(opts.tokenizer)
        delimiter = info["bos_id"] if info["bos_id"] is not None else info["eos_id"]
        for where, doc in token_documents(path, delimiter=delimiter, cap=opts.max_document_bytes):
            yield where, doc, None
        return
    if opts.ids_field is not None and fmt not in ("json", "jsonl"):  # (columnar and token files returned above)
        what = {"plain": "plain text", "wikitext": "WikiText", "csv": "CSV", "tsv": "TSV"}.get(fmt, fmt)
        yield "", Reject(f"--ids-field reads token ids from Parquet, Arrow, JSON Lines or JSON files; this is a {what} "
                         "file"), None
        return
    if fmt in ("csv", "tsv"):
        from converters.text.tables import read_table  # (tables.py imports this module)

        reader = functools.partial(read_table, delimiter=TABLES[f".{fmt}"])
    else:
        reader = {"plain": _plain_records, "wikitext": _wikitext_records, "jsonl": _jsonl, "json": _json}[fmt]
    try:
        with open(path, "rb") as raw, _decompressed(raw, codec) as f:
            if not f.peek(1):  # every reader buffers: peek reads without consuming
                yield "", Reject("empty file (0 bytes)"), None
                return
            yield from reader(f, opts)
    except (OSError, EOFError, zlib.error) as exc:  # streamed: what was read before the damage is kept
        what = f"corrupt {codec} data" if codec and not isinstance(exc, FileNotFoundError) else "unreadable"
        yield "", Reject(f"{what}: {exc}"), None
