"""Roboflow's classification export (`train/`, `valid/`, `test/`, each with its images and a `_classes.csv` of
`filename` and one-hot columns, the README files beside them): converted as it lies, several classes an image with
--multi-label (converters/images/folder_labels.py). Before, its split folders of loose images were converted
unlabeled, with a warning, and each `_classes.csv` rejected as not an image."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, split_items, split_rejections, touch

from converters.images.discover import discover_images
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

HEADER = "filename, dog, cat, bird\n"  # as Roboflow writes it: a space after each comma, its classes' order


def _export(root: Path, rows: dict[str, dict[str, str]]) -> Path:
    """An export of `rows` (split folder -> file -> its one-hot cells), the README files at the top."""
    for folder, files in rows.items():
        touch(root, *(f"{folder}/{name}" for name in [*files, "unlisted.jpg"][:len(files) + (folder == "train")]))
        (root / folder / "_classes.csv").write_text(HEADER + "".join(f"{n},{c}\n" for n, c in files.items()))
    (root / "README.roboflow.txt").write_text("exported from roboflow.com\n")
    (root / "README.dataset.txt").write_text("# pets\n")
    return root


def test_a_multi_label_export_converts_with_its_column_order_and_splits(tmp_path):
    d = discover_images(_export(tmp_path, {"train": {"a_jpg.rf.1.jpg": "1,0,1", "b_jpg.rf.2.jpg": "0,0,0"},
                                           "valid": {"c_jpg.rf.3.jpg": "0,1,0"}, "test": {"d.jpg": "1,1,1"}}),
                        multi_label=True)
    assert d.layout == "roboflow" and d.classes == ("dog", "cat", "bird")  # the columns' order, not sorted
    assert split_items(d) == {"train": [("train/a_jpg.rf.1.jpg", (0, 2)), ("train/b_jpg.rf.2.jpg", ())],
                              "val": [("valid/c_jpg.rf.3.jpg", (1,))], "test": [("test/d.jpg", (0, 1, 2))]}
    assert split_rejections(d) == [
        ("", "README.dataset.txt", "not inside a split folder (train, val, test, "
                                   "or an alias of theirs such as training, valid, "
                                   "validation, testing)"),
        ("", "README.roboflow.txt", "not inside a split folder (train, val, test, "
                                    "or an alias of theirs such as training, valid, "
                                    "validation, testing)"),
        ("train", "train/unlisted.jpg", "not listed in labels file train/_classes.csv")]


def test_one_class_a_row_converts_without_the_option_and_two_need_it(tmp_path):
    src = _export(tmp_path, {"train": {"a.jpg": "0,0,1", "b.jpg": "1,0,0"}, "test": {"c.jpg": "0,1,0"}})
    d = discover_images(src)
    assert d.classes == ("dog", "cat", "bird")
    assert split_items(d) == {"train": [("train/a.jpg", 2), ("train/b.jpg", 0)], "test": [("test/c.jpg", 1)]}
    (src / "test" / "_classes.csv").write_text(HEADER + "c.jpg,0,1,1\n")
    with pytest.raises(ConvertError, match=r"test/_classes.csv:2: 'c.jpg' is marked with 2 classes .* \(a "
                                           r"multi-label table converts with --multi-label\)"):
        discover_images(src)


def test_splits_whose_columns_differ_take_the_classes_of_all_sorted(tmp_path):
    src = _export(tmp_path, {"train": {"a.jpg": "0,0,1"}, "test": {"c.jpg": "0,1,0"}})
    (src / "test" / "_classes.csv").write_text("filename, cat, eel\nc.jpg,0,1\n")
    d = discover_images(src)
    assert d.classes == ("bird", "cat", "dog", "eel")
    assert split_items(d) == {"train": [("train/a.jpg", 0)], "test": [("test/c.jpg", 3)]}


def test_a_split_without_its_table_is_rejected_and_two_tables_in_a_folder_refused(tmp_path):
    src = _export(tmp_path, {"train": {"a.jpg": "0,0,1"}})
    touch(src, "valid/b.jpg")
    d = discover_images(src)
    assert split_items(d) == {"train": [("train/a.jpg", 2)]}
    assert ("val", "valid/b.jpg", "no label: valid/ holds no _classes.csv, as train/_classes.csv does") in \
        split_rejections(d)
    (src / "train" / "metadata.csv").write_text("file_name,label\na.jpg,x\n")
    with pytest.raises(ConvertError, match=r"train holds metadata.csv and _classes.csv: which one lists its images"):
        discover_images(src)


def test_the_export_converts_on_the_real_photos(tmp_path):
    src = tmp_path / "pets.v1i.multiclass"
    marks = ["1,0,0", "0,1,1", "0,0,0", "1,1,0", "0,0,1"]
    tables: dict[str, str] = {}
    expected = {}
    for i, photo in enumerate(sorted(PHOTOS.glob("*.jpg"))[:5]):
        folder = ("train", "train", "train", "valid", "test")[i]
        (src / folder).mkdir(parents=True, exist_ok=True)
        name = f"{photo.stem}_jpg.rf.{i:032x}.jpg"  # Roboflow's renamed files
        shutil.copyfile(photo, src / folder / name)
        tables[folder] = tables.get(folder, HEADER) + f"{name},{marks[i]}\n"
        split = {"valid": "val"}.get(folder, folder)
        expected[name] = (split, [j for j, m in enumerate(marks[i].split(",")) if m == "1"])
    for folder, text in tables.items():
        (src / folder / "_classes.csv").write_text(text)
    assert cli(["convert", str(src), str(tmp_path / "dst"), "--multi-label", "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ("dog", "cat", "bird") and m.extra["layout"] == "roboflow" and not m.rejected
    assert class_lists(tmp_path / "dst", lambda source: Path(source).name) == expected
