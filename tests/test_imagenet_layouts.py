"""ImageNet as it is handed out: Kaggle's `ILSVRC/Data/CLS-LOC/` (train in class folders, val and test as loose
images, val's classes in `LOC_val_solution.csv` as boxes), and split folders of loose images only. Before, val
and test were rejected as "not inside a split folder" with no way to label them; `--labels LOC_val_solution.csv`
made every row's boxes a class of its own; and `train/*.jpg`, `val/*.jpg` became a classifier of two classes,
"train" and "val", quietly."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree, split_items, split_rejections, touch

from converters.images.discover import LOOSE_SPLIT, discover_images, labels_of_split
from converters.images.labels_csv import read_labels
from converters.tree import SPLIT_FOLDERS
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

SOLUTION = ("ImageId,PredictionString\n"
            "ILSVRC2012_val_00000001,n02 10 20 100 200 n02 5 5 50 50 \n"
            "ILSVRC2012_val_00000002,n01 1 2 3 4 \n"
            "ILSVRC2012_val_00000003,n09 1 2 3 4 \n"  # a class train does not have
            "ILSVRC2012_val_00000009,n01 1 2 3 4 \n")  # no such file


def _kaggle(root: Path) -> tuple[Path, Path]:
    src = touch(root / "ILSVRC/Data/CLS-LOC", "train/n01/n01_1.JPEG", "train/n02/n02_1.JPEG",
                 *(f"val/ILSVRC2012_val_0000000{i}.JPEG" for i in range(1, 5)), "test/ILSVRC2012_test_00000001.JPEG")
    (root / "LOC_val_solution.csv").write_text(SOLUTION)
    return src, root / "LOC_val_solution.csv"


def test_kaggles_imagenet_converts_val_by_its_solution_csv_with_trains_classes(tmp_path):
    src, solution = _kaggle(tmp_path)
    d = discover_images(src, labels_csv=f"val={solution}")
    assert d.layout == "split/class" and d.classes == ("n01", "n02")
    assert split_items(d) == {"train": [("train/n01/n01_1.JPEG", 0), ("train/n02/n02_1.JPEG", 1)],
                              "val": [("val/ILSVRC2012_val_00000001.JPEG", 1), ("val/ILSVRC2012_val_00000002.JPEG", 0)]}
    assert split_rejections(d) == [
        ("test", "test/ILSVRC2012_test_00000001.JPEG", LOOSE_SPLIT.format(split="test")),
        ("val", "val/ILSVRC2012_val_00000003.JPEG", "class not among train's classes: 'n09'"),
        ("val", "val/ILSVRC2012_val_00000004.JPEG", "not listed in labels file LOC_val_solution.csv"),
        ("val", "val/ILSVRC2012_val_00000009", "listed in LOC_val_solution.csv but no such file in the source")]


def test_a_loose_split_folder_beside_class_folders_says_how_to_label_it(tmp_path):
    src, _ = _kaggle(tmp_path)
    d = discover_images(src)
    assert set(split_items(d)) == {"train"}
    assert {(r.split, r.reason) for r in d.rejected} == {("val", LOOSE_SPLIT.format(split="val")),
                                                         ("test", LOOSE_SPLIT.format(split="test"))}
    assert LOOSE_SPLIT.startswith("not inside a class folder:")  # grouped with the loose files of class splits


def test_split_folders_of_loose_images_only_are_unlabeled_splits_with_a_warning(tmp_path, caplog):
    src = touch(tmp_path / "src", "train/a.jpg", "Validation/b.jpg", "test/c.jpg", "notes.txt")
    with caplog.at_level(logging.WARNING):
        d = discover_images(src)
    assert d.layout == "unlabeled" and d.classes == ()
    assert split_items(d) == {"train": [("train/a.jpg", None)], "val": [("Validation/b.jpg", None)],
                              "test": [("test/c.jpg", None)]}
    assert split_rejections(d) == [("", "notes.txt", f"not inside a split folder ({SPLIT_FOLDERS})")]
    assert [r.getMessage() for r in caplog.records] == [
        "the split folders Validation, test, train hold images but no class folder: converted unlabeled"]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert split_items(discover_images(src, unlabeled=True)) == split_items(d)
    assert not caplog.records  # asked for: nothing to warn about


def test_a_folder_beside_loose_split_folders_keeps_the_class_reading(tmp_path):
    d = discover_images(touch(tmp_path / "src", "train/a.jpg", "cats/b.jpg"))
    assert d.layout == "class" and d.classes == ("cats", "train")


def test_a_split_folder_labelled_alone_takes_the_csvs_classes(tmp_path):
    src = touch(tmp_path / "src", "val/a.jpg", "val/b.jpg", "train/c.jpg")
    (tmp_path / "v.csv").write_text("a.jpg,dog\nb.jpg,cat\n")
    d = discover_images(src, labels_csv=f"validation={tmp_path / 'v.csv'}")
    assert d.classes == ("cat", "dog") and split_items(d) == {"val": [("val/a.jpg", 1), ("val/b.jpg", 0)]}
    assert split_rejections(d) == [("train", "train/c.jpg", LOOSE_SPLIT.format(split="train"))]


@pytest.mark.parametrize(("tree", "table", "message"), [
    (("train/cat/a.jpg", "test/b.jpg"), "b.jpg,cat\n", r"has no val folder$"),
    (("train/cat/a.jpg", "val/cat/b.jpg"), "b.jpg,cat\n", r"val/ holds class folders, which label its images; "
                                                          r"SPLIT=FILE labels a split folder of loose images$"),
    (("train/cat/a.jpg", "val/b.jpg"), "filename,class,split\nb.jpg,cat,val\n", r"has a split column"),
])
def test_a_split_labels_file_that_cannot_apply_is_refused(tmp_path, tree, table, message):
    src = touch(tmp_path / "src", *tree)
    (tmp_path / "v.csv").write_text(table)
    with pytest.raises(ConvertError, match=message):
        discover_images(src, labels_csv=f"val={tmp_path / 'v.csv'}")


def test_split_labels_contradict_unlabeled_and_tables(tmp_path):
    src = touch(tmp_path / "src", "val/a.jpg")
    with pytest.raises(ValueError, match="contradict"):
        discover_images(src, labels_csv="val=v.csv", unlabeled=True)
    src = touch(tmp_path / "tables", "data/train-00000-of-00001.parquet")  # tables and no image file
    with pytest.raises(ValueError, match=r"labels image files; .* holds Parquet or Arrow tables$"):
        discover_images(src, labels_csv="val=v.csv")


def test_a_labels_file_whose_name_holds_an_equals_sign_is_a_plain_labels_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("val=x.csv").write_text("a.jpg,cat\n")
    assert labels_of_split("val=x.csv") is None
    assert labels_of_split("valid=missing.csv") == ("val", Path("missing.csv"))
    assert labels_of_split("val=~/LOC_val_solution.csv") == ("val", Path.home() / "LOC_val_solution.csv")
    assert labels_of_split("cats=x.csv") is None and labels_of_split("labels.csv") is None
    assert labels_of_split("val=x=1.csv") == ("val", Path("x=1.csv"))  # the split is before the first =

    d = discover_images(touch(tmp_path / "src", "a.jpg"), labels_csv="val=x.csv")
    assert d.layout == "flat+labels" and split_items(d) == {"train": [("a.jpg", 0)]}


@pytest.mark.parametrize("header", ["ImageId,PredictionString", "image_id,predictionstring"])
def test_boxes_of_one_class_give_the_image_that_class(tmp_path, header):
    (tmp_path / "s.csv").write_text(f"{header}\nimg1,n02 1 2 3.5 4 n02 5 6 7 8\nimg2, n01 -1 2 3 4 \n")
    labels = read_labels(tmp_path / "s.csv", ["img1.jpg", "img2.jpg"])
    assert labels.rows == {"img1": "n02", "img2": "n01"} and labels.classes == ("n01", "n02")


@pytest.mark.parametrize(("row", "found"), [("img2,n01 1 2 3 4 n03 1 2 3 4", "2 classes ['n01', 'n03']"),
                                            ("img2,1 2 3 4", "0 classes []"), ("img2", "0 classes []")])
def test_boxes_of_several_classes_or_none_are_refused_naming_the_line(tmp_path, row, found):
    (tmp_path / "s.csv").write_text(f"ImageId,PredictionString\nimg1,n02 1 2 3 4\n{row}\n")
    with pytest.raises(ConvertError, match=rf"s\.csv:3: 'img2' has boxes of {re.escape(found)}: an image has one "
                                           r"class here"):
        read_labels(tmp_path / "s.csv")


@pytest.mark.parametrize(("n", "classes", "warned"), [(20, 11, True), (20, 10, False), (19, 19, False)])
def test_a_table_whose_rows_mostly_have_classes_of_their_own_is_warned_about(tmp_path, caplog, n, classes, warned):
    rows = "".join(f"{i}.jpg,c{i % classes}\n" for i in range(n))  # under 20 rows: a small table, said nothing
    (tmp_path / "l.csv").write_text(rows)
    with caplog.at_level(logging.WARNING):
        read_labels(tmp_path / "l.csv")
    expected = [f"{tmp_path / 'l.csv'}: its {n} rows name {classes} classes, most of them a class of one image: is the "
                "second column the class?"]
    assert [r.getMessage() for r in caplog.records] == (expected if warned else [])


def test_kaggles_imagenet_converts_in_one_run_with_the_solutions_labels(tmp_path):
    src = make_image_tree(tmp_path / "CLS-LOC", classes=2, per_class=2, splits=("train",))
    make_image_tree(tmp_path / "v", classes=1, per_class=3)
    (src / "val").mkdir()
    for i, p in enumerate(sorted((tmp_path / "v" / "class_0").iterdir()), 1):
        p.rename(src / "val" / f"ILSVRC2012_val_{i:08d}.JPEG")
    (tmp_path / "sol.csv").write_text("ImageId,PredictionString\nILSVRC2012_val_00000001,class_1 1 2 3 4\n"
                                      "ILSVRC2012_val_00000002,class_0 1 2 3 4 class_0 5 6 7 8\n"
                                      "ILSVRC2012_val_00000003,class_1 1 2 3 4\n")
    convert_images(src, tmp_path / "out", labels=f"val={tmp_path / 'sol.csv'}")
    m = read_manifest(tmp_path / "out")
    assert m.classes == ("class_0", "class_1") and not m.rejected
    assert list(m.splits["train"].class_counts) == [2, 2] and list(m.splits["val"].class_counts) == [1, 2]


def test_split_folders_inside_class_folders_are_the_splits(tmp_path, caplog):
    """`cat/train/`, `cat/val/`: read as one split with a warning, val's images were trained on."""
    src = touch(tmp_path / "src", "cat/train/1.jpg", "cat/val/2.jpg", "dog/Training/3.jpg", "dog/test/4.jpg",
                 "loose.jpg")
    with caplog.at_level(logging.WARNING):
        d = discover_images(src)
    assert d.layout == "class/split" and d.classes == ("cat", "dog") and not caplog.records
    assert split_items(d) == {"train": [("cat/train/1.jpg", 0), ("dog/Training/3.jpg", 1)],
                              "val": [("cat/val/2.jpg", 0)], "test": [("dog/test/4.jpg", 1)]}
    assert split_rejections(d) == [("train", "loose.jpg", "not inside a class folder")]
    (src / "bird").mkdir()  # an empty class folder changes nothing
    src = touch(tmp_path / "same", "cat/train/1.jpg", "cat/val/2.jpg", "dog/train/3.jpg", "dog/val/4.jpg")
    with caplog.at_level(logging.WARNING):
        d = discover_images(src)
    assert d.layout == "class/split" and set(d.splits) == {"train", "val"}
    assert not caplog.records  # the same split folders in every class: no warning about split folders misnamed
    (src / "bird").mkdir()
    assert discover_images(src).classes == ("bird", "cat", "dog")
    empty = discover_images(touch(tmp_path / "empty", "a/.hidden"))  # nothing but an empty class: class folders
    assert empty.layout == "class" and not empty.splits


@pytest.mark.parametrize("tree", [("cat/train/1.jpg", "cat/extra/2.jpg", "dog/train/3.jpg"),  # a folder no split has
                                  ("cat/train/1.jpg", "cat/2.jpg", "dog/train/3.jpg"),  # an image beside
                                  ("cat/train/1.jpg", "dog/3.jpg"),  # a class without split folders
                                  ("cat/train/1.jpg", "dog/val")])  # a file named as a split
def test_class_folders_that_hold_more_than_split_folders_are_plain_classes(tmp_path, tree):
    d = discover_images(touch(tmp_path / "src", *tree))
    assert d.layout == "class" and set(d.splits) == {"train"} and d.classes == ("cat", "dog")


def test_two_split_folders_of_one_split_inside_a_class_are_refused(tmp_path):
    with pytest.raises(ConvertError, match="the folders 'val' and 'validation' both name the split 'val'"):
        discover_images(touch(tmp_path / "src", "cat/val/1.jpg", "cat/validation/2.jpg"))


def test_read_labels_of_no_rows_is_refused_whatever_its_header(tmp_path):
    for text in ("", "filename,class,split\n", "ImageId,PredictionString\n"):
        (tmp_path / "l.csv").write_text(text)
        with pytest.raises(ConvertError, match=r"lists no 'filename,class' rows$"):
            read_labels(tmp_path / "l.csv")


def test_path_label_lines_of_caffe_and_openmmlab_annotation_files(tmp_path):
    """`train/n01/a.JPEG 0` per line (OpenMMLab's ann_file, Caffe's list): read as one cell and refused before."""
    src = touch(tmp_path / "src", "n01/a.JPEG", "n02/my photo.jpg", "n02/c.jpg")
    (tmp_path / "train.txt").write_text("n01/a.JPEG 0\n  n02/my photo.jpg\t1\n\nn02/c 1\n")
    d = discover_images(src, labels_csv=str(tmp_path / "train.txt"))
    assert d.classes == ("0", "1")
    assert split_items(d) == {"train": [("n01/a.JPEG", 0), ("n02/c.jpg", 1), ("n02/my photo.jpg", 1)]}


def test_fgvc_aircraft_lines_of_an_id_and_a_label_with_spaces(tmp_path):
    """`images_variant_trainval.txt`: `1340192 Cessna 172`, read as torchvision reads it (the id, then the rest);
    a path with spaces and a last-word label (Caffe's) keeps being read so."""
    src = touch(tmp_path / "images", "1025794.jpg", "1340192.jpg", "0056978.jpg", "my photo.jpg", "a.jpg",
                "a.jpg b.jpg")
    (tmp_path / "variants.txt").write_text("1025794 707-320\n1340192 Cessna 172\n0056978 Global  Express\n"
                                           "my photo.jpg 3\na.jpg b.jpg 3\na.jpg 3\nnone 5 6\n")
    d = discover_images(src, labels_csv=str(tmp_path / "variants.txt"))
    assert d.classes == ("3", "6", "707-320", "Cessna 172", "Global Express")  # runs of spaces read as one
    assert split_items(d) == {"train": [("0056978.jpg", 4), ("1025794.jpg", 2), ("1340192.jpg", 3), ("a.jpg", 0),
                                        ("a.jpg b.jpg", 0), ("my photo.jpg", 0)]}
    assert split_rejections(d) == [("train", "none 5", "listed in variants.txt but no such file in the source")]


def test_places365_paths_from_a_root_name_the_files_under_the_source(tmp_path):
    src = touch(tmp_path / "data_256", "a/airfield/00000001.jpg", "b/bar/00000002.jpg")
    (tmp_path / "places.txt").write_text("/a/airfield/00000001.jpg 0\n/b/bar/00000002.jpg 1\n/z/none/3.jpg 1\n")
    d = discover_images(src, labels_csv=str(tmp_path / "places.txt"))
    assert split_items(d) == {"train": [("a/airfield/00000001.jpg", 0), ("b/bar/00000002.jpg", 1)]}
    assert split_rejections(d) == [("train", "/z/none/3.jpg", "listed in places.txt but no such file in the source")]
    (tmp_path / "val.txt").write_text("/b/bar/00000002.jpg\n")  # a split list too
    from converters.images.split_lists import apply_split_lists

    d = apply_split_lists(discover_images(src, unlabeled=True), (("val", tmp_path / "val.txt"),), "train", src)
    assert split_items(d) == {"train": [("a/airfield/00000001.jpg", None)], "val": [("b/bar/00000002.jpg", None)]}


@pytest.mark.parametrize(("head", "delimiter"), [("a.jpg,cat x", ","), ("a.jpg\tcat x", "\t"), ("a b;c", ";"),
                                                 ("a.jpg 0", " "), ("a.jpg 0 \n", " "), ("a.jpg\n", ","),
                                                 ("a.jpg \n", ",")])
def test_the_delimiter_of_a_labels_file_comes_from_its_first_line(head, delimiter):
    from converters.images.labels_csv import _delimiter

    assert _delimiter(head) == delimiter
