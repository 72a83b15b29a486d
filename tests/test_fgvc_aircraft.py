"""FGVC-Aircraft as torchvision's `FGVCAircraft` downloads it (`fgvc-aircraft-2013b/data/images/`, the
`images_variant_{train,val,test}.txt` lists of `id class`, classes with spaces, and `variants.txt`): it converts as
it lies, the variants its classes in `variants.txt`'s order (converters/images/fgvc_aircraft.py). The images are
the real photos of tests/data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, convert_images

from converters.images import fgvc_aircraft
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

VARIANTS = ["707-320", "A300B4", "Cessna 172", "Global Express"]  # variants.txt's order (not sorted: A < C < G)
LISTS = {"train": {"1025794": "707-320", "1340192": "Cessna 172"}, "val": {"0056978": "Global Express"},
         "test": {"0062765": "A300B4", "2213210": "Cessna 172"}}


def _aircraft(root: Path, *, variants: bool = True, lists=LISTS) -> Path:
    """`fgvc-aircraft-2013b/`: its images (one no list names), the variant lists and the other levels' lists."""
    src = root / "fgvc-aircraft-2013b"
    data = src / "data"
    (data / "images").mkdir(parents=True)
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for image in [*(i for split in lists.values() for i in split), "9999999"]:
        shutil.copyfile(next(photos), data / "images" / f"{image}.jpg")
    for split, rows in lists.items():
        (data / f"images_variant_{split}.txt").write_text("".join(f"{i} {c}\n" for i, c in rows.items()))
        (data / f"images_family_{split}.txt").write_text("".join(f"{i} Boeing 707\n" for i in rows))
    if variants:
        (data / "variants.txt").write_text("\n".join(VARIANTS) + "\n")
    (data / "images_box.txt").write_text("1025794 3 144 998 431\n")
    return src


def test_the_download_converts_with_the_variants_in_their_order_and_the_lists_splits(tmp_path, capsys):
    src = _aircraft(tmp_path)
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == tuple(VARIANTS) and m.extra["layout"] == "fgvc_aircraft"
    assert class_lists(tmp_path / "dst", lambda source: Path(source).stem, field="label") == {
        i: (split, VARIANTS.index(c)) for split, rows in LISTS.items() for i, c in rows.items()}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("data/images/9999999.jpg", "not listed in labels file the images_variant lists")]


def test_data_itself_a_trainval_list_and_no_variants_file(tmp_path):
    lists = {"trainval": LISTS["train"], "test": LISTS["test"]}
    src = _aircraft(tmp_path, variants=False, lists=lists)
    found = fgvc_aircraft.found(src / "data")
    assert found == src / "data" and fgvc_aircraft.found(src) == src / "data"
    m = convert_images(src / "data", tmp_path / "dst").manifest
    assert m.classes == ("707-320", "A300B4", "Cessna 172")  # the listed ones, sorted
    assert {s: m.split(s).samples for s in m.splits} == {"train": 2, "test": 2}


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: (d / "images_variant_val.txt").write_text("1025794 707-320\n"),
     r"images_variant_val.txt:1: image 1025794 is in train too: an image has one split"),
    (lambda d: (d / "images_variant_val.txt").write_text("0056978\n"),
     r"images_variant_val.txt:1: expected an image id and its class, got '0056978'"),
    (lambda d: (d / "variants.txt").write_text("707-320\n"),
     r"variants.txt does not name the class 'A300B4' a list gives: the lists are not FGVC-Aircraft's"),
])
def test_lists_that_are_not_fgvc_aircrafts_stop_the_conversion(tmp_path, change, problem):
    src = _aircraft(tmp_path)
    change(src / "data")
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "dst")


def test_the_tree_alone_or_other_labels_asked_for_are_not_read_as_fgvc(tmp_path):
    src = _aircraft(tmp_path)
    m = convert_images(src, tmp_path / "dst", unlabeled=True).manifest
    assert m.classes == () and m.split("train").samples == 6
    shutil.rmtree(src / "data" / "images")
    assert fgvc_aircraft.found(src) is None and fgvc_aircraft.found(tmp_path) is None


def test_blank_lines_are_skipped_and_an_oversized_or_unreadable_list_is_refused(tmp_path, monkeypatch):
    src = _aircraft(tmp_path)
    (src / "data" / "images_variant_val.txt").write_text("\n0056978 Global Express\n\n")
    assert fgvc_aircraft.read_fgvc(src / "data").rows["0056978"] == "Global Express"
    (src / "data" / "images_variant_val.txt").write_bytes(b"0056978 \xff\n")
    with pytest.raises(ConvertError, match=r"cannot read .*images_variant_val.txt: 'utf-8' codec can't decode"):
        fgvc_aircraft.read_fgvc(src / "data")
    monkeypatch.setattr(fgvc_aircraft, "MAX_FILE", 10)
    with pytest.raises(ConvertError, match=r"images_variant_train.txt: 35 bytes, more than an FGVC-Aircraft list "
                                           r"holds"):
        fgvc_aircraft.read_fgvc(src / "data")
