"""Several classes an image from tables of a row an image and class (`--labels FILE --multi-label`): a long
`filename,label` table whose files repeat, and Open Images' image-level labels (`ImageID,Source,LabelName,
Confidence`, 1 for a class that is there, 0 for one checked and absent). The photos are the real ones of
tests/data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, convert_images

from converters.images.labels_csv import read_labels
from fastdata.errors import ConvertError


def _photos(src: Path, names: list[str]) -> None:
    src.mkdir(parents=True)
    for name, photo in zip(names, sorted(PHOTOS.glob("*.jpg"))):
        shutil.copyfile(photo, src / name)


def test_a_long_table_gives_a_file_the_classes_of_all_its_rows(tmp_path):
    _photos(tmp_path / "src", ["a.jpg", "b.jpg", "c.jpg"])
    (tmp_path / "long.csv").write_text("filename,label\na.jpg,cat\nb.jpg,dog\na.jpg,dog\na.jpg,cat\nc.jpg,bird\n")
    labels = read_labels(tmp_path / "long.csv", multi=True)
    assert labels.rows == {"a.jpg": ("cat", "dog"), "b.jpg": ("dog",), "c.jpg": ("bird",)}
    convert_images(tmp_path / "src", tmp_path / "dst", labels=str(tmp_path / "long.csv"), multi_label=True)
    assert class_lists(tmp_path / "dst") == {"a.jpg": ("train", [1, 2]), "b.jpg": ("train", [2]),
                                             "c.jpg": ("train", [0])}
    with pytest.raises(ConvertError, match=r"long.csv:4: 'a.jpg' is listed again \(first on line 2\); each file has "
                                           r"one label: remove the duplicate row$"):
        read_labels(tmp_path / "long.csv")  # one class a file: a second row is a mistake


def test_rows_of_one_file_in_two_splits_are_refused(tmp_path):
    (tmp_path / "split.csv").write_text("filename,label,split\na.jpg,cat,train\na.jpg,dog,train\nb.jpg,cat,val\n"
                                        "b.jpg,dog,test\n")
    with pytest.raises(ConvertError, match=r"split.csv:5: 'b.jpg' is listed again \(first on line 4\); .* \(its "
                                           r"split differs\)"):
        read_labels(tmp_path / "split.csv", multi=True)
    (tmp_path / "split.csv").write_text("filename,label,split\na.jpg,cat,train\na.jpg,dog,train\nb.jpg,cat,val\n")
    labels = read_labels(tmp_path / "split.csv", multi=True)
    assert labels.rows == {"a.jpg": ("cat", "dog"), "b.jpg": ("cat",)} and labels.splits == {"a.jpg": "train",
                                                                                             "b.jpg": "val"}


def test_a_one_hot_row_twice_is_still_refused(tmp_path):
    (tmp_path / "hot.csv").write_text("image,MEL,NV\na,1,0\na,0,1\n")
    with pytest.raises(ConvertError, match=r"hot.csv:3: 'a' is listed again \(first on line 2\); each file has one "
                                           r"label: remove the duplicate row$"):
        read_labels(tmp_path / "hot.csv", multi=True)


OPEN_IMAGES = ("ImageID,Source,LabelName,Confidence\n"
               "000002b66c9c498e,verification,/m/014sv8,1\n"
               "000002b66c9c498e,verification,/m/01g317,1\n"
               "000002b66c9c498e,crowdsource-verification,/m/0284d,0\n"
               "000002b97e5471a0,verification,/m/05s2s,1\n"
               "000002b97e5471a0,verification,/m/05s2s,1\n"
               "000002c707c9895e,verification,/m/0c9ph5,0\n")


def test_open_images_labels_give_the_classes_confirmed_there(tmp_path):
    _photos(tmp_path / "train", ["000002b66c9c498e.jpg", "000002b97e5471a0.jpg", "000002c707c9895e.jpg"])
    labels_file = tmp_path / "oidv6-train-annotations-human-imagelabels.csv"
    labels_file.write_text(OPEN_IMAGES)
    labels = read_labels(labels_file, multi=True)
    assert labels.classes == ("/m/014sv8", "/m/01g317", "/m/05s2s")  # a 0 names no class
    assert labels.rows == {"000002b66c9c498e": ("/m/014sv8", "/m/01g317"), "000002b97e5471a0": ("/m/05s2s",),
                           "000002c707c9895e": ()}
    convert_images(tmp_path / "train", tmp_path / "dst", labels=str(labels_file), multi_label=True)
    assert class_lists(tmp_path / "dst") == {"000002b66c9c498e.jpg": ("train", [0, 1]),
                                             "000002b97e5471a0.jpg": ("train", [2]),
                                             "000002c707c9895e.jpg": ("train", [])}


def test_open_images_labels_without_the_option_or_with_another_confidence_are_refused(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text(OPEN_IMAGES)
    with pytest.raises(ConvertError, match=r"labels.csv: Open Images' image-level labels \(ImageID, LabelName, "
                                           r"Confidence\): several classes an image; convert with --multi-label"):
        read_labels(path)
    path.write_text(OPEN_IMAGES.replace("/m/05s2s,1\n", "/m/05s2s,0.5\n", 1))
    with pytest.raises(ConvertError, match=r"labels.csv:5: expected 4 cells and a Confidence of 0 or 1, got "):
        read_labels(path, multi=True)
    path.write_text(OPEN_IMAGES + "000002c707c9895e,verification\n")
    with pytest.raises(ConvertError, match=r"labels.csv:8: expected 4 cells"):
        read_labels(path, multi=True)
