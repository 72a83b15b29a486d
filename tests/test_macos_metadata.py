"""`__MACOSX/`, the folder a zip made on macOS unpacks beside its files (`._NAME` AppleDouble resource forks
mirroring the tree), is no data: a discovery skips it wherever it lies. Read before as one more class, with no
image, sorted before lower-case names: `cats` and `dogs` were labels 1 and 2."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from conftest_text import TOKENIZER
from helpers import PHOTOS, convert_images, split_items, split_rejections, touch

from converters.images.discover import discover_images
from converters.text.discover import discover_text
from converters.text.options import TextOptions
from converters.walk import listed

APPLE_DOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00" + bytes(18)  # the magic and version a resource fork opens with


def forks(src: Path, *rels: str) -> None:
    """`src/__MACOSX/` as macOS's zip writes it: a `._NAME` for each of `rels` (files and folders) at its place."""
    for rel in rels:
        path = src / "__MACOSX" / Path(rel).parent / f"._{Path(rel).name}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(APPLE_DOUBLE)


def test_class_folders_zipped_on_macos_convert_with_their_own_classes_and_labels(tmp_path: Path, caplog):
    src = tmp_path / "pets"
    for c, name in enumerate(("cats", "dogs")):
        (src / name).mkdir(parents=True)
        for i, photo in enumerate(sorted(PHOTOS.glob("*.jpg"))[2 * c:2 * c + 2]):
            shutil.copyfile(photo, src / name / f"{i}.jpg")
    forks(src, "cats", "cats/0.jpg", "cats/1.jpg", "dogs", "dogs/0.jpg", "dogs/1.jpg")
    with caplog.at_level(logging.INFO, logger="converters.walk"):
        found = discover_images(src)
    assert found.classes == ("cats", "dogs") and found.rejected == []
    assert split_items(found) == {"train": [("cats/0.jpg", 0), ("cats/1.jpg", 0), ("dogs/0.jpg", 1),
                                            ("dogs/1.jpg", 1)]}
    assert f"{src}/__MACOSX/ skipped: the resource forks a zip made on macOS holds beside its files" in caplog.text
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == ("cats", "dogs") and m.splits["train"].class_counts == (2, 2)


@pytest.mark.parametrize(("tree", "meta", "items"), [
    # Kaggle's nested split folders, the forks at the zip's root
    (("seg_train/seg_train/forest/1.jpg", "seg_train/seg_train/sea/2.jpg", "seg_test/seg_test/sea/3.jpg"),
     ("seg_train/seg_train/forest/1.jpg",),
     {"train": [("seg_train/seg_train/forest/1.jpg", 0), ("seg_train/seg_train/sea/2.jpg", 1)],
      "test": [("seg_test/seg_test/sea/3.jpg", 1)]}),
    # and beside the inner folder: it is still all a split folder holds
    (("train/train/a/1.jpg", "train/train/b/2.jpg"), ("train/__MACOSX/train/a/1.jpg",),
     {"train": [("train/train/a/1.jpg", 0), ("train/train/b/2.jpg", 1)]}),
    # a download's one top folder beside them (EuroSAT's `2750/`)
    (("eurosat/2750/Forest/1.jpg", "eurosat/2750/SeaLake/2.jpg"), ("eurosat/2750/Forest/1.jpg",),
     {"train": [("eurosat/2750/Forest/1.jpg", 0), ("eurosat/2750/SeaLake/2.jpg", 1)]}),
    (("eurosat/2750/Forest/1.jpg", "eurosat/2750/SeaLake/2.jpg"), ("eurosat/__MACOSX/2750/Forest/1.jpg",),
     {"train": [("eurosat/2750/Forest/1.jpg", 0), ("eurosat/2750/SeaLake/2.jpg", 1)]}),
    # deeper in a class: the forks are hidden files there, a visible file in them is skipped with its folder
    (("cats/1.jpg", "cats/__MACOSX/2.jpg", "dogs/3.jpg"), (), {"train": [("cats/1.jpg", 0), ("dogs/3.jpg", 1)]}),
])
def test_forks_are_skipped_wherever_they_lie(tmp_path: Path, tree, meta, items):
    src = touch(tmp_path / "src", *tree)
    for rel in meta:
        parts = rel.split("/__MACOSX/")
        forks(src / parts[0] if len(parts) == 2 else src, parts[-1])
    found = discover_images(src)
    assert split_items(found) == items and split_rejections(found) == []


def test_unlabeled_images_and_a_text_corpus_skip_the_forks(tmp_path: Path):
    src = touch(tmp_path / "u", "1.jpg", "more/2.jpg")
    forks(src, "1.jpg", "more/2.jpg")
    assert split_items(discover_images(src, unlabeled=True)) == {"train": [("1.jpg", None), ("more/2.jpg", None)]}
    corpus = tmp_path / "corpus"
    for rel, text in (("pos/1.txt", "good"), ("neg/2.txt", "bad")):
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(text)
    forks(corpus, "pos/1.txt", "neg/2.txt")
    found = discover_text(corpus, options=TextOptions(tokenizer=str(TOKENIZER)))
    assert found.classes == ("neg", "pos") and found.rejected == []


def test_only_that_name_is_skipped(tmp_path: Path):
    src = touch(tmp_path / "src", "__MACOSX/._a", "__macosx/1.jpg", "_MACOSX/2.jpg", "__MACOSX_/3.jpg")
    assert listed(src) == ["_MACOSX", "__MACOSX_", "__macosx"]  # (a name in another case is a folder as any other)
