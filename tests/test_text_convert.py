"""The text kind: real text + real tokenizer -> Arrow token shards that equal `tokenizers`' own output."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from conftest_text import (
    FORTUNES,
    TOKENIZER,
    bert,
    convert_text,
    copy_fortunes,
    fortune_records,
    fortunes_tokens_fixture,  # noqa: F401  (the fortunes_tokens fixture)
    read_rows,
)

from converters.tree import SPLIT_FOLDERS
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

OUTSIDE = f"not inside a split folder ({SPLIT_FOLDERS})"

CLASSES = ("computers", "education", "linux", "science", "wisdom")


def test_ids_equal_tokenizers_encoding_no_document_lost(fortunes_tokens: Path) -> None:
    tok = bert()
    rows = read_rows(fortunes_tokens)
    expected = {}
    for label, name in enumerate(CLASSES):
        for n, text in enumerate(fortune_records(FORTUNES / name)):
            expected[f"{name}/{name}.txt#{n}"] = (text, label)
    assert Counter(r["source"] for r in rows) == Counter(expected.keys())  # each record exactly once
    encodings = tok.encode_batch([expected[r["source"]][0] for r in rows])
    for row, enc in zip(rows, encodings):
        assert row["input_ids"] == enc.ids, row["source"]
        assert row["length"] == len(enc.ids)
        assert row["label"] == expected[row["source"]][1]
    assert len({r["key"] for r in rows}) == len(rows)


def test_manifest_records_tokenizer_counts_and_histogram(fortunes_tokens: Path) -> None:
    m = read_manifest(fortunes_tokens)
    rows = read_rows(fortunes_tokens)
    assert m.kind == "text" and m.shard_format == "arrow" and m.classes == CLASSES
    info = m.extra["tokenizer"]
    assert info["sha256"] == hashlib.sha256(TOKENIZER.read_bytes()).hexdigest()
    assert (info["vocab_size"], info["pad_id"], info["bos_id"], info["eos_id"]) == (30522, 0, 101, 102)
    assert info["ids_dtype"] == "uint16"
    stats = m.split("train").stats
    assert stats["documents"] == stats["sequences"] == len(rows) == m.split("train").samples
    assert stats["tokens"] == sum(r["length"] for r in rows)
    assert sum(stats["length_histogram"].values()) == len(rows)
    assert stats["length_histogram"]["1-8"] == sum(r["length"] <= 8 for r in rows)
    assert len(m.split("train").shards) == 4
    assert list(m.split("train").class_counts) == [sum(r["label"] == i for r in rows) for i in range(5)]


def test_arrow_schema_uint16_and_hf_features(fortunes_tokens: Path) -> None:
    import datasets

    shard = sorted(fortunes_tokens.glob("*.arrow"))[0]
    schema = pa.ipc.open_stream(pa.memory_map(str(shard))).schema
    assert schema.field("input_ids").type == pa.list_(pa.uint16())
    ds = datasets.Dataset.from_file(str(shard))
    assert ds.features["label"].names == list(CLASSES)
    assert ds.features["input_ids"].feature.dtype == "uint16"
    assert ds[0]["input_ids"][0] == 101 and ds[0]["input_ids"][-1] == 102


def test_max_length_truncate_and_split(tmp_path: Path) -> None:
    copy_fortunes(tmp_path / "src", ("science",))
    texts = fortune_records(FORTUNES / "science")
    trunc = convert_text(tmp_path / "src", tmp_path / "t", separator="%", max_length=16)
    rows = read_rows(tmp_path / "t")
    assert len(rows) == len(texts) and max(r["length"] for r in rows) == 16
    tok = bert()
    tok.enable_truncation(16)
    for r in rows:
        assert r["input_ids"] == tok.encode(texts[int(r["source"].split("#")[1])]).ids
    assert trunc.manifest.split("train").stats["truncated_documents"] > 0
    histogram = trunc.manifest.split("train").stats["length_histogram"]
    assert sum(histogram.values()) == len(rows) and set(histogram) <= {"1-8", "9-16"}
    assert histogram.get("9-16") == sum(1 for r in rows if r["length"] > 8)

    convert_text(tmp_path / "src", tmp_path / "s", separator="%", max_length=16, overflow="split")
    windows = read_rows(tmp_path / "s")
    assert len(windows) > len(texts) and max(r["length"] for r in windows) <= 16
    assert len({r["key"] for r in windows}) == len(windows)  # every window has a key of its own
    full = bert()
    by_doc: dict[str, list] = {}
    for r in sorted(windows, key=lambda r: (r["source"], int(r["key"].partition("-")[2] or 0))):
        by_doc.setdefault(r["source"], []).extend(t for t in r["input_ids"] if t not in (101, 102))
    assert len(by_doc) == len(texts)  # every document kept, in all its windows
    for source, ids in by_doc.items():
        assert ids == full.encode(texts[int(source.split("#")[1])]).ids[1:-1]


def _zstd(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(data)
    return sink.getvalue().to_pybytes()


def test_a_csv_or_tsv_table_converts_from_its_text_column(tmp_path: Path) -> None:
    """Kaggle's NLP sets are CSV tables (`id,review,sentiment`): they were rejected as an unsupported file type. A row
    is a document, its cell in the `--text-field` column (any case), named by the line it starts on."""
    import csv as csv_module
    import gzip

    src = tmp_path / "src"
    src.mkdir()
    (src / "imdb.csv").write_text('id,Review,sentiment\n1,"A great movie, truly",positive\n2,"Bad.\nVery bad.",'
                                  'negative\n3,,negative\n\n4,"fine"\n5,' + "x" * 4096 + ",neutral\n",
                                  encoding="utf-8")  # a blank line, then a cell of exactly --max-document-bytes
    (src / "b.tsv.gz").write_bytes(gzip.compress(b"review\tid\ntab separated\t1\n"))
    (src / "c.csv").write_bytes(b"\xef\xbb\xbfreview\nwith a BOM\n")
    before = csv_module.field_size_limit()
    result = convert_text(src, tmp_path / "dst", text_field="review", max_document_bytes=4096)
    assert csv_module.field_size_limit() == before  # the limit raised for the read is put back
    got = {r["source"]: r["input_ids"] for r in read_rows(tmp_path / "dst")}
    tok = bert()
    want = {"imdb.csv:2": "A great movie, truly", "imdb.csv:3": "Bad.\nVery bad.", "imdb.csv:7": "fine",
            "imdb.csv:8": "x" * 4096, "b.tsv.gz:2": "tab separated", "c.csv:2": "with a BOM"}
    assert got == {k: tok.encode(v).ids for k, v in want.items()}
    assert {r["source"]: r["reason"] for r in result.manifest.rejected} == {
        "imdb.csv:5": "empty document (only whitespace)"}


def test_a_table_that_cannot_be_read_to_its_end_keeps_the_rows_before(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "latin.csv").write_bytes(b"text\nfirst row\ncaf\xe9\nlast\n")
    (src / "long.csv").write_bytes(b"text\nkept\n" + b"z" * (4 * 4096 + 2**20 + 1) + b"\nlost\n")
    (src / "big.csv").write_text("text\nsmall\n" + "w" * 140_000 + "\nafter\n")  # over csv's own 128 KiB limit
    (src / "short.csv").write_text("id,text\n1\n2,kept\n")  # a row that stops before the text column
    (src / "none.csv").write_text("id,body\n1,x\n")
    (src / "empty.csv").write_bytes(b"")
    (src / "header.csv").write_text("text\n")
    (src / "wide.csv").write_text(",".join(f"c{i}" for i in range(10)) + "\n" + ",".join("1" * 10) + "\n")
    (src / "blank.csv").write_text("\ntext\n")
    (src / "latin_head.csv").write_bytes(b"t\xe9xt\nfirst\n")
    bound = 4 * 4096 + 2**20  # the longest line a table may hold
    (src / "edge.csv").write_text("text\n" + "y" * (bound - 1) + "\nafter the edge\n")  # a line of `bound` bytes
    result = convert_text(src, tmp_path / "dst", max_document_bytes=4096)
    kept = sorted(r["source"] for r in read_rows(tmp_path / "dst"))
    assert kept == ["big.csv:2", "big.csv:4", "edge.csv:3", "latin.csv:2", "long.csv:2", "short.csv:3"]
    reasons = {r["source"]: r["reason"] for r in result.manifest.rejected}
    assert reasons["big.csv:3"] == "document larger than --max-document-bytes (4096 bytes)"
    assert reasons["latin.csv:3"].startswith("the table cannot be read from line 3 on: UnicodeDecodeError: ")
    assert reasons["long.csv:3"] == ("the table cannot be read from line 3 on: Error: a line longer than "
                                     f"{4 * 4096 + 2**20} bytes")
    assert reasons["none.csv"] == "missing text column 'text' (columns: id, body); set --text-field"
    assert reasons["empty.csv"] == "empty file (0 bytes)"
    assert reasons["header.csv"] == "no documents (only blank or separator lines)"
    assert reasons["short.csv:2"] == "empty document (only whitespace)"
    assert reasons["edge.csv:2"] == "document larger than --max-document-bytes (4096 bytes)"
    assert reasons["wide.csv"] == ("missing text column 'text' (columns: c0, c1, c2, c3, c4, c5, c6, c7); set "
                                   "--text-field")
    assert reasons["blank.csv"] == "missing text column 'text' (columns: none); set --text-field"
    assert reasons["latin_head.csv:1"].startswith("the table cannot be read from line 1 on: UnicodeDecodeError: ")
    assert len(reasons) == 11


def test_a_hugging_face_dataset_saved_to_disk_converts_from_its_arrow_files(tmp_path: Path) -> None:
    """`Dataset.save_to_disk` writes Arrow IPC streams (`data-00000-of-00001.arrow`): they were rejected as an
    unsupported file type. Each row of the text column is a document; an Arrow IPC file reads the same; a stream
    cut short keeps the rows of its whole batches."""
    src = tmp_path / "src"
    (src / "train").mkdir(parents=True)
    (src / "validation").mkdir()  # a DatasetDict's folder names: Hugging Face's "validation" is the val split
    table = pa.table({"text": ["first document", "second one", None, "  ", "fifth"], "id": [1, 2, 3, 4, 5]})
    with pa.ipc.new_stream(str(src / "train" / "data-00000-of-00001.arrow"), table.schema) as w:
        w.write_table(table, max_chunksize=2)
    with pa.ipc.new_file(str(src / "validation" / "data-00000-of-00001.arrow"), table.schema) as w:
        w.write_table(table.slice(0, 2))
    whole = (src / "train" / "data-00000-of-00001.arrow").read_bytes()
    (src / "train" / "cut.arrow").write_bytes(whole[: len(whole) * 3 // 4])
    (src / "train" / "garbage.arrow").write_bytes(b"not Arrow at all")
    with pa.ipc.new_stream(str(src / "train" / "numbers.arrow"), pa.schema([("text", pa.int64())])) as w:
        w.write_table(pa.table({"text": [1, 2]}))
    forged = bytearray(whole)  # the first batch's string offsets 0, 14, 24 made 0, 24, 14: read unchecked, a crash
    at = forged.find(struct.pack("<iii", 0, 14, 24))
    forged[at + 4:at + 12] = struct.pack("<ii", 24, 14)
    (src / "train" / "forged.arrow").write_bytes(bytes(forged))
    result = convert_text(src, tmp_path / "dst")
    got = {r["source"]: r["input_ids"] for r in read_rows(tmp_path / "dst")}
    tok = bert()
    want = {"train/data-00000-of-00001.arrow#0": "first document", "train/data-00000-of-00001.arrow#1": "second one",
            "train/data-00000-of-00001.arrow#4": "fifth", "validation/data-00000-of-00001.arrow#0": "first document",
            "validation/data-00000-of-00001.arrow#1": "second one", "train/cut.arrow#0": "first document",
            "train/cut.arrow#1": "second one"}  # the cut stream: its first batch, at least
    assert {k: got[k] for k in want} == {k: tok.encode(v).ids for k, v in want.items()}
    assert set(got) - set(want) <= {"train/cut.arrow#4"}
    assert sorted(result.manifest.splits) == ["train", "val"] and result.manifest.splits["val"].samples == 2
    reasons = {r["source"]: r["reason"] for r in result.manifest.rejected}
    assert reasons["train/data-00000-of-00001.arrow#2"] == "null text"
    assert reasons["train/data-00000-of-00001.arrow#3"] == "empty document (only whitespace)"
    assert reasons["train/numbers.arrow"] == "column 'text' has type int64, not string"
    assert reasons["train/garbage.arrow"].startswith("not a readable Arrow file: ")
    assert reasons["train/forged.arrow#0"].startswith("corrupt Arrow data, the rows from 0 on not read: ArrowInvalid: ")
    [cut] = [k for k in reasons if k.startswith("train/cut.arrow#")]
    assert reasons[cut].startswith(f"corrupt Arrow data, the rows from {cut.split('#')[1]} on not read: ")


def test_formats_jsonl_json_parquet_gzip_zstd_per_line(tmp_path: Path) -> None:
    import gzip

    import pyarrow.parquet as pq

    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_text('{"body": "first line"}\n\n{"body": "second one"}\n', encoding="utf-8")
    (src / "b.jsonl.gz").write_bytes(gzip.compress(b'{"body": "gzipped json line"}\n'))
    (src / "c.json").write_text(json.dumps([{"body": "from a json list"}, {"body": "again"}]), encoding="utf-8")
    pq.write_table(pa.table({"body": ["parquet row", "another parquet row"]}), src / "d.parquet")
    (src / "e.txt.gz").write_bytes(gzip.compress(b"line one\n\nline two\n"))
    (src / "f.jsonl.zst").write_bytes(_zstd(b'{"body": "a zstd line"}\n{"body": "as The Pile ships"}\n'))
    (src / "g.JSON.ZST").write_bytes(_zstd(json.dumps([{"body": "zstd json"}]).encode()))
    result = convert_text(src, tmp_path / "dst", text_field="body", per_line=True)
    got = {r["source"]: r["input_ids"] for r in read_rows(tmp_path / "dst")}
    tok = bert()
    want = {"a.jsonl:1": "first line", "a.jsonl:3": "second one", "b.jsonl.gz:1": "gzipped json line",
            "c.json#0": "from a json list", "c.json#1": "again", "d.parquet#0": "parquet row",
            "d.parquet#1": "another parquet row", "e.txt.gz:1": "line one", "e.txt.gz:3": "line two",
            "f.jsonl.zst:1": "a zstd line", "f.jsonl.zst:2": "as The Pile ships", "g.JSON.ZST#0": "zstd json"}
    assert got == {k: tok.encode(v).ids for k, v in want.items()}
    assert result.manifest.classes == () and result.rejected == []
    assert "label" not in pa.ipc.open_stream(pa.memory_map(str(next((tmp_path / "dst").glob("*.arrow"))))).schema.names


def test_batched_parallel_conversion_is_byte_identical_and_auto_detected(tmp_path: Path) -> None:
    import subprocess
    import sys

    src = tmp_path / "src"
    for name in ("education", "wisdom"):  # extension-less, as the fortunes package ships them
        (src / name).mkdir(parents=True)
        (src / name / name).write_bytes((FORTUNES / name).read_bytes())
    convert_text(src, tmp_path / "one", separator="%", samples_per_shard=300)
    cmd = [sys.executable, "-m", "fastdata", "convert", str(src), str(tmp_path / "two"), "--tokenizer", str(TOKENIZER),
           "--separator", "%", "--samples-per-shard", "300", "-j", "2", "--no-progress"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    one, two = read_manifest(tmp_path / "one"), read_manifest(tmp_path / "two")
    assert two.kind == "text"
    assert [s.sha256 for s in one.split("train").shards] == [s.sha256 for s in two.split("train").shards]


def test_parts_and_merge_give_the_same_shards(tmp_path: Path) -> None:
    from converters.assemble import merge

    copy_fortunes(tmp_path / "src", ("education", "wisdom"))
    whole = convert_text(tmp_path / "src", tmp_path / "whole", separator="%", samples_per_shard=200)
    for part in (1, 0):
        assert convert_text(tmp_path / "src", tmp_path / "parts", separator="%", samples_per_shard=200,
                            num_parts=2, part=part).manifest is None
    merged = merge(tmp_path / "parts")
    shas = [[s.sha256 for s in m.split("train").shards] for m in (whole.manifest, merged)]
    assert shas[0] == shas[1] and len(shas[0]) > 2
    assert merged.split("train").stats == whole.manifest.split("train").stats


def test_vocabulary_over_uint16_is_stored_as_int32(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    import fastdata

    vocab = {"[UNK]": 0, "[PAD]": 1, **{f"w{i}": i + 2 for i in range(70_000)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    (tmp_path / "model").mkdir()
    tok.save(str(tmp_path / "model" / "tokenizer.json"))
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("w1 w69999 w5\nw3\n", encoding="utf-8")
    result = convert_text(src, tmp_path / "dst", tokenizer=str(tmp_path / "model"), per_line=True)  # a model folder
    assert result.manifest.extra["tokenizer"]["ids_dtype"] == "int32"
    assert result.manifest.extra["tokenizer"]["eos_id"] is None
    shard = next((tmp_path / "dst").glob("*.arrow"))
    assert pa.ipc.open_stream(pa.memory_map(str(shard))).schema.field("input_ids").type == pa.list_(pa.int32())
    batch = next(iter(fastdata.loader(tmp_path / "dst", batch_size=2, shuffle=False)))
    assert sorted(batch["input_ids"][:, 0].tolist()) == [3, 5]
    assert 70_001 in batch["input_ids"].flatten().tolist()


def test_auto_detect_ignores_hidden_files_as_discovery_does(tmp_path: Path) -> None:
    """macOS `._x.jpg` companions and a `.git` folder are not inputs, so they do not decide the kind either."""
    from fastdata.cli.convert import _detect

    src = tmp_path / "src"
    (src / "wisdom").mkdir(parents=True)
    (src / "wisdom" / "wisdom").write_bytes((FORTUNES / "wisdom").read_bytes())
    (src / "wisdom" / "._cover.jpg").write_bytes(b"\0\5\26\7" + bytes(60))  # AppleDouble resource fork
    (src / ".git").mkdir()
    (src / ".git" / "cover.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    assert _detect(src) == "text"


def test_tokenizer_info_follows_a_rewritten_file(tmp_path: Path) -> None:
    """tokenizer_info is cached per file version: a changed file is described afresh."""
    from converters.text.tokenize import tokenizer_info

    path = tmp_path / "tokenizer.json"
    path.write_bytes(TOKENIZER.read_bytes())
    first = tokenizer_info(str(path))
    assert first["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert tokenizer_info(str(tmp_path)) == {**first, "file": tmp_path.name}  # a model folder holding it
    path.write_bytes(TOKENIZER.read_bytes() + b"\n")
    assert tokenizer_info(str(path))["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() != first["sha256"]


def test_parquet_text_column_of_another_type_is_rejected(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from converters.text.options import TextOptions
    from converters.text.records import Reject, read_documents

    path = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"text": pa.array([1, 2], pa.int64())}), path)
    assert list(read_documents(path, TextOptions(tokenizer=str(TOKENIZER)))) == [
        ("", Reject("column 'text' has type int64, not string"))]
    pq.write_table(pa.table({"text": pa.array(["a b", "c"], pa.large_string())}), path)
    assert [doc for _, doc in read_documents(path, TextOptions(tokenizer=str(TOKENIZER)))] == ["a b", "c"]


def test_misplaced_entries_that_are_not_regular_files_are_still_rejected(tmp_path: Path) -> None:
    """A broken symlink beside the split folders (or beside class folders) is recorded, not silently lost."""
    from converters.text.discover import discover_text
    from converters.text.options import TextOptions

    src = tmp_path / "src"
    (src / "train" / "wisdom").mkdir(parents=True)
    (src / "train" / "wisdom" / "a.txt").write_text("to be or not to be\n")
    (src / "gone.txt").symlink_to(tmp_path / "missing.txt")
    (src / "train" / "stray.txt").symlink_to(tmp_path / "missing.txt")
    found = discover_text(src, options=TextOptions(tokenizer=str(TOKENIZER)))
    assert [(r.split, r.source, r.reason) for r in found.rejected] == [
        ("", "gone.txt", OUTSIDE),
        ("train", "train/stray.txt", "not inside a class folder")]
    assert [it.rel for it in found.splits["train"]] == ["train/wisdom/a.txt"]


def test_text_detection_reads_the_head_of_a_file_without_a_suffix(tmp_path: Path) -> None:
    """--kind auto takes a file without a suffix for text when its first SNIFF_BYTES are UTF-8 without NUL bytes (a
    character cut by the end of that window counts as text)."""
    from converters.text import SNIFF_BYTES, TextKind, _looks_like_text

    def text(name: str, data: bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path

    n = SNIFF_BYTES
    assert _looks_like_text(text("plain", "naïve café\n".encode()))
    assert _looks_like_text(text("cut4", b"a" * (n - 3) + "😀".encode()))  # 3 of its 4 bytes in the window
    assert _looks_like_text(text("late_nul", b"a" * n + b"\0"))  # past the window
    assert not _looks_like_text(text("bad", b"a" * (n - 4) + b"\xff" + b"a" * 10))
    assert not _looks_like_text(text("nul", b"abc\0def"))
    assert not _looks_like_text(text("empty", b""))
    assert not _looks_like_text(tmp_path)  # cannot be read as a file
    kind = TextKind()
    assert kind.detect(text("notes.txt", b"hello\n")) and kind.detect(tmp_path / "plain")
    assert not kind.detect(tmp_path / "nul")
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / "a.jpg").write_bytes(b"\xff\xd8\xff")
    assert not kind.detect(photos)
    (photos / "README").write_text("about these photos\n")
    assert kind.detect(photos)


def test_the_tokenizer_file_not_only_its_path_is_part_of_what_a_destination_holds(tmp_path: Path) -> None:
    copy_fortunes(tmp_path / "src", ("science",))
    tok = tmp_path / "tok.json"
    shutil.copy(TOKENIZER, tok)
    convert_text(tmp_path / "src", tmp_path / "out", separator="%", tokenizer=str(tok))
    assert convert_text(tmp_path / "src", tmp_path / "out", separator="%", tokenizer=str(tok)).manifest.num_samples
    tok.write_text(json.dumps(json.loads(tok.read_text()), indent=1))  # the same path, another file
    with pytest.raises(ConvertError, match="already holds a different dataset"):
        convert_text(tmp_path / "src", tmp_path / "out", separator="%", tokenizer=str(tok))
