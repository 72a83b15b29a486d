"""COCO's multi-label classification as its files lie (`annotations/instances_train2017.json` beside `train2017/`):
`fastdata convert coco/ DST --multi-label` gives each image the categories of its annotations
(converters/images/coco.py). The instances files are written here in COCO's shape; the images are the real photos
of tests/data."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
import torch
from conftest_images import loader
from helpers import PHOTOS, class_lists, convert_images

from converters.images import coco
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

CATEGORIES = [{"supercategory": "person", "id": 1, "name": "person"}, {"supercategory": "animal", "id": 18,
              "name": "dog"}, {"supercategory": "vehicle", "id": 3, "name": "car"},
              {"supercategory": "animal", "id": 17, "name": "cat"}]
CLASSES = ("person", "car", "cat", "dog")  # in the order of their ids: 1, 3, 17, 18
OBJECTS = {"train": {9: [1, 18, 1, 1], 25: [3], 30: [], 34: [17, 18, 17], 36: [1]}, "val": {139: [1, 3], 285: [18]}}


def _name(year: int, split: str, image: int) -> str:
    return f"COCO_{split}2014_{image:012d}.jpg" if year == 2014 else f"{image:012d}.jpg"


def _instances(year: int, split: str, objects: dict[int, list[int]]) -> dict:
    images = [{"license": 3, "file_name": _name(year, split, i), "height": 480, "width": 640, "id": i}
              for i in objects]
    annotations = [{"segmentation": [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]], "area": 10.0, "iscrowd": int(k == 2),
                    "image_id": i, "bbox": [1.0, 2.0, 3.0, 4.0], "category_id": c, "id": 1000 * i + k}
                   for i, cats in objects.items() for k, c in enumerate(cats)]
    return {"info": {"year": year}, "licenses": [], "images": images, "annotations": annotations,
            "categories": CATEGORIES}


def _coco(root: Path, year: int = 2017) -> Path:
    """`coco/` as the downloads unpack: each split's images, the instances and captions files, test images that no
    instances file labels, an image no instances file names, and an image named whose file is missing."""
    src = root / "coco"
    (src / "annotations").mkdir(parents=True)
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for split, objects in OBJECTS.items():
        (src / f"{split}{year}").mkdir()
        for image in objects:
            shutil.copyfile(next(photos), src / f"{split}{year}" / _name(year, split, image))
        doc = _instances(year, split, objects)
        if split == "train":
            doc["images"].append({"file_name": _name(year, split, 77), "id": 77, "height": 1, "width": 1})
        (src / "annotations" / f"instances_{split}{year}.json").write_text(json.dumps(doc))
        (src / "annotations" / f"captions_{split}{year}.json").write_text(json.dumps({"images": [],
                                                                                      "annotations": []}))
    shutil.copyfile(next(photos), src / f"train{year}" / _name(year, "train", 99))
    (src / f"test{year}").mkdir()
    shutil.copyfile(next(photos), src / f"test{year}" / _name(year, "test", 1))
    return src


def _expected(year: int) -> dict[str, tuple[str, list[int]]]:
    index = {c["id"]: CLASSES.index(c["name"]) for c in CATEGORIES}
    return {_name(year, split, i): (split, sorted({index[c] for c in cats}))
            for split, objects in OBJECTS.items() for i, cats in objects.items()}


@pytest.mark.parametrize("year", [2017, 2014])
def test_each_split_converts_with_the_categories_of_its_objects(tmp_path, year):
    src = _coco(tmp_path, year)
    assert cli(["convert", str(src), str(tmp_path / "dst"), "--multi-label", "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == CLASSES and m.extra["layout"] == "coco" and m.extra["multi_label"] is True
    assert {s: m.split(s).samples for s in m.splits} == {"train": 5, "val": 2}
    assert class_lists(tmp_path / "dst", lambda source: Path(source).name) == _expected(year)
    assert sorted((r["split"], r["source"], r["reason"]) for r in m.rejected) == [
        ("train", f"train{year}/{_name(year, 'train', 77)}", f"listed in instances_train{year}.json but no such file "
                                                              "in the source"),
        ("train", f"train{year}/{_name(year, 'train', 99)}", f"not listed in labels file instances_train{year}.json")]


def test_info_names_what_weighs_the_classes_of_a_multi_label_split(tmp_path, capsys):
    src = _coco(tmp_path)
    convert_images(src, tmp_path / "dst", multi_label=True)
    capsys.readouterr()
    assert cli(["info", str(tmp_path / "dst")]) == 0
    out = capsys.readouterr().out
    assert ("classes: largest person (2), smallest car (1), 2.0x; BCEWithLogitsLoss's pos_weight from "
            "fastdata.sample_labels weighs them") in out and "sample_weights='balanced'" not in out


def test_without_the_option_the_folder_is_refused_naming_it(tmp_path):
    src = _coco(tmp_path)
    with pytest.raises(ConvertError, match=r"is laid out as COCO \(annotations/instances_\*.json beside the images' "
                                           r"folders\): .* --multi-label converts them so"):
        convert_images(src, tmp_path / "dst")
    assert convert_images(src, tmp_path / "unlabeled", unlabeled=True).manifest.classes == ()


def _forge(src: Path, change) -> None:
    path = src / "annotations" / "instances_train2017.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: d.pop("categories"), r"instances_train2017.json: no 'categories' list: not a COCO instances file"),
    (lambda d: d.update(annotations={}), r"instances_train2017.json: no 'annotations' list"),
    (lambda d: d.pop("images"), r"instances_train2017.json: no 'images' list"),
    (lambda d: d.update(images=[{"id": 3, "file_name": "a.jpg"}], categories=[{"id": 1}]),
     r"instances_train2017.json: category 0 has no whole-number id and name: \{'id': 1\}"),
    (lambda d: d["images"].insert(0, {"id": 3}), r"image 0 has no whole-number id and file name: \{'id': 3\}"),
    (lambda d: d["images"][1].pop("id"), r"instances_train2017.json: image 1 has no whole-number id and file name"),
    (lambda d: d["images"][1].update(id=True), r"image 1 has no whole-number id and file name"),
    (lambda d: d["images"][2].update(file_name=7), r"image 2 has no whole-number id and file name"),
    (lambda d: d["images"][2].update(id=9), r"image 2 repeats the id 9"),
    (lambda d: d["annotations"][0].update(image_id=4), r"annotation 0 is of an image or a category the file lacks "
                                                       r"\(image_id 4, category_id 1\)"),
    (lambda d: d["annotations"][1].update(category_id=2), r"annotation 1 is of an image or a category the file "
                                                          r"lacks \(image_id 9, category_id 2\)"),
    (lambda d: d["annotations"].append("x"), r"annotation 9 is of an image or a category the file lacks"),
    (lambda d: d["annotations"][2].update(category_id=True), r"annotation 2 is of an image or a category the file "
                                                             r"lacks \(image_id 9, category_id True\)"),
    (lambda d: d["categories"].append({"id": 1, "name": "human"}), r"category 4 \(1, 'human'\) repeats an id"),
    (lambda d: d["categories"].append({"id": 5, "name": "dog"}), r"category 4 \(5, 'dog'\) repeats an id or a name"),
    (lambda d: d["categories"][0].update(id="1"), r"category 0 has no whole-number id and name"),
    (lambda d: d["categories"].append({"id": 90, "name": "toothbrush"}),
     r"instances_val2017.json: its categories are not those of instances_train2017.json: convert them apart"),
])
def test_an_instances_file_that_is_not_cocos_stops_the_conversion(tmp_path, change, problem):
    src = _coco(tmp_path)
    _forge(src, change)
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "dst", multi_label=True)
    assert not (tmp_path / "dst" / "manifest.json").exists()


def test_unreadable_json_a_missing_folder_and_another_splits_file(tmp_path, caplog):
    src = _coco(tmp_path)
    (src / "annotations" / "instances_minival2014.json").write_text("{}")
    (src / "annotations" / "instances_test2017.json").mkdir()  # a folder of that name: no file to read
    (src / "annotations" / "instances_validation2017.json").write_text("{}")  # its images: validation2017/
    caplog.set_level(logging.WARNING)
    assert [(s, p.name, f.name) for s, p, f in coco.found(src)] == [
        ("train", "instances_train2017.json", "train2017"), ("val", "instances_val2017.json", "val2017"),
        ("val", "instances_validation2017.json", "validation2017")]
    (src / "annotations" / "instances_validation2017.json").unlink()
    assert any("instances_minival2014.json: not the instances of a train, val or test split" in r.getMessage()
               for r in caplog.records)
    shutil.rmtree(src / "val2017")
    with pytest.raises(ConvertError, match=r"instances_val2017.json names the images of val2017/, which is not in"):
        convert_images(src, tmp_path / "dst", multi_label=True)
    (src / "annotations" / "instances_train2017.json").write_text('[{"images": []}]')
    with pytest.raises(ConvertError, match=r"instances_train2017.json: no 'categories' list: not a COCO instances"):
        convert_images(src, tmp_path / "dst", multi_label=True)
    (src / "annotations" / "instances_train2017.json").write_text('{"images": [')
    with pytest.raises(ConvertError, match=r"cannot read .*instances_train2017.json: invalid JSON"):
        convert_images(src, tmp_path / "dst", multi_label=True)
    assert coco.found(tmp_path) == [] and coco.found(src / "annotations") == []


def test_batches_carry_the_categories_as_multi_hot_rows(tmp_path):
    src = _coco(tmp_path)
    convert_images(src, tmp_path / "dst", multi_label=True, short_side=48)
    rows = []
    for split in ("train", "val"):
        for _, y in loader(tmp_path / "dst", split=split, train=False, batch_size=4):
            assert y.dtype == torch.float32 and y.shape == (4, len(CLASSES))
            rows += [tuple(r) for r in y.tolist() if r[0] != -100]
    wanted = [tuple(float(c in labels) for c in range(len(CLASSES))) for _, labels in _expected(2017).values()]
    assert sorted(rows) == sorted(wanted)
