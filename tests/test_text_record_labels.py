"""Labels in the records of a text corpus: a Kaggle `text,label` CSV, a classification dataset's JSON Lines or JSON
label their documents by their `label` field (or `--label-field`). Before, the field was not read and
`--label-field` was ignored for them: the labels were lost without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest_text import convert_text

import fastdata
from fastdata.errors import ConvertError


def labels_by_length(dst: Path, split: str = "train") -> list[tuple[int, int]]:
    """(sequence length, label) of every sequence of `split`, sorted."""
    ld = fastdata.loader(dst, split=split, max_tokens=1 << 14, shuffle=False)
    return sorted((n, y) for b in ld for n, y in zip(b["lengths"].tolist(), b["labels"].tolist()))


def words(n: int) -> str:
    return " ".join(["word"] * n)


def jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_json_lines_label_field_of_names_labels_its_documents(tmp_path: Path):
    jsonl(tmp_path / "src" / "train.jsonl", [{"text": words(1), "label": "pos"}, {"text": words(2), "label": "neg"},
                                             {"text": words(3), "label": " pos "}])
    m = convert_text(tmp_path / "src", tmp_path / "out").manifest
    assert m.classes == ("neg", "pos") and m.rejected == ()
    assert labels_by_length(tmp_path / "out") == [(3, 1), (4, 0), (5, 1)]  # [CLS] words [SEP]


def test_a_kaggle_csv_of_ids_and_a_json_file_label_their_rows_ids_staying_labels(tmp_path: Path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.csv").write_text(f"id,text,label\n1,{words(1)},2\n2,{words(2)},0\n")
    (tmp_path / "src" / "more.json").write_text(json.dumps([{"text": words(3), "label": 2}]))
    m = convert_text(tmp_path / "src", tmp_path / "out").manifest
    assert m.classes == ("0", "1", "2") and m.rejected == ()  # id 1 is held by no row, and stays a class
    assert labels_by_length(tmp_path / "out") == [(3, 2), (4, 0), (5, 2)]


def test_records_without_a_usable_label_are_rejected_and_the_rest_kept(tmp_path: Path):
    jsonl(tmp_path / "src" / "a.jsonl", [{"text": words(1), "label": "a"}, {"text": words(2), "label": None},
                                         {"text": words(3), "label": ""}, {"text": words(4), "label": True},
                                         {"text": words(5), "label": 1.5}, {"text": words(6), "label": ["a"]},
                                         {"text": words(7)}, {"text": words(8), "label": "b"}])
    m = convert_text(tmp_path / "src", tmp_path / "out").manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("a.jsonl:2", "no label (null in column 'label')"),
        ("a.jsonl:3", "no label (null in column 'label')"),
        ("a.jsonl:4", "label is no whole number or name: true"),
        ("a.jsonl:5", "label is no whole number or name: float"),
        ("a.jsonl:6", "label is no whole number or name: list"),
        ("a.jsonl:7", "no label (null in column 'label')"),
    ]
    assert m.classes == ("a", "b") and labels_by_length(tmp_path / "out") == [(3, 0), (10, 1)]


def test_the_label_field_option_names_the_field_and_a_file_without_it_is_rejected_whole(tmp_path: Path):
    jsonl(tmp_path / "src" / "a.jsonl", [{"text": words(1), "sentiment": "up", "label": "x"},
                                         {"text": words(2), "sentiment": "down", "label": "y"}])
    jsonl(tmp_path / "src" / "b.jsonl", [{"text": words(3), "label": "x"}])
    m = convert_text(tmp_path / "src", tmp_path / "out", label_field="sentiment").manifest
    assert m.classes == ("down", "up")
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("b.jsonl", "no field 'sentiment' (--label-field; fields: label, text)")]
    assert labels_by_length(tmp_path / "out") == [(3, 1), (4, 0)]


def test_a_labels_field_of_tags_labels_nothing_and_unlabeled_reads_no_label(tmp_path: Path):
    jsonl(tmp_path / "tags" / "a.jsonl", [{"text": words(1), "labels": ["news", "sport"]}, {"text": words(2)}])
    m = convert_text(tmp_path / "tags", tmp_path / "tags-out").manifest
    assert m.classes == () and m.rejected == () and m.num_samples == 2
    jsonl(tmp_path / "src" / "a.jsonl", [{"text": words(1), "label": "a"}, {"text": words(2), "label": None}])
    m = convert_text(tmp_path / "src", tmp_path / "out", unlabeled=True).manifest
    assert m.classes == () and m.rejected == () and m.num_samples == 2


def test_files_without_labels_beside_labelled_records_are_rejected_as_unlabeled(tmp_path: Path):
    jsonl(tmp_path / "src" / "a.jsonl", [{"text": words(1), "label": "a"}])
    (tmp_path / "src" / "b.json").write_text(json.dumps({"text": words(4), "label": "b"}))  # one object, one record
    jsonl(tmp_path / "src" / "c.jsonl", [{"text": words(3)}])
    (tmp_path / "src" / "notes.txt").write_text(words(2))
    m = convert_text(tmp_path / "src", tmp_path / "out").manifest
    unlabeled = "no label: the source's tables label their documents (column 'label'), this file does not"
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [("c.jsonl:1", unlabeled),
                                                                      ("notes.txt", unlabeled)]
    assert m.classes == ("a", "b") and labels_by_length(tmp_path / "out") == [(3, 0), (6, 1)]


def test_a_class_name_with_control_characters_stops_the_conversion(tmp_path: Path):
    jsonl(tmp_path / "src" / "a.jsonl", [{"text": words(1), "label": "a\u001b[31mred"}])
    with pytest.raises(ConvertError, match="holds control characters"):
        convert_text(tmp_path / "src", tmp_path / "out")


def test_a_records_own_problem_comes_before_its_labels_and_false_is_no_label(tmp_path: Path):
    jsonl(tmp_path / "src" / "a.jsonl", [{"text": "  ", "label": None}, {"text": words(1), "label": False},
                                         {"text": words(2), "label": "a"}])
    m = convert_text(tmp_path / "src", tmp_path / "out").manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("a.jsonl:1", "empty document (only whitespace)"),
        ("a.jsonl:2", "label is no whole number or name: false")]


def test_a_table_unlike_the_first_file_is_told_apart_and_a_missing_field_lists_the_fields(tmp_path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from helpers import with_features

    jsonl(tmp_path / "src" / "a.jsonl", [{"text": words(1), "label": "x"}])
    table = pa.table({"text": [words(2)], "label": [0]})
    pq.write_table(with_features(table, {"text": {"_type": "Value"},
                                         "label": {"names": ["x", "y"], "_type": "ClassLabel"}}),
                   tmp_path / "src" / "b.parquet")
    m = convert_text(tmp_path / "src", tmp_path / "out").manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("b.parquet", "its labels are not those of a.jsonl (label column 'label'): convert them apart")]
    fields = {f"f{i}": i for i in range(9)}
    jsonl(tmp_path / "many" / "a.jsonl", [{"text": words(1), **fields}])
    jsonl(tmp_path / "many" / "b.jsonl", [{}, {"text": words(2), "tag": "z"}])
    jsonl(tmp_path / "many" / "c.jsonl", [{"text": words(3), "tag": "z"}])
    m = convert_text(tmp_path / "many", tmp_path / "many-out", label_field="tag").manifest
    shown = ", ".join(sorted([*fields, "text"])[:8])
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("a.jsonl", f"no field 'tag' (--label-field; fields: {shown})"),
        ("b.jsonl", "no field 'tag' (--label-field; fields: none)")]
