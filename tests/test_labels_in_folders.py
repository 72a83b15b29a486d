"""A labels file that names each image by its name alone while the images lie in folders: Kaggle's NIH
ChestX-ray14 (`images_001/images/00000001_000.png` ... `images_012/`, `Data_Entry_2017.csv` naming
`00000001_000.png`) and HAM10000 (`HAM10000_images_part_1/` and `_part_2/`, its metadata naming `ISIC_0027419`
without an extension). The one file of that name in a folder is the row's; a name several folders hold is a
rejection naming them. The photos are the real ones of tests/data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, convert_images

from converters.images.discover import discover_images
from fastdata.errors import ConvertError

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


def test_nihs_split_lists_name_the_files_in_folders_too(tmp_path):
    src = tmp_path / "nih"
    _place(src, {"images_001/images/00000001_000.png": 0, "images_001/images/00000001_001.png": 1,
                 "images_002/images/00000002_000.png": 2, "images_002/images/00000003_000.png": 3,
                 "images_003/images/00000003_000.png": 4})
    table = tmp_path / "Data_Entry_2017.csv"
    table.write_text("Image Index,Finding Labels\n" + "".join(f"{n},{f}\n" for n, f in FINDINGS.items()))
    (tmp_path / "test_list.txt").write_text("00000002_000.png\n00000003_000.png\n")
    (tmp_path / "train_val_list.txt").write_text("00000001_000.png\n00000001_001.png\n")
    result = convert_images(src, tmp_path / "dst", labels=str(table), multi_label=True,
                            split_lists=(f"test={tmp_path / 'test_list.txt'}",
                                         f"train={tmp_path / 'train_val_list.txt'}"))
    lists = class_lists(tmp_path / "dst")
    assert {name: split for name, (split, _) in lists.items()} == {
        "images_001/images/00000001_000.png": "train", "images_001/images/00000001_001.png": "train",
        "images_002/images/00000002_000.png": "test"}
    reasons = {r["source"]: (r["split"], r["reason"]) for r in result.manifest.rejected}
    assert reasons["00000003_000.png"] == ("test", "listed in Data_Entry_2017.csv by a name several files have "
                                           "(images_002/images/00000003_000.png, images_003/images/00000003_000.png):"
                                           " name the file whole")  # in the split its list gives it


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


HAM_METADATA = ("lesion_id,image_id,dx,dx_type,age,sex,localization\n"
                "HAM_0000118,ISIC_0027419,bkl,histo,80.0,male,scalp\n"
                "HAM_0000118,ISIC_0025030,bkl,histo,80.0,male,scalp\n"
                "HAM_0002730,ISIC_0031633,nv,histo,75.0,male,ear\n")


def test_the_columns_of_a_labels_csv_are_named_by_the_field_options(tmp_path, caplog):
    src = tmp_path / "ham10000"
    _place(src, {"HAM10000_images_part_1/ISIC_0027419.jpg": 0, "HAM10000_images_part_1/ISIC_0025030.jpg": 1,
                 "HAM10000_images_part_2/ISIC_0031633.jpg": 2})
    (tmp_path / "HAM10000_metadata.csv").write_text(HAM_METADATA)
    caplog.set_level("WARNING")
    found = discover_images(src, labels_csv=str(tmp_path / "HAM10000_metadata.csv"), image_field="image_id",
                            label_field="DX")  # a column's name whatever its case
    assert found.classes == ("bkl", "nv") and found.rejected == [] and caplog.records == []
    assert sorted((Path(it.rel).name, it.label) for its in found.splits.values() for it in its) == [
        ("ISIC_0025030.jpg", 0), ("ISIC_0027419.jpg", 0), ("ISIC_0031633.jpg", 1)]
    only_file = discover_images(src, labels_csv=str(tmp_path / "HAM10000_metadata.csv"), image_field="image_id")
    assert only_file.classes == ("HAM_0000118", "HAM_0002730")  # the label: the first other column


@pytest.mark.parametrize(("fields", "problem"), [
    ({"image_field": "image"}, r"--image-field image: no column of that name \(its first row: lesion_id, image_id, "
                               r"dx, dx_type, age, sex, localization\)"),
    ({"image_field": "image_id", "label_field": "image_id"}, r"--image-field and --label-field name one column, "
                                                              r"'image_id'"),
])
def test_a_field_the_labels_csv_lacks_is_refused_naming_its_columns(tmp_path, fields, problem):
    src = tmp_path / "src"
    _place(src, {"ISIC_0027419.jpg": 0})
    (tmp_path / "meta.csv").write_text(HAM_METADATA)
    with pytest.raises(ConvertError, match=problem):
        discover_images(src, labels_csv=str(tmp_path / "meta.csv"), **fields)


def test_the_field_options_without_a_labels_csv_are_refused(tmp_path):
    src = tmp_path / "src"
    _place(src, {"a/x.jpg": 0})
    with pytest.raises(ValueError, match=r"the columns of a --labels CSV or of Hugging Face metadata .* and no labels "
                                         r"CSV is given"):
        discover_images(src, label_field="dx")


def _items(found) -> list[tuple[str, str, int]]:
    return sorted((it.split, it.rel, it.label) for its in found.splits.values() for it in its)


def test_named_columns_keep_a_split_column_short_rows_and_an_exact_name_first(tmp_path):
    src = tmp_path / "src"
    _place(src, {"a.jpg": 0, "b.jpg": 1})
    (tmp_path / "meta.csv").write_text("id,Label,file,label,split\n1,x,a.jpg,cat,train\n2,y,b.jpg,dog,val\n")
    found = discover_images(src, labels_csv=str(tmp_path / "meta.csv"), image_field="file", label_field="label")
    assert _items(found) == [("train", "a.jpg", 0), ("val", "b.jpg", 1)]  # `label`, not `Label`; the split column
    (tmp_path / "short.csv").write_text("file,label,age,site\na.jpg,cat,80\nb.jpg,dog\n")  # trailing cells left out
    found = discover_images(src, labels_csv=str(tmp_path / "short.csv"), image_field="file", label_field="label")
    assert _items(found) == [("train", "a.jpg", 0), ("train", "b.jpg", 1)]


def test_the_first_row_names_the_columns_even_when_it_reads_like_a_row(tmp_path):
    src = tmp_path / "src"
    _place(src, {"a.jpg": 0, "b.jpg": 1, "c.jpg": 2})
    (tmp_path / "meta.csv").write_text("file,cat,flag\na.jpg,cat,1\nb.jpg,dog,0\nc.jpg,cat,1\n")  # `cat`: a class too
    found = discover_images(src, labels_csv=str(tmp_path / "meta.csv"), image_field="file", label_field="cat")
    assert found.classes == ("cat", "dog") and found.rejected == []
    (tmp_path / "binary.csv").write_text("image,malignant,reviewed\na.jpg,1,0\nb.jpg,0,1\nc.jpg,1,1\n")
    found = discover_images(src, labels_csv=str(tmp_path / "binary.csv"), label_field="malignant")
    assert found.classes == ("0", "1") and _items(found) == [("train", "a.jpg", 1), ("train", "b.jpg", 0),
                                                            ("train", "c.jpg", 1)]  # a column of 0/1, not one-hot


def test_named_columns_label_a_split_folder_of_loose_images(tmp_path):
    src = tmp_path / "src"
    _place(src, {"train/cat/a.jpg": 0, "train/dog/b.jpg": 1, "val/c.jpg": 2, "val/d.jpg": 3})
    (tmp_path / "val.csv").write_text("score,file,class\n0.5,c.jpg,dog\n0.7,d.jpg,cat\n")
    found = discover_images(src, labels_csv=f"val={tmp_path / 'val.csv'}", image_field="file", label_field="class")
    assert _items(found) == [("train", "train/cat/a.jpg", 0), ("train", "train/dog/b.jpg", 1),
                             ("val", "val/c.jpg", 1), ("val", "val/d.jpg", 0)]


def test_a_split_list_name_in_several_folders_is_a_rejection_naming_them(tmp_path):
    src = tmp_path / "src"
    _place(src, {"a/x.jpg": 0, "b/x.jpg": 1, "c/y.jpg": 2, "z.jpg": 3})
    (tmp_path / "test.txt").write_text("x.jpg\ny\nz\n")
    result = convert_images(src, tmp_path / "dst", unlabeled=True, split_lists=(f"test={tmp_path / 'test.txt'}",))
    m = result.manifest
    assert {s: m.split(s).samples for s in m.splits} == {"test": 2, "train": 2}  # c/y.jpg and z.jpg; a/, b/ train
    assert [(r["split"], r["source"], r["reason"]) for r in m.rejected] == [
        ("test", "x.jpg", "listed in split list test.txt: names several files (a/x.jpg, b/x.jpg): name the file whole")]
