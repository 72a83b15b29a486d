"""SUN397 as its archive unpacks and torchvision's `SUN397` reads it (`SUN397/a/abbey/sun_*.jpg`, classes two
folders deep such as `a/apartment_building/outdoor/`, and `ClassName.txt`): converted as it lies
(converters/images/sun397.py). Before, its classes were the letters `a`, `b`, ... without a word. The images are the
real photos of tests/data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, split_items, split_rejections

from converters.images import sun397
from converters.images.discover import discover_images
from converters.images.labels_csv import EXTENSIONS
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

CLASSES = ["/a/abbey", "/a/apartment_building/outdoor", "/b/bakery/shop", "/b/bamboo_forest"]
IMAGES = {"a/abbey/sun_aaalbzqrimafwbiv.jpg": 0, "a/abbey/sun_aacphuqehdodwawg.jpg": 0,
          "a/apartment_building/outdoor/sun_aabvrhdtmwnvnshy.jpg": 1, "b/bakery/shop/sun_abxfmgxjlwsabdfb.jpg": 2}


def _sun(root: Path, classes=CLASSES, images=IMAGES) -> Path:
    """`SUN397/` as the archive unpacks: the photos under their letters, ClassName.txt and the readme; the Partitions
    archive's first lists beside it."""
    data = root / "SUN397"
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for rel in images:
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(next(photos), data / rel)
    (data / "ClassName.txt").write_text("".join(f"{c}\n" for c in classes))
    (data / "README.txt").write_text("SUN397\n")
    (root / "Partitions").mkdir()
    (root / "Partitions" / "Training_01.txt").write_text("".join(f"/{rel}\n" for rel in list(images)[:3]))
    (root / "Partitions" / "Testing_01.txt").write_text("".join(f"/{rel}\n" for rel in list(images)[3:]))
    return root


def test_the_folder_converts_with_classname_txts_classes_below_their_letters(tmp_path):
    src = _sun(tmp_path)
    assert cli(["convert", str(src / "SUN397"), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ("abbey", "apartment_building/outdoor", "bakery/shop", "bamboo_forest")
    assert m.extra["layout"] == "sun397"
    assert class_lists(tmp_path / "dst", field="label") == {rel: ("train", c) for rel, c in IMAGES.items()}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("README.txt", "in no class folder ClassName.txt names")]


def test_the_partitions_lists_give_the_splits(tmp_path):
    src = _sun(tmp_path)
    parts = src / "Partitions"
    assert cli(["convert", str(src / "SUN397"), str(tmp_path / "dst"), "-j", "1", "--no-progress",
                "--split-list", f"train={parts / 'Training_01.txt'}", "--split-list",
                f"test={parts / 'Testing_01.txt'}"]) == 0
    got = class_lists(tmp_path / "dst", field="label")
    assert {rel: s for rel, (s, _) in got.items()} == {**{rel: "train" for rel in list(IMAGES)[:3]},
                                                      list(IMAGES)[3]: "test"}


def test_images_in_no_listed_class_folder_are_rejections_and_so_is_what_lies_beside(tmp_path):
    src = _sun(tmp_path)
    data = src / "SUN397"
    shutil.copyfile(data / list(IMAGES)[0], data / "a" / "loose.jpg")  # in a letter folder
    shutil.copyfile(data / list(IMAGES)[0], data / "a" / "apartment_building" / "a.jpg")  # above a class folder
    (data / "c" / "canal").mkdir(parents=True)
    shutil.copyfile(data / list(IMAGES)[0], data / "c" / "canal" / "sun_x.jpg")  # a class ClassName.txt lacks
    d = discover_images(src, split="val")
    assert split_items(d) == {"val": sorted((f"SUN397/{rel}", c) for rel, c in IMAGES.items())}
    assert split_rejections(d) == [
        ("val", "Partitions/Testing_01.txt", "beside SUN397/: not read"),
        ("val", "Partitions/Training_01.txt", "beside SUN397/: not read"),
        ("val", "SUN397/README.txt", "in no class folder ClassName.txt names"),
        ("val", "SUN397/a/apartment_building/a.jpg", "in no class folder ClassName.txt names"),
        ("val", "SUN397/a/loose.jpg", "in no class folder ClassName.txt names"),
        ("val", "SUN397/c/canal/sun_x.jpg", "in no class folder ClassName.txt names")]


def test_a_class_without_images_is_warned_about(tmp_path, caplog):
    src = _sun(tmp_path)
    d = discover_images(src / "SUN397")
    assert d.classes[3] == "bamboo_forest" and "class 'bamboo_forest' has no image" in caplog.text


@pytest.mark.parametrize(("text", "problem"), [
    ("/a/abbey\nabbey\n", r"ClassName.txt:2: expected a class as /letter/name \(/a/abbey\), got 'abbey'"),
    ("/a/abbey\n/A/abbey\n", r"ClassName.txt:2: expected a class as /letter/name"),
    ("/a/abbey\n/a/\n", r"ClassName.txt:2: expected a class"),
    ("/a/abbey\n/a/apartment building\n", r"ClassName.txt:2: expected a class"),
    ("/a/abbey\n\n/b/abbey\n", r"ClassName.txt:3: the class abbey is named twice"),
    ("/a/abbey\n/a/abbey\n", r"ClassName.txt:2: the class abbey is named twice"),
])
def test_a_classname_txt_that_is_not_sun397s_stops_the_conversion(tmp_path, text, problem):
    src = _sun(tmp_path)
    (src / "SUN397" / "ClassName.txt").write_text(text)
    with pytest.raises(ConvertError, match=problem):
        discover_images(src)


def test_a_folder_without_classname_txt_or_of_other_lines_is_a_tree(tmp_path, caplog):
    src = _sun(tmp_path)
    names = src / "SUN397" / "ClassName.txt"
    names.write_text("abbey\n/a/abbey\n")
    assert sun397.found(src) is None
    names.unlink()
    (src / "SUN397" / "c" / "canal").mkdir(parents=True)
    shutil.copyfile(src / "SUN397" / list(IMAGES)[0], src / "SUN397" / "c" / "canal" / "sun_x.jpg")
    assert sun397.found(src) is None and discover_images(src / "SUN397").classes == ("a", "b", "c")
    assert "the class folders are the letters a, b, c: SUN397 and Places365 file their classes below" in caplog.text
    caplog.clear()
    (src / "SUN397" / "b").rename(src / "SUN397" / "bakery")
    assert discover_images(src / "SUN397").classes == ("a", "bakery", "c") and "letters" not in caplog.text
    assert discover_images(_sun(tmp_path / "other"), unlabeled=True).layout == "unlabeled"


def test_a_loop_back_to_the_dataset_and_a_classname_txt_in_a_class_folder_are_rejections(tmp_path):
    src = _sun(tmp_path)
    data = src / "SUN397"
    (data / "a" / "abbey" / "back").symlink_to(src, target_is_directory=True)  # the source, above SUN397/
    (data / "a" / "abbey" / "ClassName.txt").write_text("/a/abbey\n")
    d = discover_images(src)
    assert len(d.splits["train"]) == 4
    assert [r for r in split_rejections(d) if "/abbey/" in r[1]] == [
        ("train", "SUN397/a/abbey/ClassName.txt", "unsupported extension '.txt'; allowed: " + ", ".join(EXTENSIONS)),
        ("train", "SUN397/a/abbey/back", f"symlink loop: points back to {src}, a folder being walked")]


def test_a_classname_txt_not_utf8_or_huge_is_refused(tmp_path):
    src = _sun(tmp_path)
    names = src / "SUN397" / "ClassName.txt"
    names.write_bytes(b"/a/abb\xffey\n")
    assert sun397.found(src) == src / "SUN397"  # its first line looked at, not a crash
    with pytest.raises(ConvertError, match=r"cannot read .*ClassName.txt: 'utf-8' codec can't decode"):
        discover_images(src)
    names.write_text("/a/abbey\n" + "/b/bakery\n" * 200_000)
    with pytest.raises(ConvertError, match=r"ClassName.txt: 2000009 bytes, more than SUN397's ClassName.txt holds"):
        discover_images(src)


def test_a_val_fraction_holds_out_part_of_the_one_split(tmp_path):
    src = _sun(tmp_path)
    assert cli(["convert", str(src / "SUN397"), str(tmp_path / "dst"), "-j", "1", "--no-progress",
                "--val-fraction", "0.5"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert set(m.splits) == {"train", "val"} and m.classes[0] == "abbey"
    assert {s for s, _ in class_lists(tmp_path / "dst", field="label").values()} == {"train", "val"}
