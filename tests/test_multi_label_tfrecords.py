"""Several classes an image from TFRecord files (`fastdata convert SRC DST --multi-label`): TensorFlow Datasets' VOC
records (`image`, `labels`, `labels_no_difficult`, `objects/label`) and the object detection API's
(`image/encoded`, `image/object/class/text` and `image/object/class/label`, a value an object). Written by the
tfrecord package; the images are the real photos of tests/data."""

from __future__ import annotations

import json
import logging
import tarfile
from pathlib import Path

import pytest
import torch
from conftest_images import loader
from helpers import class_lists, convert_images
from test_convert_tfrecords import PHOTO_BYTES, write_tfrecord

from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

pytest.importorskip("tfrecord")
pytest.importorskip("crc32c")

VOC_LABELS = [[0, 14], [14], [], [2, 2, 7], [7], [0, 11, 14]]  # a class an object: `2` twice is one class
NO_DIFFICULT = [[14], [14], [], [7], [7], [0]]


def _voc(src: Path) -> Path:
    """TensorFlow Datasets' `voc/2007` records: the image, the classes of its objects and those not marked
    difficult, and each object's class."""
    return write_tfrecord(src / "voc-train.tfrecord-00000-of-00001", [
        {"image": (PHOTO_BYTES[i], "byte"), "image/filename": (f"{i:06d}.jpg".encode(), "byte"),
         "labels": (sorted(set(labels)), "int"), "labels_no_difficult": (NO_DIFFICULT[i], "int"),
         "objects/label": (labels, "int")} for i, labels in enumerate(VOC_LABELS)])


def _lists(dst: Path) -> dict[str, list[int]]:
    """Each converted sample's source (`file#record`) -> the classes its json member lists."""
    return {source: labels for source, (_, labels) in class_lists(dst).items()}


def test_voc_records_list_their_classes_and_an_empty_list_is_an_image_of_no_class(tmp_path: Path, caplog):
    _voc(tmp_path / "src")
    caplog.set_level(logging.WARNING)
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "dst"), "--multi-label", "-j", "1",
                "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == tuple(str(i) for i in range(15)) and m.rejected == ()  # ids stay labels
    assert m.extra["multi_label"] is True and m.extra["label_field"] == "labels"
    assert _lists(tmp_path / "dst") == {f"voc-train.tfrecord-00000-of-00001#{i}": sorted(set(labels))
                                        for i, labels in enumerate(VOC_LABELS)}
    unused = [r.getMessage() for r in caplog.records if "have no images" in r.getMessage()]
    assert unused == ["10 classes have no images: '1', '3', '4', '5', '6', '8', '9', '10', '12', '13'"]


def test_a_record_file_whose_first_frame_is_damaged_is_named_by_the_refusal(tmp_path: Path):
    """Found by the fuzz (seed 97): the file is no TFRecord file by its first frame, so no source --multi-label
    reads was found, and the refusal listed the sources without naming the file the user meant."""
    path = _voc(tmp_path / "src")
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF  # the first record's length: its CRC fails
    path.write_bytes(bytes(data))
    with pytest.raises(ConvertError, match=r"^--multi-label: voc-train\.tfrecord-00000-of-00001 is named like a "
                                           r"TFRecord file, but its first frame is damaged or it is none"):
        convert_images(tmp_path / "src", tmp_path / "dst", multi_label=True)
    path.rename(tmp_path / "src" / "voc-train.records")  # named like none: the sources are listed
    with pytest.raises(ValueError, match=r"^--multi-label reads the classes of each image from"):
        convert_images(tmp_path / "src", tmp_path / "dst", multi_label=True)


def test_the_label_field_names_another_list(tmp_path: Path):
    _voc(tmp_path / "src")
    convert_images(tmp_path / "src", tmp_path / "dst", multi_label=True, label_field="labels_no_difficult")
    assert _lists(tmp_path / "dst") == {f"voc-train.tfrecord-00000-of-00001#{i}": labels
                                        for i, labels in enumerate(NO_DIFFICULT)}
    assert read_manifest(tmp_path / "dst").classes == tuple(str(i) for i in range(15))


def test_detection_api_records_give_their_class_names_before_their_ids(tmp_path: Path):
    objects = [[b"dog", b"person", b"dog"], [b"cat"], [b"person"], [b"cat", b"dog"]]
    ids = {b"cat": 1, b"dog": 2, b"person": 3}  # its label map's 1-based ids
    write_tfrecord(tmp_path / "src" / "pets_train.record-00000-of-00001", [
        {"image/encoded": (PHOTO_BYTES[i], "byte"), "image/format": (b"jpeg", "byte"),
         "image/object/class/text": (names, "byte"), "image/object/class/label": ([ids[n] for n in names], "int"),
         "image/object/bbox/xmin": ([0.1] * len(names), "float")} for i, names in enumerate(objects)])
    convert_images(tmp_path / "src", tmp_path / "dst", multi_label=True)
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ("cat", "dog", "person")
    assert _lists(tmp_path / "dst") == {"pets_train.record-00000-of-00001#0": [1, 2],
                                        "pets_train.record-00000-of-00001#1": [0],
                                        "pets_train.record-00000-of-00001#2": [2],
                                        "pets_train.record-00000-of-00001#3": [0, 1]}
    convert_images(tmp_path / "src", tmp_path / "ids", multi_label=True, label_field="image/object/class/label")
    assert read_manifest(tmp_path / "ids").classes == ("0", "1", "2", "3")  # 0: the API's background, unused
    assert _lists(tmp_path / "ids")["pets_train.record-00000-of-00001#0"] == [2, 3]


def test_tfds_labels_come_before_the_names_of_objects(tmp_path: Path):
    write_tfrecord(tmp_path / "src" / "train.tfrecord", [
        {"image": (PHOTO_BYTES[i], "byte"), "labels": ([i], "int"), "image/object/class/text": ([b"dog"], "byte")}
        for i in range(2)])
    convert_images(tmp_path / "src", tmp_path / "dst", multi_label=True)
    assert read_manifest(tmp_path / "dst").classes == ("0", "1")


@pytest.mark.parametrize(("features", "reason"), [
    ({"labels": ([0.5, 1.0], "float")}, "feature 'labels' holds floats, not image bytes or a label"),
    ({"labels": ([3, -1], "int")}, "no label (-1 in feature 'labels': the split has no labels)"),
    ({"labels": ([b"dog", b"\xff"], "byte")}, "the label in feature 'labels' is not UTF-8 text: b'\\xff'"),
    ({}, "no feature 'labels'"),
])
def test_a_record_whose_list_is_no_list_of_classes_is_rejected_and_the_rest_kept(tmp_path: Path, features: dict,
                                                                                  reason: str):
    good = [{"image": (PHOTO_BYTES[i], "byte"), "labels": ([i, 4], "int")} for i in range(2)]
    write_tfrecord(tmp_path / "src" / "train.tfrecord", [*good, {"image": (PHOTO_BYTES[2], "byte"), **features}])
    m = convert_images(tmp_path / "src", tmp_path / "dst", multi_label=True).manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [("train.tfrecord#2", reason)]
    assert _lists(tmp_path / "dst") == {"train.tfrecord#0": [0, 4], "train.tfrecord#1": [1, 4]}


def test_a_file_without_a_list_of_classes_is_rejected_naming_the_label_field(tmp_path: Path):
    _voc(tmp_path / "src")
    write_tfrecord(tmp_path / "src" / "other" / "train.tfrecord", [{"image": (PHOTO_BYTES[0], "byte"),
                                                                     "label": (3, "int")}])
    m = convert_images(tmp_path / "src", tmp_path / "dst", multi_label=True).manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("other/train.tfrecord", "no feature of a list of classes (--multi-label; features: image, label): name "
                                 "the one to read with --label-field")]
    assert m.split("train").samples == len(VOC_LABELS)
    with pytest.raises(ConvertError, match=r"holds no images input to convert \(1 file\(s\) rejected: 1 x no "
                                           r"feature of a list of classes \(--multi-label; features: image, label\)"):
        convert_images(tmp_path / "src" / "other", tmp_path / "one", multi_label=True)


def test_records_listing_classes_without_the_option_are_refused_not_read_as_unlabeled(tmp_path: Path):
    _voc(tmp_path / "src")
    with pytest.raises(ConvertError, match="no label feature, and feature 'labels' lists classes: convert with "
                                           "--multi-label, or with --unlabeled for images without labels"):
        convert_images(tmp_path / "src", tmp_path / "dst")
    m = convert_images(tmp_path / "src", tmp_path / "unlabeled", unlabeled=True).manifest
    assert m.classes == () and m.split("train").samples == len(VOC_LABELS)


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_batches_carry_multi_hot_rows_of_the_listed_classes(tmp_path: Path, backend: str):
    _voc(tmp_path / "src")
    convert_images(tmp_path / "src", tmp_path / "dst", multi_label=True, short_side=48)
    lists = _lists(tmp_path / "dst")
    keys = {}
    for shard in read_manifest(tmp_path / "dst").split("train").shards:
        with tarfile.open(tmp_path / "dst" / shard.name) as tar:
            for member in tar:
                if member.name.endswith(".json"):
                    keys[f"{shard.name}:{member.name[:-5]}"] = json.loads(tar.extractfile(member).read())["source"]
    ld = loader(tmp_path / "dst", backend=backend, train=False, batch_size=4)
    seen = []
    for _, y in ld:
        assert y.dtype == torch.float32 and y.shape == (4, 15)
        for key, row in zip(ld._backend.last_keys, y.tolist()):
            assert row == [float(c in lists[keys[key]]) for c in range(15)]
            seen.append(key)
        assert (y[len(ld._backend.last_keys):] == -100).all()
    assert sorted(seen) == sorted(keys)


def test_arrow_shards_of_tfrecord_lists_hold_a_labels_column(tmp_path: Path):
    import pyarrow as pa

    _voc(tmp_path / "src")
    convert_images(tmp_path / "src", tmp_path / "dst", multi_label=True, format="arrow")
    rows = {}
    for shard in sorted((tmp_path / "dst").glob("*.arrow")):
        table = pa.ipc.open_stream(shard.read_bytes()).read_all()
        assert "label" not in table.column_names
        for labels, info in zip(table.column("labels").to_pylist(), table.column("json").to_pylist()):
            rows[json.loads(info)["source"]] = labels
    assert rows == {f"voc-train.tfrecord-00000-of-00001#{i}": sorted(set(labels))
                    for i, labels in enumerate(VOC_LABELS)}


def test_records_whose_every_list_is_empty_are_refused_rather_than_converted_without_classes(tmp_path: Path):
    write_tfrecord(tmp_path / "src" / "voc-train.tfrecord", [{"image": (PHOTO_BYTES[i], "byte"), "labels": ([], "int")}
                                                             for i in range(3)])
    with pytest.raises(ConvertError, match=r"--multi-label: the feature 'labels' of every record lists no class "
                                           r"\(every list is empty\), so there is no class to learn"):
        convert_images(tmp_path / "src", tmp_path / "dst", multi_label=True)
    write_tfrecord(tmp_path / "bad" / "voc-train.tfrecord", [{"image": (PHOTO_BYTES[0], "byte"),
                                                             "labels": (-1, "int")}])
    with pytest.raises(ConvertError, match=r"holds no images input to convert \(1 file\(s\) rejected: 1 x no "
                                           r"label \(-1 in feature 'labels'"):  # no list at all: its rejections said
        convert_images(tmp_path / "bad", tmp_path / "bad-dst", multi_label=True)
