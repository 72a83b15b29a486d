"""Stanford Dogs as its three archives unpack side by side (`Images/<wnid>-<breed>/`, `Annotation/`,
`train_list.mat`, `test_list.mat`, `file_list.mat`): converted as it lies (converters/images/stanford_dogs.py).
Before, the folder was read as a tree of classes `Annotation` and `Images`, every dog in one split and class. The
lists are written by scipy's `savemat` as the real ones hold them (cell arrays of paths, labels from 1); the images
are the real photos of tests/data."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import PHOTOS, class_lists, convert_images
from scipy.io import savemat

from converters.images.discover import discover_images
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

BREEDS = ["n02085620-Chihuahua", "n02085782-Japanese_spaniel", "n02110958-pug"]
LISTS = {"train": [f"{BREEDS[2]}/n02110958_1.jpg", f"{BREEDS[0]}/n02085620_7.jpg", f"{BREEDS[1]}/n02085782_2.jpg"],
         "test": [f"{BREEDS[0]}/n02085620_9.jpg", f"{BREEDS[2]}/n02110958_5.jpg"]}


def _cells(paths: list[str]) -> np.ndarray:
    out = np.empty((len(paths), 1), dtype=object)
    for i, p in enumerate(paths):
        out[i, 0] = np.array([p])
    return out


def _write_list(path: Path, paths: list[str]) -> None:
    savemat(path, {"file_list": _cells(paths), "annotation_list": _cells([p[:-4] for p in paths]),
                   "labels": np.array([[BREEDS.index(b) + 1 if (b := p.split("/")[0]) in BREEDS else 0]
                                                for p in paths], dtype=np.float64)})


def _dogs(root: Path, lists=LISTS) -> Path:
    """The three archives unpacked in `root`: the photos, one no list names, the boxes and the lists."""
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for entry in [*(e for rows in lists.values() for e in rows), f"{BREEDS[1]}/n02085782_99.jpg"]:
        (root / "Images" / entry).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(next(photos), root / "Images" / entry)
        (root / "Annotation" / entry[:-4]).parent.mkdir(parents=True, exist_ok=True)
        (root / "Annotation" / entry[:-4]).write_text("<annotation/>")
    for split, rows in lists.items():
        _write_list(root / f"{split}_list.mat", rows)
    _write_list(root / "file_list.mat", [e for rows in lists.values() for e in rows])
    return root


def test_the_archives_convert_with_the_breeds_sorted_and_the_lists_splits(tmp_path):
    src = _dogs(tmp_path / "src")
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == tuple(BREEDS) and m.extra["layout"] == "stanford_dogs"
    assert class_lists(tmp_path / "dst", lambda source: Path(source).stem, field="label") == {
        Path(e).stem: (split, BREEDS.index(e.split("/")[0])) for split, rows in LISTS.items() for e in rows}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        (f"Images/{BREEDS[1]}/n02085782_99.jpg", "not listed in labels file train_list.mat and test_list.mat")]


def _broken(root: Path, value) -> None:
    savemat(root / "test_list.mat", value)


def _two_paths_a_cell() -> np.ndarray:
    out = np.empty((1, 1), dtype=object)
    out[0, 0] = np.array([LISTS["test"][0], LISTS["test"][0].replace("_9", "_8")])  # a char matrix of two rows
    return out


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: _write_list(d / "test_list.mat", [LISTS["train"][0]]),
     r"test_list.mat: 'file_list' cell 1, n02110958-pug/n02110958_1.jpg, is in train too: an image has one split"),
    (lambda d: _write_list(d / "test_list.mat", ["loose.jpg"]),
     r"test_list.mat: 'file_list' cell 1, 'loose.jpg', names no image in a breed folder"),
    (lambda d: _write_list(d / "test_list.mat", ["/n02085620_9.jpg"]), r"cell 1, '/n02085620_9.jpg', names no image"),
    (lambda d: _broken(d, {"labels": np.array([[1.0]])}),
     r"test_list.mat: no 'file_list' of image paths \(a cell array\): the file is not Stanford Dogs'"),
    (lambda d: _broken(d, {"file_list": np.array([[1.0], [2.0]])}), r"test_list.mat: no 'file_list' of image paths"),
    (lambda d: _broken(d, {"file_list": _cells([""])}),  # an empty cell
     r"test_list.mat: 'file_list' cell 1 holds no image path"),
    (lambda d: _broken(d, {"file_list": np.array([[np.array([1.0])]], dtype=object)}),
     r"test_list.mat: 'file_list' cell 1 holds no image path"),
    (lambda d: _broken(d, {"file_list": _two_paths_a_cell()}), r"test_list.mat: 'file_list' cell 1 holds no image"),
    (lambda d: (d / "test_list.mat").write_bytes(b"not MATLAB"), r"test_list.mat: not a MATLAB 5 file"),
])
def test_lists_that_are_not_stanford_dogs_stop_the_conversion(tmp_path, change, problem):
    src = _dogs(tmp_path)
    change(src)
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "dst")


def test_the_images_folder_alone_or_without_a_list_is_a_tree(tmp_path):
    src = _dogs(tmp_path)
    assert discover_images(src / "Images").layout == "class"
    (src / "test_list.mat").unlink()
    d = discover_images(src)
    assert d.layout == "class" and d.classes == ("Annotation", "Images")  # as before, with the warning
