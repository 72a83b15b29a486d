"""Oxford-IIIT Pet as torchvision's `OxfordIIITPet` downloads it (`oxford-iiit-pet/images/`, and in `annotations/`
the split lists, `list.txt`, the trimaps and the boxes): converted as it lies (converters/images/oxford_pet.py).
Before, the folder was read as a tree of two classes, `annotations` (the trimaps, PNG images all) and `images`, in
one split, without a word. The images are the real photos of tests/data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, convert_images, make_image

from converters.images import oxford_pet
from converters.images.discover import discover_images
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

# image id -> (class id, species); breeds by class id: 1 Abyssinian (cat), 2 american_bulldog (dog), 3 Bengal (cat)
TRAINVAL = {"Abyssinian_100": (1, 1), "american_bulldog_10": (2, 2), "Bengal_1": (3, 1)}
TEST = {"Abyssinian_101": (1, 1), "american_bulldog_100": (2, 2)}


def _pets(root: Path, trainval=TRAINVAL, test=TEST) -> Path:
    """`oxford-iiit-pet/`: the photos under their ids, one no list names, a MATLAB file beside them (the download
    has three), the lists and the trimaps (PNG images) and boxes."""
    data = root / "oxford-iiit-pet"
    (data / "images").mkdir(parents=True)
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for image in [*trainval, *test, "Bengal_99"]:
        shutil.copyfile(next(photos), data / "images" / f"{image}.jpg")
        make_image(data / "annotations" / "trimaps" / f"{image}.png", size=(8, 8), mode="L")
    (data / "images" / "Abyssinian_5.mat").write_bytes(b"MATLAB 5.0 MAT-file")
    for name, rows in (("trainval.txt", trainval), ("test.txt", test)):
        (data / "annotations" / name).write_text("".join(f"{i} {c} {s} {c}\n" for i, (c, s) in rows.items()))
    (data / "annotations" / "list.txt").write_text("#Image CLASS-ID SPECIES BREED ID\n" + "".join(
        f"{i} {c} {s} {c}\n" for i, (c, s) in {**trainval, **test}.items()))
    (data / "annotations" / "xmls").mkdir()
    (data / "annotations" / "xmls" / "Abyssinian_100.xml").write_text("<annotation/>")
    return root


def test_the_download_converts_with_the_breeds_by_class_id_and_the_lists_splits(tmp_path):
    src = _pets(tmp_path / "src")
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ("Abyssinian", "american_bulldog", "Bengal") and m.extra["layout"] == "oxford_pet"
    assert class_lists(tmp_path / "dst", lambda source: Path(source).stem, field="label") == {
        **{i: ("train", c - 1) for i, (c, _) in TRAINVAL.items()}, **{i: ("test", c - 1) for i, (c, _) in TEST.items()}}
    assert sorted((r["source"], r["reason"].split(";")[0]) for r in m.rejected) == [
        ("oxford-iiit-pet/images/Abyssinian_5.mat", "not listed in labels file trainval.txt and test.txt"),
        ("oxford-iiit-pet/images/Bengal_99.jpg", "not listed in labels file trainval.txt and test.txt")]


def test_comments_and_blank_lines_are_skipped_and_the_folder_itself_converts(tmp_path):
    src = _pets(tmp_path)
    lists = src / "oxford-iiit-pet" / "annotations"
    (lists / "test.txt").write_text("# a comment\n\nAbyssinian_101 1\n" + (lists / "test.txt").read_text().split(
        "\n", 1)[1])  # a line of an id and its class alone is enough
    assert oxford_pet.found(src / "oxford-iiit-pet") == src / "oxford-iiit-pet"
    d = discover_images(src / "oxford-iiit-pet")
    assert {s: len(items) for s, items in d.splits.items()} == {"train": 3, "test": 2}


@pytest.mark.parametrize(("change", "problem"), [
    (lambda a: (a / "test.txt").write_text("Bengal_1 3 1 3\n"),
     r"test.txt:1: image Bengal_1 is in train too: an image has one split"),
    (lambda a: (a / "test.txt").write_text("Abyssinian_101\n"),
     r"test.txt:1: expected an image id and its class id \(from 1\), got 'Abyssinian_101'"),
    (lambda a: (a / "test.txt").write_text("Abyssinian_101 0 1 0\n"), r"test.txt:1: expected an image id"),
    (lambda a: (a / "test.txt").write_text("Abyssinian_101 x 1 0\n"), r"test.txt:1: expected an image id"),
    # found by the fuzz: a class id of 5,000 digits raised ValueError out of int(); one of other digits (Unicode's)
    (lambda a: (a / "test.txt").write_text(f"Abyssinian_101 {'9' * 5000} 1 0\n"), r"test.txt:1: expected an image"),
    (lambda a: (a / "test.txt").write_text("Abyssinian_101 \u0661 1 0\n"), r"test.txt:1: expected an image id"),
    (lambda a: (a / "test.txt").write_text("Sphynx_101 1 1 1\n"),
     r"test.txt:1: class 1 is 'Sphynx' here and 'Abyssinian' at .*trainval.txt:1: the lists are not Oxford"),
    (lambda a: (a / "test.txt").write_text("Abyssinian_101 4 1 4\n"), r"one breed has two class ids"),
])
def test_lists_that_are_not_oxford_pets_stop_the_conversion(tmp_path, change, problem):
    src = _pets(tmp_path)
    change(src / "oxford-iiit-pet" / "annotations")
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "dst")


def test_without_a_test_list_or_with_other_labels_the_lists_are_not_read(tmp_path):
    src = _pets(tmp_path)
    (src / "oxford-iiit-pet" / "annotations" / "test.txt").unlink()
    assert oxford_pet.found(src) is None
    src = _pets(tmp_path / "b")
    d = discover_images(src / "oxford-iiit-pet" / "images", label_pattern=r"^(.+)_\d+\.jpg$")
    assert d.classes == ("Abyssinian", "Bengal", "american_bulldog")  # fastai's way: the names sorted
