"""Omniglot as torchvision downloads it and as its repository's archives unpack (converters/images/omniglot.py):
each character of an alphabet a class, two folders deep."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from helpers import convert_images, converted_pixels, small_photos
from PIL import Image

from converters.images.discover import discover_images
from converters.images.omniglot import ANOTHER_SMALL, OUTSIDE, SUBSET

BACKGROUND = {"Greek": ("character01", "character02", "character10"), "Latin": ("character01",)}
EVALUATION = {"Angelic": ("character01", "character02")}


def write_set(folder: Path, alphabets: dict[str, tuple[str, ...]], per_character: int = 2) -> list[Path]:
    """A set of Omniglot's: ALPHABET/characterNN/NNNN_NN.png, 1-bit drawings (the bundled photos made black and
    white); the images written, in order."""
    photos = small_photos(per_character * sum(map(len, alphabets.values())), 105, "L")
    written, n = [], 0
    for alphabet, characters in alphabets.items():
        for c, character in enumerate(characters):
            (folder / alphabet / character).mkdir(parents=True)
            for k in range(per_character):
                path = folder / alphabet / character / f"{c + 1:04d}_{k + 1:02d}.png"
                Image.fromarray(photos[n] > 127).save(path)
                written.append(path)
                n += 1
    return written


def torchvision_layout(root: Path) -> Path:
    """`root/omniglot-py/` as torchvision's Omniglot leaves it: both sets and their downloaded archives."""
    src = root / "omniglot-py"
    write_set(src / "images_background", BACKGROUND)
    write_set(src / "images_evaluation", EVALUATION)
    for name in ("images_background.zip", "images_evaluation.zip"):
        (src / name).write_bytes(b"PK\x05\x06" + bytes(18))
    return src


def test_torchvisions_omniglot_converts_each_character_a_class_and_each_set_a_split(tmp_path: Path, monkeypatch):
    omniglot = pytest.importorskip("torchvision.datasets.omniglot")
    src = torchvision_layout(tmp_path)
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == ("Greek/character01", "Greek/character02", "Greek/character10", "Latin/character01",
                         "Angelic/character01", "Angelic/character02")  # the background's, then the evaluation's
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 8, "test": 4}
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        (f"images_{s}.zip", "beside Omniglot's image sets: not read") for s in ("background", "evaluation")]
    listing = omniglot.list_dir  # torchvision lists the folders in the file system's order: here, sorted
    monkeypatch.setattr(omniglot, "list_dir", lambda root, prefix=False: sorted(listing(root, prefix)))
    monkeypatch.setattr(omniglot.Omniglot, "_check_integrity", lambda self: True)  # (no archive to checksum)
    theirs = omniglot.Omniglot(str(tmp_path), background=True)
    got = converted_pixels(tmp_path / "out", "train", mode="L")
    assert len(theirs) == len(got) == 8
    for i in range(len(theirs)):
        image, target = theirs[i]
        name, character = theirs._flat_character_images[i]
        label, pixels = got[f"images_background/{theirs._characters[character]}/{name}"]
        assert label == target
        assert np.abs(pixels.astype(int) - np.asarray(image, int)).mean() < 12  # (a drawing's edges, as JPEG)
    evaluation = omniglot.Omniglot(str(tmp_path), background=False)
    tests = converted_pixels(tmp_path / "out", "test")
    for i in range(len(evaluation)):
        name, character = evaluation._flat_character_images[i]
        assert tests[f"images_evaluation/{evaluation._characters[character]}/{name}"][0] == character + 4


def test_a_source_above_omniglot_py_and_one_set_as_the_source(tmp_path: Path):
    torchvision_layout(tmp_path / "data")
    (tmp_path / "data" / "readme.txt").write_text("torchvision's root")
    write_set(tmp_path / "data" / "omniglot-py" / "images_background_small2", {"Latin": ("character01",)})
    found = discover_images(tmp_path / "data")
    assert found.layout == "omniglot" and len(found.classes) == 6
    assert sorted(r.source for r in found.rejected) == [
        "omniglot-py/images_background.zip", *(f"omniglot-py/images_background_small2/Latin/character01/0001_0{k}.png"
                                               for k in (1, 2)), "omniglot-py/images_evaluation.zip", "readme.txt"]
    one = discover_images(tmp_path / "data" / "omniglot-py" / "images_evaluation", split="val")
    assert one.classes == ("Angelic/character01", "Angelic/character02")
    assert {k: len(v) for k, v in one.splits.items()} == {"val": 4}
    assert not one.rejected  # (nothing beside the source: the small set beside it is not under it)
    small = discover_images(tmp_path / "data" / "omniglot-py" / "images_background_small2")
    assert small.layout == "omniglot" and small.classes == ("Latin/character01",)
    m = convert_images(tmp_path / "data" / "omniglot-py" / "images_background", tmp_path / "out",
                       val_fraction=0.5).manifest  # one split: a fraction may be held out
    assert sum(s.samples for s in m.splits.values()) == 8 and set(m.splits) == {"train", "val"}
    m = convert_images(tmp_path / "data" / "omniglot-py", tmp_path / "out2", val_fraction=0.5).manifest
    assert m.splits["test"].samples == 4 and m.splits["train"].samples + m.splits["val"].samples == 8  # from train


def test_lakes_smaller_sets_are_not_converted_twice(tmp_path: Path):
    src = tmp_path / "python"  # the repository's python/ folder, its archives unpacked
    write_set(src / "images_background", {"Greek": ("character01",)})
    write_set(src / "images_background_small1", {"Greek": ("character01",)})
    write_set(src / "strokes_background", {"Greek": ("character01",)})
    found = discover_images(src)
    assert found.classes == ("Greek/character01",)
    assert {k: len(v) for k, v in found.splits.items()} == {"train": 2}
    reasons = {r.source: r.reason for r in found.rejected}
    assert reasons == {**{f"images_background_small1/Greek/character01/0001_0{k}.png": SUBSET for k in (1, 2)},
                       **{f"strokes_background/Greek/character01/0001_0{k}.png":
                          "beside Omniglot's image sets: not read" for k in (1, 2)}}
    small = tmp_path / "small"
    write_set(small / "images_background_small1", {"Greek": ("character01",)})
    write_set(small / "images_background_small2", {"Latin": ("character01", "character02")})
    found = discover_images(small, split="train")
    assert found.classes == ("Greek/character01",)
    assert {r.reason for r in found.rejected} == {ANOTHER_SMALL}
    assert len(found.rejected) == 4


def test_files_outside_a_character_folder_and_names_that_cannot_be_classes_are_rejections(tmp_path: Path, caplog):
    src = tmp_path / "omniglot-py"
    images = write_set(src / "images_background", {"Greek": ("character01", "character02"),
                                                    "Bad\x1b[31m": ("character01",), "Latin": ("char\x07",)})
    for path in (src / "images_background" / "Greek" / "character02").iterdir():
        path.rename(path.with_suffix(".db"))  # no image: the class (torchvision's too) has none
    (src / "images_background" / "Greek" / "character01" / "0001_03.png").symlink_to(tmp_path / "gone.png")
    (src / "images_background" / "Greek" / "0001_01.png").write_bytes(images[0].read_bytes())  # in an alphabet
    (src / "images_background" / "0001_01.png").write_bytes(images[0].read_bytes())  # in the set
    deeper = src / "images_background" / "Greek" / "character01" / "more"
    deeper.mkdir()
    (deeper / "0001_01.png").write_bytes(images[0].read_bytes())
    with caplog.at_level(logging.WARNING):
        found = discover_images(src)
    assert found.classes == ("Greek/character01", "Greek/character02")
    assert "class 'Greek/character02' has no images" in caplog.text
    reasons = {r.source: r.reason for r in found.rejected}
    assert reasons["images_background/Greek/character01/0001_03.png"].startswith("broken symlink")
    assert reasons["images_background/Latin/char\x07/0001_01.png"].startswith("class folder name holds control")
    assert {k: v for k, v in reasons.items() if v == OUTSIDE} == dict.fromkeys(
        ["images_background/0001_01.png", "images_background/Greek/0001_01.png",
         "images_background/Greek/character01/more/0001_01.png"], OUTSIDE)
    assert [v[:40] for k, v in reasons.items() if "Bad" in k] == ["class folder name holds control characte"] * 2
    assert all(it.split == "train" for it in found.splits["train"])


def test_a_tree_that_is_not_omniglot_is_read_as_before(tmp_path: Path):
    src = tmp_path / "src"
    write_set(src / "images", {"Greek": ("character01",)})
    assert discover_images(src).layout != "omniglot"


def test_links_to_sets_and_loops_back_to_the_source(tmp_path: Path):
    src = tmp_path / "omniglot-py"
    write_set(tmp_path / "elsewhere", BACKGROUND)
    write_set(src / "images_evaluation", EVALUATION)
    (src / "images_background").symlink_to(tmp_path / "elsewhere")
    (src / "images_evaluation" / "Angelic" / "character01" / "up").symlink_to(src)  # a loop back to the source
    found = discover_images(src)
    assert len(found.classes) == 6 and {k: len(v) for k, v in found.splits.items()} == {"train": 8, "test": 4}
    assert [(r.split, r.source, r.reason[:40]) for r in found.rejected] == [
        ("test", "images_evaluation/Angelic/character01/up", "symlink loop: points back to " + str(src)[:11])]
    assert len(found.identity) == 12  # each image, so that a resume sees one changed
    unfollowed = discover_images(src, follow_symlinks=False)  # the linked set is not read, nor named a set
    assert unfollowed.classes == ("Angelic/character01", "Angelic/character02")
    assert {k: len(v) for k, v in unfollowed.splits.items()} == {"test": 4}
