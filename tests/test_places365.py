"""Places365 as torchvision's `Places365` downloads it or as its archives unpack into one folder
(`categories_places365.txt`, `places365_train_standard.txt`, `places365_val.txt`, `data_256/a/airfield/...`,
`val_256/`, `test_256/`): converted as it lies (converters/images/places365.py). Before, its lists converted one
split at a time with --labels and --classes, and `data_256/` as a tree was 26 classes `a` ... `z`. The images are
the real photos of tests/data."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, split_items, split_rejections

from converters.images import places365
from converters.images.discover import discover_images
from converters.walk import NOT_FOLLOWED
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

CATEGORIES = ["/a/airfield", "/a/apartment_building/outdoor", "/b/bakery/shop", "/b/bamboo_forest"]
TRAIN = {"a/airfield/00000001.jpg": 0, "a/airfield/00000002.jpg": 0, "a/apartment_building/outdoor/00000001.jpg": 1,
         "b/bamboo_forest/00000001.jpg": 3}
VAL = {"Places365_val_00000001.jpg": 2, "Places365_val_00000002.jpg": 0}
TEST = ("Places365_test_00000001.jpg",)


def _places(root: Path, train_folder: str = "data_256", categories=CATEGORIES, train=TRAIN, val=VAL) -> Path:
    """Places365's folder as its archives unpack: the categories and lists of filelist_places365-standard.tar, the
    photos in data_256/, val_256/ and test_256/, and an archive beside them."""
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for rel in train:
        (root / train_folder / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(next(photos), root / train_folder / rel)
    for folder, names in (("val_256", val), ("test_256", TEST)):
        (root / folder).mkdir(parents=True, exist_ok=True)
        for name in names:
            shutil.copyfile(next(photos), root / folder / name)
    (root / "categories_places365.txt").write_text("".join(f"{c} {i}\n" for i, c in enumerate(categories)))
    (root / "places365_train_standard.txt").write_text("".join(f"/{rel} {c}\n" for rel, c in train.items()))
    (root / "places365_val.txt").write_text("".join(f"{name} {c}\n" for name, c in val.items()))
    (root / "places365_test.txt").write_text("".join(f"{name}\n" for name in TEST))
    (root / "val_256.tar").write_bytes(b"an archive")
    return root


def test_the_folder_converts_train_and_val_with_the_categories_names(tmp_path):
    src = _places(tmp_path / "places")
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ("airfield", "apartment_building/outdoor", "bakery/shop", "bamboo_forest")
    assert m.extra["layout"] == "places365"
    assert class_lists(tmp_path / "dst", field="label") == {
        **{f"data_256/{rel}": ("train", c) for rel, c in TRAIN.items()},
        **{f"val_256/{name}": ("val", c) for name, c in VAL.items()}}
    assert sorted((r["split"], r["source"], r["reason"]) for r in m.rejected) == [
        ("test", "test_256/Places365_test_00000001.jpg", places365.NO_TEST_LABELS),
        ("train", "val_256.tar", "beside Places365's folders and lists: not read")]


def test_torchvisions_folder_names_and_its_places365_folder_are_found(tmp_path):
    src = _places(tmp_path / "data" / "places365", train_folder="data_large_challenge")
    (src / "places365_train_standard.txt").rename(src / "places365_train_challenge.txt")
    d = discover_images(tmp_path / "data", split="test")
    assert d.layout == "places365"
    assert split_items(d)["train"] == sorted((f"places365/data_large_challenge/{rel}", c) for rel, c in TRAIN.items())
    assert split_items(d)["val"] == sorted((f"places365/val_256/{name}", c) for name, c in VAL.items())


def test_a_folder_named_for_its_set_takes_that_sets_list(tmp_path):
    src = _places(tmp_path, train_folder="data_256_standard")
    (src / "places365_train_challenge.txt").write_text("/a/airfield/00000009.jpg 0\n")  # another set's list, beside
    d = discover_images(src)
    assert split_items(d)["train"] == sorted((f"data_256_standard/{rel}", c) for rel, c in TRAIN.items())
    assert ("train", "places365_train_challenge.txt") not in [(s, r) for s, r, _ in split_rejections(d)]


def test_images_the_lists_leave_out_and_names_without_a_file_are_rejections(tmp_path):
    src = _places(tmp_path)
    shutil.copyfile(src / "val_256" / "Places365_val_00000001.jpg", src / "data_256" / "a" / "airfield" / "x.jpg")
    shutil.copyfile(src / "val_256" / "Places365_val_00000001.jpg", src / "val_256" / "extra.jpg")
    with open(src / "places365_val.txt", "a") as f:
        f.write("Places365_val_00000003.jpg 1\n")
    d = discover_images(src)
    assert sorted(split_rejections(d)) == [
        ("test", "test_256/Places365_test_00000001.jpg", places365.NO_TEST_LABELS),
        ("train", "data_256/a/airfield/x.jpg", "not listed in labels file places365_train_standard.txt"),
        ("train", "val_256.tar", "beside Places365's folders and lists: not read"),
        ("val", "val_256/Places365_val_00000003.jpg", "listed in places365_val.txt but no such file in the source"),
        ("val", "val_256/extra.jpg", "not listed in labels file places365_val.txt")]


def test_training_images_alone_convert_and_a_blank_line_among_the_categories_is_passed_over(tmp_path):
    src = _places(tmp_path)
    shutil.rmtree(src / "val_256")
    (src / "places365_val.txt").unlink()
    (src / "categories_places365.txt").write_text("".join(f"{c} {i}\n\n" for i, c in enumerate(CATEGORIES)))
    d = discover_images(src)
    assert split_items(d) == {"train": sorted((f"data_256/{rel}", c) for rel, c in TRAIN.items())}
    assert d.classes == ("airfield", "apartment_building/outdoor", "bakery/shop", "bamboo_forest")


def test_validation_images_alone_convert_and_unused_classes_are_warned_about(tmp_path, caplog):
    src = _places(tmp_path)
    shutil.rmtree(src / "data_256")
    (src / "places365_train_standard.txt").unlink()
    d = discover_images(src)
    assert split_items(d) == {"val": sorted((f"val_256/{name}", c) for name, c in VAL.items())}
    assert "2 classes have no image: 'apartment_building/outdoor', 'bamboo_forest'" in caplog.text


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: (s / "data_large").mkdir(), r"holds data_256/ and data_large/, Places365's training images at two "
                                           r"sizes or of two sets: convert one of them"),
    (lambda s: (s / "data_256_challenge").mkdir(), r"holds data_256_challenge/ and data_256/"),
    (lambda s: (s / "val_large").mkdir(), r"holds val_256/ and val_large/, Places365's validation images at two"),
    (lambda s: (s / "test_large").mkdir(), r"holds test_256/ and test_large/, Places365's test images at two sizes: "
                                           r"convert one of them \(move the others out of the folder\)$"),
    (lambda s: (s / "places365_val.txt").unlink(), r"val_256: Places365's validation images have no labels: "
                                                   r"places365_val\.txt is not in "),
    (lambda s: (s / "places365_train_standard.txt").unlink(), r"data_256: Places365's training images have no "
     r"labels: places365_train_standard\.txt or places365_train_challenge\.txt is not in .*; put it there"),
    (lambda s: (s / "places365_train_challenge.txt").write_text(""), r"holds places365_train_standard\.txt and "
     r"places365_train_challenge\.txt: which one lists data_256/\? Name the folder data_256_standard or"),
])
def test_two_folders_of_one_split_or_images_without_their_list_are_refused(tmp_path, change, message):
    src = _places(tmp_path)
    change(src)
    with pytest.raises(ConvertError, match=message):
        discover_images(src)


def test_a_set_named_folder_without_its_sets_list_is_refused(tmp_path):
    src = _places(tmp_path, train_folder="data_256_challenge")  # the standard list is there, not the challenge's
    with pytest.raises(ConvertError, match=r"data_256_challenge: .*no labels: places365_train_challenge\.txt is not"):
        discover_images(src)


@pytest.mark.parametrize(("file", "text", "message"), [
    ("categories_places365.txt", "/a/airfield 0\nairfield 1\n", r"categories_places365\.txt:2: expected a class and "
                                                                r"its id \(/a/airfield 0\), got 'airfield 1'"),
    ("categories_places365.txt", "/a/airfield 0\n/a/alley 0\n", r":2: the id 0 is /a/airfield's too"),
    ("categories_places365.txt", "/a/airfield 0\n/b/airfield 1\n", r":2: the class airfield is named twice \(line 1"),
    ("categories_places365.txt", "/a/airfield 0\n/a/alley 2\n", r"the ids are not 0\.\.1: no class has the id 1"),
    ("places365_train_standard.txt", "/a/airfield/00000001.jpg 1\n", r"places365_train_standard\.txt:1: "
     r"/a/airfield/00000001\.jpg lies in /a/airfield, but its id 1 is the class /a/apartment_building/outdoor"),
    ("places365_train_standard.txt", "/00000001.jpg 0\n", r":1: /00000001\.jpg lies in /, but its id 0 is the class "
                                                          r"/a/airfield"),
    ("places365_train_standard.txt", "a/airfield/00000001.jpg 0\n", r":1: expected an image and its class id "
                                                                    r"\(/a/airfield/00000001\.jpg 0\)"),
    ("places365_train_standard.txt", "/a/airfield/00000001.jpg\n", r":1: expected an image and its class id"),
    ("places365_train_standard.txt", "/a/airfield/1.jpg 0\n\n/a/airfield/1.jpg 0\n",
     r":3: /a/airfield/1\.jpg is listed twice \(line 1 too\)"),
    ("places365_val.txt", "Places365_val_00000001.jpg 4\n", r"places365_val\.txt:1: the class id 4 is none of "
                                                            r"categories_places365\.txt's \(0\.\.3\)"),
    ("places365_val.txt", "Places365_val_00000001.jpg -1\n", r":1: expected an image and its class id "
                                                             r"\(Places365_val_00000001\.jpg 165\)"),
    ("places365_val.txt", "a.jpg 0 extra\n", r":1: expected an image and its class id"),
    ("places365_val.txt", b"a.jpg 0\n\xff\n", r"cannot read .*places365_val\.txt"),
])
def test_a_list_or_categories_line_that_cannot_be_read_right_stops_the_conversion(tmp_path, file, text, message):
    src = _places(tmp_path)
    if isinstance(text, bytes):
        (src / file).write_bytes(text)
    else:
        (src / file).write_text(text)
    with pytest.raises(ConvertError, match=message):
        discover_images(src)


def test_a_list_past_the_size_limit_is_refused(tmp_path, monkeypatch):
    src = _places(tmp_path)
    monkeypatch.setattr(places365, "MAX_LIST", 60)
    with pytest.raises(ConvertError, match=r"places365_train_standard\.txt: \d+ bytes, more than a list of "
                                           r"Places365's holds"):
        discover_images(src)


@pytest.mark.parametrize("change", [
    lambda s: (s / "categories_places365.txt").write_text("airfield\nalley\n"),  # names alone: not Places365's
    lambda s: [shutil.rmtree(s / f) for f in ("data_256", "val_256")],  # no images folder of the dataset
])
def test_a_source_that_is_not_places365_is_read_as_before(tmp_path, change):
    src = _places(tmp_path)
    change(src)
    assert places365.found(src) is None
    assert discover_images(src).layout != "places365"


def test_a_tree_of_letters_points_at_the_layout(tmp_path, caplog):
    src = _places(tmp_path)
    d = discover_images(src / "data_256")
    assert d.classes == ("a", "b")  # two letters: no warning (they may be classes)
    photo = next(iter(PHOTOS.glob("*.jpg")))
    (src / "data_256" / "c" / "canal").mkdir(parents=True)
    shutil.copyfile(photo, src / "data_256" / "c" / "canal" / "1.jpg")
    discover_images(src / "data_256")
    assert "Places365 from the folder holding its categories_places365.txt and lists" in caplog.text


def test_a_linked_images_folder_not_followed_is_rejected_as_that(tmp_path):
    src = _places(tmp_path / "places")
    shutil.move(src / "data_256", tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", src / "data_256")
    d = discover_images(src, follow_symlinks=False)
    assert set(split_items(d)) == {"val"}
    assert ("train", "data_256", NOT_FOLLOWED) in split_rejections(d)
    followed = discover_images(src)
    assert split_items(followed)["train"] == sorted((f"data_256/{rel}", c) for rel, c in TRAIN.items())


def test_a_link_in_the_images_folder_back_to_the_source_is_a_loop_not_walked(tmp_path):
    src = _places(tmp_path / "places")
    os.symlink(src, src / "data_256" / "a" / "back")
    d = discover_images(src)
    assert split_items(d)["train"] == sorted((f"data_256/{rel}", c) for rel, c in TRAIN.items())
    loops = [r for r in split_rejections(d) if "loop" in r[2]]
    assert [r[1] for r in loops] == ["data_256/a/back"]


def test_categories_saved_with_a_byte_order_mark_are_read(tmp_path):
    src = _places(tmp_path)
    text = (src / "categories_places365.txt").read_text()
    (src / "categories_places365.txt").write_text("\ufeff" + text)  # as an editor on Windows saves it
    d = discover_images(src)
    assert d.layout == "places365"
    assert d.classes == ("airfield", "apartment_building/outdoor", "bakery/shop", "bamboo_forest")
