"""Karpathy's split files (`dataset_coco.json`, `dataset_flickr8k.json`, `dataset_flickr30k.json`), what most
captioning and retrieval work trains and evaluates on: each image's `sentences` and its `split`. Before, such a file
was refused as "not a COCO captions file"."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from conftest_pairs import convert_pairs, stored_pairs
from PIL import Image

from converters.image_text.captions import read_captions
from converters.image_text.discover import discover_pairs
from fastdata.errors import ConvertError


def _image(path: Path, level: int = 128) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (48, 40), (level,) * 3).save(path, quality=95)


def _entry(folder: str | None, name: str, split: object, *raws: str) -> dict:
    entry = {"filename": name, "imgid": 0, "split": split, "sentences": [{"raw": r, "tokens": r.split()} for r in raws]}
    if folder is not None:
        entry["filepath"] = folder
    return entry


def _coco(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "coco"
    for i, rel in enumerate(("train2014/a.jpg", "val2014/b.jpg", "val2014/c.jpg", "val2014/d.jpg", "val2014/x.jpg",
                             "val2014/f.jpg", "val2014/g.jpg")):
        _image(src / rel, 20 * i)
    doc = {"dataset": "coco", "images": [
        _entry("train2014", "a.jpg", "train", "A man rides a horse.", " A horse\nand its rider "),
        _entry("val2014", "b.jpg", "restval", "A bus."), _entry("val2014", "c.jpg", "test", "A cat."),
        _entry("val2014", "d.jpg", "val", "A dog."), _entry("val2014", "e.jpg", "train", "No such file."),
        _entry("val2014", "f.jpg", "holdout", "An odd split."), _entry("val2014", "g.jpg", "train")]}
    (tmp_path / "dataset_coco.json").write_text(json.dumps(doc))
    return src, tmp_path / "dataset_coco.json"


def _rejected(d) -> list[tuple[str, str]]:
    return sorted((r.source, r.reason) for r in d.rejected)


def test_karpathys_coco_split_gives_each_image_its_split_and_restval_joins_train(tmp_path):
    src, split_file = _coco(tmp_path)
    d = discover_pairs(src, captions=str(split_file), split="train")
    got = {s: [(it.rel, it.payload.texts) for it in items] for s, items in d.splits.items()}
    assert got == {"train": [("train2014/a.jpg", ("A man rides a horse.", "A horse and its rider")),
                             ("val2014/b.jpg", ("A bus.",))],
                   "test": [("val2014/c.jpg", ("A cat.",))], "val": [("val2014/d.jpg", ("A dog.",))]}
    assert _rejected(d) == [
        ("val2014/e.jpg (dataset_coco.json:image 4 (e.jpg))", "caption without an image: no such image in the source"),
        ("val2014/f.jpg", "no caption: not named in dataset_coco.json"),
        ("val2014/f.jpg (dataset_coco.json:image 5 (f.jpg))", "no split name: 'holdout' (train, val, test, restval)"),
        ("val2014/g.jpg", "no caption: not named in dataset_coco.json"),
        ("val2014/g.jpg (dataset_coco.json:image 6 (g.jpg))", "empty caption"),
        ("val2014/x.jpg", "no caption: not named in dataset_coco.json")]
    assert [row[0] for row in d.identity] == ["train", "train", "test", "val"]  # a changed split is a changed source


def test_flickrs_split_file_names_its_images_without_a_folder(tmp_path):
    src = tmp_path / "Flicker8k_Dataset"
    _image(src / "1000268201_693b08cb0e.jpg")
    _image(src / "1001773457_577c3a7d70.jpg", 40)
    doc = {"dataset": "flickr8k", "images": [_entry(None, "1000268201_693b08cb0e.jpg", "test", "A child."),
                                             _entry(None, "1001773457_577c3a7d70.jpg", "train", "Two dogs.")]}
    (tmp_path / "dataset_flickr8k.json").write_text(json.dumps(doc))
    d = discover_pairs(src, captions=str(tmp_path / "dataset_flickr8k.json"), split="train")
    assert {s: [it.rel for it in items] for s, items in d.splits.items()} == {
        "test": ["1000268201_693b08cb0e.jpg"], "train": ["1001773457_577c3a7d70.jpg"]}


def test_an_image_listed_twice_in_two_splits_keeps_its_first(tmp_path):
    src = tmp_path / "src"
    _image(src / "a.jpg")
    doc = {"images": [_entry(None, "a.jpg", "train", "One."), _entry(None, "a.jpg", "test", "Two.")]}
    (tmp_path / "k.json").write_text(json.dumps(doc))
    d = discover_pairs(src, captions=str(tmp_path / "k.json"), split="train")
    assert {s: [(it.rel, it.payload.texts) for it in items] for s, items in d.splits.items()} == {
        "train": [("a.jpg", ("One.",))]}
    assert _rejected(d) == [("a.jpg (k.json:image 1 (a.jpg))", "in two splits: train before, test here")]


def test_malformed_entries_are_rows_that_name_nothing_not_a_crash(tmp_path):
    doc = {"images": [{"filename": "a.jpg", "sentences": [{"raw": "ok"}, "not a sentence", {"raw": 3}],
                       "split": 7}, "not an image", {"sentences": "nope", "filepath": ["x"]}]}
    (tmp_path / "k.json").write_text(json.dumps(doc))
    rows = read_captions(tmp_path / "k.json")
    assert [(r.path, r.caption, r.split) for r in rows] == [("a.jpg", "ok", None), ("a.jpg", "", None),
                                                            ("a.jpg", "", None), ("", "", None), ("", "", None)]


def test_a_coco_captions_file_is_still_read_as_coco(tmp_path):
    doc = {"images": [{"id": 1, "file_name": "a.jpg", "sentences": []}],
           "annotations": [{"image_id": 1, "caption": "A cat."}]}
    (tmp_path / "c.json").write_text(json.dumps(doc))
    assert [(r.path, r.caption, r.split) for r in read_captions(tmp_path / "c.json")] == [("a.jpg", "A cat.", None)]


def test_karpathys_coco_converts_into_its_splits(tmp_path, caplog):
    src, split_file = _coco(tmp_path)
    with caplog.at_level(logging.ERROR):
        convert_pairs(src, tmp_path / "out", captions=str(split_file))
    stored = stored_pairs(tmp_path / "out")
    assert {source: (split, captions) for source, (split, captions, _) in stored.items()} == {
        "train2014/a.jpg": ("train", ["A man rides a horse.", "A horse and its rider"]),
        "val2014/b.jpg": ("train", ["A bus."]), "val2014/c.jpg": ("test", ["A cat."]),
        "val2014/d.jpg": ("val", ["A dog."])}


def test_images_without_sentences_or_annotations_are_neither_file(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps({"images": [{"file_name": "a.jpg", "id": 1}]}))
    with pytest.raises(ConvertError, match="is JSON but not a COCO captions file"):
        read_captions(tmp_path / "c.json")
