"""Images labelled by Hugging Face ImageFolder metadata (`metadata.csv`, `.jsonl`, `.parquet` at the top of SRC or
in each split folder: `file_name` relative to its folder and a `label`): converted as `load_dataset("imagefolder")`
reads them (converters/images/folder_labels.py). Before, the metadata file was rejected as an unsupported extension
and the images converted unlabeled. Discovery is tested on marker files (`touch`), one conversion on the real
photos of tests/data."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import PHOTOS, class_lists, split_items, split_rejections, touch

from converters.images.discover import discover_images
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _splits(root: Path) -> Path:
    """train/ with a metadata.csv (one image it does not name, one row naming no file), validation/ with a
    metadata.jsonl, test/ with a metadata.parquet: three formats, one dataset."""
    touch(root, "train/a.jpg", "train/b.jpg", "train/extra.jpg", "validation/c.jpg", "test/d.png", "test/e.jpg")
    (root / "train" / "metadata.csv").write_text("file_name,label,source\na.jpg,dog,web\nb.jpg,cat,web\n"
                                                 "gone.jpg,cat,web\n")
    _jsonl(root / "validation" / "metadata.jsonl", [{"file_name": "c.jpg", "label": "bird", "w": 3}])
    pq.write_table(pa.table({"file_name": ["d.png", "e.jpg"], "label": ["cat", "dog"]}),
                   root / "test" / "metadata.parquet")
    return root


def test_metadata_in_each_split_folder_in_three_formats_labels_its_images(tmp_path):
    d = discover_images(_splits(tmp_path))
    assert d.layout == "hf_metadata" and d.classes == ("bird", "cat", "dog")  # the classes of all splits, sorted
    assert split_items(d) == {"train": [("train/a.jpg", 2), ("train/b.jpg", 1)], "val": [("validation/c.jpg", 0)],
                              "test": [("test/d.png", 1), ("test/e.jpg", 2)]}
    assert split_rejections(d) == [  # the metadata files themselves are read, not rejected
        ("train", "train/extra.jpg", "not listed in labels file train/metadata.csv"),
        ("train", "train/gone.jpg", "listed in train/metadata.csv but no such file in the source")]


def test_metadata_at_the_top_puts_each_image_in_the_split_of_its_first_folder(tmp_path):
    touch(tmp_path, "train/cats/a.jpg", "val/b.jpg", "loose.jpg")
    (tmp_path / "metadata.csv").write_text("file_name,label\ntrain/cats/a.jpg,3\nval/b.jpg,0\nloose.jpg,1\n")
    d = discover_images(tmp_path, split="test")
    assert d.classes == ("0", "1", "2", "3")  # whole numbers are class ids, kept as the labels they are
    assert split_items(d) == {"train": [("train/cats/a.jpg", 3)], "val": [("val/b.jpg", 0)],
                              "test": [("loose.jpg", 1)]}
    assert d.rejected == []


def test_a_split_column_of_metadata_at_the_top_gives_each_image_its_split(tmp_path):
    touch(tmp_path, "images/a.jpg", "images/b.jpg")
    (tmp_path / "metadata.csv").write_text("file_name,label,split\nimages/a.jpg,x,val\nimages/b.jpg,y,train\n")
    assert split_items(discover_images(tmp_path)) == {"val": [("images/a.jpg", 0)], "train": [("images/b.jpg", 1)]}


def test_a_split_folder_without_metadata_and_files_beside_the_split_folders_are_rejected(tmp_path):
    touch(tmp_path, "train/a.jpg", "test/b.jpg", "notes/c.jpg")
    (tmp_path / "train" / "metadata.csv").write_text("file_name,label\na.jpg,x\n")
    d = discover_images(tmp_path)
    assert split_items(d) == {"train": [("train/a.jpg", 0)]}
    assert split_rejections(d) == [
        ("notes", "notes/c.jpg", "not inside a split folder (train, val, test, "
                                 "or an alias of theirs such as training, valid, "
                                 "validation, testing)"),
        ("test", "test/b.jpg", "no label: test/ holds no metadata file (metadata.jsonl, metadata.csv, "
                               "metadata.parquet), as train/metadata.csv does")]


def test_a_split_whose_metadata_has_no_label_column_is_rejected_beside_labelled_ones(tmp_path):
    touch(tmp_path, "train/a.jpg", "test/b.jpg")
    (tmp_path / "train" / "metadata.csv").write_text("file_name,label\na.jpg,x\n")
    _jsonl(tmp_path / "test" / "metadata.jsonl", [{"file_name": "b.jpg", "width": 4}])
    d = discover_images(tmp_path)
    assert split_items(d) == {"train": [("train/a.jpg", 0)]}
    assert split_rejections(d) == [
        ("test", "test/b.jpg", "no label: test/metadata.jsonl has no label column (label, labels, class, category, "
                               "target)"),
        ("test", "test/metadata.jsonl", "no label: test/metadata.jsonl has no label column (label, labels, class, "
                                        "category, target)")]


def test_metadata_of_no_label_column_is_warned_about_and_the_class_folders_label(tmp_path, caplog):
    touch(tmp_path, "train/cat/a.jpg", "train/dog/b.jpg")
    (tmp_path / "train" / "metadata.csv").write_text("file_name,width\ncat/a.jpg,4\n")
    with caplog.at_level(logging.WARNING):
        d = discover_images(tmp_path)
    assert d.layout == "split/class" and d.classes == ("cat", "dog")
    assert "metadata.csv: no label column (label, labels, class, category, target)" in caplog.text


def test_label_and_image_fields_name_other_columns(tmp_path):
    touch(tmp_path, "a.jpg", "b.jpg")
    _jsonl(tmp_path / "metadata.jsonl", [{"image": "a.jpg", "file_name": "b.jpg", "label": "x", "Breed": "pug"},
                                         {"image": "b.jpg", "file_name": "a.jpg", "label": "y", "Breed": "boxer"}])
    d = discover_images(tmp_path, image_field="image", label_field="breed")  # a column's case need not match
    assert d.classes == ("boxer", "pug") and split_items(d) == {"train": [("a.jpg", 1), ("b.jpg", 0)]}
    with pytest.raises(ConvertError, match=r"metadata.jsonl: --label-field kind: no column of that name \(its "
                                           r"columns: image, file_name, label, Breed\)"):
        discover_images(tmp_path, label_field="kind")


def test_multi_label_lists_an_empty_list_and_cells_of_classes(tmp_path):
    touch(tmp_path, "train/a.jpg", "train/b.jpg", "train/c.jpg", "val/d.jpg", "test/e.jpg")
    _jsonl(tmp_path / "train" / "metadata.jsonl", [{"file_name": "a.jpg", "labels": ["sky", "cloud"]},
                                                   {"file_name": "b.jpg", "labels": []},
                                                   {"file_name": "c.jpg", "labels": ["sky", "sky", 7]}])
    pq.write_table(pa.table({"file_name": ["d.jpg"], "labels": [["tree"]]}), tmp_path / "val" / "metadata.parquet")
    (tmp_path / "test" / "metadata.csv").write_text('file_name,labels\ne.jpg,"tree|sky"\n')
    d = discover_images(tmp_path, multi_label=True)
    assert d.classes == ("7", "cloud", "sky", "tree")
    assert split_items(d) == {"train": [("train/a.jpg", (1, 2)), ("train/b.jpg", ()), ("train/c.jpg", (0, 2))],
                              "val": [("val/d.jpg", (3,))], "test": [("test/e.jpg", (2, 3))]}
    with pytest.raises(ConvertError, match=r"metadata.jsonl:1: the label \"\['sky', 'cloud'\]\" lists classes: "
                                           r"convert with --multi-label"):
        discover_images(tmp_path)


@pytest.mark.parametrize(("rows", "problem"), [
    ([{"file_name": "a.jpg", "label": None}], r"metadata.jsonl:1: no label for 'a.jpg'"),
    ([{"file_name": "b.jpg", "label": "x"}, {"file_name": "a.jpg"}], r"metadata.jsonl:2: no label for 'a.jpg'"),
    ([{"file_name": "a.jpg", "label": "x"}, {"file_name": 5, "label": "x"}],
     r"metadata.jsonl:2: file_name is '5', not a file's name"),
    ([{"file_name": "a.jpg", "label": True}], r"metadata.jsonl:1: the class 'True' is no class name or whole number"),
    ([{"file_name": "a.jpg", "label": 1.5}], r"metadata.jsonl:1: the class '1.5' is no class name or whole number"),
    ([{"file_name": "a.jpg", "label": "x"}, {"file_name": "a.jpg", "label": "y"}],
     r"metadata.jsonl:2: 'a.jpg' is listed again \(first on line 1\)"),
])
def test_a_row_that_labels_no_file_stops_the_conversion_naming_its_line(tmp_path, rows, problem):
    touch(tmp_path, "a.jpg")
    _jsonl(tmp_path / "metadata.jsonl", rows)
    with pytest.raises(ConvertError, match=problem):
        discover_images(tmp_path)


def test_metadata_that_cannot_be_told_apart_or_names_no_class_is_refused(tmp_path):
    touch(tmp_path, "train/a.jpg")
    (tmp_path / "train" / "metadata.csv").write_text("file_name,label\na.jpg,x\n")
    _jsonl(tmp_path / "train" / "metadata.jsonl", [{"file_name": "a.jpg", "label": "x"}])
    with pytest.raises(ConvertError, match=r"train holds metadata.jsonl and metadata.csv: which one lists its images"):
        discover_images(tmp_path)
    (tmp_path / "train" / "metadata.jsonl").unlink()
    (tmp_path / "metadata.csv").write_text("file_name,label\ntrain/a.jpg,x\n")
    with pytest.raises(ConvertError, match=r"metadata.csv and .*train/metadata.csv both list images"):
        discover_images(tmp_path)
    (tmp_path / "train" / "metadata.csv").unlink()
    _jsonl(tmp_path / "metadata.jsonl", [{"file_name": "train/a.jpg", "labels": []}])
    (tmp_path / "metadata.csv").unlink()
    with pytest.raises(ConvertError, match=r"metadata.jsonl: no image has a class; .* \(--unlabeled converts it so\)"):
        discover_images(tmp_path, multi_label=True)
    _jsonl(tmp_path / "metadata.jsonl", [{"file_name": "train/a.jpg", "label": "x"}, "not a row"])
    with pytest.raises(ConvertError, match=r"metadata.jsonl:2: expected a JSON object, a row of the metadata file"):
        discover_images(tmp_path)
    (tmp_path / "metadata.jsonl").write_text('{"file_name": "train/a.jpg", "label": "x"}\n{"file_name": \n')
    with pytest.raises(ConvertError, match=r"metadata.jsonl:2: not a JSON object: invalid JSON"):
        discover_images(tmp_path)


def test_other_labels_asked_for_leave_the_metadata_unread(tmp_path):
    touch(tmp_path, "a.jpg", "b.jpg")
    (tmp_path / "metadata.csv").write_text("file_name,label\na.jpg,x\nb.jpg,y\n")
    d = discover_images(tmp_path, unlabeled=True)
    assert d.layout == "unlabeled" and len(d.splits["train"]) == 2
    d = discover_images(tmp_path, label_pattern=r"^(.)\.jpg$")
    assert d.classes == ("a", "b")


def test_the_folder_converts_on_the_real_photos_as_datasets_reads_it(tmp_path):
    """`load_dataset("imagefolder", data_dir=src)` with metadata.jsonl in train/ and test/: classes, splits and each
    image's label."""
    src = tmp_path / "src"
    photos = sorted(PHOTOS.glob("*.jpg"))[:6]
    labels = {}
    for i, photo in enumerate(photos):
        split = "train" if i < 4 else "test"
        (src / split).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(photo, src / split / photo.name)
        labels[photo.name] = (split, ["fish", "logo", "suzanne"][i % 3])
    for split in ("train", "test"):
        _jsonl(src / split / "metadata.jsonl", [{"file_name": n, "label": c} for n, (s, c) in labels.items()
                                                if s == split])
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ("fish", "logo", "suzanne") and m.extra["layout"] == "hf_metadata" and not m.rejected
    assert class_lists(tmp_path / "dst", lambda source: Path(source).name, field="label") == {
        n: (s, m.classes.index(c)) for n, (s, c) in labels.items()}


def test_a_spreadsheets_bom_full_paths_and_windows_paths_are_read(tmp_path):
    touch(tmp_path, "train/a.jpg", "val/b.jpg", "val/c.jpg")
    (tmp_path / "metadata.csv").write_text(f"\ufefffile_name,label\n{tmp_path / 'train' / 'a.jpg'},x\n"
                                           "./val/b.jpg,y\nval\\c.jpg,y\n")
    d = discover_images(tmp_path)
    assert split_items(d) == {"train": [("train/a.jpg", 0)], "val": [("val/b.jpg", 1), ("val/c.jpg", 1)]}
    assert d.rejected == []
    (tmp_path / "metadata.csv").unlink()
    (tmp_path / "train" / "metadata.jsonl").write_text('\ufeff{"file_name": "a.jpg", "label": "x"}\n')
    (tmp_path / "val" / "metadata.jsonl").write_text(
        json.dumps({"file_name": str(tmp_path / "val" / "b.jpg"), "label": 4}) + '\n{"file_name": "c.jpg", '
        '"label": 0}\n')
    d = discover_images(tmp_path)
    assert d.classes == ("0", "1", "2", "3", "4", "x")  # ids beside a name: all sorted as names
    assert split_items(d) == {"train": [("train/a.jpg", 5)], "val": [("val/b.jpg", 4), ("val/c.jpg", 0)]}
    assert ["train", "train/a.jpg", 5] in [entry[:3] for entry in d.identity]  # what a resumed run compares


def test_links_not_followed_are_neither_read_nor_converted(tmp_path):
    touch(tmp_path / "elsewhere", "a.jpg")
    (tmp_path / "elsewhere" / "metadata.csv").write_text("file_name,label\na.jpg,x\n")
    touch(tmp_path / "src", "train/b.jpg")
    (tmp_path / "src" / "train" / "metadata.csv").write_text("file_name,label\nb.jpg,y\nlinked.jpg,y\n")
    (tmp_path / "src" / "train" / "linked.jpg").symlink_to(tmp_path / "elsewhere" / "a.jpg")
    d = discover_images(tmp_path / "src", follow_symlinks=False)
    assert split_items(d) == {"train": [("train/b.jpg", 0)]}
    assert [(r.source, r.reason) for r in d.rejected] == [
        ("train/linked.jpg", "symbolic link not followed (--no-follow-symlinks)")]
    assert split_items(discover_images(tmp_path / "src")) == {"train": [("train/b.jpg", 0), ("train/linked.jpg", 0)]}
    (tmp_path / "src" / "train" / "metadata.csv").unlink()
    (tmp_path / "src" / "train" / "metadata.csv").symlink_to(tmp_path / "elsewhere" / "metadata.csv")
    assert discover_images(tmp_path / "src", follow_symlinks=False).layout == "unlabeled"  # a linked metadata file
    assert discover_images(tmp_path / "src").layout == "hf_metadata"                     # is read when followed


def test_a_linked_split_folder_is_read_when_links_are_followed(tmp_path):
    touch(tmp_path / "elsewhere", "a.jpg")
    (tmp_path / "elsewhere" / "metadata.csv").write_text("file_name,label\na.jpg,x\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train").symlink_to(tmp_path / "elsewhere")
    assert split_items(discover_images(tmp_path / "src")) == {"train": [("train/a.jpg", 0)]}
    assert discover_images(tmp_path / "src", follow_symlinks=False).layout != "hf_metadata"


def test_metadata_without_a_file_name_column_or_beside_no_split_folder_is_not_read(tmp_path):
    touch(tmp_path, "train/a.jpg", "extra/b.jpg")
    (tmp_path / "train" / "metadata.csv").write_text("image,label\na.jpg,x\n")  # no file_name: not Hugging Face's
    assert discover_images(tmp_path).layout != "hf_metadata"
    assert split_items(discover_images(tmp_path, image_field="image")) == {"train": [("train/a.jpg", 0)]}
    (tmp_path / "train" / "metadata.csv").unlink()
    (tmp_path / "extra" / "metadata.csv").write_text("file_name,label\nb.jpg,x\n")  # extra/ is no split folder
    assert discover_images(tmp_path).layout != "hf_metadata"


def test_a_metadata_file_that_cannot_be_read_stops_the_conversion(tmp_path):
    touch(tmp_path, "train/a.jpg")
    (tmp_path / "train" / "metadata.parquet").write_bytes(b"PAR1 not a table")
    with pytest.raises(ConvertError, match=r"^cannot read metadata file .*train/metadata.parquet: "):
        discover_images(tmp_path)
    (tmp_path / "train" / "metadata.parquet").unlink()
    (tmp_path / "train" / "metadata.csv").write_bytes(b"\xff\xfefile_name,label\n")  # UTF-16, or no text
    with pytest.raises(ConvertError, match=r"^cannot read metadata file .*train/metadata.csv: "):
        discover_images(tmp_path)


def test_a_list_of_classes_holding_no_class_name_is_refused_naming_its_line(tmp_path):
    touch(tmp_path, "a.jpg")
    _jsonl(tmp_path / "metadata.jsonl", [{"file_name": "a.jpg", "labels": ["x", 1.5]}])
    with pytest.raises(ConvertError, match=r"metadata.jsonl:1: the class '1.5' is no class name or whole number"):
        discover_images(tmp_path, multi_label=True)
