"""Classes from file names (`--label-pattern`, fastai's `from_name_re`): Oxford-IIIT Pet's `Abyssinian_100.jpg`,
Kaggle's dogs-vs-cats `train/cat.0.jpg`. Before, such a folder converted unlabeled, or (split folders of loose
images) as two classes named train and test."""

from __future__ import annotations

import logging
import unicodedata

import pytest
from helpers import PHOTOS, convert_images, split_items, split_rejections, touch

from converters.images.discover import discover_images
from converters.images.encode import ImageOptions
from converters.images.name_labels import NO_MATCH, class_of_name, compile_label_pattern
from converters.tree import SPLIT_FOLDERS
from fastdata.cli import main
from fastdata.manifest import read_manifest

PETS = r"^(.+)_\d+\.jpg$"


def test_oxford_pets_names_give_the_breeds(tmp_path):
    src = touch(tmp_path / "images", "Abyssinian_1.jpg", "Abyssinian_2.jpg", "american_bulldog_10.jpg",
                 "readme.txt", "noclass.jpg")
    d = discover_images(src, label_pattern=PETS)
    assert d.layout == "name" and d.classes == ("Abyssinian", "american_bulldog")
    assert split_items(d) == {
        "train": [("Abyssinian_1.jpg", 0), ("Abyssinian_2.jpg", 0), ("american_bulldog_10.jpg", 1)]}
    assert sorted((r.split, r.source, r.reason) for r in d.rejected) == [
        ("train", "noclass.jpg", NO_MATCH), ("train", "readme.txt", "unsupported extension '.txt'; allowed: .jpg, "
                                                                    ".jpeg, .jfif, .jpe, .png, .webp, .bmp, .tif, "
                                                                    ".tiff, .gif, .avif, .ppm, .pgm, .pbm, .pnm")]
    assert [row[:3] for row in d.identity] == [  # the class names: a renamed file changes what is converted
        ["train", "Abyssinian_1.jpg", "Abyssinian"], ["train", "Abyssinian_2.jpg", "Abyssinian"],
        ["train", "american_bulldog_10.jpg", "american_bulldog"]]


def test_dogs_vs_cats_split_folders_and_class_folders_as_plain_folders(tmp_path):
    src = touch(tmp_path / "src", "train/cat.0.jpg", "train/dog.1.jpg", "train/more/dog.2.jpg", "test/12.jpg",
                 "extra/cat.3.jpg")
    d = discover_images(src, label_pattern=r"^(cat|dog)\.")
    assert d.classes == ("cat", "dog")
    assert split_items(d) == {"train": [("train/cat.0.jpg", 0), ("train/dog.1.jpg", 1), ("train/more/dog.2.jpg", 1)]}
    assert split_rejections(d) == [("extra", "extra/cat.3.jpg", f"not inside a split folder ({SPLIT_FOLDERS})"),
                                   ("test", "test/12.jpg", NO_MATCH)]


def test_the_group_named_label_wins_and_class_ids_stay_labels(tmp_path):
    src = touch(tmp_path / "src", "7-3.jpg", "8-10.jpg", "9-3.png")
    d = discover_images(src, label_pattern=r"^(?P<n>\d+)-(?P<label>\d+)\.")
    assert d.classes == tuple(str(i) for i in range(11))  # ids 0..10, as a labels CSV's
    assert split_items(d) == {"train": [("7-3.jpg", 3), ("8-10.jpg", 10), ("9-3.png", 3)]}


def test_the_pattern_is_searched_for_anywhere_in_the_name(tmp_path):
    d = discover_images(touch(tmp_path / "src", "photo_3.jpg", "scan_1.png"), label_pattern=r"_(\d+)\.")
    assert split_items(d) == {"train": [("photo_3.jpg", 3), ("scan_1.png", 1)]}


@pytest.mark.parametrize(("name", "pattern", "why"), [
    ("x.jpg", r"^(\d*)x", "no class in the file name: the group of --label-pattern matched nothing"),
    ("b.jpg", r"^(a)?b", "no class in the file name: the group of --label-pattern matched nothing"),
    (b"caf\xe9_1.jpg", PETS, "class from the file name is not valid UTF-8: rename the file"),
    ("red\x1b[31m_1.jpg", PETS, "class from the file name holds control characters (an escape sequence, a tab, a "
                                "newline, a bidi override): rename the file"),
    ("\u202eevil_1.jpg", PETS, "class from the file name holds control characters (an escape sequence, a tab, a "
                               "newline, a bidi override): rename the file"),
])
def test_a_name_without_a_usable_class_is_rejected_saying_why(tmp_path, name, pattern, why):
    d = discover_images(touch(tmp_path / "src", name), label_pattern=pattern)
    assert [r.reason for r in d.rejected] == [why] and d.splits == {}


def test_a_class_written_decomposed_is_the_composed_class():
    nfd = unicodedata.normalize("NFD", "M\u00fcnsterl\u00e4nder_1.jpg")
    assert class_of_name(compile_label_pattern(PETS), nfd) == ("M\u00fcnsterl\u00e4nder", None)


@pytest.mark.parametrize(("pattern", "message"), [
    ("(", r"--label-pattern '\(' is no regular expression: missing \), unterminated subpattern"),
    (r"^\w+_\d+", r"--label-pattern '\^\\\\w\+_\\\\d\+' has no group: the class is the text of its first group "
                  r"\(or of the group named label\), as in '\^\(\.\+\)_\\d\+\\\.jpg\$'$"),
])
def test_a_pattern_that_cannot_give_classes_is_refused_before_anything_is_read(tmp_path, capsys, pattern, message):
    with pytest.raises(ValueError, match=message):
        ImageOptions(label_pattern=pattern)
    assert main(["convert", str(touch(tmp_path / "src", "a_1.jpg")), str(tmp_path / "out"), "--kind", "images",
                 "--label-pattern", pattern]) == 2
    assert "fastdata convert: error: --label-pattern" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("other", "message"), [
    ({"unlabeled": True}, "--label-pattern and --unlabeled contradict each other: pick one"),
    ({"labels_csv": "l.csv"}, "--labels and --label-pattern contradict each other: pick one"),
])
def test_a_pattern_contradicts_the_other_sources_of_labels(tmp_path, other, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        discover_images(touch(tmp_path / "src", "a_1.jpg"), label_pattern=PETS, **other)


def test_a_pattern_labels_image_files_not_tables(tmp_path):
    with pytest.raises(ValueError, match="^--label-pattern labels image files; .* holds Parquet or Arrow tables$"):
        discover_images(touch(tmp_path / "src", "data/train.parquet"), label_pattern=PETS)


def test_a_group_that_takes_the_whole_name_is_warned_about(tmp_path, caplog):
    src = touch(tmp_path / "src", *(f"img{i}_1.jpg" for i in range(20)))
    with caplog.at_level(logging.WARNING):
        d = discover_images(src, label_pattern=PETS)
    assert len(d.classes) == 20
    assert [r.getMessage() for r in caplog.records] == [
        "--label-pattern: its 20 images name 20 classes, most of them a class of one image: does its group match "
        "the class alone?"]


def test_pets_convert_with_their_breeds(tmp_path):
    src = tmp_path / "images"
    src.mkdir()
    photos = sorted(PHOTOS.glob("*.jpg"))[:5]
    for i, p in enumerate(photos):
        (src / f"{('Bengal', 'beagle')[i % 2]}_{i}.jpg").write_bytes(p.read_bytes())
    convert_images(src, tmp_path / "out", label_pattern=PETS)
    m = read_manifest(tmp_path / "out")
    assert m.classes == ("Bengal", "beagle") and list(m.splits["train"].class_counts) == [3, 2] and not m.rejected


def test_links_are_followed_only_when_asked(tmp_path):
    src = touch(tmp_path / "src", "cat_1.jpg")
    touch(tmp_path / "elsewhere", "dog_2.jpg")
    (src / "more").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert split_items(discover_images(src, label_pattern=PETS)) == {"train": [("cat_1.jpg", 0), ("more/dog_2.jpg", 1)]}
    d = discover_images(src, label_pattern=PETS, follow_symlinks=False)
    assert split_items(d) == {"train": [("cat_1.jpg", 0)]} and [r.source for r in d.rejected] == ["more"]
