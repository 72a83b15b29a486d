"""A folder that cannot be listed (no read permission, a dropped network mount) is a recorded rejection of the walk,
wherever a discovery meets it: a split folder, a class folder, a download's top folder, Kaggle's doubled split
folder. Before, the first look into it to tell the layout (`_loose_folders`, `_splits_inside`, `top_folder`) ended
the conversion with 'Permission denied: .../val', and the other splits were not converted. The source itself that
cannot be listed is refused at once, with what mends it. Tests run as root, who may read anything: the denial is
simulated where listing happens (os.scandir, os.listdir)."""

from __future__ import annotations

import errno

import pytest
from fuzz_unreadable import unlisted
from helpers import convert_images, make_image, split_items, split_rejections, touch

from converters.images.discover import discover_images
from converters.survey import local_source
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

DENIED = "unreadable folder: Permission denied"


@pytest.fixture
def lock():
    """lock(path, code=EACCES): listing `path` fails as the system would fail it with `code` (the fuzz target's
    `unlisted`, whose folders are looked up as each listing happens)."""
    locked: dict[str, int] = {}
    with unlisted(locked):
        yield lambda path, code=errno.EACCES: locked.__setitem__(str(path), code)


def test_a_split_folder_that_cannot_be_read_is_rejected_and_the_others_converted(tmp_path, lock) -> None:
    src = tmp_path / "src"
    for i, name in enumerate(["train/cat/a.jpg", "train/dog/b.jpg", "val/cat/c.jpg", "val/dog/d.jpg"]):
        make_image(src / name, size=(40, 30), seed=i)
    lock(src / "val")
    result = convert_images(src, tmp_path / "out")
    m = read_manifest(tmp_path / "out")
    assert m.classes == ("cat", "dog") and m.splits["train"].samples == 2 and "val" not in m.splits
    assert [(r["split"], r["source"], r["reason"]) for r in result.rejected] == [("val", "val", DENIED)]


def test_split_folders_of_class_folders(tmp_path, lock) -> None:
    src = touch(tmp_path / "src", "train/cat/a.jpg", "train/dog/b.jpg", "val/cat/c.jpg", "val/dog/d.jpg",
                "test/x.jpg")
    lock(src / "val")
    found = discover_images(src)
    assert found.layout == "split/class" and found.classes == ("cat", "dog")
    assert split_items(found) == {"train": [("train/cat/a.jpg", 0), ("train/dog/b.jpg", 1)]}
    assert ("val", "val", DENIED) in split_rejections(found)
    assert ("test", "test/x.jpg", "not inside a class folder: the split folder has none; --labels test=FILE labels "
            "its images") in split_rejections(found)  # (beside it, as before)


def test_split_folders_of_loose_images(tmp_path, lock) -> None:
    src = touch(tmp_path / "src", "train/a.jpg", "val/b.jpg")
    lock(src / "train")
    found = discover_images(src)
    assert found.layout == "unlabeled"  # not the class folders `train` and `val`
    assert split_items(found) == {"val": [("val/b.jpg", None)]}
    assert split_rejections(found) == [("train", "train", DENIED)]


def test_every_split_folder_unreadable_is_said_in_the_error(tmp_path, lock) -> None:
    src = touch(tmp_path / "src", "train/cat/a.jpg", "val/cat/b.jpg")
    lock(src / "train")
    lock(src / "val")
    found = discover_images(src)
    assert split_rejections(found) == [("train", "train", DENIED), ("val", "val", DENIED)]
    with pytest.raises(ConvertError, match=r"holds no images input to convert \(2 file\(s\) rejected: 2 x "
                                           "unreadable folder: Permission denied"):
        convert_images(src, tmp_path / "out")


def test_a_class_folder_that_cannot_be_read_first_or_later(tmp_path, lock) -> None:
    src = touch(tmp_path / "src", "cat/a.jpg", "dog/b.jpg", "owl/c.jpg")
    lock(src / "cat")  # the first class folder: the look for split folders inside class folders opens it first
    found = discover_images(src)
    assert found.layout == "class" and found.classes == ("cat", "dog", "owl")
    assert split_items(found) == {"train": [("dog/b.jpg", 1), ("owl/c.jpg", 2)]}
    assert split_rejections(found) == [("train", "cat", DENIED)]


def test_class_folders_of_split_folders(tmp_path, lock) -> None:
    src = touch(tmp_path / "src", "cat/train/a.jpg", "cat/val/b.jpg", "dog/train/c.jpg", "dog/val/d.jpg")
    lock(src / "cat")
    found = discover_images(src)
    assert found.layout == "class/split"  # dog's split folders still read as splits
    assert split_items(found) == {"train": [("dog/train/c.jpg", 1)], "val": [("dog/val/d.jpg", 1)]}
    assert split_rejections(found) == [("train", "cat", DENIED)]


def test_a_download_top_folder(tmp_path, lock) -> None:
    src = touch(tmp_path / "src", "data/train/cat/a.jpg", "data/train/dog/b.jpg", "data/val/cat/c.jpg")
    lock(src / "data" / "train")  # still the top folder, its split folders the source's
    found = discover_images(src)
    assert found.layout == "split/class" and found.classes == ("cat",)  # val's classes: train's cannot be read
    assert split_items(found) == {"val": [("data/val/cat/c.jpg", 0)]}
    assert split_rejections(found) == [("train", "data/train", DENIED)]
    lock(src / "data")  # the one folder: a class folder the walk rejects
    with pytest.raises(ConvertError, match="1 x unreadable folder: Permission denied"):
        convert_images(src, tmp_path / "out")


def test_kaggles_doubled_split_folder(tmp_path, lock) -> None:
    src = touch(tmp_path / "src", "seg_train/seg_train/cat/a.jpg", "seg_train/seg_train/dog/b.jpg",
                "seg_test/seg_test/cat/c.jpg")
    lock(src / "seg_test" / "seg_test")
    found = discover_images(src)
    assert split_items(found) == {"train": [("seg_train/seg_train/cat/a.jpg", 0), ("seg_train/seg_train/dog/b.jpg", 1)]}
    assert split_rejections(found) == [("test", "seg_test/seg_test", DENIED)]


def test_labels_for_a_split_folder_that_cannot_be_read(tmp_path, lock) -> None:
    src = touch(tmp_path / "src", "train/cat/a.jpg", "val/b.jpg")
    (tmp_path / "val.csv").write_text("b.jpg,cat\n")
    lock(src / "val")
    with pytest.raises(ConvertError, match=r"--labels val=\S+val.csv: its folder cannot be read"):
        discover_images(src, labels_csv=f"val={tmp_path / 'val.csv'}")


@pytest.mark.parametrize(("code", "mend"), [
    (errno.EACCES, "Permission denied (the user who converts needs read and search permission on it and its "
                   "folders: chmod -R u+rX)"),
    (errno.EPERM, "Operation not permitted (the user who converts needs read and search permission on it and its "
                  "folders: chmod -R u+rX)"),
    (errno.ENOTCONN, "Transport endpoint is not connected (a network or FUSE mount that has dropped, or a failing "
                     "disk: remount it and try again)"),
    (errno.ENOMEM, "Cannot allocate memory"),
])
def test_a_source_that_cannot_be_read_is_refused_with_its_mend(tmp_path, lock, code, mend) -> None:
    src = touch(tmp_path / "src", "cat/a.jpg")
    lock(src, code)
    with pytest.raises(ConvertError) as caught:
        local_source(str(src))
    assert str(caught.value) == f"source {src} cannot be read: {mend}"


def test_auto_detection_refuses_a_source_it_cannot_see_whole_and_kind_converts_the_rest(tmp_path, lock,
                                                                                       capsys) -> None:
    """A kind told from what can be read may be the wrong one: CheXpert without its train/ was text (its CSV), and
    the error was '--tokenizer is required for text'. The folders are named, and --kind converts what can be read."""
    src = touch(tmp_path / "src", "train/cat/a.jpg", "val/cat/b.jpg")
    (src / "train.csv").write_text("Path,Sex\ntrain/cat/a.jpg,F\n")
    lock(src / "train")
    assert cli(["convert", str(src), str(tmp_path / "out"), "--dry-run"]) == 2
    assert capsys.readouterr().err == (
        f"fastdata convert: error: cannot tell what kind of data {src} holds: train/ cannot be read: Permission denied "
        "(the user who converts needs read and search permission on it and its folders: chmod -R u+rX); mend that, "
        "or name the kind with --kind (image_text, images, dicom, nifti, text) to convert what can be read "
        "(what cannot is rejected)\n")
    assert cli(["convert", str(src), str(tmp_path / "out"), "--dry-run", "--kind", "images"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  val              1 inputs" in out and "         1  unreadable folder" in out, out
    for name in "wxy":
        lock(touch(src, f"{name}/z.jpg") / name)
    assert cli(["convert", str(src), str(tmp_path / "out"), "--dry-run"]) == 2
    assert "holds: train/, w/, x/ and 1 more cannot be read: Permission denied" in capsys.readouterr().err
    lock(src)
    assert cli(["convert", str(src), str(tmp_path / "out"), "--dry-run"]) == 2
    assert "cannot be read: Permission denied (the user who converts" in capsys.readouterr().err


@pytest.mark.parametrize(("kind", "folder", "what"), [
    ("gtsrb", "GTSRB/Training", "GTSRB's classes are the folders it holds"),
    ("voc", "ImageSets/Main", "VOC's lists of its splits are there"),
    ("coco", "annotations", "a dataset's annotations are looked for there (COCO's instances files, Oxford-IIIT "
                            "Pet's lists)"),
])
def test_a_folder_whose_names_a_dataset_needs_stops_it_saying_which(tmp_path, lock, kind, folder, what) -> None:
    """Read without them, the dataset's labels would be misread: the conversion stops, naming the folder."""
    from mutation_fuzz import _list_folder

    src = tmp_path / "src"
    _list_folder(src, kind, make_image(tmp_path / "a.jpg", size=(40, 30)).read_bytes(), False)
    lock(src / folder)
    with pytest.raises(ConvertError) as caught:
        discover_images(src, multi_label=kind != "gtsrb")
    assert str(caught.value) == (f"{src / folder} cannot be read: Permission denied (the user who converts needs read "
                                 f"and search permission on it and its folders: chmod -R u+rX); {what}")


def test_a_folder_above_what_a_dataset_takes_is_not_looked_beside(tmp_path, lock) -> None:
    """GTSRB/ holds Training/ and Final_Test/, found by their paths; what lies beside them cannot be listed, so none
    of it is rejected, and the signs are taken."""
    from mutation_fuzz import _list_folder

    src = tmp_path / "src"
    _list_folder(src, "gtsrb", make_image(tmp_path / "a.jpg", size=(40, 30)).read_bytes(), False)
    lock(src / "GTSRB")
    found = discover_images(src)
    assert found.layout == "gtsrb" and {s: len(v) for s, v in found.splits.items()} == {"train": 2, "test": 2}
    assert found.rejected == []


def test_a_source_file_is_not_refused_as_an_unreadable_folder(tmp_path) -> None:
    (tmp_path / "corpus.txt").write_text("one line\n")
    assert local_source(str(tmp_path / "corpus.txt")) == tmp_path / "corpus.txt"
