"""Split folders as Kaggle's zips name and nest them: a split's word with `set`, `data`, `seg`, ... beside it
(`training_set/`, `seg_test/`), and a split folder holding nothing but a folder of its own split
(`seg_train/seg_train/`, `train/train/`). Read before as class folders, Intel Image Classification converted into
the classes `seg_pred`, `seg_test` and `seg_train`, and Kaggle's Cat and Dog into `test_set` and `training_set`."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from conftest_text import TOKENIZER
from helpers import split_items, split_rejections, touch

from converters.images.discover import discover_images
from converters.text.discover import discover_text
from converters.text.options import TextOptions
from converters.tree import SPLIT_FOLDERS, split_folders_in, split_of_folder
from converters.walk import NOT_FOLLOWED
from fastdata.errors import ConvertError

OUTSIDE = f"not inside a split folder ({SPLIT_FOLDERS})"


@pytest.mark.parametrize(("name", "split"), [
    ("train", "train"), ("Validation", "val"),  # (as before)
    ("training_set", "train"), ("test_set", "test"), ("Train_Set", "train"), ("valid_set", "val"),  # Kaggle's
    ("seg_train", "train"), ("seg_test", "test"),  # Intel Image Classification's
    ("train-data", "train"), ("Validation Set", "val"), ("test_images", "test"), ("val_imgs", "val"),
    ("dataset_train", "train"), ("split-testing", "test"), ("train_data_set", "train"),
    ("test_tube", None), ("train_2", None), ("pretrain", None), ("seg_pred", None),  # a word no split nor filler has
    ("set", None), ("data_set", None), ("images", None),  # no split's word
    ("train_test", None), ("train_val_set", None),  # two splits' words: which?
    ("train_", None), ("_test", None), ("train__set", None), ("train.set", None), ("trainset", None),
])
def test_a_split_folder_is_named_by_a_splits_word_and_fillers(name: str, split: str | None):
    assert split_of_folder(name) == split


def test_intel_image_classification_converts_as_its_zip_unpacks(tmp_path: Path, caplog):
    src = touch(tmp_path / "intel", "seg_train/seg_train/buildings/1.jpg", "seg_train/seg_train/forest/2.jpg",
                "seg_test/seg_test/buildings/3.jpg", "seg_test/seg_test/forest/4.jpg", "seg_pred/seg_pred/5.jpg")
    with caplog.at_level(logging.INFO, logger="converters.tree"):
        d = discover_images(src)
    assert d.layout == "split/class" and d.classes == ("buildings", "forest")
    assert split_items(d) == {
        "train": [("seg_train/seg_train/buildings/1.jpg", 0), ("seg_train/seg_train/forest/2.jpg", 1)],
        "test": [("seg_test/seg_test/buildings/3.jpg", 0), ("seg_test/seg_test/forest/4.jpg", 1)]}
    assert split_rejections(d) == [("seg_pred", "seg_pred/seg_pred/5.jpg", OUTSIDE)]  # its images have no labels
    assert [r.getMessage() for r in caplog.records] == [
        "seg_test/ holds nothing but seg_test/: the test split is read from it",
        "seg_train/ holds nothing but seg_train/: the train split is read from it"]


def test_kaggles_cat_and_dog_and_a_split_in_a_folder_of_its_split_by_another_name(tmp_path: Path):
    src = touch(tmp_path / "cats", "training_set/training_set/cats/1.jpg", "training_set/training_set/dogs/2.jpg",
                "test_set/test_set/cats/3.jpg")
    assert split_items(discover_images(src)) == {
        "train": [("training_set/training_set/cats/1.jpg", 0), ("training_set/training_set/dogs/2.jpg", 1)],
        "test": [("test_set/test_set/cats/3.jpg", 0)]}
    src = touch(tmp_path / "other", "Train/training/a/1.jpg", "val/a/2.jpg")  # nested or not, split by split
    d = discover_images(src)
    assert d.classes == ("a",) and split_items(d) == {"train": [("Train/training/a/1.jpg", 0)],
                                                      "val": [("val/a/2.jpg", 0)]}


@pytest.mark.parametrize(("tree", "items", "rejected"), [
    # something beside the inner folder: it is the split's class folder, as before
    (("train/train/a/1.jpg", "train/readme.jpg", "test/train/a/2.jpg"),
     {"train": [("train/train/a/1.jpg", 0)], "test": [("test/train/a/2.jpg", 0)]},
     [("train", "train/readme.jpg", "not inside a class folder")]),
    (("train/train/a/1.jpg", "train/zz.jpg"), {"train": [("train/train/a/1.jpg", 0)]},
     [("train", "train/zz.jpg", "not inside a class folder")]),
    # a hidden file beside it is no file (macOS's .DS_Store)
    (("train/train/a/1.jpg", "train/train/b/2.jpg", "train/.DS_Store"),
     {"train": [("train/train/a/1.jpg", 0), ("train/train/b/2.jpg", 1)]}, []),
    # an inner folder of another split, or none: a class
    (("train/test/1.jpg", "train/cat/2.jpg"), {"train": [("train/cat/2.jpg", 0), ("train/test/1.jpg", 1)]}, []),
    (("train/cats/1.jpg", "val/cats/2.jpg"), {"train": [("train/cats/1.jpg", 0)], "val": [("val/cats/2.jpg", 0)]}, []),
])
def test_a_split_folder_is_read_from_its_inner_folder_only_when_that_is_all_it_holds(tmp_path: Path, tree, items,
                                                                                       rejected):
    d = discover_images(touch(tmp_path / "src", *tree))
    assert split_items(d) == items and split_rejections(d) == rejected


def test_a_linked_inner_folder_is_followed_only_where_links_are(tmp_path: Path):
    touch(tmp_path / "real", "a/1.jpg", "b/2.jpg")
    (tmp_path / "src" / "train").mkdir(parents=True)
    (tmp_path / "src" / "train" / "train").symlink_to(tmp_path / "real")
    assert split_items(discover_images(tmp_path / "src")) == {"train": [("train/train/a/1.jpg", 0),
                                                                        ("train/train/b/2.jpg", 1)]}
    d = discover_images(tmp_path / "src", follow_symlinks=False)  # (the split folder then holds no folder)
    assert split_rejections(d) == [("train", "train/train", NOT_FOLLOWED)] and not any(d.splits.values())


def test_unlabeled_images_and_two_folders_of_one_split(tmp_path: Path):
    src = touch(tmp_path / "u", "test_set/test_set/1.jpg", "training_set/2.jpg", "notes/3.jpg")
    d = discover_images(src, unlabeled=True)
    assert split_items(d) == {"test": [("test_set/test_set/1.jpg", None)], "train": [("training_set/2.jpg", None)]}
    assert split_rejections(d) == [("notes", "notes/3.jpg", OUTSIDE)]
    with pytest.raises(ConvertError, match=r"^the folders 'train' and 'training_set' both name the split 'train'"):
        discover_images(touch(tmp_path / "two", "train/a/1.jpg", "training_set/a/2.jpg"))


def test_a_text_corpus_in_kaggles_split_folders(tmp_path: Path):
    for rel, text in (("training_set/training_set/pos/1.txt", "good"), ("training_set/training_set/neg/2.txt", "bad"),
                      ("test_set/pos/3.txt", "fine")):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    d = discover_text(tmp_path, options=TextOptions(tokenizer=str(TOKENIZER)))
    assert d.layout == "split/class" and d.classes == ("neg", "pos")
    assert {s: sorted(it.rel for it in items) for s, items in d.splits.items()} == {
        "train": ["training_set/training_set/neg/2.txt", "training_set/training_set/pos/1.txt"],
        "test": ["test_set/pos/3.txt"]}


def test_a_split_folder_that_cannot_be_read_is_taken_as_it_is(tmp_path: Path, monkeypatch):
    """(what lies below it is the walk's to reject, saying why; the look for an inner folder raises nothing)"""
    src = touch(tmp_path / "src", "train/train/a/1.jpg", "test/test/a/2.jpg")
    real = os.scandir

    def scandir(path):  # (root reads any folder: a permission error made by hand)
        if Path(path) == src / "train":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert split_folders_in(src, ["test", "train"], follow=True) == {"test/test": "test", "train": "train"}


def test_the_reason_outside_split_folders_is_summarised_whole() -> None:
    """A summary groups reasons by their words before the first colon: the list of split folders held one, and a
    dry run's summary read 'not inside a split folder (train, val, test, or an alias'."""
    from fastdata.reasons import reason_group

    reason = f"not inside a split folder ({SPLIT_FOLDERS})"
    assert reason_group(reason) == reason
    assert reason_group(f"the split column names no split ({SPLIT_FOLDERS}): 'holdout'") == \
        f"the split column names no split ({SPLIT_FOLDERS})"
