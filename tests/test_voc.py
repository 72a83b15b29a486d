"""Pascal VOC's classification task as the devkit unpacks it (`VOCdevkit/VOC2007/`: `JPEGImages/`, and in
`ImageSets/Main/` the split lists and a list of marks a class and split, `000005 -1`, `000007  1`, `000009  0`):
`fastdata convert VOC2007/ DST --multi-label` (converters/images/voc.py). The images are the real photos of
tests/data, named as VOC names its images."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from conftest_images import loader
from helpers import PHOTOS, class_lists, convert_images

from converters.images.voc import read_voc
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

CLASSES = ("car", "cat", "dog", "person")  # sorted, as VOC's 20 are
IMAGES = {"train": ["000005", "000007", "000009", "000012"], "val": ["000016", "000017", "000019"],
          "test": ["000001", "000002"]}
MARKS = {  # image -> the mark of each class, in CLASSES' order; 0: only difficult objects of that class
    "000005": [1, -1, -1, 1], "000007": [-1, 1, -1, -1], "000009": [-1, -1, 0, 1], "000012": [1, 1, 1, -1],
    "000016": [-1, -1, 1, -1], "000017": [0, -1, -1, 0], "000019": [-1, 1, -1, 1],
    "000001": [-1, -1, 1, 1], "000002": [1, -1, -1, -1]}


def _voc(root: Path, *, test_marks: bool = True) -> Path:
    """`VOCdevkit/VOC2007/` with the test set unpacked beside trainval (VOC2012's test set: no class test lists),
    its annotations and segmentation masks, the trainval lists, and one image no list names."""
    src = root / "VOCdevkit" / "VOC2007"
    main = src / "ImageSets" / "Main"
    for folder in ("JPEGImages", "Annotations", "SegmentationClass"):
        (src / folder).mkdir(parents=True)
    main.mkdir(parents=True)
    photos = sorted(PHOTOS.glob("*.jpg"))
    for i, image in enumerate([*MARKS, "000032"]):
        shutil.copyfile(photos[i], src / "JPEGImages" / f"{image}.jpg")
        (src / "Annotations" / f"{image}.xml").write_text(f"<annotation><filename>{image}.jpg</filename></annotation>")
    shutil.copyfile(photos[0], src / "SegmentationClass" / "000005.png")  # a mask: not an image to classify
    for split, images in {**IMAGES, "trainval": IMAGES["train"] + IMAGES["val"]}.items():
        (main / f"{split}.txt").write_text("".join(f"{i}\n" for i in images))
        for c, cls in enumerate(CLASSES):
            if split != "test" or test_marks:
                (main / f"{cls}_{split}.txt").write_text("".join(f"{i} {MARKS[i][c]:2d}\n" for i in images))
    return src


def _lists(dst: Path) -> dict[str, tuple[str, list[int]]]:
    """Each converted sample's image id -> (its split, the classes its json member lists)."""
    return class_lists(dst, lambda source: Path(source).stem)


def _expected(splits=("train", "val", "test")) -> dict[str, tuple[str, list[int]]]:
    return {i: (s, [c for c, mark in enumerate(MARKS[i]) if mark >= 0]) for s in splits for i in IMAGES[s]}


def test_the_devkit_folder_converts_with_its_classes_and_splits(tmp_path):
    src = _voc(tmp_path)
    assert cli(["convert", str(src), str(tmp_path / "dst"), "--multi-label", "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == CLASSES and m.extra["layout"] == "voc" and m.extra["multi_label"] is True
    assert {s: m.split(s).samples for s in m.splits} == {"train": 4, "val": 3, "test": 2}
    assert _lists(tmp_path / "dst") == _expected()  # a 0 (difficult objects only) is a class of the image
    assert [(r["split"], r["source"], r["reason"]) for r in m.rejected] == [
        ("train", "JPEGImages/000032.jpg", "not listed in labels file ImageSets/Main")]


def test_a_test_split_no_class_list_marks_is_rejected_image_by_image(tmp_path):
    src = _voc(tmp_path, test_marks=False)
    m = convert_images(src, tmp_path / "dst", multi_label=True).manifest
    assert list(m.splits) == ["train", "val"] and _lists(tmp_path / "dst") == _expected(("train", "val"))
    reasons = sorted((r["split"], r["source"], r["reason"]) for r in m.rejected)
    unmarked = "in test.txt, which no class list marks (the split's labels are not published)"
    assert reasons == [("test", "JPEGImages/000001.jpg", unmarked), ("test", "JPEGImages/000002.jpg", unmarked),
                       ("train", "JPEGImages/000032.jpg", "not listed in labels file ImageSets/Main")]


def test_a_test_image_in_train_too_stops_it_and_a_dangling_one_keeps_its_reason(tmp_path):
    src = _voc(tmp_path, test_marks=False)
    test_list = src / "ImageSets" / "Main" / "test.txt"
    test_list.write_text(test_list.read_text() + "000005\n")
    with pytest.raises(ConvertError, match=r"000005 is in test.txt and in train.txt: an image has one split"):
        convert_images(src, tmp_path / "dst", multi_label=True)
    test_list.write_text("000001\n000002\n")
    (src / "JPEGImages" / "000001.jpg").unlink()
    (src / "JPEGImages" / "000001.jpg").symlink_to(src / "gone.jpg")
    m = convert_images(src, tmp_path / "ok", multi_label=True).manifest
    reasons = {r["source"]: r["reason"] for r in m.rejected}
    assert reasons["JPEGImages/000002.jpg"].startswith("in test.txt, which no class list marks")
    assert not reasons["JPEGImages/000001.jpg"].startswith("in test.txt")


def test_class_lists_of_a_split_without_its_list_are_not_read_and_a_big_list_is_refused(tmp_path, monkeypatch):
    import converters.images.voc as voc

    src = _voc(tmp_path)
    (src / "ImageSets" / "Main" / "test.txt").unlink()
    (src / "ImageSets" / "Main" / "bird_test.txt").write_text("000001 1\n")
    labels, unmarked = read_voc(src)
    assert labels.classes == CLASSES and unmarked == {} and set(labels.splits.values()) == {"train", "val"}
    val = (src / "ImageSets" / "Main" / "val.txt").read_bytes()
    (src / "ImageSets" / "Main" / "val.txt").write_bytes(b"000016\n\xff\n")
    with pytest.raises(ConvertError, match=r"cannot read .*Main/val.txt: 'utf-8' codec can't decode"):
        read_voc(src)
    (src / "ImageSets" / "Main" / "val.txt").write_bytes(val)
    monkeypatch.setattr(voc, "MAX_FILE", 30)
    with pytest.raises(ConvertError, match=r"Main/car_train.txt: 40 bytes, more than a VOC list holds"):
        read_voc(src)
    assert not voc.found(src / "ImageSets") and not voc.found(tmp_path)
    shutil.rmtree(src / "ImageSets")
    assert not voc.found(src)  # JPEGImages/ alone: a folder like any


def test_without_the_option_the_folder_is_refused_naming_it(tmp_path):
    src = _voc(tmp_path)
    with pytest.raises(ConvertError, match=r"is laid out as Pascal VOC \(JPEGImages/ beside ImageSets/Main/\): its "
                                           r"images have several classes each; --multi-label converts them so"):
        convert_images(src, tmp_path / "dst")
    m = convert_images(src, tmp_path / "images", unlabeled=True).manifest
    assert m.classes == () and m.split("train").samples == len(MARKS) + 2  # every image under it, the mask too


def _edit(src: Path, name: str, change) -> None:
    path = src / "ImageSets" / "Main" / name
    path.write_text(change(path.read_text()))


@pytest.mark.parametrize(("name", "change", "problem"), [
    ("cat_train.txt", lambda t: t.replace("000007  1", "000007  2"),
     r"cat_train.txt:2: expected an image id and its mark \(1, 0 or -1\), got '000007 2'"),
    ("cat_train.txt", lambda t: t + "000007 -1\n", r"cat_train.txt:5: '000007' is marked again"),
    ("cat_train.txt", lambda t: t.replace("000012  1\n", ""), r"cat_train.txt: does not mark 000012: the lists are "
                                                               r"not VOC's"),
    ("cat_val.txt", lambda t: t + "000005  1\n", r"cat_val.txt: marks 000005, which its split's list lacks"),
    ("val.txt", lambda t: t + "000005\n", r"000005 is in train.txt and in val.txt: an image has one split"),
    ("train.txt", lambda t: t.replace("000009", "000009 1"), r"train.txt:3: expected an image id \(000005\), got "
                                                             r"'000009 1'"),
    ("dog_val.txt", None, r"no dog_val.txt where the other classes have their val list: the lists are not VOC's"),
])
def test_lists_that_are_not_vocs_stop_the_conversion(tmp_path, name, change, problem):
    src = _voc(tmp_path)
    if change is None:
        (src / "ImageSets" / "Main" / name).unlink()
    else:
        _edit(src, name, change)
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "dst", multi_label=True)
    assert not (tmp_path / "dst" / "manifest.json").exists()


def test_a_folder_of_no_split_list_or_no_class_list_is_refused(tmp_path):
    src = _voc(tmp_path)
    for path in (src / "ImageSets" / "Main").glob("*_*.txt"):
        path.unlink()
    with pytest.raises(ConvertError, match=r"Main: no class list \(aeroplane_train.txt: `000005 -1` a line\)"):
        read_voc(src)
    for path in (src / "ImageSets" / "Main").glob("*.txt"):
        path.unlink()
    with pytest.raises(ConvertError, match=r"Main: no list of a split's images \(train.txt, val.txt, test.txt\)"):
        read_voc(src)


def test_batches_carry_the_classes_as_multi_hot_rows(tmp_path):
    src = _voc(tmp_path)
    convert_images(src, tmp_path / "dst", multi_label=True, short_side=48)
    rows = []
    for split in ("train", "val", "test"):
        for _, y in loader(tmp_path / "dst", split=split, train=False, batch_size=4):
            assert y.dtype == torch.float32 and y.shape == (4, len(CLASSES))
            rows += [tuple(r) for r in y.tolist() if r[0] != -100]
    wanted = [tuple(float(m >= 0) for m in marks) for marks in MARKS.values()]
    assert sorted(rows) == sorted(wanted)
