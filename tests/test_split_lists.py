"""Splits from list files (`--split-list SPLIT=FILE`): Food-101's `meta/train.txt` and `meta/test.txt`, Oxford-IIIT
Pet's `annotations/test.txt`. Before, such a dataset converted as one split: the test images were trained on
unless the user moved them first."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import PHOTOS, convert_images, split_items, split_rejections, touch

from converters import get_kind
from converters.images import ImageOptions
from converters.images.split_lists import apply_split_lists, parse_split_lists
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest


def _discover(src: Path, **options):
    return get_kind("images").discover(src, options=ImageOptions(**options))


def _food(tmp_path: Path) -> Path:
    src = touch(tmp_path / "food-101" / "images", "apple_pie/100.jpg", "apple_pie/102.jpg", "apple_pie/104.jpg",
                 "ribs/101.jpg", "ribs/103.jpg", "ribs/105.jpg", "ribs/notes.txt")
    meta = tmp_path / "food-101" / "meta"
    meta.mkdir()
    (meta / "train.txt").write_text("apple_pie/100\napple_pie/102\nribs/101\n")
    (meta / "test.txt").write_text("apple_pie/104\nribs/105\nribs/999\nribs/notes.txt\n")
    return src


def test_food101_lists_give_train_and_test_and_files_listed_in_neither_are_rejected(tmp_path):
    src, meta = _food(tmp_path), tmp_path / "food-101" / "meta"
    d = _discover(src, split_lists=(f"train={meta / 'train.txt'}", f"test={meta / 'test.txt'}"))
    assert d.classes == ("apple_pie", "ribs")
    assert split_items(d) == {"train": [("apple_pie/100.jpg", 0), ("apple_pie/102.jpg", 0), ("ribs/101.jpg", 1)],
                              "test": [("apple_pie/104.jpg", 0), ("ribs/105.jpg", 1)]}
    assert split_rejections(d) == [
        ("test", "ribs/999", "listed in split list test.txt: no such file in the source"),
        ("test", "ribs/notes.txt", "unsupported extension '.txt'; allowed: .jpg, .jpeg, .jfif, .jpe, .png, .webp, "
                                   ".bmp, .tif, .tiff, .gif, .avif, .ppm, .pgm, .pbm, .pnm"),  # its list's split
        ("train", "ribs/103.jpg", "listed in no --split-list")]
    assert sorted((row[0], row[1]) for row in d.identity) == sorted(
        (s, rel) for s, items in split_items(d).items() for rel, _ in items)  # a moved file changes the identity


def test_a_list_of_another_split_takes_its_files_and_leaves_the_rest_in_split(tmp_path):
    src = touch(tmp_path / "images", "Abyssinian_1.jpg", "Abyssinian_2.jpg", "beagle_3.jpg", "beagle_4.png")
    (tmp_path / "test.txt").write_text("#Image CLASS-ID SPECIES BREED ID\nAbyssinian_2 1 1 1\n\n  beagle_4 2 2 1\n")
    d = _discover(src, label_pattern=r"^(.+)_\d+\.", split_lists=(f"test={tmp_path / 'test.txt'}",), split="trainval")
    assert split_items(d) == {"trainval": [("Abyssinian_1.jpg", 0), ("beagle_3.jpg", 1)],
                              "test": [("Abyssinian_2.jpg", 0), ("beagle_4.png", 1)]}
    assert not d.rejected


def test_a_labels_csv_without_a_split_column_takes_split_lists(tmp_path):
    src = touch(tmp_path / "src", "a.jpg", "b.jpg", "c.jpg")
    (tmp_path / "labels.csv").write_text("a.jpg,cat\nb.jpg,dog\nc.jpg,cat\n")
    (tmp_path / "test.txt").write_text("b\n")
    d = _discover(src, labels=str(tmp_path / "labels.csv"), split_lists=(f"test={tmp_path / 'test.txt'}",))
    assert split_items(d) == {"train": [("a.jpg", 0), ("c.jpg", 0)], "test": [("b.jpg", 1)]}
    assert d.classes == ("cat", "dog")


def test_a_bom_an_indented_comment_and_a_full_path_under_the_source(tmp_path):
    src = touch(tmp_path / "src", "a.jpg", "b.jpg", "c.jpg")
    (tmp_path / "val.txt").write_text(f"\ufeffa\n   # b is train\n{src.resolve() / 'c.jpg'}\n")
    d = _discover(src, unlabeled=True, split_lists=(f"val={tmp_path / 'val.txt'}",))
    assert split_items(d) == {"val": [("a.jpg", None), ("c.jpg", None)], "train": [("b.jpg", None)]} and not d.rejected


def test_windows_and_dotted_names_and_a_name_several_files_have(tmp_path):
    src = touch(tmp_path / "src", "a/x.jpg", "b/y.jpg", "c.jpg", "c.png")
    (tmp_path / "val.txt").write_text(".\\a\\x.jpg\n./b/y\nc\nb/y.jpg\n")  # b/y twice in one list: one file
    d = _discover(src, unlabeled=True, split_lists=(f"val={tmp_path / 'val.txt'}",))
    assert split_items(d) == {"val": [("a/x.jpg", None), ("b/y.jpg", None)],
                              "train": [("c.jpg", None), ("c.png", None)]}
    assert split_rejections(d) == [
        ("val", "c", "listed in split list val.txt: names several files (c.jpg, c.png): name the file whole")]


def test_a_name_in_the_other_normalisation_finds_its_file_and_an_extension_is_never_cut(tmp_path):
    import unicodedata

    src = touch(tmp_path / "src", "M\u00fcller.jpg", "q.jpg.png")
    (tmp_path / "val.txt").write_text(unicodedata.normalize("NFD", "M\u00fcller.jpg") + "\nq.jpg\n")
    d = _discover(src, unlabeled=True, split_lists=(f"val={tmp_path / 'val.txt'}",))
    assert split_items(d) == {"val": [("M\u00fcller.jpg", None)], "train": [("q.jpg.png", None)]}
    assert split_rejections(d) == [("val", "q.jpg", "listed in split list val.txt: no such file in the source")]


def test_a_file_two_lists_name_is_refused_naming_both_lines(tmp_path):
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    (tmp_path / "train.txt").write_text("a\nb\n")
    (tmp_path / "test.txt").write_text("b.jpg\n")
    with pytest.raises(ConvertError, match=rf"^{tmp_path / 'test.txt'}:1: 'b.jpg' is in the split 'test' and, by "
                                           rf"{tmp_path / 'train.txt'}:2, in 'train': an image in two splits leaks"):
        _discover(src, unlabeled=True, split_lists=(f"train={tmp_path / 'train.txt'}", f"test={tmp_path / 'test.txt'}"))


@pytest.mark.parametrize(("values", "message"), [
    (["test"], r"^--split-list 'test': expected SPLIT=FILE"), (["test="], r"expected SPLIT=FILE"),
    (["te st=a.txt"], r"^--split-list 'te st' is not allowed"), (["val=a", "val=b"], r"names the split 'val' twice"),
])
def test_split_list_values_that_cannot_be_read_are_refused(values, message):
    with pytest.raises(ValueError, match=message):
        ImageOptions(split_lists=tuple(values))
    assert parse_split_lists(["val=v.txt", "test=t=1.txt", "train=~/t.txt"]) == (
        ("val", Path("v.txt")), ("test", Path("t=1.txt")), ("train", Path.home() / "t.txt"))


def test_a_list_that_is_missing_or_not_text_is_refused(tmp_path):
    src = touch(tmp_path / "src", "a.jpg")
    with pytest.raises(ConvertError, match=r"^split list .*missing\.txt does not exist$"):
        _discover(src, split_lists=(f"val={tmp_path / 'missing.txt'}",))
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00a")
    with pytest.raises(ConvertError, match=r"^cannot read split list .*bin\.txt: .*; save it as UTF-8 text$"):
        _discover(src, split_lists=(f"val={tmp_path / 'bin.txt'}",))


@pytest.mark.parametrize(("tree", "options"), [
    (("train/cat/a.jpg", "val/cat/b.jpg"), {}),  # split folders
    (("train/cat/a.jpg",), {}),  # one split folder: its one split is still the folder's
    (("a.jpg", "b.jpg"), {"labels": "labels.csv"}),  # a labels CSV with a split column
])
def test_a_source_with_splits_of_its_own_is_refused(tmp_path, tree, options):
    src = touch(tmp_path / "src", *tree)
    if options:
        (tmp_path / "labels.csv").write_text("filename,class,split\na.jpg,x,train\nb.jpg,y,val\n")
        options = {"labels": str(tmp_path / "labels.csv")}
    (tmp_path / "l.txt").write_text("a\n")
    with pytest.raises(ValueError, match=r"^--split-list gives splits to image files of one split; this source "):
        _discover(src, split_lists=(f"test={tmp_path / 'l.txt'}",), **options)


def test_no_list_changes_nothing(tmp_path):
    d = _discover(touch(tmp_path / "src", "cat/a.jpg"))
    assert apply_split_lists(d, (), "train", tmp_path / "src") is d


def test_food101_converts_with_its_splits(tmp_path):
    src = tmp_path / "images"
    photos = sorted(PHOTOS.glob("*.jpg"))[:6]
    for i, p in enumerate(photos):
        (src / ("pie", "ribs")[i % 2]).mkdir(parents=True, exist_ok=True)
        (src / ("pie", "ribs")[i % 2] / f"{i}.jpg").write_bytes(p.read_bytes())
    (tmp_path / "test.txt").write_text("pie/4\nribs/5\n")
    convert_images(src, tmp_path / "out", split_lists=(f"test={tmp_path / 'test.txt'}",))
    m = read_manifest(tmp_path / "out")
    assert {s: list(m.splits[s].class_counts) for s in m.splits} == {"train": [2, 2], "test": [1, 1]}
    assert not m.rejected
