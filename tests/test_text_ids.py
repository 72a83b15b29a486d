"""`fastdata convert --kind text --ids-field input_ids`: a corpus tokenized already (a Hugging Face dataset after
`datasets.map(tokenizer)`, saved as Parquet or Arrow) becomes token-id shards with its ids as they are; every row
that holds no usable ids is a recorded rejection."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest_text import FORTUNES, TOKENIZER, bert, convert_text, fortune_records

import fastdata
from fastdata.cli import main as cli
from fastdata.manifest import read_manifest


def tokenized(limit: int = 60) -> list[list[int]]:
    """The real BERT ids of the first fortunes of one file, as `datasets.map(tokenizer)` stores them."""
    return [e.ids for e in bert().encode_batch(fortune_records(FORTUNES / "science")[:limit])]


def rows_of(dst: Path) -> list[tuple[list[int], int]]:
    """(ids, label: -1 without classes) of every sequence, read by the sequence loader, sorted."""
    ld = fastdata.loader(dst, max_tokens=1 << 14, shuffle=False)
    out = []
    for batch in ld:
        labels = batch["labels"].tolist() if "labels" in batch else [-1] * len(batch["lengths"])
        for ids, n, label in zip(batch["input_ids"], batch["lengths"], labels):
            out.append((ids[:n].tolist(), label))
    return sorted(out)


def test_a_tokenized_parquet_table_converts_with_its_ids_as_they_are(tmp_path: Path):
    ids = tokenized()
    labels = [i % 3 for i in range(len(ids))]
    table = pa.table({"input_ids": pa.array(ids, pa.list_(pa.int32())), "attention_mask": [[1] * len(x) for x in ids],
                      "label": labels})
    (tmp_path / "src").mkdir()
    pq.write_table(table, tmp_path / "src" / "train.parquet", row_group_size=16)
    result = convert_text(tmp_path / "src", tmp_path / "out", ids_field="input_ids", jobs=2)
    m = result.manifest
    assert m.rejected == () and m.classes == ("0", "1", "2")
    assert m.preprocessing["add_special_tokens"] is False and m.preprocessing["ids_field"] == "input_ids"
    assert m.split("train").stats["tokens"] == sum(map(len, ids))
    assert rows_of(tmp_path / "out") == sorted(zip(ids, labels))


@pytest.mark.parametrize("kind", [pa.large_list(pa.int64()), pa.list_(pa.uint16()), pa.list_(pa.int16(), 4)])
def test_an_arrow_file_of_any_integer_list_type_converts(tmp_path: Path, kind):
    ids = [x[:4] for x in tokenized(20)] if isinstance(kind, pa.FixedSizeListType) else tokenized(20)
    if kind.value_type == pa.int16():
        ids = [[min(i, 32767) for i in x] for x in ids]
    table = pa.table({"input_ids": pa.array(ids, kind)})
    (tmp_path / "src").mkdir()
    with pa.OSFile(str(tmp_path / "src" / "data-00000-of-00001.arrow"), "wb") as sink, \
            pa.ipc.new_stream(sink, table.schema) as writer:  # what save_to_disk writes
        writer.write_table(table, max_chunksize=7)
    convert_text(tmp_path / "src", tmp_path / "out", ids_field="input_ids")
    assert rows_of(tmp_path / "out") == sorted((x, -1) for x in ids)


def test_rows_without_usable_ids_are_rejected_and_the_rest_kept(tmp_path: Path):
    good = [[101, 2000 + i, 102] for i in range(3)] + [[7] * 16]  # 16 ids: 128 bytes, the most a row may hold
    ids = pa.array([good[0], None, [], [101, None, 102], [101, -5, 102], [101, 30522, 102], good[1],
                    [101] * 17, good[2], good[3]], pa.list_(pa.int64()))
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"input_ids": ids}), tmp_path / "src" / "t.parquet")
    m = convert_text(tmp_path / "src", tmp_path / "out", ids_field="input_ids", max_document_bytes=128).manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("t.parquet#1", "null token ids"),
        ("t.parquet#2", "empty document (no token ids)"),
        ("t.parquet#3", "a null token id"),
        ("t.parquet#4", "a negative token id (-5)"),
        ("t.parquet#5", "token id 30522 is outside the tokenizer's vocabulary (ids 0..30521): the ids were made by "
                        "another tokenizer"),
        ("t.parquet#7", "document larger than --max-document-bytes (128 bytes)"),
    ]
    assert rows_of(tmp_path / "out") == sorted((x, -1) for x in good)


def test_an_id_past_int64_is_outside_the_vocabulary_not_negative(tmp_path: Path):
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"ids": pa.array([[101, 2**64 - 1], [101, 102]], pa.list_(pa.uint64()))}),
                   tmp_path / "src" / "t.parquet")
    m = convert_text(tmp_path / "src", tmp_path / "out", ids_field="ids").manifest
    assert [r["reason"] for r in m.rejected] == [
        f"token id {2**63 - 1} is outside the tokenizer's vocabulary (ids 0..30521): the ids were made by another "
        "tokenizer"]


@pytest.mark.parametrize(("overflow", "expected"), [
    ("truncate", [[1, 2, 3, 4]]),
    ("split", [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]),
])
def test_max_length_cuts_given_ids_without_adding_special_tokens(tmp_path: Path, overflow: str, expected):
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"input_ids": [list(range(1, 11)), [0, 3]]}), tmp_path / "src" / "t.parquet")
    m = convert_text(tmp_path / "src", tmp_path / "out", ids_field="input_ids", max_length=4,
                     overflow=overflow).manifest
    assert rows_of(tmp_path / "out") == sorted([(x, -1) for x in expected] + [([0, 3], -1)])  # id 0 is an id
    stats = m.split("train").stats
    assert (stats["truncated_tokens"], stats["split_documents"]) == ((6, 0) if overflow == "truncate" else (0, 1))


def test_files_and_columns_that_hold_no_ids_are_rejected_with_the_reason(tmp_path: Path):
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"input_ids": [["a", "b"]]}), tmp_path / "src" / "strings.parquet")
    pq.write_table(pa.table({"input_ids": [3]}), tmp_path / "src" / "scalars.parquet")
    pq.write_table(pa.table({"text": ["hello"]}), tmp_path / "src" / "text.parquet")
    (tmp_path / "src" / "notes.txt").write_text("101 102\n")
    (tmp_path / "src" / "ids.csv").write_text("input_ids\n101 102\n")
    pq.write_table(pa.table({"input_ids": [[101, 102]]}), tmp_path / "src" / "ok.parquet")
    m = convert_text(tmp_path / "src", tmp_path / "out", ids_field="input_ids").manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("ids.csv", "--ids-field reads token ids from Parquet, Arrow, JSON Lines or JSON files; this is a CSV file"),
        ("notes.txt", "--ids-field reads token ids from Parquet, Arrow, JSON Lines or JSON files; this is a plain "
                      "text file"),
        ("scalars.parquet", "column 'input_ids' has type int64, not a list of integers (token ids)"),
        ("strings.parquet", "column 'input_ids' has type list<element: string>, not a list of integers (token ids)"),
        ("text.parquet", "missing token ids column 'input_ids' (columns: text); set --ids-field"),
    ]
    assert rows_of(tmp_path / "out") == [([101, 102], -1)]


def test_a_tokenized_table_without_the_option_says_how_to_read_it(tmp_path: Path, capsys):
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"input_ids": [[101, 102]], "attention_mask": [[1, 1]]}), tmp_path / "src" / "t.parquet")
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "out"), "--tokenizer", str(TOKENIZER),
                "--no-progress"]) == 2
    assert ("missing text column 'text' (columns: input_ids, attention_mask); set --text-field, or read its token "
            "ids with --ids-field input_ids") in capsys.readouterr().err
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "out"), "--tokenizer", str(TOKENIZER),
                "--ids-field", "input_ids", "--no-progress", "-j", "1"]) == 0
    assert read_manifest(tmp_path / "out").preprocessing["ids_field"] == "input_ids"


def test_parts_and_merge_give_the_shards_of_one_run(tmp_path: Path):
    from converters.assemble import merge

    (tmp_path / "src").mkdir()
    ids = tokenized(40)
    pq.write_table(pa.table({"input_ids": ids}), tmp_path / "src" / "t.parquet")
    whole = convert_text(tmp_path / "src", tmp_path / "whole", ids_field="input_ids", samples_per_shard=10)
    for part in range(2):
        convert_text(tmp_path / "src", tmp_path / "parts", ids_field="input_ids", samples_per_shard=10,
                     num_parts=2, part=part)
    merged = merge(tmp_path / "parts")
    assert [s.sha256 for s in merged.split("train").shards] == [s.sha256 for s in whole.manifest.split("train").shards]


def test_the_ids_field_is_part_of_the_options_a_rerun_must_match(tmp_path: Path):
    from fastdata.errors import ConvertError

    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"input_ids": [[101, 102]], "ids": [[101, 7, 102]]}), tmp_path / "src" / "t.parquet")
    convert_text(tmp_path / "src", tmp_path / "out", ids_field="input_ids")
    with pytest.raises(ConvertError):
        convert_text(tmp_path / "src", tmp_path / "out", ids_field="ids")
    assert np.array_equal(rows_of(tmp_path / "out")[0][0], [101, 102])


def test_an_empty_ids_field_is_refused():
    from converters.text import TextOptions

    with pytest.raises(ValueError, match=r"^--ids-field must name a column, e\.g\. 'input_ids'$"):
        TextOptions(tokenizer=str(TOKENIZER), ids_field="")


def test_json_lines_and_json_records_holding_ids_convert_and_their_odd_rows_are_rejected(tmp_path: Path):
    (tmp_path / "src").mkdir()
    lines = ['{"input_ids": [101, 7592, 102]}', '{"input_ids": null}', '{"input_ids": "101 102"}',
             '{"input_ids": [101, 1.5]}', '{"input_ids": [101, true]}', '{"input_ids": [101, null]}',
             '{"text": "hello"}', '[101, 102]', '{"input_ids": [-99999999999999999999999, 5]}',
             '{"input_ids": [99999999999999999999999]}', '{"input_ids": []}', '{"input_ids": [7, 8]}']
    (tmp_path / "src" / "a.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "src" / "b.json").write_text('[{"input_ids": [101, 2023, 102]}, {"input_ids": 3}]')
    m = convert_text(tmp_path / "src", tmp_path / "out", ids_field="input_ids").manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("a.jsonl:10", f"token id {2**63 - 1} is outside the tokenizer's vocabulary (ids 0..30521): the ids were "
                       "made by another tokenizer"),
        ("a.jsonl:11", "empty document (no token ids)"),
        ("a.jsonl:2", "null token ids"),
        ("a.jsonl:3", "field 'input_ids' holds str, not a list of integers (token ids)"),
        ("a.jsonl:4", "field 'input_ids' holds float among its token ids"),
        ("a.jsonl:5", "field 'input_ids' holds bool among its token ids"),
        ("a.jsonl:6", "field 'input_ids' holds null among its token ids"),
        ("a.jsonl:7", "missing token ids field 'input_ids' (fields: text); set --ids-field"),
        ("a.jsonl:8", "expected a JSON object with a 'input_ids' field, got list"),
        ("a.jsonl:9", f"a negative token id ({-2**63})"),
        ("b.json#1", "field 'input_ids' holds int, not a list of integers (token ids)"),
    ]
    assert rows_of(tmp_path / "out") == sorted([([101, 7592, 102], -1), ([7, 8], -1), ([101, 2023, 102], -1)])


def test_a_json_record_of_more_ids_than_the_document_bound_is_rejected(tmp_path: Path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.jsonl").write_text('{"input_ids": [' + ", ".join(["7"] * 17) + ']}\n{"input_ids": ['
                                              + ", ".join(["7"] * 16) + "]}\n")
    m = convert_text(tmp_path / "src", tmp_path / "out", ids_field="input_ids", max_document_bytes=128).manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("a.jsonl:1", "document larger than --max-document-bytes (128 bytes)")]
    assert rows_of(tmp_path / "out") == [([7] * 16, -1)]


def test_a_tokenizers_added_tokens_are_in_its_vocabulary(tmp_path: Path):
    """A tokenizer whose pad token was added after training (GPT-2's, a fine-tuning's extra tokens) gives them ids
    past its base vocabulary; ids made with it stay inside the vocabulary with its added tokens."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER))
    added = tok.get_vocab_size(with_added_tokens=True)
    tok.add_tokens(["<extra-token>"])
    tok.save(str(tmp_path / "tok.json"))
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"input_ids": [[101, added, 102], [101, added + 1, 102]]}), tmp_path / "src" / "t.parquet")
    m = convert_text(tmp_path / "src", tmp_path / "out", ids_field="input_ids", tokenizer=str(tmp_path / "tok.json"))
    assert [r["reason"] for r in m.manifest.rejected] == [
        f"token id {added + 1} is outside the tokenizer's vocabulary (ids 0..{added}): the ids were made by another "
        "tokenizer"]
    assert rows_of(tmp_path / "out") == [([101, added, 102], -1)]


def test_the_reasons_name_the_fields_and_columns_a_record_holds(tmp_path: Path):
    (tmp_path / "src").mkdir()
    names = [f"c{i}" for i in range(9)]
    pq.write_table(pa.table({n: [1] for n in names}), tmp_path / "src" / "t.parquet")
    (tmp_path / "src" / "a.jsonl").write_text('{}\n' + "{" + ", ".join(f'"{n}": 1' for n in names) + "}\n"
                                              '{"input_ids": [5]}\n')
    m = convert_text(tmp_path / "src", tmp_path / "out", ids_field="input_ids").manifest
    shown = ", ".join(names[:8])
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("a.jsonl:1", "missing token ids field 'input_ids' (fields: none); set --ids-field"),
        ("a.jsonl:2", f"missing token ids field 'input_ids' (fields: {shown}); set --ids-field"),
        ("t.parquet", f"missing token ids column 'input_ids' (columns: {shown}); set --ids-field"),
    ]
