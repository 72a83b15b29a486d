"""Classes that are whole numbers (ImageNetV2's class folders `0` ... `999`): ordered as text by default, as
torchvision's ImageFolder and DALI order folder names (a checkpoint trained on the folders keeps its labels), with a
warning when that is not their order by value; `--class-order number` orders them by value
(converters/images/class_order.py), so that a folder's label is its number and `--classes` can name the ids. Before,
ImageNetV2's folder `10` had the label 2 and nothing said so: an ImageNet model scored against the wrong classes."""

from __future__ import annotations

import pytest
from helpers import class_lists, copy_photos, touch

from converters import get_kind
from converters.images import ImageOptions
from converters.images.class_order import order_classes
from converters.images.discover import discover_images
from converters.kind import Discovery
from converters.sample import WorkItem
from fastdata.cli import main as cli
from fastdata.manifest import read_manifest

NUMBERS = [str(i) for i in range(12)]  # as text: 0, 1, 10, 11, 2, ...


def _discover(src, **options) -> Discovery:
    return get_kind("images").discover(src, options=ImageOptions(**options))


def _labels(d: Discovery) -> dict[str, object]:
    return {it.rel: it.label for items in d.splits.values() for it in items}


def test_imagenetv2s_folders_convert_with_each_folders_number_as_its_label(tmp_path):
    src = copy_photos(tmp_path / "src", classes=3, limit=6)
    for old, new in zip(sorted(p.name for p in src.iterdir()), ("0", "1", "2")):
        (src / old).rename(src / new)
    photo = sorted((src / "0").iterdir())[0].read_bytes()
    for n in NUMBERS[3:]:  # the other classes: a photo each
        (src / n).mkdir()
        (src / n / "a.jpg").write_bytes(photo)
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress", "--class-order", "number"]) == 0
    assert read_manifest(tmp_path / "dst").classes == tuple(NUMBERS)
    got = class_lists(tmp_path / "dst", field="label")
    assert len(got) == 6 + 9 and all(label == int(rel.split("/")[0]) for rel, (_, label) in got.items())


def test_by_default_the_folders_order_as_text_and_a_warning_names_the_choice(tmp_path, caplog):
    src = touch(tmp_path / "v2", *(f"{n}/a.jpeg" for n in NUMBERS))
    d = _discover(src)
    assert d.classes == ("0", "1", "10", "11", "2", "3", "4", "5", "6", "7", "8", "9")  # ImageFolder's
    assert _labels(d)["10/a.jpeg"] == 2
    assert "the classes are numbers, ordered as text as ImageFolder and DALI order folder names (0, 1, 10, 11: the " \
           "label of 11 is 3); if the numbers are the labels (ImageNetV2's folders 0 ... 999), convert with " \
           "--class-order number" in caplog.text
    caplog.clear()
    _discover(touch(tmp_path / "ten", *(f"{n}/a.jpeg" for n in NUMBERS[:10])))  # 0 ... 9: the same either way
    assert "numbers" not in caplog.text


def test_by_value_split_folders_and_the_names_of_the_ids_follow(tmp_path):
    src = touch(tmp_path / "split", *(f"{s}/{n}/a.jpg" for s in ("train", "val") for n in NUMBERS))
    (tmp_path / "names.txt").write_text("".join(f"class {n}\n" for n in NUMBERS))
    d = _discover(src, class_order="number", classes=str(tmp_path / "names.txt"))
    assert d.classes == tuple(f"class {n}" for n in NUMBERS)
    assert _labels(d) == {
        f"{s}/{n}/a.jpg": int(n) for s in ("train", "val") for n in NUMBERS}


def test_numbers_that_are_not_0_to_k_minus_1_are_ranked_with_a_warning(tmp_path, caplog):
    d = _discover(touch(tmp_path / "src", "1/a.jpg", "2/a.jpg", "10/a.jpg"), class_order="number")
    assert d.classes == ("1", "2", "10")
    assert _labels(d) == {"1/a.jpg": 0, "2/a.jpg": 1, "10/a.jpg": 2}
    assert "the classes are numbers, but not 0 ... 2 (no class 0): each label is its class's rank" in caplog.text


@pytest.mark.parametrize(("tree", "message"), [
    (("1/a.jpg", "cat/a.jpg"), r"this source's class 'cat' is not$"),
    (("01/a.jpg", "2/a.jpg"), r"this source's class '01' is not$"),  # a leading zero: a name, not an id
    (("-1/a.jpg", "2/a.jpg"), r"this source's class '-1' is not$"),
    (("a.jpg",), r"this source has no class$"),
])
def test_by_value_is_refused_for_classes_that_are_not_all_whole_numbers(tmp_path, tree, message):
    with pytest.raises(ValueError, match=r"^--class-order number orders classes that are whole numbers \(0, 1, ... "
                                         r"999, without leading zeros\); " + message):
        _discover(touch(tmp_path / "src", *tree), class_order="number")


def test_a_bad_order_is_refused():
    with pytest.raises(ValueError, match=r"^--class-order must be name or number, got 'value'$"):
        ImageOptions(class_order="value")


def test_multi_label_indices_are_renumbered_and_kept_sorted():
    items = [WorkItem(split="train", rel="a.jpg", source="a.jpg", label=(0, 2)),
             WorkItem(split="train", rel="b.jpg", source="b.jpg", label=(1,)),
             WorkItem(split="train", rel="c.jpg", source="c.jpg", label=(1, 2))]  # "10" and "2": now 2 and 1
    d = order_classes(Discovery({"train": items}, ("0", "10", "2"), [], "flat+labels"), "number")
    assert d.classes == ("0", "2", "10")
    assert [it.label for it in d.splits["train"]] == [(0, 1), (2,), (1, 2)]
    assert d.identity[-1] == ["class_order", "number"]


def test_a_labels_csv_of_ids_is_ordered_by_value_already(tmp_path, caplog):
    src = touch(tmp_path / "src", *(f"{n}.jpg" for n in NUMBERS))
    (tmp_path / "labels.csv").write_text("".join(f"{n}.jpg,{n}\n" for n in NUMBERS))
    assert discover_images(src, labels_csv=str(tmp_path / "labels.csv")).classes == tuple(NUMBERS)
    d = _discover(src, labels=str(tmp_path / "labels.csv"), class_order="number")
    assert _labels(d) == {f"{n}.jpg": int(n) for n in NUMBERS} and "numbers" not in caplog.text
