"""`--classes FILE`: names for the class ids a labels file gives (OpenMMLab's `ann_file` and `classes.txt`,
Places365's lists). Before, such a dataset's classes were "0".."K-1" and the names stayed in a file beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree, touch

from converters import get_kind
from converters.images import ImageOptions
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest


def _discover(src: Path, **options):
    return get_kind("images").discover(src, options=ImageOptions(**options))


def _ids(tmp_path: Path, lines: str = "a.jpg 0\nb.jpg 2\n") -> tuple[Path, Path]:
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    (tmp_path / "train.txt").write_text(lines)
    return src, tmp_path / "train.txt"


def test_the_names_file_names_the_ids_in_order_and_keeps_names_past_the_largest(tmp_path):
    src, labels = _ids(tmp_path)
    (tmp_path / "classes.txt").write_text("\ufefftench\n\ngoldfish\n  great white shark  \nhammerhead\n")
    d = _discover(src, labels=str(labels), classes=str(tmp_path / "classes.txt"))
    assert d.classes == ("tench", "goldfish", "great white shark", "hammerhead")
    assert sorted((it.rel, it.label) for it in d.splits["train"]) == [("a.jpg", 0), ("b.jpg", 2)]
    assert d.identity[-1] == ["classes", ["tench", "goldfish", "great white shark", "hammerhead"]]  # renamed: rerun


@pytest.mark.parametrize(("text", "message"), [
    ("tench\ngoldfish\n", r"classes\.txt names 2 classes; the labels go up to 2$"),
    ("tench\ngoldfish\ntench\n", r"classes\.txt:3: the class 'tench' is named again \(first at .*classes\.txt:1\)"),
    # one name in NFC, then in NFD
    ("M\u00fcller\nMu\u0308ller\nx\n", r"classes\.txt:2: the class .* is named again \(first at .*classes\.txt:1\)"),
    ("tench\ngold\x1b[31mfish\nx\n", r"classes\.txt:2: the class .* holds control characters"),
    ("\n \n", r"classes\.txt names no class$"),
])
def test_a_names_file_that_cannot_name_the_ids_is_refused(tmp_path, text, message):
    src, labels = _ids(tmp_path)
    (tmp_path / "classes.txt").write_text(text)
    with pytest.raises(ConvertError, match=message):
        _discover(src, labels=str(labels), classes=str(tmp_path / "classes.txt"))


def test_a_missing_or_binary_names_file_is_refused(tmp_path):
    src, labels = _ids(tmp_path)
    with pytest.raises(ConvertError, match=r"^classes file .*missing\.txt does not exist$"):
        _discover(src, labels=str(labels), classes=str(tmp_path / "missing.txt"))
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\xfa")
    with pytest.raises(ConvertError, match=r"^cannot read classes file .*; save it as UTF-8 text$"):
        _discover(src, labels=str(labels), classes=str(tmp_path / "bin.txt"))


@pytest.mark.parametrize(("tree", "shown"), [(("cat/a.jpg", "dog/b.jpg", "eel/c.jpg", "fox/d.jpg"), "cat, dog, eel"),
                                             (("a.jpg",), "none")])
def test_classes_that_are_names_already_or_none_are_not_renamed(tmp_path, tree, shown):
    (tmp_path / "classes.txt").write_text("x\ny\n")
    with pytest.raises(ValueError, match=rf"^--classes names class ids 0\.\.K-1; this source's classes are not ids "
                                         rf"\({shown}\)$"):
        _discover(touch(tmp_path / "src", *tree), classes=str(tmp_path / "classes.txt"))


def test_ids_named_convert_into_a_manifest_of_names(tmp_path):
    src = make_image_tree(tmp_path / "src", classes=2, per_class=2)
    (tmp_path / "train.txt").write_text("".join(f"class_{c}/img_{i}.jpg {c}\n" for c in range(2) for i in range(2)))
    (tmp_path / "classes.txt").write_text("tench\ngoldfish\n")
    convert_images(src, tmp_path / "out", labels=str(tmp_path / "train.txt"), classes=str(tmp_path / "classes.txt"))
    m = read_manifest(tmp_path / "out")
    assert m.classes == ("tench", "goldfish") and list(m.splits["train"].class_counts) == [2, 2]
