"""Caltech-101 as its archive unpacks (`101_ObjectCategories/<class>/image_0001.jpg`, `Annotations/` beside it) and
as torchvision's `Caltech101` downloads it (`caltech101/101_ObjectCategories/`): converted as it lies
(converters/images/caltech101.py), in torchvision's 101 classes. Before, `BACKGROUND_Google/`, the background
clutter, was a class of its own, and torchvision's folder read as a tree was two classes, `101_ObjectCategories` and
`Annotations`. The images are the real photos of tests/data."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, split_items, split_rejections

from converters.images import caltech101
from converters.images.discover import discover_images
from converters.walk import NOT_FOLLOWED
from fastdata.cli import main as cli
from fastdata.manifest import read_manifest

IMAGES = {"Faces_easy/image_0001.jpg": 0, "accordion/image_0001.jpg": 1, "accordion/image_0002.jpg": 1,
          "airplanes/image_0001.jpg": 2}
CLUTTER = ("BACKGROUND_Google/image_0001.jpg", "BACKGROUND_Google/image_0002.jpg")


def _caltech(root: Path) -> Path:
    """torchvision's `caltech101/` under `root`: 101_ObjectCategories/ of the photos (the clutter's too),
    Annotations/ and the archive beside them."""
    top = root / "caltech101"
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for rel in (*IMAGES, *CLUTTER):
        (top / caltech101.FOLDER / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(next(photos), top / caltech101.FOLDER / rel)
    (top / "Annotations" / "accordion").mkdir(parents=True)
    (top / "Annotations" / "accordion" / "annotation_0001.mat").write_bytes(b"MATLAB 5.0 MAT-file")
    (top / "101_ObjectCategories.tar.gz").write_bytes(b"an archive")
    return root


def test_the_class_folders_convert_without_the_background_clutter(tmp_path):
    src = _caltech(tmp_path) / "caltech101" / caltech101.FOLDER
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ("Faces_easy", "accordion", "airplanes")  # torchvision's order: capitals first
    assert m.extra["layout"] == "caltech101"
    assert class_lists(tmp_path / "dst", field="label") == {rel: ("train", c) for rel, c in IMAGES.items()}
    assert [(r["split"], r["source"], r["reason"]) for r in m.rejected] == [
        ("train", rel, caltech101.NOT_A_CLASS) for rel in CLUTTER]


def test_torchvisions_download_converts_from_its_root_and_rejects_what_lies_beside(tmp_path):
    d = discover_images(_caltech(tmp_path), split="val")
    assert d.layout == "caltech101" and d.classes == ("Faces_easy", "accordion", "airplanes")
    assert split_items(d) == {"val": sorted((f"caltech101/101_ObjectCategories/{rel}", c) for rel, c in
                                            IMAGES.items())}
    beside = "beside 101_ObjectCategories/: not read"
    assert sorted(split_rejections(d)) == [
        ("val", "caltech101/101_ObjectCategories.tar.gz", beside),
        *[("val", f"caltech101/101_ObjectCategories/{rel}", caltech101.NOT_A_CLASS) for rel in CLUTTER],
        ("val", "caltech101/Annotations/accordion/annotation_0001.mat", beside)]


def test_its_one_split_takes_a_held_out_val_and_split_lists(tmp_path):
    src = _caltech(tmp_path) / "caltech101" / caltech101.FOLDER
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress", "--val-fraction", "0.5"]) == 0
    splits = {s for s, _ in class_lists(tmp_path / "dst", field="label").values()}
    assert splits == {"train", "val"}
    (tmp_path / "test.txt").write_text("accordion/image_0002.jpg\n")
    assert cli(["convert", str(src), str(tmp_path / "dst2"), "-j", "1", "--no-progress", "--split-list",
                f"test={tmp_path / 'test.txt'}"]) == 0
    got = class_lists(tmp_path / "dst2", field="label")
    assert {rel for rel, (s, _) in got.items() if s == "test"} == {"accordion/image_0002.jpg"}


def test_what_is_no_class_folder_is_rejected_and_a_name_that_cannot_be_a_class_says_why(tmp_path):
    src = _caltech(tmp_path) / "caltech101" / caltech101.FOLDER
    shutil.copyfile(src / "accordion" / "image_0001.jpg", src / "loose.jpg")
    (src / "bad\x1bname").mkdir()
    shutil.copyfile(src / "accordion" / "image_0001.jpg", src / "bad\x1bname" / "image_0001.jpg")
    d = discover_images(src)
    assert d.classes == ("Faces_easy", "accordion", "airplanes")
    reasons = {rel: reason for _, rel, reason in split_rejections(d)}
    assert reasons["loose.jpg"] == "not inside a class folder of 101_ObjectCategories/"
    assert reasons["bad\x1bname/image_0001.jpg"].startswith("class folder name holds control characters")


def test_renamed_the_clutter_is_a_class_like_any_other(tmp_path):
    src = _caltech(tmp_path) / "caltech101" / caltech101.FOLDER
    (src / "BACKGROUND_Google").rename(src / "background")
    d = discover_images(src)
    assert caltech101.found(src) is None
    assert d.layout == "class" and d.classes == ("Faces_easy", "accordion", "airplanes", "background")


@pytest.mark.parametrize("follow", [True, False])
def test_linked_class_folders_are_followed_or_rejected_as_links(tmp_path, follow):
    src = _caltech(tmp_path) / "caltech101" / caltech101.FOLDER
    shutil.move(src / "airplanes", tmp_path / "planes")
    os.symlink(tmp_path / "planes", src / "airplanes")
    d = discover_images(src, follow_symlinks=follow)
    assert d.layout == "caltech101"
    assert ("airplanes" in d.classes) is follow
    assert (("train", "airplanes", NOT_FOLLOWED) in split_rejections(d)) is not follow


def test_the_folder_holding_the_archives_contents_converts_and_an_empty_class_is_warned_about(tmp_path, caplog):
    top = _caltech(tmp_path) / "caltech101"
    (top / caltech101.FOLDER / "ant").mkdir()
    d = discover_images(top)
    assert d.layout == "caltech101" and d.classes == ("Faces_easy", "accordion", "airplanes", "ant")
    assert split_items(d)["train"] == sorted((f"101_ObjectCategories/{rel}", c) for rel, c in IMAGES.items())
    assert "class 'ant' has no images" in caplog.text
