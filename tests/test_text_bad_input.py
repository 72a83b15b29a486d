"""Bad text input: recorded rejections with reasons, or clear errors before anything is written."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from conftest_text import TOKENIZER, convert_text, read_rows

from fastdata.errors import ConvertError


def _reasons(result) -> dict[str, str]:
    return {r["source"]: r["reason"] for r in result.rejected}


def test_bad_files_and_records_are_rejected_with_reasons(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for c in ("a", "b"):
        (src / c).mkdir(parents=True)
    (src / "a" / "good.txt").write_text("A perfectly fine document.", encoding="utf-8")
    (src / "a" / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (src / "a" / "empty.txt").write_bytes(b"")
    (src / "a" / "blank.txt").write_text("  \n\t\n", encoding="utf-8")
    (src / "a" / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0not really")
    (src / "a" / "broken.txt.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    (src / "a" / "broken.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfdgarbage")
    (src / "a" / "data.parquet.zst").write_bytes(b"\x28\xb5\x2f\xfd")  # Parquet compresses inside
    (src / "a" / "controls.txt").write_text("\x00\x01\x02", encoding="utf-8")
    (src / "b" / "docs.jsonl").write_text(
        '{"text": "kept"}\n{"body": "no text field"}\nnot json at all\n{"text": 7}\n{"text": "   "}\n[1, 2]\n',
        encoding="utf-8")
    (src / "b" / "gz.jsonl.gz").write_bytes(gzip.compress(b'{"text": "kept too"}\n'))
    (src / "stray.txt").write_text("not in a class folder", encoding="utf-8")
    result = convert_text(src, tmp_path / "dst")
    reasons = _reasons(result)
    assert "undecodable byte 0xe9 at offset 3" in reasons["a/latin1.txt"]
    assert reasons["a/empty.txt"] == "empty file (0 bytes)"
    assert "only whitespace" in reasons["a/blank.txt"]
    assert "unsupported file type" in reasons["a/photo.jpg"]
    assert "corrupt gzip" in reasons["a/broken.txt.gz"]
    assert reasons["a/broken.jsonl.zst"].startswith("corrupt zstd data: ")
    assert reasons["a/data.parquet.zst"].startswith("unsupported file type; ")
    assert "no tokens besides the tokenizer's special tokens" in reasons["a/controls.txt"]
    assert "missing text field 'text' (fields: body)" in reasons["b/docs.jsonl:2"]
    assert "invalid JSON" in reasons["b/docs.jsonl:3"]
    assert "holds int, not a string" in reasons["b/docs.jsonl:4"]
    assert "only whitespace" in reasons["b/docs.jsonl:5"]
    assert "expected a JSON object" in reasons["b/docs.jsonl:6"]
    assert reasons["stray.txt"] == "not inside a class folder"
    assert len(reasons) == 14
    kept = sorted(r["source"] for r in read_rows(tmp_path / "dst"))
    assert kept == ["a/good.txt", "b/docs.jsonl:1", "b/gz.jsonl.gz:1"]
    assert len(result.manifest.rejected) == 14  # listed in the manifest, never dropped


def test_parquet_without_the_text_column_is_rejected(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(pa.table({"content": ["x"]}), src / "a.parquet")
    (src / "b.txt").write_text("fine", encoding="utf-8")
    result = convert_text(src, tmp_path / "dst")
    assert "missing text column 'text' (columns: content); set --text-field" in _reasons(result)["a.parquet"]


def test_damaged_parquet_keeps_the_rows_before_the_damage_and_says_where(tmp_path: Path) -> None:
    """pyarrow raised out of the conversion (OSError: corrupt snappy data, thrift, short pages; UnicodeDecodeError)
    for a Parquet corpus damaged past its first page, or with a column name that is not UTF-8. Found by the `text`
    fuzz target once it read Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from converters.text.options import TextOptions
    from converters.text.records import Reject, read_documents

    path = tmp_path / "a.parquet"
    docs = ["first doc", "second doc", "third doc", "fourth doc"]
    pq.write_table(pa.table({"text": docs}), path, row_group_size=2, compression="none", use_dictionary=False,
                   write_statistics=False)
    data = path.read_bytes()
    assert data.count(b"third doc") == 1
    path.write_bytes(data.replace(b"third doc", b"\xff" * 9))
    opts = TextOptions(tokenizer=str(TOKENIZER))
    got = list(read_documents(path, opts))
    assert got[:2] == [("#0", "first doc"), ("#1", "second doc")] and len(got) == 3  # row group 0 kept
    where, reject = got[2]
    assert where == "#2" and isinstance(reject, Reject)
    assert reject.reason.startswith("corrupt Parquet data, rows 2 to 3 of the file not read: ArrowInvalid: ")
    assert "Invalid UTF8" in reject.reason  # the batch's validation found it, before a value was read
    path.write_bytes(data.replace(b"first doc", b"\xff" * 9))
    assert [(w, d if isinstance(d, str) else d.reason[:40]) for w, d in read_documents(path, opts)] == [
        ("#0", "corrupt Parquet data, rows 0 to 1 of the"), ("#2", "third doc"), ("#3", "fourth doc")]

    path.write_bytes(data.replace(b"text", b"t\xffxt"))  # the column's name, in the footer
    (where, reject), = read_documents(path, opts)
    assert where == "" and reject.reason.startswith("not a readable Parquet file: ")


@pytest.mark.parametrize("content, message", [
    (None, "does not exist"),
    (b'{"model": "\xff"}', "^cannot read tokenizer file .*tokenizer.json: 'utf-8' codec can't decode byte 0xff"),
    ('{"model": "nonsense"}', "is not a valid Hugging Face tokenizer.json"),
    ("not json {", "is not a valid Hugging Face tokenizer.json"),
])
def test_missing_or_invalid_tokenizer_is_a_clear_error_before_writing(tmp_path: Path, content, message) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("hello", encoding="utf-8")
    tok = tmp_path / "tokenizer.json"
    if isinstance(content, bytes):  # not UTF-8 text
        tok.write_bytes(content)
    elif content is not None:
        tok.write_text(content, encoding="utf-8")
    with pytest.raises(ConvertError, match=message):
        convert_text(src, tmp_path / "dst", tokenizer=str(tok))
    assert not (tmp_path / "dst").exists()


def test_source_with_no_documents_and_bad_options(tmp_path: Path) -> None:
    from converters.text import TextOptions

    src = tmp_path / "src"
    src.mkdir()
    (src / "empty.txt").write_bytes(b"")
    with pytest.raises(ConvertError, match=r"holds no text input .*1 file\(s\) rejected"):
        convert_text(src, tmp_path / "dst")
    with pytest.raises(ValueError, match="--tokenizer is required"):
        TextOptions(tokenizer="")
    with pytest.raises(ValueError, match=r"--overflow must be one of \['truncate', 'split'\]"):
        TextOptions(tokenizer=str(TOKENIZER), overflow="wrap")
    with pytest.raises(ValueError, match="exclusive"):
        TextOptions(tokenizer=str(TOKENIZER), per_line=True, separator="%")
    with pytest.raises(ValueError, match="--max-length must be an integer >= 2"):
        TextOptions(tokenizer=str(TOKENIZER), max_length=1)


MAX_DOC = "--max-document-bytes must be a size from 1 byte to 1 TiB (a document is held in memory whole), got "


@pytest.mark.parametrize(("options", "message"), [
    ({"tokenizer": ""}, "--tokenizer is required for text: pass the path of a Hugging Face tokenizer.json"),
    ({"per_line": True, "separator": "%"},
     "--per-line and --separator are exclusive: pick one way to split text files"),
    ({"separator": ""}, "--separator must be a non-empty single line (e.g. '%'), got ''"),
    ({"separator": "%\n%"}, "--separator must be a non-empty single line (e.g. '%'), got '%\\n%'"),
    ({"text_field": ""}, "--text-field must name a field/column, e.g. 'text'"),
    ({"max_length": 1}, "--max-length must be an integer >= 2 (or omitted for no limit), got 1"),
    ({"max_length": 8.0}, "--max-length must be an integer >= 2 (or omitted for no limit), got 8.0"),
    ({"overflow": "wrap"}, "--overflow must be one of ['truncate', 'split'], got 'wrap'"),
    ({"max_document_bytes": 0}, f"{MAX_DOC}0"),
    ({"max_document_bytes": True}, f"{MAX_DOC}True"),
    ({"max_document_bytes": "64MB"}, f"{MAX_DOC}'64MB'"),
    ({"max_document_bytes": 2**40 + 1}, f"{MAX_DOC}1099511627777"),  # 10**29 overflowed Python's read()
])
def test_text_options_are_refused_with_their_exact_reason(options: dict, message: str) -> None:
    from converters.text.options import TextOptions

    with pytest.raises(ValueError) as info:
        TextOptions(**{"tokenizer": "tokenizer.json", **options})
    assert str(info.value) == message


def test_text_options_at_their_limits_are_accepted() -> None:
    from converters.text.options import TextOptions

    for options in ({"max_length": 2}, {"max_document_bytes": 1}, {"max_document_bytes": 2**40},
                    {"separator": "%"}, {"separator": "%%"},
                    {"per_line": True}, {"max_length": None, "overflow": "split"}):
        TextOptions(tokenizer="tokenizer.json", **options)
