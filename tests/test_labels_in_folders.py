"""A labels file that names each image by its name alone while the images lie in folders: Kaggle's NIH
ChestX-ray14 (`images_001/images/00000001_000.png` ... `images_012/`, `Data_Entry_2017.csv` naming
`00000001_000.png`) and HAM10000 (`HAM10000_images_part_1/` and `_part_2/`, its metadata naming `ISIC_0027419`
without an extension). The one file of that name in a folder is the row's; a name several folders hold is a
rejection naming them. The photos are the real ones of tests/data."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import PHOTOS, class_lists, convert_images

from converters.images.discover import discover_images

FINDINGS = {"00000001_000.png": "Cardiomegaly", "00000001_001.png": "Cardiomegaly|Emphysema",
            "00000002_000.png": "No Finding", "00000003_000.png": "Hernia"}


def _place(src: Path, files: dict[str, int]) -> None:
    photos = sorted(PHOTOS.glob("*.jpg"))
    for rel, k in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(photos[k], src / rel)


def test_kaggles_nih_folders_are_labelled_by_the_csvs_file_names(tmp_path):
    src = tmp_path / "nih"
    _place(src, {"images_001/images/00000001_000.png": 0, "images_001/images/00000001_001.png": 1,
                 "images_002/images/00000002_000.png": 2, "images_002/images/00000003_000.png": 3})
    table = tmp_path / "Data_Entry_2017.csv"
    table.write_text("Image Index,Finding Labels,Follow-up #,Patient ID\n" + "".join(
        f"{name},{finding},0,1\n" for name, finding in FINDINGS.items()))
    convert_images(src, tmp_path / "dst", labels=str(table), multi_label=True)
    classes = ("Cardiomegaly", "Emphysema", "Hernia", "No Finding")
    lists = class_lists(tmp_path / "dst", lambda source: Path(source).name)
    assert lists == {name: ("train", sorted(classes.index(c) for c in finding.split("|")))
                     for name, finding in FINDINGS.items()}


def test_ham10000s_two_parts_are_labelled_by_ids_without_extensions(tmp_path):
    src = tmp_path / "ham10000"
    _place(src, {"HAM10000_images_part_1/ISIC_0027419.jpg": 0, "HAM10000_images_part_1/ISIC_0025030.jpg": 1,
                 "HAM10000_images_part_2/ISIC_0031633.jpg": 2})
    (src / "HAM10000_metadata.csv").write_text("image_id,dx\nISIC_0027419,bkl\nISIC_0025030,bkl\nISIC_0031633,nv\n")
    found = discover_images(src, labels_csv=str(src / "HAM10000_metadata.csv"))
    assert found.classes == ("bkl", "nv")
    assert sorted((it.rel, it.label) for its in found.splits.values() for it in its) == [
        ("HAM10000_images_part_1/ISIC_0025030.jpg", 0), ("HAM10000_images_part_1/ISIC_0027419.jpg", 0),
        ("HAM10000_images_part_2/ISIC_0031633.jpg", 1)]
    assert [(r.source, r.reason) for r in found.rejected] == [
        ("HAM10000_metadata.csv", "not listed in labels file HAM10000_metadata.csv")]


def test_a_name_in_several_folders_is_a_rejection_naming_them_and_a_whole_path_wins(tmp_path):
    src = tmp_path / "src"
    _place(src, {"a/x.jpg": 0, "b/x.jpg": 1, "a/y.jpg": 2, "y.jpg": 3, "c/z.jpg": 4})
    (tmp_path / "labels.csv").write_text("file,label\nx.jpg,cat\ny.jpg,dog\nc/z.jpg,cat\n")
    found = discover_images(src, labels_csv=str(tmp_path / "labels.csv"))
    assert sorted((it.rel, it.label) for its in found.splits.values() for it in its) == [("c/z.jpg", 0),
                                                                                          ("y.jpg", 1)]
    assert sorted((r.source, r.reason) for r in found.rejected) == [
        ("a/x.jpg", "not listed in labels file labels.csv"), ("a/y.jpg", "not listed in labels file labels.csv"),
        ("b/x.jpg", "not listed in labels file labels.csv"),
        ("x.jpg", "listed in labels.csv by a name several files have (a/x.jpg, b/x.jpg): name the file whole")]


def test_a_first_row_naming_a_file_in_a_folder_is_a_row_not_column_names(tmp_path):
    src = tmp_path / "src"
    _place(src, {"part_1/a.jpg": 0, "part_2/b.jpg": 1})
    (tmp_path / "labels.csv").write_text("a.jpg,cat\nb.jpg,dog\n")  # no header; each class once
    found = discover_images(src, labels_csv=str(tmp_path / "labels.csv"))
    assert found.classes == ("cat", "dog") and found.rejected == []


def test_a_name_ambiguous_among_the_sources_own_files_stays_so_whatever_folders_hold(tmp_path):
    src = tmp_path / "src"
    _place(src, {"c.jpg": 0, "c.png": 1, "a/c.jpg": 2})
    (tmp_path / "labels.csv").write_text("file,label\nc,cat\nd,dog\n")
    found = discover_images(src, labels_csv=str(tmp_path / "labels.csv"))
    assert not found.splits
    assert ("c", "listed in labels.csv by a name several files have (c.jpg, c.png): name the file whole") in [
        (r.source, r.reason) for r in found.rejected]
