"""Text classification datasets as Hugging Face ships them (IMDB, AG News, SST-2): a `text` column and a label
column in Parquet or Arrow tables. The text kind read the text and dropped the labels (only class folders labelled
documents); a table's label column now labels its rows, by the images kind's rule (`--label-field`, the one
ClassLabel, or `label`/`labels`: converters/table_labels.py), when the source has no class folders. Tables are
written with pyarrow in the layout `datasets` 5.2.0 writes (tests/test_image_tables.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest_text import TOKENIZER, convert_text, read_rows
from helpers import with_features

import fastdata
from converters.text.discover import discover_text
from converters.text.options import TextOptions
from fastdata.errors import ConvertError


def _table(texts: list, labels: list | None = None, *, names: list[str] | None = None, column: str = "label"):
    columns = {"text": pa.array(texts, pa.string())}
    features = {"text": {"dtype": "string", "_type": "Value"}}
    if labels is not None:
        columns[column] = pa.array(labels, pa.int64() if all(isinstance(v, int | None) for v in labels) else None)
        if names is not None:
            features[column] = {"names": names, "_type": "ClassLabel"}
    table = pa.table(columns)
    return with_features(table, features)


def _write(path: Path, table) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        pq.write_table(table, path)
    else:
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    return path


def _discover(src: Path, **options):
    return discover_text(src, options=TextOptions(tokenizer=str(TOKENIZER), **options))


def _labels(d) -> dict[str, list[tuple[str, int | None]]]:
    return {s: [(it.rel, it.label) for it in items] for s, items in d.splits.items()}


def test_an_imdb_saved_to_disk_keeps_its_classlabel(tmp_path: Path) -> None:
    src = tmp_path / "imdb"
    _write(src / "train" / "data-00000-of-00001.arrow", _table(["great film", "dull", "fine"], [1, 0, 1],
                                                               names=["neg", "pos"]))
    _write(src / "test" / "data-00000-of-00001.arrow", _table(["awful"], [0], names=["neg", "pos"]))
    for split in ("train", "test"):
        (src / split / "state.json").write_text("{}")
        (src / split / "dataset_info.json").write_text("{}")
    result = convert_text(src, tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == ["neg", "pos"]
    assert {s: v["class_counts"] for s, v in manifest["splits"].items()} == {"train": [1, 2], "test": [1, 0]}
    assert {r["reason"] for r in result.rejected} == {
        "Hugging Face metadata, not data: the tables' schema holds the features"}
    rows = read_rows(tmp_path / "out")
    assert sorted(r["label"] for r in rows) == [0, 0, 1, 1]
    batch = next(iter(fastdata.loader(tmp_path / "out", split="test", max_tokens=64)))
    assert batch["labels"].tolist() == [0]


def test_labels_without_a_classlabel_and_a_single_table_source(tmp_path: Path) -> None:
    path = _write(tmp_path / "train-00000-of-00001.parquet", _table(["a", "b", "c"], [3, 0, 3]))
    d = _discover(path)
    assert d.classes == ("0", "1", "2", "3") and _labels(d) == {
        "train": [("train-00000-of-00001.parquet#0", 3), ("train-00000-of-00001.parquet#1", 0),
                  ("train-00000-of-00001.parquet#2", 3)]}
    strings = _write(tmp_path / "s" / "train.parquet", _table(["a", "b"], ["sport", "art"], column="labels"))
    assert _discover(strings.parent).classes == ("art", "sport")


def test_rows_without_a_label_and_files_beside_a_labelled_table_are_rejected(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src / "a.parquet", _table(["one", "two", "three", "four"], [0, -1, None, 5], names=["x", "y"]))
    (src / "b.jsonl").write_text('{"text": "no label here"}\n')
    d = _discover(src)
    assert d.classes == ("x", "y") and _labels(d) == {"train": [("a.parquet#0", 0)]}
    assert sorted((r.source, r.reason) for r in d.rejected) == [
        ("a.parquet#1", "no label (-1 in ClassLabel column 'label': the split has no labels)"),
        ("a.parquet#2", "no label (null in column 'label')"),
        ("a.parquet#3", "label is no class of column 'label' (2 classes): 5"),
        ("b.jsonl:1", "no label: the source's tables label their documents (column 'label'), this file does not")]


def test_label_field_picks_one_of_two_classlabels(tmp_path: Path) -> None:
    table = _table(["a", "b"], [0, 1], names=["x", "y"]).append_column("coarse", pa.array([0, 0]))
    features = {"text": {"_type": "Value"}, "label": {"names": ["x", "y"], "_type": "ClassLabel"},
                "coarse": {"names": ["c"], "_type": "ClassLabel"}}
    _write(tmp_path / "train.parquet", with_features(table, features))
    d = _discover(tmp_path)
    assert not d.splits and [r.reason for r in d.rejected] == [
        "several ClassLabel columns (label, coarse): choose one with --label-field"]
    d = _discover(tmp_path, label_field="coarse")
    assert d.classes == ("c",) and [it.label for it in d.splits["train"]] == [0, 0]
    with pytest.raises(ConvertError, match="holds no text input.*no column 'nope' \\(--label-field"):
        convert_text(tmp_path, tmp_path / "out", label_field="nope")


def test_class_folders_label_their_tables_whatever_columns_they_have(tmp_path: Path) -> None:
    _write(tmp_path / "src" / "sport" / "a.parquet", _table(["goal"], [7]))
    _write(tmp_path / "src" / "art" / "b.parquet", _table(["paint"], [7]))
    d = _discover(tmp_path / "src")
    assert d.classes == ("art", "sport") and _labels(d) == {"train": [("art/b.parquet#0", 0),
                                                                      ("sport/a.parquet#0", 1)]}


def test_an_unlabelled_table_before_a_labelled_one_rejects_the_second(tmp_path: Path) -> None:
    _write(tmp_path / "a.parquet", _table(["plain"]))
    _write(tmp_path / "b.parquet", _table(["labelled"], [0], names=["x"]))
    d = _discover(tmp_path)
    assert d.classes == () and _labels(d) == {"train": [("a.parquet#0", None)]}
    assert [r.reason for r in d.rejected] == [
        "its labels are not those of a.parquet (no label column): convert them apart"]


def test_unlabeled_reads_no_label_column_and_no_class_folder(tmp_path: Path) -> None:
    """A corpus for language modelling that happens to have labels: `--unlabeled` keeps every document (the rows
    whose label is -1 too) and writes no label; class folders are plain folders."""
    _write(tmp_path / "flat" / "train.parquet", _table(["a", "b"], [0, -1], names=["x"]))
    d = _discover(tmp_path / "flat", unlabeled=True)
    assert d.classes == () and d.layout == "unlabeled" and not d.rejected
    assert _labels(d) == {"train": [("train.parquet#0", None), ("train.parquet#1", None)]}
    _write(tmp_path / "tree" / "train" / "sport" / "a.parquet", _table(["goal"], [0], names=["x"]))
    _write(tmp_path / "tree" / "test" / "art" / "b.parquet", _table(["paint"], [0], names=["x"]))
    (tmp_path / "tree" / "notes.txt").write_text("not in a split")
    d = _discover(tmp_path / "tree", unlabeled=True)
    assert _labels(d) == {"train": [("train/sport/a.parquet#0", None)], "test": [("test/art/b.parquet#0", None)]}
    assert [r.source for r in d.rejected] == ["notes.txt"]
    with pytest.raises(ValueError, match="--label-field and --unlabeled contradict"):
        TextOptions(tokenizer=str(TOKENIZER), unlabeled=True, label_field="label")
