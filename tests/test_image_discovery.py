"""Image discovery on its own (no conversion): which layout a tree is read as, which split and label every
file gets, what is rejected with which path and reason, and what --no-follow-symlinks changes."""

from __future__ import annotations

import logging
import re

import pytest
from helpers import split_items, split_rejections, touch

from converters.images.discover import discover_images
from converters.images.listed_files import check_file
from converters.sample import Rejection
from converters.tree import SPLIT_FOLDERS
from converters.walk import NOT_FOLLOWED
from fastdata.errors import ConvertError

OUTSIDE = f"not inside a split folder ({SPLIT_FOLDERS})"


def test_a_flat_folder_is_unlabeled_train_by_default(tmp_path):
    d = discover_images(touch(tmp_path, "a.jpg", "b.png"))
    assert d.layout == "unlabeled" and d.classes == ()
    assert split_items(d) == {"train": [("a.jpg", None), ("b.png", None)]}


def test_class_folders_are_labels_unless_unlabeled_is_asked(tmp_path):
    src = touch(tmp_path / "src", "cat/1.jpg", "dog/2.jpg", "stray.jpg")
    d = discover_images(src)
    assert d.layout == "class" and d.classes == ("cat", "dog")
    assert split_items(d) == {"train": [("cat/1.jpg", 0), ("dog/2.jpg", 1)]}
    assert split_rejections(d) == [("train", "stray.jpg", "not inside a class folder")]
    u = discover_images(src, unlabeled=True)
    assert u.layout == "unlabeled" and len(u.splits["train"]) == 3


def test_split_folders_reject_loose_files_and_other_folders(tmp_path):
    src = touch(tmp_path / "src", "train/cat/1.jpg", "train/loose.jpg", "val/cat/2.jpg", "notes/x.jpg")
    d = discover_images(src)
    assert d.layout == "split/class"
    assert split_items(d) == {"train": [("train/cat/1.jpg", 0)], "val": [("val/cat/2.jpg", 0)]}
    assert ("train", "train/loose.jpg", "not inside a class folder") in split_rejections(d)
    assert ("notes", "notes/x.jpg", OUTSIDE) in split_rejections(d)


def test_split_folders_by_other_names_are_the_splits_they_name(tmp_path):
    """Kaggle's `Training/` and `Testing/` (the brain tumour MRI set) were taken for two classes, "Testing" and
    "Training", each holding every tumour type: a classifier of train versus test, silently. `valid/` and
    `validation/` were not splits either."""
    src = touch(tmp_path / "src", "Training/glioma/1.jpg", "Training/pituitary/2.jpg", "Testing/glioma/3.jpg",
                 "valid/pituitary/4.jpg", "Testing/meningioma/5.jpg")
    d = discover_images(src)
    assert d.layout == "split/class" and d.classes == ("glioma", "pituitary")  # Training's classes
    assert split_items(d) == {"train": [("Training/glioma/1.jpg", 0), ("Training/pituitary/2.jpg", 1)],
                              "test": [("Testing/glioma/3.jpg", 0)], "val": [("valid/pituitary/4.jpg", 1)]}
    assert split_rejections(d) == [
        ("test", "Testing/meningioma/5.jpg", "class folder 'meningioma' is not among train's classes")]
    unlabeled = discover_images(touch(tmp_path / "u", "VALIDATION/a.jpg", "train/b.jpg"), unlabeled=True)
    assert split_items(unlabeled) == {"val": [("VALIDATION/a.jpg", None)], "train": [("train/b.jpg", None)]}


def test_split_folders_of_names_no_split_has_are_classes_with_a_warning(tmp_path, caplog):
    src = touch(tmp_path / "src", "trn/forest/1.jpg", "trn/sea/2.jpg", "tst/forest/3.jpg",
                 "tst/sea/4.jpg")
    with caplog.at_level(logging.WARNING):
        d = discover_images(src)
    assert d.classes == ("trn", "tst")
    assert [r.getMessage() for r in caplog.records] == [
        f"the class folders trn, tst hold no image but the same folders (forest, sea): if they are "
        f"splits, name them {SPLIT_FOLDERS}; as they are, each is one class"]


@pytest.mark.parametrize(("tree", "named"), [
    (("images/a/1.jpg", "annotations/trimaps/1.png"), "annotations, images"),  # a download's top folder
    (("train/images/1.jpg", "train/labels/1.txt", "valid/images/2.jpg"), "images, labels"),  # a YOLO export
    (("Images/n02085620-Chihuahua/1.jpg", "Annotation/n02085620-Chihuahua/1"), "Annotation, Images")])
def test_class_folders_named_as_a_datasets_folders_are_warned_about(tmp_path, caplog, tree, named):
    with caplog.at_level(logging.WARNING):
        discover_images(touch(tmp_path / "src", *tree))
    assert [r.getMessage() for r in caplog.records if "named as a dataset's folders" in r.getMessage()] == [
        f"the class folders {named} are named as a dataset's folders, not as classes: if the source is a download's "
        "top folder, convert the folder that holds its class folders, or see the layouts that convert as they lie "
        "(docs/converting.md, \"Sources\")"]


@pytest.mark.parametrize("tree", [
    ("trn/forest/1.jpg", "trn/sea/2.jpg", "tst/forest/3.jpg", "tst/sea/4.jpg",
     "tst/loose.jpg"),  # an image beside the folders: a class
    ("trn/forest/1.jpg", "trn/sea/2.jpg", "tst/forest/3.jpg", "tst/sea/4.jpg",
     "tst/mountain/5.jpg"),  # other folders: nested classes
    ("cat/0001.jpg", "cat/0002.jpg", "dog/0001.jpg", "dog/0002.jpg"),  # the same image names: classes
    ("a/x/1.jpg", "b/x/2.jpg")])  # one folder inside each
def test_class_folders_that_differ_or_hold_images_are_classes_quietly(tmp_path, caplog, tree):
    with caplog.at_level(logging.WARNING):
        discover_images(touch(tmp_path / "src", *tree))
    assert not caplog.records


def test_two_folders_of_one_split_are_refused(tmp_path):
    src = touch(tmp_path / "src", "train/cat/1.jpg", "val/cat/2.jpg", "validation/cat/3.jpg")
    with pytest.raises(ConvertError, match=r"^the folders 'val' and 'validation' both name the split 'val': merge "
                                           r"them or rename one$"):
        discover_images(src)


def test_unlabeled_split_folders_only_take_split_names(tmp_path):
    src = touch(tmp_path / "src", "train/a.jpg", "extra/b.jpg")
    d = discover_images(src, unlabeled=True)
    assert split_items(d) == {"train": [("train/a.jpg", None)]}
    assert split_rejections(d) == [("extra", "extra/b.jpg", OUTSIDE)]


def test_an_empty_class_is_named_in_the_log(tmp_path, caplog):
    src = touch(tmp_path / "src", "cat/1.jpg")
    (src / "dog").mkdir()
    with caplog.at_level(logging.WARNING):
        discover_images(src)
    assert [r.getMessage() for r in caplog.records] == ["class 'dog' has no images"]


def test_a_labels_csv_names_files_in_subfolders_by_their_path_under_the_source(tmp_path):
    """A source with --labels had to be flat: every file in a subfolder was rejected, so a table of paths
    (`part_1/a.jpg`, as datasets split into folders list them) could not be converted. A row names a file by its
    path under the source (an id without extension too); a file no row names is rejected as not listed."""
    src = touch(tmp_path / "src", "a.jpg", "sub/b.jpg", "sub/c.jpg", "sub/deep/d.png")
    csv = tmp_path / "labels.csv"
    csv.write_text("filename,label\na.jpg,cat\nsub/b.jpg,dog\nsub/deep/d,dog\nb.jpg,cat\n")
    d = discover_images(src, labels_csv=str(csv), split="val")
    assert split_items(d) == {"val": [("a.jpg", 0), ("sub/b.jpg", 1), ("sub/deep/d.png", 1)]}
    assert split_rejections(d) == [("val", "b.jpg", "listed in labels.csv but no such file in the source"),
                                   ("val", "sub/c.jpg", "not listed in labels file labels.csv")]
    with pytest.raises(ValueError, match="^--labels and --unlabeled contradict each other: pick one$"):
        discover_images(src, labels_csv=str(csv), unlabeled=True)


def test_not_a_directory(tmp_path):
    with pytest.raises(ConvertError, match=f"^source {tmp_path / 'nope'} is not a directory$"):
        discover_images(tmp_path / "nope")


def test_symlinks_are_followed_only_when_asked(tmp_path):
    outside = touch(tmp_path / "outside", "cls/o.jpg", "o2.jpg")
    src = touch(tmp_path / "src", "cat/1.jpg")
    (src / "linked").symlink_to(outside / "cls", target_is_directory=True)
    (src / "cat" / "2.jpg").symlink_to(outside / "o2.jpg")
    followed = discover_images(src)
    assert followed.classes == ("cat", "linked") and len(followed.splits["train"]) == 3
    kept = discover_images(src, follow_symlinks=False)
    assert kept.classes == ("cat",) and split_items(kept) == {"train": [("cat/1.jpg", 0)]}
    assert {r.source for r in kept.rejected} == {"linked", "cat/2.jpg"}

    flat = touch(tmp_path / "flat", "a.jpg")
    (flat / "b.jpg").symlink_to(outside / "o2.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("filename,label\na.jpg,x\nb.jpg,y\n")
    assert len(discover_images(flat, labels_csv=str(csv)).splits["train"]) == 2
    flat_kept = discover_images(flat, labels_csv=str(csv), follow_symlinks=False)
    assert split_items(flat_kept) == {"train": [("a.jpg", 0)]} and [r.source for r in flat_kept.rejected] == ["b.jpg"]

    only = tmp_path / "only"
    only.mkdir()
    (only / "l.jpg").symlink_to(outside / "o2.jpg")
    assert len(discover_images(only, unlabeled=True).splits["train"]) == 1
    assert discover_images(only, unlabeled=True, follow_symlinks=False).splits == {}


def test_a_file_that_cannot_be_read_is_rejected_with_the_reason():
    class Unreadable:
        suffix = ".jpg"

        def stat(self):
            raise PermissionError(13, "Permission denied")

    assert check_file(Unreadable(), "a/x.jpg", "val") == (None, Rejection("val", "a/x.jpg",
                                                                           "unreadable: Permission denied"))


@pytest.mark.parametrize("first", ["filename,class", "image,label", "File_Name,Category", "a.jpg,cat",
                                   "filename,class,notes"])
def test_a_first_row_of_column_names_is_not_a_file(tmp_path, first):
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text(f"{first}\nb.jpg,dog\n" if first != "a.jpg,cat" else "a.jpg,cat\nb.jpg,dog\n")
    d = discover_images(src, labels_csv=str(csv))
    expected = ("cat", "dog") if first == "a.jpg,cat" else ("dog",)
    assert d.classes == expected and all(r.source == "a.jpg" for r in d.rejected)


def test_integer_class_ids_in_a_labels_csv_keep_their_values_as_labels(tmp_path):
    """A CSV of class ids 0..11 (Kaggle's `id,label`): in string order "10" was label 2 and "2" label 4, silently
    permuting a third of the labels. Class ids stay the labels they are, an id no row uses included (so a train and
    a val CSV converted apart agree); other integers are ordered by value; any other name keeps string order."""
    names = [f"f{i:02d}.jpg" for i in range(24)]
    src = touch(tmp_path / "src", *names)
    csv = tmp_path / "labels.csv"
    csv.write_text("id,label\n" + "".join(f"{n},{(7 * i) % 12}\n" for i, n in enumerate(names)))
    d = discover_images(src, labels_csv=str(csv))
    assert d.classes == tuple(str(i) for i in range(12))
    assert split_items(d) == {"train": [(n, (7 * i) % 12) for i, n in enumerate(names)]}
    csv.write_text("".join(f"{n},{c}\n" for n, c in zip(names, ["0", "1", "3", "3"])))  # id 2 in no row
    gap = discover_images(src, labels_csv=str(csv))
    assert gap.classes == ("0", "1", "2", "3") and [label for _, label in split_items(gap)["train"]] == [0, 1, 3, 3]
    for ids, order in ((["10", "2", "-1"], ("-1", "2", "10")), (["10", "2", "cat"], ("10", "2", "cat")),
                       (["2", str(2**20 + 1)], ("2", str(2**20 + 1))),  # past MAX_CLASS_ID: by value
                       (["10", "2", "007"], ("007", "10", "2")), (["10", "2", "+3"], ("+3", "10", "2")),
                       (["10", "2", "٣"], ("10", "2", "٣"))):  # only plain decimals without leading zeros are values
        csv.write_text("".join(f"{n},{c}\n" for n, c in zip(names, ids)))
        assert discover_images(src, labels_csv=str(csv)).classes == order


@pytest.mark.parametrize(("first", "classes"), [("image_id,breed", ("cat", "dog")), ("id,label", ("cat", "dog")),
                                                ("missing.jpg,cat", ("cat", "dog")),
                                                ("a.jpg,bird", ("bird", "cat", "dog"))])
def test_a_first_row_that_names_no_file_and_no_other_rows_class_is_column_names(tmp_path, first, classes):
    """Kaggle's `id,label` and `image_id,breed` are column names the list of known ones lacks: taken for a file,
    they added a class named "label" or "breed" (no image; every later class index shifted). A first row is
    also column names when its file is not in the source and its class labels no other row."""
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text(f"{first}\nb.jpg,dog\nc.jpg,cat\n")
    d = discover_images(src, labels_csv=str(csv))
    assert d.classes == classes
    rejected = split_rejections(d)
    assert (("train", "a.jpg", "not listed in labels file labels.csv") in rejected) == (first != "a.jpg,bird")
    assert (("train", "missing.jpg", "listed in labels.csv but no such file in the source") in rejected) == (
        first == "missing.jpg,cat")


def test_full_paths_under_the_source_in_a_labels_csv_name_its_files(tmp_path):
    """A labels table exported with full paths matched no file: every image was "not listed", every row "no such
    file". A path under SRC (as written, or through a link to SRC) names the file; one elsewhere does not."""
    src = touch(tmp_path / "src", "a.jpg", "b.jpg", "c.jpg")
    (tmp_path / "link").symlink_to(src)
    csv = tmp_path / "labels.csv"
    csv.write_text(f"{src}/a.jpg,cat\n{tmp_path}/link/b.jpg,dog\n{tmp_path}/other/c.jpg,cat\n")
    d = discover_images(tmp_path / "link", labels_csv=str(csv))
    assert split_items(d) == {"train": [("a.jpg", 0), ("b.jpg", 1)]}
    assert split_rejections(d) == [
        ("train", f"{tmp_path}/other/c.jpg", "listed in labels.csv but no such file in the source"),
        ("train", "c.jpg", "not listed in labels file labels.csv")]


def test_ids_without_extension_name_the_one_image_file_of_that_name(tmp_path):
    """Kaggle's labels tables list ids without the extension (dog breeds: `id,breed` rows `000bec18...,boston_bull`
    for `000bec18....jpg`): no file matched, so nothing was converted. An id names the one image file of that name;
    one that several files have (`c.jpg`, `c.png`) names none and says why; a name with an image extension must
    match whole; a file listed whole is not taken again by an id."""
    src = touch(tmp_path / "src", "a.jpg", "b.v2.JPEG", "c.jpg", "c.png", "d.jpg", "e.jpg", "f.txt", "g.png.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("id,breed\na,dingo\nb.v2,pug\nc,pug\nd.png,pug\ne.jpg,dingo\ne,pug\nf,pug\ng.png,pug\n")
    d = discover_images(src, labels_csv=str(csv))
    assert d.classes == ("dingo", "pug")  # "id,breed" is column names: "breed" labels no other row
    assert split_items(d) == {"train": [("a.jpg", 0), ("b.v2.JPEG", 1), ("e.jpg", 0)]}
    assert split_rejections(d) == [
        ("train", "c", "listed in labels.csv by a name several files have (c.jpg, c.png): name the file whole"),
        ("train", "c.jpg", "not listed in labels file labels.csv"),
        ("train", "c.png", "not listed in labels file labels.csv"),
        ("train", "d.jpg", "not listed in labels file labels.csv"),
        ("train", "d.png", "listed in labels.csv but no such file in the source"),
        ("train", "e", "listed in labels.csv but no such file in the source"),
        ("train", "f", "listed in labels.csv but no such file in the source"),
        ("train", "f.txt", "not listed in labels file labels.csv"),  # not an image file: "f" does not name it
        ("train", "g.png", "listed in labels.csv but no such file in the source"),
        ("train", "g.png.jpg", "not listed in labels file labels.csv")]


def test_a_first_row_whose_id_names_a_file_without_its_extension_is_a_row(tmp_path):
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("a,rare\nb,dog\n")  # "rare" labels no other row, but "a" names a.jpg: a row, not column names
    d = discover_images(src, labels_csv=str(csv))
    assert d.classes == ("dog", "rare") and split_items(d) == {"train": [("a.jpg", 1), ("b.jpg", 0)]}


def test_a_table_of_one_hot_columns_gives_each_file_the_class_of_its_marked_column(tmp_path, caplog):
    """Kaggle's one-hot tables (`image_id,healthy,multiple_diseases,rust,scab`): only the first two columns were
    read, so every image got the class "0" or "1" of the first class column, silently. The classes are the columns,
    in their order (an unused one included: column j is label j), each row's the one it marks."""
    src = touch(tmp_path / "src", "a.jpg", "b.jpg", "c.jpg", "1.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("\nimage_id,scab,healthy,rust,\na,0,1,0,\nb,1.0,0.0,0.0\nc.jpg, 0 , 1 , 0 ,,\n1,0,0,1\n")
    with caplog.at_level(logging.WARNING):
        d = discover_images(src, labels_csv=str(csv))
    assert d.classes == ("scab", "healthy", "rust")
    assert split_items(d) == {"train": [("1.jpg", 2), ("a.jpg", 1), ("b.jpg", 0), ("c.jpg", 1)]}
    assert split_rejections(d) == []
    assert not caplog.records


@pytest.mark.parametrize(("row", "why"), [
    ("b,1,1,0", "'b' is marked with 2 classes in the one-hot columns ['scab', 'healthy']: an image has one class (a "
                "multi-label table converts with --multi-label)"),
    ("b,0,0,0", "'b' is marked with 0 classes in the one-hot columns ['scab', 'healthy', 'rust']: an image has one "
                "class (a multi-label table converts with --multi-label)"),
    ("b,0,1,0,1", "5 cells, where the first row names 4 columns (a file and one-hot class columns)"),
    ("b,1,0", "3 cells, where the first row names 4 columns (a file and one-hot class columns)")])
def test_a_one_hot_row_that_marks_no_class_or_several_or_is_not_one_a_column_is_refused(tmp_path, row, why):
    _refused_at_line_3(tmp_path, f"image_id,scab,healthy,rust\na,0,1,0\n{row}\n", re.escape(why) + "$")


def _refused_at_line_3(tmp_path, table: str, pattern: str) -> None:
    """A labels table of `table` over a source of a.jpg and b.jpg is refused, naming its line 3 and `pattern`."""
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text(table)
    with pytest.raises(ConvertError, match=rf"^{csv}:3: {pattern}"):
        discover_images(src, labels_csv=str(csv))


@pytest.mark.parametrize("table", ["image,label,flag\na.jpg,1,0\nb.jpg,0,1\n",  # a class column, then another
                                   "a.jpg,1,0\nb.jpg,0,1\n",  # no header naming classes
                                   "filename,class,fold\na.jpg,1,train\nb.jpg,0,val\n",
                                   "filename,split,class\na.jpg,1,train\nb.jpg,0,val\n",  # split: third or later
                                   "image,is_cat,\na.jpg,1,\nb.jpg,0,x\n"])
def test_a_wider_table_that_is_not_one_hot_is_read_as_file_and_class_and_says_so(tmp_path, caplog, table):
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text(table)
    with caplog.at_level(logging.WARNING, logger="converters.images.labels_csv"):
        d = discover_images(src, labels_csv=str(csv))
    assert d.classes == ("0", "1") and split_items(d) == {"train": [("a.jpg", 1), ("b.jpg", 0)]}
    assert [r.getMessage() for r in caplog.records] == [
        f"{csv}: its rows have more than two columns; the file is the first and the class the second, the others "
        "are not read"]


@pytest.mark.parametrize("table", ["image,is_cat\na.jpg,1\nb.jpg,0\n", "a.jpg,1,\nb.jpg,0,\n", "image,is_cat,,\n"
                                   "a.jpg,1,,\nb.jpg,0, ,\n"])
def test_two_columns_of_a_file_and_a_0_or_1_are_two_classes_quietly(tmp_path, caplog, table):
    """One class column is a class id (binary classification), not one-hot; empty cells after it (a spreadsheet's
    trailing commas) are no columns to warn of."""
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text(table)
    with caplog.at_level(logging.WARNING):
        d = discover_images(src, labels_csv=str(csv))
    assert d.classes == ("0", "1") and split_items(d) == {"train": [("a.jpg", 1), ("b.jpg", 0)]}
    assert not caplog.records


def test_a_split_column_gives_each_file_its_split_with_one_class_list(tmp_path, caplog):
    """Converting a train CSV and a val CSV apart indexed the classes of each by itself (a class val lacks shifted
    the rest); a `split` column makes every split in one conversion, with one class list."""
    src = touch(tmp_path / "src", "a.jpg", "b.jpg", "c.jpg", "d.jpg", "e.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("image_id,breed,Split\na,pug,train\nb,akita,train\nc,corgi,train\nd,corgi,val\n"
                   "e.jpg,pug,test\nzz,pug,val\n")
    with caplog.at_level(logging.WARNING):
        d = discover_images(src, labels_csv=str(csv), split="ignored")
    assert d.classes == ("akita", "corgi", "pug")
    assert split_items(d) == {"train": [("a.jpg", 2), ("b.jpg", 0), ("c.jpg", 1)], "val": [("d.jpg", 1)],
                              "test": [("e.jpg", 2)]}
    assert split_rejections(d) == [("val", "zz", "listed in labels.csv but no such file in the source")]
    assert not caplog.records  # the split column is read: no column goes unread


def test_a_first_row_naming_a_split_column_is_column_names_whatever_else_it_says(tmp_path):
    from converters.images.labels_csv import read_labels

    csv = tmp_path / "labels.csv"
    csv.write_text("image_id,breed,split\na,pug,train\nb,akita,val\n")
    assert read_labels(csv) == ({"a": "pug", "b": "akita"}, ("akita", "pug"), {"a": "train", "b": "val"})


@pytest.mark.parametrize("table", [
    "name,label,is_valid\na.jpg,cat,False\nb.jpg,dog,1\nc.jpg,dog,false\nd.jpg,cat,TRUE\n",
    "name,is_valid,label\na.jpg,0,cat\nb.jpg,1,dog\nc.jpg,0,dog\n"])
def test_fastais_is_valid_column_gives_val_and_train(tmp_path, table):
    """fastai's `from_csv` tables mark the validation images in an `is_valid` column (third or later: in the second
    it is the class)."""
    src = touch(tmp_path / "src", "a.jpg", "b.jpg", "c.jpg", "d.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text(table)
    d = discover_images(src, labels_csv=str(csv))
    if table.startswith("name,label"):
        assert d.classes == ("cat", "dog")
        assert split_items(d) == {"train": [("a.jpg", 0), ("c.jpg", 1)], "val": [("b.jpg", 1), ("d.jpg", 0)]}
    else:  # "is_valid" second: the class column; the third is not read
        assert d.classes == ("0", "1") and split_items(d)["train"] == [("a.jpg", 0), ("b.jpg", 1), ("c.jpg", 0)]
    csv.write_text("name,label,is_valid\na.jpg,cat,yes\n")
    with pytest.raises(ConvertError, match=rf"^{csv}:2: is_valid 'yes' is neither True nor False$"):
        discover_images(src, labels_csv=str(csv))


def test_a_split_column_beside_one_hot_columns(tmp_path):
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("image_id,scab,healthy,split,rust\na,0,1,train,0\nb,0,0,val,1\n")
    d = discover_images(src, labels_csv=str(csv))
    assert d.classes == ("scab", "healthy", "rust")
    assert split_items(d) == {"train": [("a.jpg", 1)], "val": [("b.jpg", 2)]}


@pytest.mark.parametrize(("row", "value"), [("b,pug,", "''"), ("b,pug", "''"), ("b,pug,va l", "'va l'"),
                                            ("b,pug,../x", "'../x'")])
def test_a_row_without_a_valid_split_name_is_refused(tmp_path, row, value):
    _refused_at_line_3(tmp_path, f"file,class,split\na,pug,train\n{row}\n",
                       rf"split {re.escape(value)} is not allowed; a split name is ")


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_a_table_split_by_semicolons_tabs_or_bars_is_read(tmp_path, sep):
    """A European spreadsheet saves CSV with semicolons: every row was one cell, refused as "expected
    'filename,class'". A first line without a comma is split by what it holds instead."""
    src = touch(tmp_path / "src", "a.jpg", "b.jpg", "c.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text(f"filename{sep}class\na.jpg{sep}dog\nb.jpg{sep}cat, grey\nc.jpg{sep}dog\n")
    d = discover_images(src, labels_csv=str(csv))
    assert d.classes == ("cat, grey", "dog") and split_items(d) == {"train": [("a.jpg", 1), ("b.jpg", 0), ("c.jpg", 1)]}


def test_a_first_line_with_a_comma_is_split_by_commas(tmp_path):
    src = touch(tmp_path / "src", "a;1.jpg", "b.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("a;1.jpg,dog\nb.jpg,dog\n")
    assert split_items(discover_images(src, labels_csv=str(csv))) == {"train": [("a;1.jpg", 0), ("b.jpg", 0)]}


@pytest.mark.parametrize(("table", "rows", "classes"), [
    ("filename,class\na.jpg,cat\nb.jpg,dog\n", {"a.jpg": "cat", "b.jpg": "dog"}, ("cat", "dog")),  # known names
    ("\ufefffilename,class\r\na.jpg,cat\r\n", {"a.jpg": "cat"}, ("cat",)),  # a spreadsheet's BOM and CRLF
    ("photo,label\na.jpg,cat\n", {"photo": "label", "a.jpg": "cat"}, ("cat", "label")),  # one known name: a row
    ("image,cat,dog\na,1,0\nb,0,1\n", {"a": "cat", "b": "dog"}, ("cat", "dog")),  # one-hot, two classes
    ("id,1,dog\na,0,1\nb,1,0\n", {"id": "1", "a": "0", "b": "1"}, ("0", "1")),  # a number is no class column
    ("file,kind,flag\nx.jpg,cat,1\ny.jpg,dog,0\n", {"file": "kind", "x.jpg": "cat", "y.jpg": "dog"},
     ("cat", "dog", "kind")),  # one 0/1 column among others: not one-hot
    ("image,a,b\nx,big,1\ny,1,0\n", {"image": "a", "x": "big", "y": "1"}, ("1", "a", "big")),  # nor here
])
def test_a_table_read_without_the_sources_files(tmp_path, table, rows, classes):
    """`read_labels` alone (the fuzz harness calls it so): column names it knows are skipped, and one-hot tables are
    told from the others by their cells."""
    from converters.images.labels_csv import read_labels

    csv = tmp_path / "labels.csv"
    csv.write_text(table)
    assert read_labels(csv)[:2] == (rows, classes)


def test_a_later_row_of_one_cell_is_refused_after_a_header_guess(tmp_path):
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("id,breed\na.jpg,pug\nb.jpg\n")
    with pytest.raises(ConvertError, match=rf"^{csv}:3: expected 'filename,class', got \['b.jpg'\]$"):
        discover_images(src, labels_csv=str(csv))


def test_class_ids_up_to_the_limit_and_past_it():
    from converters.images.labels_csv import MAX_CLASS_ID, label_order

    assert label_order({"0", "5", str(MAX_CLASS_ID + 1)}) == ("0", "5", str(MAX_CLASS_ID + 1))  # by value
    assert len(label_order({"0", str(MAX_CLASS_ID)})) == MAX_CLASS_ID + 1  # the limit itself: ids kept


def test_a_file_listed_twice_names_both_lines(tmp_path):
    src = touch(tmp_path / "src", "a.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("a.jpg,cat\nb.jpg,dog\na.jpg,dog\n")
    with pytest.raises(ConvertError, match=rf"^{csv}:3: 'a.jpg' is listed again \(first on line 1\); each file has "
                                           "one label: remove the duplicate row$"):
        discover_images(src, labels_csv=str(csv))


@pytest.mark.parametrize("row", [",cat", "a.jpg,", " , "])
def test_a_labels_row_without_a_file_or_a_class_is_refused(tmp_path, row):
    src = touch(tmp_path / "src", "a.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text(f"a.jpg,cat\n{row}\n")
    with pytest.raises(ConvertError, match=rf"^{csv}:2: expected 'filename,class', got \["):
        discover_images(src, labels_csv=str(csv))


def test_a_labels_file_that_is_not_utf8_or_lists_nothing_is_refused(tmp_path):
    src = touch(tmp_path / "src", "a.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_bytes("a.jpg,caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ConvertError, match=rf"^cannot read labels file {csv}: .*codec can't decode.*; save it as "
                                           "UTF-8 CSV$"):
        discover_images(src, labels_csv=str(csv))
    csv.write_text("filename,class\n\n")
    with pytest.raises(ConvertError, match=rf"^labels file {csv} lists no 'filename,class' rows$"):
        discover_images(src, labels_csv=str(csv))


def test_a_labels_class_with_control_characters_says_why_it_is_refused(tmp_path):
    src = touch(tmp_path / "src", "a.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("a.jpg,b\tc\n")
    with pytest.raises(ConvertError, match=r"^.*labels.csv:1: the class 'b\\tc' holds control characters \(an escape "
                                           r"sequence, a tab, a newline, a bidi override\); class names are printed as "
                                           r"text$"):
        discover_images(src, labels_csv=str(csv))
    csv.write_text("a.jpg,\u00fc\nb.jpg,u\u0308\n")
    with pytest.raises(ConvertError, match=r"labels.csv:2: the class 'u\\u0308' differs from '\\xfc' \(line 1\) only "
                                           r"in Unicode normalisation \(NFC/NFD\): the same name written two ways; "
                                           r"write it one way$"):
        discover_images(src, labels_csv=str(csv))


def test_a_listed_file_that_cannot_be_taken_is_rejected_in_its_rows_split(tmp_path):
    src = touch(tmp_path / "src", "a.jpg")
    (src / "gone.jpg").symlink_to(tmp_path / "nowhere.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("file,class,split\na.jpg,cat,train\ngone.jpg,cat,val\n")
    d = discover_images(src, labels_csv=str(csv))
    assert split_items(d) == {"train": [("a.jpg", 0)]}
    assert split_rejections(d) == [("val", "gone.jpg", f"broken symlink (points to {tmp_path / 'nowhere.jpg'})")]


def test_windows_and_dotted_paths_in_a_labels_csv_name_their_files(tmp_path):
    """A table made on Windows writes `part_1\\a.jpg`: no file matched."""
    src = touch(tmp_path / "src", "part_1/a.jpg", "b.jpg", "part_1/c.jpg", "x\\y/d.jpg")
    csv = tmp_path / "labels.csv"
    csv.write_text("part_1\\a.jpg,cat\n./b.jpg,dog\n.\\part_1\\c.jpg,dog\nx\\y/d.jpg,cat\n")
    d = discover_images(src, labels_csv=str(csv))
    assert split_items(d) == {"train": [("b.jpg", 1), ("part_1/a.jpg", 0), ("part_1/c.jpg", 1), ("x\\y/d.jpg", 0)]}
    assert split_rejections(d) == []


def test_a_linked_folder_of_a_labelled_source_is_walked_only_when_links_are_followed(tmp_path):
    src = touch(tmp_path / "src", "a.jpg")
    touch(tmp_path / "elsewhere", "b.jpg", "c.jpg")
    (src / "more").symlink_to(tmp_path / "elsewhere")
    (src / "loop").symlink_to(src)
    csv = tmp_path / "labels.csv"
    csv.write_text("a.jpg,cat\nmore/b.jpg,cat\n")
    d = discover_images(src, labels_csv=str(csv))
    assert split_items(d) == {"train": [("a.jpg", 0), ("more/b.jpg", 0)]}
    assert [r[1:] for r in split_rejections(d)] == [
        ("loop", f"symlink loop: points back to {src}, a folder being walked"),
        ("more/c.jpg", "not listed in labels file labels.csv")]
    d = discover_images(src, labels_csv=str(csv), follow_symlinks=False)
    assert split_items(d) == {"train": [("a.jpg", 0)]}
    assert split_rejections(d) == [("train", "loop", NOT_FOLLOWED), ("train", "more", NOT_FOLLOWED),
                                   ("train", "more/b.jpg", "listed in labels.csv but no such file in the source")]
