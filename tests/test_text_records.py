"""Reading one corpus file into documents (converters/text/records.py), exactly: byte offsets of undecodable
bytes, the byte order mark, the size cap at its boundary, separator records, JSON files, and Parquet columns of
other encodings. Each reason is compared whole: a user finds the damaged byte from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest_text import TOKENIZER

from converters.text.options import TextOptions
from converters.text.records import Reject, read_documents

BOM = b"\xef\xbb\xbf"


def read(path: Path, **options) -> list[tuple[str, str]]:
    """(where, text) of each document, (where, "! reason") of each rejection."""
    opts = TextOptions(tokenizer=str(TOKENIZER), **options)
    return [(w, f"! {d.reason}" if isinstance(d, Reject) else d) for w, d in read_documents(path, opts)]


def test_an_undecodable_byte_is_named_with_its_offset_in_the_file(tmp_path: Path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"first line\r\nsecond\ncaf\xe9 au lait\n" + b"x" * 40 + b"\n\xff\n")
    assert read(path, per_line=True) == [
        (":1", "first line"), (":2", "second"),
        (":3", "! not UTF-8 text: undecodable byte 0xe9 at offset 22"),  # 12 + 7 bytes before line 3, then "caf"
        (":4", "x" * 40),
        (":5", "! not UTF-8 text: undecodable byte 0xff at offset 73")]


def test_a_line_past_the_cap_is_skipped_and_the_offsets_after_it_stay_right(tmp_path: Path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"ok\n" + b"y" * (3 << 20) + b"\nz\xe9\n")  # a line of 3 MiB: skipped in 1 MiB pieces
    offset = 3 + (3 << 20) + 1 + 1
    assert read(path, per_line=True, max_document_bytes=100) == [
        (":1", "ok"), (":2", "! document larger than --max-document-bytes (100 bytes)"),
        (":3", f"! not UTF-8 text: undecodable byte 0xe9 at offset {offset}")]


def test_the_byte_order_mark_of_the_first_line_only_is_dropped_and_counted(tmp_path: Path):
    path = tmp_path / "a.txt"
    path.write_bytes(BOM + b"one\n" + BOM + b"two\n\xe9\n")
    assert read(path, per_line=True) == [
        (":1", "one"), (":2", "\ufefftwo"),  # a BOM inside the file is text (a zero-width no-break space)
        (":3", f"! not UTF-8 text: undecodable byte 0xe9 at offset {3 + 4 + 3 + 4}")]
    path.write_bytes(BOM + b"caf\xe9\n")
    assert read(path, per_line=True) == [(":1", "! not UTF-8 text: undecodable byte 0xe9 at offset 6")]
    path.write_bytes(BOM + b"whole file")
    assert read(path) == [("", "whole file")]


@pytest.mark.parametrize("size, want", [(10, "0123456789"), (11, None)])
def test_a_whole_file_may_be_exactly_the_cap(tmp_path: Path, size: int, want: str | None):
    path = tmp_path / "a.txt"
    path.write_bytes(b"0123456789a"[:size])
    expected = want if want is not None else "! document larger than --max-document-bytes (10 bytes)"
    assert read(path, max_document_bytes=10) == [("", expected)]


def test_an_empty_file_and_a_blank_one_say_which(tmp_path: Path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blank.txt").write_bytes(b" \n\t\n")
    assert read(tmp_path / "empty.txt") == [("", "! empty file (0 bytes)")]
    assert read(tmp_path / "blank.txt") == [("", "! empty document (only whitespace)")]


def test_separator_records_are_capped_by_their_own_bytes(tmp_path: Path):
    """A record is its lines joined by newlines: 'aaaa\\nbbbb' is 9 bytes, 10 with its last newline counted."""
    path = tmp_path / "a.txt"
    path.write_bytes(b"aaaa\nbbbb\n%  \ncc\n  %\n%\nd\xe9\n%\n")  # "%  " separates, "  %" does not
    assert read(path, separator="%", max_document_bytes=10) == [
        ("#0", "aaaa\nbbbb"), ("#1", "cc\n  %"),
        ("#2", "! not UTF-8 text: undecodable byte 0xe9 at offset 24")]
    assert read(path, separator="%", max_document_bytes=9) == [
        ("#0", "! document larger than --max-document-bytes (9 bytes)"), ("#1", "cc\n  %"),
        ("#2", "! not UTF-8 text: undecodable byte 0xe9 at offset 24")]


def test_a_json_file_is_a_list_of_objects_or_one_object(tmp_path: Path):
    path = tmp_path / "a.json"
    path.write_text('{"text": "just one", "id": 3}')
    assert read(path) == [("", "just one")]
    path.write_text('[{"text": "a"}, 5, {"b": 1, "a": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9}, '
                    '{"text": "  "}, {}]')
    assert read(path) == [
        ("#0", "a"), ("#1", "! expected a JSON object with a 'text' field, got int"),
        ("#2", "! missing text field 'text' (fields: a, b, c, d, e, f, g, h); set --text-field"),
        ("#3", "! empty document (only whitespace)"),
        ("#4", "! missing text field 'text' (fields: none); set --text-field")]
    path.write_text('{"text": ')
    assert read(path) == [("", "! invalid JSON: Expecting value at line 1 column 10")]


def test_parquet_text_columns_of_every_string_encoding_are_read(tmp_path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    def words(field: str) -> list[str]:
        return [f"{field} one", f"{field} two", f"{field} one"]

    columns = {"plain": pa.array(words("plain")), "large": pa.array(words("large"), pa.large_string()),
               "dictionary": pa.array(words("dictionary")).dictionary_encode()}
    if hasattr(pa, "string_view"):  # pyarrow 16 on; the oldest release fastdata admits (14) has no such type
        columns["view"] = pa.array(words("view")).cast(pa.string_view())
    columns["number"] = pa.array([1, 2, 3])
    names = [f"n{i}" for i in range(10)]
    pq.write_table(pa.table({**columns, **{n: pa.array([0, 0, 0]) for n in names}}), tmp_path / "a.parquet")
    for field in [f for f in columns if f != "number"]:
        assert read(tmp_path / "a.parquet", text_field=field) == [(f"#{i}", w) for i, w in enumerate(words(field))]
    assert read(tmp_path / "a.parquet", text_field="number") == [("", "! column 'number' has type int64, not string")]
    shown = ", ".join([*columns, *names][:8])  # the first eight columns are named
    assert read(tmp_path / "a.parquet", text_field="missing") == [
        ("", f"! missing text column 'missing' (columns: {shown}); set --text-field")]


def test_parquet_values_that_are_null_blank_or_past_the_cap_are_rejected(tmp_path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = [None, " \t", "abcdefgh", "abcdefghi", "\u00e9" * 4, "\u00e9" * 5]  # 8 and 9 bytes; 8 and 10 bytes
    pq.write_table(pa.table({"text": pa.array(values)}), tmp_path / "a.parquet")
    too_large = "! document larger than --max-document-bytes (8 bytes)"
    assert read(tmp_path / "a.parquet", max_document_bytes=8) == [
        ("#0", "! null text"), ("#1", "! empty document (only whitespace)"), ("#2", "abcdefgh"), ("#3", too_large),
        ("#4", "\u00e9" * 4), ("#5", too_large)]


@pytest.mark.parametrize("data, want", [
    (b"0123456789\n", "0123456789"), (b"0123456789\r\n", "0123456789"), (b"0123456789", "0123456789"),
    (b"0123456789a\n", None), (b"0123456789a\r\n", None), (b"0123456789a", None), (b"0123456789ab\n", None)])
def test_a_line_may_be_exactly_the_cap_and_not_a_byte_more(tmp_path: Path, data: bytes, want: str | None):
    """A line of cap + 1 bytes and its newline fit the cap + 2 bytes read at once: it was taken whole, a document
    over --max-document-bytes."""
    path = tmp_path / "a.txt"
    path.write_bytes(b"first\n" + data)
    expected = want if want is not None else "! document larger than --max-document-bytes (10 bytes)"
    assert read(path, per_line=True, max_document_bytes=10) == [(":1", "first"), (":2", expected)]
    path.write_bytes(b"a\nlast")
    assert read(path, per_line=True, max_document_bytes=10) == [(":1", "a"), (":2", "last")]
