"""GTSRB as torchvision's `GTSRB` downloads it (`gtsrb/GTSRB/Training/00000/*.ppm`, `gtsrb/GTSRB/Final_Test/Images/`
and `gtsrb/GT-final_test.csv`) and as the benchmark's archives unpack (`GTSRB/Final_Training/Images/00000/`):
converted as it lies (converters/images/gtsrb.py). Before, the test signs and their labels were not read together,
and a --labels run named the test classes `0` ... `42` where the training folders are `00000` ... `00042`. The signs
are the real photos of tests/data, saved as Netpbm files as GTSRB ships them."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, split_items, split_rejections
from PIL import Image

from converters.images import gtsrb
from converters.images.discover import discover_images
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

HEADER = "Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId"
TRAIN = {"00000": 2, "00001": 1, "00010": 2}  # class folder -> signs in it (three of GTSRB's 43)
TEST = {"00000.ppm": 10, "00001.ppm": 0, "00002.ppm": 1}  # test sign -> its ClassId


def _sign(photo: Path, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(photo) as im:
        im.convert("RGB").resize((40, 36)).save(path)  # a .ppm suffix: binary PPM, as GTSRB's signs are


def _gtsrb(root: Path, training: str = "Training", test=TEST, labels_at: str = "gtsrb") -> Path:
    """torchvision's `gtsrb/` (or, with `Final_Training/Images`, the benchmark's archives): signs in class folders
    with their own lists, test signs, the ground truth where `labels_at` says, the downloaded archives beside."""
    top = root / "gtsrb" / "GTSRB"
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for folder, count in TRAIN.items():
        for i in range(count):
            _sign(next(photos), top / training / folder / f"{folder}_{i:05d}.ppm")
        (top / training / folder / f"GT-{folder}.csv").write_text(HEADER + "\n" + "".join(
            f"{folder}_{i:05d}.ppm;40;36;5;5;35;31;{int(folder)}\n" for i in range(count)))
    for name in test:
        _sign(next(photos), top / gtsrb.TEST_IMAGES / name)
    (top / gtsrb.TEST_IMAGES / "GT-final_test.test.csv").write_text(HEADER.rsplit(";", 1)[0] + "\n")
    (root / labels_at / gtsrb.TEST_LABELS).write_text(HEADER + "\r\n" + "".join(
        f"{name};40;36;5;5;35;31;{c}\r\n" for name, c in test.items()))
    (root / "gtsrb" / "GTSRB_Final_Test_GT.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    return root


def test_the_download_converts_with_the_classes_by_number_and_the_test_signs_labelled(tmp_path):
    src = _gtsrb(tmp_path / "src")
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ("00000", "00001", "00010") and m.extra["layout"] == "gtsrb"
    got = class_lists(tmp_path / "dst", lambda source: source.split("GTSRB/")[1], field="label")
    assert got == {"Training/00000/00000_00000.ppm": ("train", 0), "Training/00000/00000_00001.ppm": ("train", 0),
                   "Training/00001/00001_00000.ppm": ("train", 1),
                   "Training/00010/00010_00000.ppm": ("train", 2), "Training/00010/00010_00001.ppm": ("train", 2),
                   "Final_Test/Images/00000.ppm": ("test", 2), "Final_Test/Images/00001.ppm": ("test", 0),
                   "Final_Test/Images/00002.ppm": ("test", 1)}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("gtsrb/GTSRB_Final_Test_GT.zip", "beside GTSRB's training and test folders: not read")]


def test_the_benchmarks_own_archives_with_the_labels_among_the_test_signs(tmp_path):
    src = _gtsrb(tmp_path, training="Final_Training/Images", labels_at="gtsrb/GTSRB/Final_Test/Images")
    d = discover_images(src / "gtsrb" / "GTSRB")
    assert d.classes == ("00000", "00001", "00010") and d.layout == "gtsrb"
    assert split_items(d)["test"] == [("Final_Test/Images/00000.ppm", 2), ("Final_Test/Images/00001.ppm", 0),
                                      ("Final_Test/Images/00002.ppm", 1)]
    assert len(split_items(d)["train"]) == 5 and split_rejections(d) == []


def test_a_test_class_without_a_training_folder_and_what_lies_beside_are_rejections(tmp_path):
    src = _gtsrb(tmp_path, test={**TEST, "00003.ppm": 42})
    top = src / "gtsrb" / "GTSRB"
    (top / "Readme-Images.txt").write_text("GTSRB")
    (top / "Training" / "Readme.txt").write_text("GTSRB")
    (top / "Training" / "extra").mkdir()
    (top / "Training" / "extra" / "a.ppm").write_bytes(b"P6")
    (top / "Training" / "00001" / "notes.txt").write_text("a note in a class folder")
    d = discover_images(src)
    assert [(s, source, reason.split(";")[0]) for s, source, reason in split_rejections(d)] == [
        ("test", "gtsrb/GTSRB/Final_Test/Images/00003.ppm", "class not among train's classes: '00042'"),
        ("train", "gtsrb/GTSRB/Readme-Images.txt", "beside GTSRB's training and test folders: not read"),
        ("train", "gtsrb/GTSRB/Training/00001/notes.txt", "unsupported extension '.txt'"),
        ("train", "gtsrb/GTSRB/Training/Readme.txt", "not a GTSRB class folder (00000 ... 00042)"),
        ("train", "gtsrb/GTSRB/Training/extra/a.ppm", "not a GTSRB class folder (00000 ... 00042)"),
        ("train", "gtsrb/GTSRB_Final_Test_GT.zip", "beside GTSRB's training and test folders: not read")]
    assert len(d.splits["train"]) == 5 and len(d.splits["test"]) == 3  # the folders' GT-*.csv lists skipped


def test_training_folders_alone_are_the_train_split(tmp_path):
    src = _gtsrb(tmp_path)
    top = src / "gtsrb" / "GTSRB"
    for f in (top / gtsrb.TEST_IMAGES).iterdir():
        f.unlink()
    (top / gtsrb.TEST_IMAGES).rmdir()
    (src / "gtsrb" / gtsrb.TEST_LABELS).unlink()
    d = discover_images(src / "gtsrb")
    assert d.layout == "gtsrb" and list(d.splits) == ["train"] and len(d.splits["train"]) == 5


def test_test_signs_without_the_ground_truth_stop_the_conversion(tmp_path):
    src = _gtsrb(tmp_path)
    (src / "gtsrb" / gtsrb.TEST_LABELS).unlink()
    with pytest.raises(ConvertError, match=r"test signs have no labels: GT-final_test.csv \(GTSRB_Final_Test_GT.zip\) "
                       r"is neither there nor in \S+/gtsrb/GTSRB; put it there, or convert \S+/GTSRB/Training alone"):
        discover_images(src)


def test_ground_truth_without_test_signs_is_a_rejection(tmp_path):
    src = _gtsrb(tmp_path)
    top = src / "gtsrb" / "GTSRB"
    for f in (top / gtsrb.TEST_IMAGES).iterdir():
        f.unlink()
    (top / gtsrb.TEST_IMAGES).rmdir()
    d = discover_images(src)
    assert list(d.splits) == ["train"] and split_rejections(d) == [
        ("train", "gtsrb/GT-final_test.csv", "beside GTSRB's training and test folders: not read"),
        ("train", "gtsrb/GTSRB_Final_Test_GT.zip", "beside GTSRB's training and test folders: not read")]


@pytest.mark.parametrize(("text", "problem"), [
    (HEADER.rsplit(";", 1)[0] + "\n00000.ppm;40;36;5;5;35;31\n",
     r"expected a header of Filename and ClassId columns \(separated by ';'\), got 'Filename;Width;Height;Roi.X1;"
     r"Roi.Y1;Roi.X2;Roi.Y2': the test archive's GT-final_test.test.csv has no ClassId; the labels are "
     r"GTSRB_Final_Test_GT.zip's$"),
    (HEADER + "\n00000.ppm;40;36;5;5;35;31\n", r"GT-final_test.csv:2: expected a file name and a class id"),
    ("", r"expected a header of Filename and ClassId"),
    (HEADER + "\n00000.ppm;40;36;5;5;35;31;x\n", r"GT-final_test.csv:2: expected a file name and a class id"),
    (HEADER + "\n\n00000.ppm;40;36;5;5;35;31;" + "9" * 5000 + "\n", r"GT-final_test.csv:3: expected a file name"),
    (HEADER + "\n;40;36;5;5;35;31;1\n", r"GT-final_test.csv:2: expected a file name and a class id"),
    (HEADER + "\n00000.ppm\n", r"GT-final_test.csv:2: expected a file name and a class id"),
    (HEADER + "\n00000.ppm;40;36;5;5;35;31;1\n00000.ppm;40;36;5;5;35;31;2\n",
     r"GT-final_test.csv:3: 00000.ppm is named twice"),
])
def test_ground_truth_that_is_not_gtsrbs_stops_the_conversion(tmp_path, text, problem):
    src = _gtsrb(tmp_path)
    (src / "gtsrb" / gtsrb.TEST_LABELS).write_text(text)
    with pytest.raises(ConvertError, match=problem):
        discover_images(src)


def test_a_tree_without_a_gtsrb_class_folder_is_no_gtsrb(tmp_path):
    src = _gtsrb(tmp_path)
    (src / "gtsrb" / "GTSRB" / "Training" / "00000").rename(src / "gtsrb" / "GTSRB" / "Training" / "00002")
    assert gtsrb.found(src) is None
    assert discover_images(src / "gtsrb" / "GTSRB" / "Training").layout != "gtsrb"


def test_other_labels_leave_the_ground_truth_unread(tmp_path):
    src = _gtsrb(tmp_path)
    assert discover_images(src, unlabeled=True).layout != "gtsrb"
    assert discover_images(src, label_pattern=r"(\d+)_").layout != "gtsrb"


def test_the_ground_truth_is_looked_for_in_the_source_only(tmp_path):
    src = _gtsrb(tmp_path)  # GT-final_test.csv in gtsrb/, beside GTSRB/, outside a GTSRB/ source
    with pytest.raises(ConvertError, match=r"test signs have no labels"):
        discover_images(src / "gtsrb" / "GTSRB")
    (src / "gtsrb" / gtsrb.TEST_LABELS).rename(src / "gtsrb" / "GTSRB" / gtsrb.TEST_LABELS)
    d = discover_images(src / "gtsrb" / "GTSRB")
    assert split_items(d)["test"][0] == ("Final_Test/Images/00000.ppm", 2) and split_rejections(d) == []


def test_rows_of_empty_cells_are_skipped(tmp_path):
    src = _gtsrb(tmp_path)
    labels = src / "gtsrb" / gtsrb.TEST_LABELS
    labels.write_text(labels.read_text() + ";;;;;;;\r\n \r\n")
    assert len(discover_images(src).splits["test"]) == 3


def test_what_is_no_sign_of_a_class_folder_is_a_rejection(tmp_path):
    src = _gtsrb(tmp_path)
    training = src / "gtsrb" / "GTSRB" / "Training"
    (training / "00005").write_bytes(b"a file named as a class folder")
    (training / "00001" / "deeper").mkdir()
    (training / "00001" / "deeper" / "GT-00001.csv").write_text(HEADER + "\n")  # not the folder's own list
    (training / "00001" / "linked.ppm").symlink_to(next(training.glob("00000/*.ppm")))
    d = discover_images(src, follow_symlinks=False)
    assert [(s, source, reason.split(";")[0]) for s, source, reason in split_rejections(d)] == [
        ("train", "gtsrb/GTSRB/Training/00001/deeper/GT-00001.csv", "unsupported extension '.csv'"),
        ("train", "gtsrb/GTSRB/Training/00001/linked.ppm", "symbolic link not followed (--no-follow-symlinks)"),
        ("train", "gtsrb/GTSRB/Training/00005", "not a GTSRB class folder (00000 ... 00042)"),
        ("train", "gtsrb/GTSRB_Final_Test_GT.zip", "beside GTSRB's training and test folders: not read")]
    assert d.classes == ("00000", "00001", "00010")


KAGGLE_TRAIN = {"Train/0/00000_00000_00000.png": 0, "Train/2/00002_00000_00000.png": 2,
                "Train/10/00010_00000_00000.png": 10, "Train/10/00010_00000_00001.png": 10}
KAGGLE_TEST = {"Test/00000.png": 10, "Test/00001.png": 2}
KAGGLE_HEADER = "Width,Height,Roi.X1,Roi.Y1,Roi.X2,Roi.Y2,ClassId,Path"


def _kaggle(root: Path, train=KAGGLE_TRAIN, test=KAGGLE_TEST) -> Path:
    """Kaggle's copy: PNG signs in Train/<ClassId>/ and Test/, the pictograms of Meta/, and the three tables."""
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for rel in [*train, *test, "Meta/0.png", "Meta/10.png"]:
        _sign(next(photos), root / rel)
    for name, rows in (("Train.csv", train), ("Test.csv", test)):
        (root / name).write_text("\ufeff" + KAGGLE_HEADER + "\n" + "".join(
            f"40,36,5,5,35,31,{c},{rel}\n" for rel, c in rows.items()))
    (root / "Meta.csv").write_text("Path,ClassId,ShapeId,ColorId,SignId\nMeta/0.png,0,1,0,3.29\n")
    return root


def test_kaggles_copy_converts_with_the_class_ids_in_the_order_of_their_numbers(tmp_path):
    src = _kaggle(tmp_path / "src")
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ("0", "2", "10") and m.extra["layout"] == "gtsrb_kaggle"  # a tree sorts "10" before "2"
    index = {c: i for i, c in enumerate(m.classes)}
    assert class_lists(tmp_path / "dst", field="label") == {
        **{rel: ("train", index[str(c)]) for rel, c in KAGGLE_TRAIN.items()},
        **{rel: ("test", index[str(c)]) for rel, c in KAGGLE_TEST.items()}}
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("Meta/0.png", "not listed in labels file Train.csv and Test.csv"),
        ("Meta/10.png", "not listed in labels file Train.csv and Test.csv")]


@pytest.mark.parametrize(("name", "text", "problem"), [
    ("Test.csv", "Width,Height,Path\n40,36,Test/00000.png\n",
     r"Test.csv: expected a header of Path and ClassId columns \(separated by ','\), got 'Width,Height,Path'$"),
    ("Test.csv", KAGGLE_HEADER + "\n40,36\n", r"Test.csv:2: expected a file name and a class id"),
    ("Test.csv", KAGGLE_HEADER + "\n40,36,5,5,35,31,1\n", r"Test.csv:2: expected a file name and a class id"),
    ("Test.csv", KAGGLE_HEADER + "\n40,36,5,5,35,31,x,Test/00000.png\n", r"Test.csv:2: expected a file name and a"),
    ("Test.csv", KAGGLE_HEADER + "\n40,36,5,5,35,31,1,Train/0/00000_00000_00000.png\n",
     r"Test.csv:2: Train/0/00000_00000_00000.png is in train too: a sign has one split"),
    ("Train.csv", KAGGLE_HEADER + "\n40,36,5,5,35,31,0,Train/0/a.png\n40,36,5,5,35,31,2,Train/0/a.png\n",
     r"Train.csv:3: Train/0/a.png is named twice"),
])
def test_kaggle_tables_that_are_not_gtsrbs_stop_the_conversion(tmp_path, name, text, problem):
    src = _kaggle(tmp_path)
    (src / name).write_text(text)
    with pytest.raises(ConvertError, match=problem):
        discover_images(src)


def test_a_train_table_of_other_columns_is_no_gtsrb(tmp_path):
    src = _kaggle(tmp_path)
    (src / "Train.csv").write_text("file,label\nTrain/0/00000_00000_00000.png,0\n")
    assert gtsrb.kaggle_found(src) is None
    (src / "Train.csv").write_text("\ufeffClassId,Path\n")  # a spreadsheet's BOM before the first column
    assert gtsrb.kaggle_found(src) == src and gtsrb.kaggle_found(src / "Train") is None
    (src / "Train").rename(src / "train-images")
    assert gtsrb.kaggle_found(src) is None
    (src / "train-images").rename(src / "Train")
    (src / "Test.csv").unlink()
    assert gtsrb.kaggle_found(src) is None


def test_a_bom_before_the_ground_truths_header_is_no_column(tmp_path):
    src = _gtsrb(tmp_path)
    labels = src / "gtsrb" / gtsrb.TEST_LABELS
    labels.write_text("\ufeff" + labels.read_text())  # Filename, the first column, behind a spreadsheet's BOM
    assert len(discover_images(src).splits["test"]) == 3


def test_a_first_line_that_is_not_utf8_is_read_for_its_columns(tmp_path):
    src = _kaggle(tmp_path)
    (src / "Train.csv").write_bytes(b"Width,\xff\xfe,ClassId,Path\n")
    assert gtsrb.kaggle_found(src) == src


def test_links_are_followed_unless_asked_not_to_and_the_identity_names_each_sign(tmp_path):
    src = _gtsrb(tmp_path / "src")
    top = src / "gtsrb" / "GTSRB"
    _sign(next(iter(sorted(PHOTOS.glob("*.jpg")))), tmp_path / "elsewhere" / "00001_00009.ppm")
    (top / "Training" / "00001" / "00001_00009.ppm").symlink_to(tmp_path / "elsewhere" / "00001_00009.ppm")
    (top / "Training" / "00001" / "back").symlink_to(top, target_is_directory=True)  # a loop
    (top / "Training" / "00010").rename(tmp_path / "elsewhere" / "00010")
    (top / "Training" / "00010").symlink_to(tmp_path / "elsewhere" / "00010", target_is_directory=True)
    d = discover_images(src)
    assert d.classes == ("00000", "00001", "00010") and len(d.splits["train"]) == 6
    entries = {rel: (split, label, size) for split, rel, label, size in d.identity}
    linked = "gtsrb/GTSRB/Training/00001/00001_00009.ppm"
    assert entries[linked] == ("train", 1, (tmp_path / "elsewhere" / "00001_00009.ppm").stat().st_size)
    assert entries["gtsrb/GTSRB/Final_Test/Images/00000.ppm"][:2] == ("test", 2) and len(entries) == 9
    assert [r for r in split_rejections(d) if "back" in r[1]] == [
        ("train", "gtsrb/GTSRB/Training/00001/back", f"symlink loop: points back to {top}, a folder being walked")]
    quiet = discover_images(src, follow_symlinks=False)
    assert quiet.classes == ("00000", "00001") and len(quiet.splits["train"]) == 3
    assert ("train", "gtsrb/GTSRB/Training/00010", "symbolic link not followed (--no-follow-symlinks)") in \
        split_rejections(quiet)
    (top / "Training" / "00000").rename(tmp_path / "elsewhere" / "00000")
    (top / "Training" / "00000").symlink_to(tmp_path / "elsewhere" / "00000", target_is_directory=True)
    first_linked = discover_images(src, follow_symlinks=False)  # GTSRB still, its first class folder not followed
    assert first_linked.layout == "gtsrb" and first_linked.classes == ("00001",)
    assert ("train", "gtsrb/GTSRB/Training/00000", "symbolic link not followed (--no-follow-symlinks)") in \
        split_rejections(first_linked)
    for linked_folder in (top / "Training", top / gtsrb.TEST_IMAGES):
        real = tmp_path / "moved" / linked_folder.name
        real.parent.mkdir(exist_ok=True)
        linked_folder.rename(real)
        linked_folder.symlink_to(real, target_is_directory=True)
    assert gtsrb.found(src, follow=False) is None and discover_images(src, follow_symlinks=False).layout != "gtsrb"
    g = gtsrb.found(src)
    assert g is not None and g.test == top / gtsrb.TEST_IMAGES
    (top / "Training").unlink()
    (tmp_path / "moved" / "Training").rename(top / "Training")
    assert gtsrb.found(src, follow=False).test is None  # the linked test folder alone, not followed
