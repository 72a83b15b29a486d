"""CUB-200-2011 as its archive unpacks (`CUB_200_2011/images/`, `images.txt`, `image_class_labels.txt`,
`train_test_split.txt`, `classes.txt`, and the boxes, parts and attributes beside them), and NABirds, which ships
the same lists: converted as they lie (converters/images/cub.py). Before, the folder was read as a tree whose
classes were `attributes`, `images` and `parts`, every bird of class `images` in one split. The images are the real
photos of tests/data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, convert_images

from converters.images import cub
from converters.images.discover import discover_images
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

CLASSES = {"1": "001.Black_footed_Albatross", "2": "002.Laysan_Albatross", "3": "003.Sooty_Albatross"}
# image id -> (class id, train flag)
IMAGES = {"1": ("1", "1"), "2": ("1", "0"), "3": ("3", "1"), "4": ("2", "0"), "5": ("3", "0")}


def _cub(root: Path, images=IMAGES, classes=CLASSES) -> Path:
    """`CUB_200_2011/` of the photos, one image no list names, the lists and what lies beside them."""
    data = root / "CUB_200_2011"
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    paths = {}
    for image, (class_id, _) in images.items():
        paths[image] = f"{classes.get(class_id, 'x')}/{classes.get(class_id, 'x')[4:]}_{image}.jpg"
        (data / "images" / paths[image]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(next(photos), data / "images" / paths[image])
    first = next(iter(paths))
    shutil.copyfile(next(photos), data / "images" / paths[first].replace(f"_{first}.jpg", "_99.jpg"))
    (data / "images.txt").write_text("".join(f"{i} {p}\n" for i, p in paths.items()))
    (data / "image_class_labels.txt").write_text("".join(f"{i} {c}\n" for i, (c, _) in images.items()))
    (data / "train_test_split.txt").write_text("".join(f"{i} {t}\n" for i, (_, t) in images.items()))
    (data / "classes.txt").write_text("\n".join(f"{c} {n}\n" for c, n in classes.items()))  # blank lines between
    (data / "bounding_boxes.txt").write_text("1 60.0 27.0 325.0 304.0\n")
    (data / "parts").mkdir()
    (data / "parts" / "parts.txt").write_text("1 back\n")
    (data / "attributes").mkdir()
    (root / "attributes.txt").write_text("1 has_bill_shape::curved\n")
    return root


def test_the_archive_converts_with_its_classes_in_order_and_its_split(tmp_path):
    src = _cub(tmp_path / "src")
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == tuple(CLASSES.values()) and m.extra["layout"] == "cub"
    assert class_lists(tmp_path / "dst", lambda source: Path(source).stem.rsplit("_", 1)[1], field="label") == {
        i: ({"1": "train", "0": "test"}[t], int(c) - 1) for i, (c, t) in IMAGES.items()}  # label = class id - 1
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("CUB_200_2011/images/001.Black_footed_Albatross/Black_footed_Albatross_99.jpg",
         "not listed in labels file images.txt")]


def test_nabirds_lists_of_uuids_and_a_hierarchy_keep_the_classes_images_have(tmp_path):
    classes = {"0": "Birds", "22": "Perching Birds", "817": "Oak Titmouse", "295": "Mallard (Male)"}
    images = {"0000139e-21dc": ("817", "1"), "0000d9fc-4e02": ("295", "0")}
    data = _cub(tmp_path, images, classes) / "CUB_200_2011"
    data.rename(tmp_path / "nabirds")
    assert cub.found(tmp_path) == tmp_path / "nabirds" and cub.found(tmp_path / "nabirds") == tmp_path / "nabirds"
    d = discover_images(tmp_path)
    assert d.classes == ("Oak Titmouse", "Mallard (Male)")  # classes.txt's order, the nodes of no image left out
    assert sorted((it.split, Path(it.rel).stem.rsplit("_", 1)[1], it.label) for items in d.splits.values()
                  for it in items) == [("test", "0000d9fc-4e02", 1), ("train", "0000139e-21dc", 0)]


def _same_path(path: Path) -> None:
    """Image 2 listed with image 1's path."""
    lines = path.read_text().splitlines()
    lines[1] = "2 " + lines[0].split(" ", 1)[1]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: (d / "train_test_split.txt").write_text("1 1\n2 0\n3 1\n4 0\n5 2\n"),
     r"train_test_split.txt:5: expected 1 \(train\) or 0 \(test\), got '2'"),
    (lambda d: (d / "train_test_split.txt").write_text("1 1\n2 0\n3 1\n4 0\n"),
     r"train_test_split.txt gives the image 5 \(.*images.txt:5\) nothing: the lists are not CUB's"),
    (lambda d: (d / "image_class_labels.txt").write_text("1 1\n2 1\n4 2\n5 3\n"),
     r"image_class_labels.txt gives the image 3 \(.*images.txt:3\) nothing: the lists are not CUB's"),
    (lambda d: (d / "image_class_labels.txt").write_text("1 1\n2 1\n3 3\n4 2\n5 9\n"),
     r"classes.txt does not list the class id 9 that .*image_class_labels.txt gives"),
    (lambda d: (d / "images.txt").write_text((d / "images.txt").read_text() + "1 other.jpg\n"),
     r"images.txt:6: the id 1 again \(first on line 1\)"),
    (lambda d: (d / "classes.txt").write_text("1 001.Black_footed_Albatross\n2\n3 x\n"),
     r"classes.txt:2: expected an id and its value, got '2'"),
    (lambda d: (d / "classes.txt").write_text("1 same\n2 same\n3 x\n"), r"classes.txt names two classes alike"),
    (lambda d: _same_path(d / "images.txt"),
     r"images.txt:2: 001.Black_footed_Albatross/Black_footed_Albatross_1.jpg is listed under another id too"),
])
def test_lists_that_are_not_cubs_stop_the_conversion(tmp_path, change, problem):
    src = _cub(tmp_path)
    change(src / "CUB_200_2011")
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "dst")


def test_other_labels_asked_for_leave_the_lists_unread(tmp_path):
    src = _cub(tmp_path)
    m = convert_images(src / "CUB_200_2011" / "images", tmp_path / "a").manifest  # the class folders, one split
    assert m.classes == tuple(CLASSES.values()) and list(m.splits) == ["train"]
    d = discover_images(src, unlabeled=True)
    assert d.layout == "unlabeled"
    with pytest.raises(ValueError, match="--multi-label reads the classes"):
        discover_images(src, multi_label=True)


def test_a_folder_of_images_without_the_lists_is_no_cub(tmp_path):
    src = _cub(tmp_path)
    (src / "CUB_200_2011" / "train_test_split.txt").unlink()
    assert cub.found(src) is None and cub.found(src / "CUB_200_2011") is None
    assert discover_images(src / "CUB_200_2011").layout == "class"
