"""Stanford Cars as torchvision's `StanfordCars` expects it (`stanford_cars/cars_train/`, `cars_test/`, the devkit's
MATLAB files and `cars_test_annos_withlabels.mat`): converted as it lies (converters/images/stanford_cars.py).
Before, the folder was two classes, `cars_test` and `cars_train`, in one split, without a word. The images are the
real photos of tests/data; the MATLAB files are written with scipy as the real ones are laid out."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import PHOTOS, class_lists, convert_images, split_rejections
from scipy.io import savemat

from converters.images import stanford_cars
from converters.images.discover import discover_images
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

NAMES = ["AM General Hummer SUV 2000", "Acura RL Sedan 2012", "smart fortwo Convertible 2012"]
TRAIN = {"00001.jpg": 3, "00002.jpg": 1, "00003.jpg": 3}  # file -> class id (1-based)
TEST = {"00001.jpg": 2, "00002.jpg": 3}
FIELDS = ("bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "fname")


BOX = {"bbox_x1": 5, "bbox_y1": 6, "bbox_x2": 30, "bbox_y2": 20}


def _struct(records: list[dict[str, object]], fields: tuple[str, ...]) -> np.ndarray:
    """A 1 x N MATLAB struct array of `fields` as Stanford Cars' files hold them: each record's box (BOX), its
    strings as MATLAB strings and its numbers as uint8 (an array is kept as it is: a double, a string, two values)."""
    out = np.empty((1, len(records)), dtype=[(f, object) for f in fields])
    for i, record in enumerate(records):
        values = {**BOX, **record}
        out[0, i] = tuple(np.array([v]) if isinstance(v, str) else v if isinstance(v, np.ndarray) else
                          np.array([[v]], dtype=np.uint8) for v in (values[f] for f in fields))
    return out


def _annotations(rows: dict[str, object], fields=FIELDS) -> np.ndarray:
    """The devkit's annotations: the box, the class (uint8) and the file name of each image."""
    return _struct([{"class": class_id, "fname": fname} for fname, class_id in rows.items()], fields)


def _names(names: list[object]) -> np.ndarray:
    out = np.empty((1, len(names)), dtype=object)
    for i, name in enumerate(names):
        out[0, i] = np.array([name]) if isinstance(name, str) else name
    return out


def _cars(root: Path, train=TRAIN, test=TEST) -> Path:
    """`stanford_cars/`: the photos, one no annotation names, the devkit and the test labels."""
    data = root / "stanford_cars"
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for folder, rows in (("cars_train", [*train, "00099.jpg"]), ("cars_test", test)):
        (data / folder).mkdir(parents=True)
        for name in rows:
            shutil.copyfile(next(photos), data / folder / name)
    (data / "devkit").mkdir()
    savemat(data / "devkit" / "cars_meta.mat", {"class_names": _names(NAMES)})
    savemat(data / "devkit" / "cars_train_annos.mat", {"annotations": _annotations(train)})
    savemat(data / "devkit" / "cars_test_annos.mat", {"annotations": _annotations(
        dict.fromkeys(test, 0), tuple(f for f in FIELDS if f != "class"))})
    (data / "devkit" / "README.txt").write_text("This file gives documentation for the cars 196 dataset.\n")
    savemat(data / "cars_test_annos_withlabels.mat", {"annotations": _annotations(test)})
    return root


def test_the_folder_converts_with_the_devkits_classes_and_the_annotations_splits(tmp_path):
    src = _cars(tmp_path / "src")
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == tuple(NAMES) and m.extra["layout"] == "stanford_cars"
    assert class_lists(tmp_path / "dst", lambda source: source.split("stanford_cars/")[1], field="label") == {
        **{f"cars_train/{f}": ("train", c - 1) for f, c in TRAIN.items()},
        **{f"cars_test/{f}": ("test", c - 1) for f, c in TEST.items()}}
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("stanford_cars/cars_train/00099.jpg",
         "not listed in labels file cars_train_annos.mat and cars_test_annos_withlabels.mat"),
        *((f"stanford_cars/devkit/{name}", "Stanford Cars' devkit: not read as images")
          for name in ("README.txt", "cars_meta.mat", "cars_test_annos.mat", "cars_train_annos.mat"))]


def test_the_training_images_alone_and_the_folder_itself(tmp_path):
    src = _cars(tmp_path)
    data = src / "stanford_cars"
    assert stanford_cars.found(data) == data
    shutil.rmtree(data / "cars_test")
    d = discover_images(data)
    assert list(d.splits) == ["train"] and len(d.splits["train"]) == 3
    assert not any("withlabels" in r[1] for r in split_rejections(d))  # the test labels, read or not: no image
    (data / "cars_test_annos_withlabels.mat").write_bytes(b"not read")
    assert len(discover_images(data).splits["train"]) == 3


def test_test_images_without_their_labels_stop_the_conversion(tmp_path):
    src = _cars(tmp_path)
    (src / "stanford_cars" / "cars_test_annos_withlabels.mat").unlink()
    with pytest.raises(ConvertError, match=r"cars_test: Stanford Cars' test images have no labels: "
                                           r"cars_test_annos_withlabels.mat \(a download of its own"):
        discover_images(src)


def _write(path: Path, value: dict) -> None:
    savemat(path, value)


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: _write(d / "cars_test_annos_withlabels.mat", {"annotations": _annotations({"00001.jpg": 4})}),
     r"cars_test_annos_withlabels.mat: annotation 1 has no file name, or no class from 1 to 3"),
    (lambda d: _write(d / "cars_test_annos_withlabels.mat", {"annotations": _annotations({"00001.jpg": 0})}),
     r"annotation 1 has no file name, or no class from 1 to 3"),
    (lambda d: _write(d / "cars_test_annos_withlabels.mat", {"annotations": _annotations(
        {"00001.jpg": np.array([[1.5]])})}), r"annotation 1 has no file name"),
    (lambda d: _write(d / "cars_test_annos_withlabels.mat", {"annotations": _annotations(
        {"00001.jpg": np.array([[np.nan]])})}), r"annotation 1 has no file name"),
    (lambda d: _write(d / "cars_test_annos_withlabels.mat", {"annotations": _annotations(
        {"00001.jpg": np.array([[4.0]])})}), r"annotation 1 has no file name, or no class from 1 to 3"),
    (lambda d: _write(d / "cars_test_annos_withlabels.mat", {"annotations": _annotations(
        {"00001.jpg": np.array([[1, 2]], dtype=np.uint8)})}), r"annotation 1 has no file name"),
    (lambda d: _write(d / "cars_test_annos_withlabels.mat", {"annotations": _annotations({" ": 1})}),
     r"annotation 1 has no file name"),
    (lambda d: _write(d / "devkit" / "cars_train_annos.mat", {"annotations": _annotations(
        {"00001.jpg": 1, "00002.jpg": 2, "00003.jpg": 2}, tuple(f for f in FIELDS if f != "class"))}),
     r"cars_train_annos.mat: 'annotations' is no struct array of fname and class"),
    (lambda d: _write(d / "devkit" / "cars_train_annos.mat", {"annotations": np.array([[1.0, 2.0]])}),
     r"'annotations' is no struct array"),
    (lambda d: _write(d / "devkit" / "cars_train_annos.mat", {"other": np.array([[1.0]])}),
     r"cars_train_annos.mat: no 'annotations': the file is not Stanford Cars'"),
    (lambda d: (d / "devkit" / "cars_train_annos.mat").write_bytes(b"not MATLAB"),
     r"cars_train_annos.mat: not a MATLAB 5 file"),
    (lambda d: _write(d / "devkit" / "cars_meta.mat", {"class_names": _names([*NAMES[:2], NAMES[0]])}),
     r"cars_meta.mat: 'class_names' cell 3, 'AM General Hummer SUV 2000', is cell 1 too"),
    (lambda d: _write(d / "devkit" / "cars_meta.mat", {"class_names": _names([*NAMES[:2], np.array([3.0])])}),
     r"cars_meta.mat: 'class_names' cell 3 holds no class name"),
    (lambda d: _write(d / "devkit" / "cars_meta.mat", {"class_names": _names(
        [*NAMES[:2], np.array(["Audi A4 2010", "Audi A5 2012"])])}), r"cell 3 holds no class name"),  # two rows
    (lambda d: _write(d / "devkit" / "cars_meta.mat", {"class_names": _names([*NAMES[:2], "  "])}),
     r"'class_names' cell 3 holds no class name"),
])
def test_files_that_are_not_stanford_cars_stop_the_conversion(tmp_path, change, problem):
    src = _cars(tmp_path)
    change(src / "stanford_cars")
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "dst")


def test_classes_saved_as_whole_doubles_are_read(tmp_path):
    src = _cars(tmp_path)
    savemat(src / "stanford_cars" / "cars_test_annos_withlabels.mat", {"annotations": _annotations(
        {f: np.array([[float(c)]]) for f, c in TEST.items()})})  # MATLAB's default: double
    d = discover_images(src)
    assert sorted(it.label for it in d.splits["test"]) == sorted(c - 1 for c in TEST.values())


def test_an_image_annotated_twice_stops_the_conversion(tmp_path):
    src = _cars(tmp_path)
    annotations = _annotations(TRAIN)
    annotations[0, 1] = annotations[0, 0]
    savemat(src / "stanford_cars" / "devkit" / "cars_train_annos.mat", {"annotations": annotations})
    with pytest.raises(ConvertError, match=r"cars_train_annos.mat: annotation 2 names 00001.jpg again"):
        discover_images(src)


def test_a_folder_without_the_devkit_is_a_tree(tmp_path):
    src = _cars(tmp_path)
    (src / "stanford_cars" / "devkit" / "cars_meta.mat").unlink()
    assert stanford_cars.found(src) is None
    assert discover_images(src / "stanford_cars", unlabeled=True).layout != "stanford_cars"


RELEASE = {"car_ims/000001.jpg": (3, 0), "car_ims/000002.jpg": (1, 1), "car_ims/000003.jpg": (2, 0)}
RELEASE_FIELDS = ("relative_im_path", "bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "test")


def _release_annotations(rows: dict[str, tuple[object, object]], fields=RELEASE_FIELDS) -> np.ndarray:
    """cars_annos.mat's annotations: each image's path, box, class and test flag (uint8, as released)."""
    return _struct([{"relative_im_path": path, "class": class_id, "test": test}
                    for path, (class_id, test) in rows.items()], fields)


def _release(root: Path, rows=RELEASE) -> Path:
    """The first release: car_ims/ (the photos, and one no annotation names) beside cars_annos.mat."""
    (root / "car_ims").mkdir(parents=True)
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for rel in [*rows, "car_ims/009999.jpg"]:
        shutil.copyfile(next(photos), root / rel)
    savemat(root / "cars_annos.mat", {"annotations": _release_annotations(rows), "class_names": _names(NAMES)})
    return root


def test_the_first_release_converts_with_its_test_flags_as_the_splits(tmp_path):
    src = _release(tmp_path / "cars")
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == tuple(NAMES) and m.extra["layout"] == "stanford_cars"
    assert class_lists(tmp_path / "dst", field="label") == {
        rel: ("test" if test else "train", class_id - 1) for rel, (class_id, test) in RELEASE.items()}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("car_ims/009999.jpg", "not listed in labels file cars_annos.mat")]


@pytest.mark.parametrize(("rows", "message"), [
    ({"car_ims/000001.jpg": (3, 2)}, r"annotation 1 has no image path, no class from 1 to 3, or a test flag that is "
                                     r"neither 0 nor 1"),
    ({"car_ims/000001.jpg": (4, 0)}, r"annotation 1 has no image path, no class from 1 to 3"),
    ({"car_ims/000001.jpg": (1, np.array([["yes"]]))}, r"annotation 1 has no image path"),
    ({"car_ims/000001.jpg": (1, np.array([[0.5]]))}, r"annotation 1 has no image path"),
])
def test_a_release_annotation_that_cannot_be_read_right_stops_the_conversion(tmp_path, rows, message):
    src = _release(tmp_path, rows)
    with pytest.raises(ConvertError, match=rf"cars_annos\.mat: {message}"):
        discover_images(src)


def test_a_release_image_annotated_twice_or_annotations_without_a_test_flag_are_refused(tmp_path):
    src = _release(tmp_path)
    rows = {**RELEASE}
    annotations = _release_annotations(rows)
    twice = np.concatenate([annotations, annotations[:, :1]], axis=1)
    savemat(src / "cars_annos.mat", {"annotations": twice, "class_names": _names(NAMES)})
    with pytest.raises(ConvertError, match=r"annotation 4 names car_ims/000001\.jpg again: an image has one class"):
        discover_images(src)
    fields = tuple(f for f in RELEASE_FIELDS if f != "test")
    savemat(src / "cars_annos.mat", {"annotations": _release_annotations(
        {p: (c, 0) for p, (c, _) in rows.items()}, fields), "class_names": _names(NAMES)})
    with pytest.raises(ConvertError, match=r"'annotations' is no struct array of relative_im_path and class and test: "
                                           r"the file is not Stanford Cars'$"):
        discover_images(src)


def test_the_release_is_found_in_stanford_cars_and_not_without_car_ims(tmp_path):
    src = _release(tmp_path / "data" / "stanford_cars")
    assert stanford_cars.release_found(tmp_path / "data") == src
    assert sorted(discover_images(tmp_path / "data").splits) == ["test", "train"]
    shutil.rmtree(src / "car_ims")
    assert stanford_cars.release_found(tmp_path / "data") is None
