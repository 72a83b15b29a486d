"""Food-101 and DTD as torchvision downloads them (`food-101/images/<class>/`, `meta/train.txt`, `meta/test.txt`;
`dtd/images/<class>/`, `labels/train1.txt`, `val1.txt`, `test1.txt`): converted as they lie, their splits from the
lists (converters/images/folder_lists.py). Before, the download's folder was read as a tree whose classes were
`images` and `meta` (or `images`, `imdb` and `labels`), and `food-101/images` alone as one split, test trained on.
The images are the real photos of tests/data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, convert_images

from converters.images import folder_lists
from converters.images.discover import discover_images
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

FOOD = {"train": ["apple_pie/1005649", "baklava/1006121", "apple_pie/101251"], "test": ["baklava/1014880"]}
DTD = {"train": ["banded/banded_0002.jpg", "zigzagged/zigzagged_0003.jpg"], "val": ["banded/banded_0004.jpg"],
       "test": ["zigzagged/zigzagged_0010.jpg"]}


def _food(root: Path, lists=FOOD) -> Path:
    """`food-101/`: the photos under the lists' paths, one no list names, the lists and meta files beside them."""
    data = root / "food-101"
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for entry in [*(e for rows in lists.values() for e in rows), "baklava/999"]:
        (data / "images" / entry).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(next(photos), data / "images" / f"{entry}.jpg")
    (data / "meta").mkdir()
    for split, rows in lists.items():
        (data / "meta" / f"{split}.txt").write_text("".join(f"{e}\n" for e in rows))
    (data / "meta" / "classes.txt").write_text("apple_pie\nbaklava\n")
    (data / "meta" / "labels.txt").write_text("Apple pie\nBaklava\n")
    (data / "license_agreement.txt").write_text("research use\n")
    return root


def _dtd(root: Path) -> Path:
    """`dtd/`: the photos, partitions 1 and 2 of the lists, `imdb/`."""
    data = root / "dtd"
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for entry in (e for rows in DTD.values() for e in rows):
        (data / "images" / entry).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(next(photos), data / "images" / entry)
    (data / "labels").mkdir()
    for split, rows in DTD.items():
        (data / "labels" / f"{split}1.txt").write_text("".join(f"{e}\n" for e in rows))
        (data / "labels" / f"{split}2.txt").write_text("".join(f"{e}\n" for e in reversed(rows)))
    (data / "imdb").mkdir()
    (data / "imdb" / "imdb.mat").write_bytes(b"MATLAB 5.0 MAT-file")
    return root


def test_food101_converts_with_its_lists_splits(tmp_path):
    src = _food(tmp_path / "src")
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ("apple_pie", "baklava") and m.extra["layout"] == "food101"
    assert class_lists(tmp_path / "dst", lambda source: Path(source).stem, field="label") == {
        "1005649": ("train", 0), "1006121": ("train", 1), "101251": ("train", 0), "1014880": ("test", 1)}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("food-101/images/baklava/999.jpg", "not listed in labels file train.txt and test.txt")]


def test_dtd_converts_with_its_first_partition(tmp_path):
    src = _dtd(tmp_path)
    assert folder_lists.found(src) == ("dtd", src / "dtd") == folder_lists.found(src / "dtd")
    d = discover_images(src)
    assert d.layout == "dtd" and d.classes == ("banded", "zigzagged")
    assert {s: sorted((Path(it.rel).name, it.label) for it in items) for s, items in d.splits.items()} == {
        "train": [("banded_0002.jpg", 0), ("zigzagged_0003.jpg", 1)], "val": [("banded_0004.jpg", 0)],
        "test": [("zigzagged_0010.jpg", 1)]}
    assert d.rejected == []  # imdb/ and labels/ lie beside images/: never walked


@pytest.mark.parametrize(("change", "problem"), [
    (lambda m: (m / "test.txt").write_text("apple_pie/1005649\n"),
     r"test.txt:1: apple_pie/1005649 is in train too \(.*train.txt:1\): an image has one split"),
    (lambda m: (m / "test.txt").write_text("\n1014880\n"),
     r"test.txt:2: expected a class folder and an image in it, got '1014880'"),
    (lambda m: (m / "test.txt").write_text("/1014880\n"), r"test.txt:1: expected a class folder"),
])
def test_lists_that_are_not_food101s_stop_the_conversion(tmp_path, change, problem):
    src = _food(tmp_path)
    change(src / "food-101" / "meta")
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "dst")


def test_the_images_folder_alone_or_other_labels_leave_the_lists_unread(tmp_path):
    src = _food(tmp_path)
    d = discover_images(src / "food-101" / "images")
    assert d.layout == "class" and list(d.splits) == ["train"]
    assert discover_images(src, unlabeled=True).layout == "unlabeled"
    (src / "food-101" / "meta" / "test.txt").unlink()
    assert folder_lists.found(src) is None


def test_the_classes_are_sorted_whatever_the_lists_order(tmp_path):
    names = ["waffles", "tacos", "sushi", "ramen", "pizza", "nachos", "churros", "baklava"]
    src = _food(tmp_path, {"train": [f"{n}/{i}" for i, n in enumerate(names)], "test": ["apple_pie/1"]})
    assert discover_images(src).classes == ("apple_pie", *sorted(names))
