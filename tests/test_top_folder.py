"""A download's top folder read as the source (converters/images/top_folder.py): EuroSAT's `2750/`, Kaggle's
`chest_xray/chest_xray/`, Pascal VOC's `VOCdevkit/`; before, the one folder was the class of every image."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, convert_images
from test_voc import _voc

from converters.images.discover import discover_images
from converters.images.top_folder import BESIDE, top_folder, under
from converters.kind import Discovery
from converters.sample import Rejection, WorkItem


def photos(folder: Path, n: int, start: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, photo in enumerate(sorted(PHOTOS.glob("*.jpg"))[start:start + n]):
        shutil.copyfile(photo, folder / f"{folder.name}_{i + 1}.jpg")


def test_eurosats_folder_converts_with_its_classes_as_torchvisions_imagefolder_reads_them(tmp_path: Path, caplog):
    datasets = pytest.importorskip("torchvision.datasets")
    src = tmp_path / "eurosat"  # what torchvision's EuroSAT unpacks: eurosat/2750/<class>/<class>_<n>.jpg
    for c, name in enumerate(("AnnualCrop", "Forest", "SeaLake")):
        photos(src / "2750" / name, 2, start=2 * c)
    (src / "EuroSAT.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    m = convert_images(src, tmp_path / "out").manifest
    theirs = datasets.ImageFolder(str(src / "2750"))  # what torchvision's EuroSAT is
    assert m.classes == tuple(theirs.classes) == ("AnnualCrop", "Forest", "SeaLake")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        found = discover_images(src)
    assert f"{src} holds one folder, 2750/, and no image: its contents are read as the source" in caplog.text
    assert sorted((it.rel, it.label) for it in found.splits["train"]) == sorted(
        (Path(p).relative_to(src).as_posix(), y) for p, y in theirs.samples)  # named under the source, as before
    assert [(r.split, r.source, r.reason) for r in found.rejected] == [
        ("train", "EuroSAT.zip", BESIDE.format(name="2750"))]
    assert found.identity[0] == ["folder", "2750/"]


def test_folders_within_folders_down_to_split_folders_of_classes(tmp_path: Path):
    src = tmp_path / "archive"  # Kaggle's chest X-ray zip: chest_xray/chest_xray/{train,test,val}/{NORMAL,PNEUMONIA}
    for i, split in enumerate(("train", "test", "val")):
        for c in ("NORMAL", "PNEUMONIA"):
            photos(src / "chest_xray" / "chest_xray" / split / c, 2, start=i)
    (src / "chest_xray" / "README.txt").write_text("pneumonia")
    found = discover_images(src)
    assert found.layout == "split/class" and found.classes == ("NORMAL", "PNEUMONIA")
    assert {s: len(items) for s, items in found.splits.items()} == {"train": 4, "test": 4, "val": 4}
    assert found.splits["val"][0].rel == "chest_xray/chest_xray/val/NORMAL/NORMAL_1.jpg"
    assert [(r.source, r.reason) for r in found.rejected] == [
        ("chest_xray/README.txt", BESIDE.format(name="chest_xray"))]
    assert [row for row in found.identity if row[0] == "folder"] == [["folder", "chest_xray/"],
                                                                     ["folder", "chest_xray/"]]


def test_vocs_devkit_folder_converts_with_multi_label(tmp_path: Path):
    _voc(tmp_path)
    found = discover_images(tmp_path / "VOCdevkit", multi_label=True)  # refused before: no multi-label source
    assert found.layout == "voc" and sum(map(len, found.splits.values())) == 9
    assert [r.source for r in found.rejected] == ["VOC2007/JPEGImages/000032.jpg"]
    assert discover_images(tmp_path, multi_label=True).splits["train"][0].rel.startswith("VOCdevkit/VOC2007/")


@pytest.mark.parametrize(("layout", "why"), [
    ({"cats/cat_1.jpg"}, "a class folder of images"),
    ({"cats/train/cat_1.jpg", "cats/val/cat_2.jpg"}, "one class's split folders of images"),
    ({"train/cats/cat_1.jpg"}, "a split folder"),
    ({"top/cats/cat_1.jpg", "image.jpg"}, "an image beside the folder"),
    ({"top/cats/cat_1.jpg", "other/dogs/dog_1.jpg"}, "two folders"),
    ({"top/cats/cat_1.jpg", "top/image.png"}, "an image in the folder"),
    ({"top/readme.txt"}, "no folder in the folder"),
])
def test_what_is_no_top_folder(tmp_path: Path, layout: set[str], why: str):
    photo = sorted(PHOTOS.glob("*.jpg"))[0]
    for rel in layout:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(photo, tmp_path / rel)
    assert top_folder(tmp_path, follow=True) is None, why


def test_a_top_folder_reached_through_a_link_only_where_links_are_followed(tmp_path: Path):
    photos(tmp_path / "real" / "cats", 1)
    photos(tmp_path / "real" / "dogs", 1, start=1)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "data").symlink_to(tmp_path / "real")
    assert top_folder(tmp_path / "src", follow=True) == tmp_path / "src" / "data"
    assert top_folder(tmp_path / "src", follow=False) is None
    found = discover_images(tmp_path / "src", unlabeled=True)  # --unlabeled takes every image wherever it is
    assert found.layout == "unlabeled" and not [row for row in found.identity if row[0] == "folder"]


def test_labels_from_file_names_are_read_where_the_files_lie(tmp_path: Path):
    photos(tmp_path / "top" / "cats", 1)
    photos(tmp_path / "top" / "dogs", 2, start=1)
    (tmp_path / "top" / "dogs" / "dogs_2.jpg").rename(tmp_path / "top" / "dogs" / "cats_9.jpg")  # filed wrong
    found = discover_images(tmp_path, label_pattern=r"^([a-z]+)_\d+\.jpg$")
    assert found.classes == ("cats", "dogs")
    assert sorted((it.rel, it.label) for it in found.splits["train"]) == [
        ("top/cats/cats_1.jpg", 0), ("top/dogs/cats_9.jpg", 0), ("top/dogs/dogs_1.jpg", 1)]


def test_what_the_inner_discovery_names_is_named_under_the_source(tmp_path: Path):
    (tmp_path / "data").mkdir()
    (tmp_path / "readme.md").write_text("a dataset")
    inner = Discovery({"val": [WorkItem("val", "a/1.jpg", str(tmp_path / "data/a/1.jpg"), 0)]}, ("a",),
                      [Rejection("val", "/elsewhere/labels.csv", "row 3: no such file", also=(("a/2.txt", "x"),))],
                      "split/class", [["val", "a/1.jpg", 0, 10]])
    got = under(inner, tmp_path, tmp_path / "data")
    assert [it.rel for it in got.splits["val"]] == ["data/a/1.jpg"]
    assert got.rejected == [Rejection("val", "/elsewhere/labels.csv", "row 3: no such file",
                                      also=(("data/a/2.txt", "x"),)),  # a path outside the source stays whole
                            Rejection("val", "readme.md", BESIDE.format(name="data"))]  # in the split there is
    assert got.identity == [["folder", "data/"], ["val", "a/1.jpg", 0, 10]]


def test_class_folders_in_the_top_folder_reached_through_links(tmp_path: Path):
    photos(tmp_path / "real" / "cats", 1)
    (tmp_path / "src" / "top").mkdir(parents=True)
    (tmp_path / "src" / "top" / "cats").symlink_to(tmp_path / "real" / "cats")  # a class folder, linked
    assert top_folder(tmp_path / "src", follow=True) == tmp_path / "src" / "top"
    assert top_folder(tmp_path / "src", follow=False) is None  # (no folder in it, where links are not followed)
    (tmp_path / "split" / "top" / "train").mkdir(parents=True)
    (tmp_path / "split" / "top" / "train" / "cats").symlink_to(tmp_path / "real" / "cats")  # a split's classes
    assert top_folder(tmp_path / "split", follow=True) == tmp_path / "split" / "top"
    assert top_folder(tmp_path / "split", follow=False) is None  # (a split folder of no folder: one class's)


def test_what_lies_beside_a_top_folder_of_nothing_taken_is_rejected_in_train(tmp_path: Path):
    (tmp_path / "data").mkdir()
    (tmp_path / "notes.txt").write_text("a dataset")
    got = under(Discovery({}, (), [], "split/class", []), tmp_path, tmp_path / "data")
    assert got.rejected == [Rejection("train", "notes.txt", BESIDE.format(name="data"))]
