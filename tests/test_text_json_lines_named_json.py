"""JSON Lines named `.json`, as C4 (`en/c4-train.00000-of-01024.json.gz`) and Dolma (`documents/*.json.gz`) ship
their documents: before, every such file was parsed whole and rejected (`invalid JSON: Extra data at line 2
column 1`, or larger than `--max-document-bytes`), and a folder of them held nothing to convert. A `.json` file
whose first line is a whole JSON object and that has a value after it is read one object a line; every other
`.json` file is still parsed whole."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

from conftest_text import TOKENIZER, convert_text

import fastdata
from converters.text.options import TextOptions
from converters.text.records import Reject, _whole, read_documents


def read(path: Path, **options) -> list[tuple[str, str]]:
    opts = TextOptions(tokenizer=str(TOKENIZER), **options)
    return [(w, f"! {d.reason}" if isinstance(d, Reject) else d) for w, d in read_documents(path, opts)]


def c4_record(text: str, i: int) -> dict:
    return {"text": text, "timestamp": "2019-04-25T12:57:54Z", "url": f"https://example.org/{i}"}


def words(n: int) -> str:
    return " ".join(["word"] * n)


def test_c4_shards_convert_into_the_splits_their_names_name(tmp_path: Path):
    src = tmp_path / "c4" / "en"
    src.mkdir(parents=True)
    for split, sizes in (("train", [1, 2, 3, 4]), ("validation", [7, 9])):
        with gzip.open(src / f"c4-{split}.00000-of-01024.json.gz", "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(c4_record(words(n), i)) + "\n" for i, n in enumerate(sizes))
    m = convert_text(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 4, "val": 2}
    assert not m.rejected
    ld = fastdata.loader(tmp_path / "out", split="val", max_tokens=1 << 14, shuffle=False)
    assert sorted(n for b in ld for n in b["lengths"].tolist()) == [9, 11]  # [CLS] words [SEP]


def test_each_line_is_a_record_with_its_own_line_number_and_byte_offset(tmp_path: Path):
    path = tmp_path / "a.json"
    path.write_bytes(b'\xef\xbb\xbf{"text": "one"}\r\n\n  \n{"text": "two"}\n{"body": 1}\nnot json\n'
                     b'{"text": "caf\xe9"}\n{"text": "three"}')
    assert read(path) == [
        (":1", "one"), (":4", "two"), (":5", "! missing text field 'text' (fields: body); set --text-field"),
        (":6", "! invalid JSON: Expecting value at line 1 column 1"),
        (":7", "! not UTF-8 text: undecodable byte 0xe9 at offset 74"),  # 3 + 17 + 1 + 3 + 16 + 12 + 9 + 13 bytes
        (":8", "three")]
    path.write_bytes(b'{"text": "' + b"x" * 20 + b'"}\n{"text": "short"}\n')
    assert read(path, max_document_bytes=24) == [
        (":1", "! document larger than --max-document-bytes (24 bytes)"), (":2", "short")]


def test_other_json_files_are_still_parsed_whole(tmp_path: Path):
    path = tmp_path / "a.json"
    path.write_text('{"text": "alone"}\n\n  \n')  # one object, blank lines after it
    assert read(path) == [("", "alone")]
    path.write_text('{\n  "text": "pretty"\n}\n')  # an object over several lines
    assert read(path) == [("", "pretty")]
    path.write_text('[{"text": "a"},\n {"text": "b"}]\n')
    assert read(path) == [("#0", "a"), ("#1", "b")]
    path.write_text('{"text": "a"} {"text": "b"}\n')  # two values on the first line: no object alone on it
    assert read(path) == [("", "! invalid JSON: Extra data at line 1 column 15")]
    path.write_text('["a"]\n["b"]\n')  # arrays a line are no documents of JSON Lines either
    assert read(path) == [("", "! invalid JSON: Extra data at line 2 column 1")]
    path.write_text('{"text": "abc"}')  # an object of exactly the cap
    assert read(path, max_document_bytes=15) == [("", "abc")]
    path.write_text("[" + "x" * 70 + "]\n[]\n")  # a first line past the cap that starts no object
    assert read(path, max_document_bytes=60) == [
        ("", "! a .json file is parsed whole: it is larger than --max-document-bytes (60 bytes)")]


def test_blank_lines_past_the_cap_after_an_object_are_read_a_line_at_a_time(tmp_path: Path):
    """A file parsed whole may hold `--max-document-bytes`; blank lines after the first object are not gathered
    past that (a zstd file of 1 GiB of newlines), and the objects after them are still read."""
    path = tmp_path / "a.json"
    path.write_text('{"text": "a"}\n' + "\n" * 100 + '{"text": "b"}\n')
    assert read(path, max_document_bytes=60) == [(":1", "a"), (":102", "b")]
    path.write_text('{"text": "a"}\n' + "\n" * 100)
    assert read(path, max_document_bytes=60) == [(":1", "a")]
    assert read(path) == [("", "a")]
    path.write_text('{"text": "a"}\n' + "\n" * 6)  # 20 bytes: a file parsed whole may be exactly the cap
    assert read(path, max_document_bytes=20) == [("", "a")]
    assert read(path, max_document_bytes=19) == [(":1", "a")]


def test_json_lines_longer_than_a_read_buffer_are_read_whole(tmp_path: Path):
    path = tmp_path / "c4-train.00000-of-01024.json"
    path.write_text("".join(json.dumps(c4_record(f"document {i} " + "word " * 20, i)) + "\n" for i in range(2000)))
    docs = read(path)
    assert len(docs) == 2000 and docs[-1] == (":2000", "document 1999 " + "word " * 20)


def test_a_file_parsed_whole_reads_no_more_than_the_cap_after_what_was_read():
    f = io.BytesIO(b"x" * 100)
    assert _whole(f, 10, "document", b"[" * 12) == Reject("document larger than --max-document-bytes (10 bytes)")
    assert f.tell() == 0
    assert _whole(f, 10, "document", b"[" * 4) == Reject("document larger than --max-document-bytes (10 bytes)")
    assert f.tell() == 7


def test_labels_in_json_lines_named_json_label_their_documents(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.json").write_text("".join(json.dumps({"text": words(n), "label": y}) + "\n"
                                            for n, y in ((1, "pos"), (2, "neg"), (3, "pos"))))
    m = convert_text(src, tmp_path / "out").manifest
    assert m.classes == ("neg", "pos")
    ld = fastdata.loader(tmp_path / "out", split="train", max_tokens=1 << 14, shuffle=False)
    assert sorted((n, y) for b in ld for n, y in zip(b["lengths"].tolist(), b["labels"].tolist())) == [
        (3, 1), (4, 0), (5, 1)]
