"""Image datasets as TFRecord files of tf.train.Example records (converters/images/tfrecords.py), in the two layouts
users hold: TensorFlow's ImageNet script's (`train-00000-of-01024`, `image/encoded` + `image/class/synset` + 1-based
`image/class/label`) and TensorFlow Datasets' (`imagenet2012-train.tfrecord-00000-of-00001`, `image` + 0-based
`label`, -1 in its test split). The files are written by the tfrecord package's TFRecordWriter (its framing and
CRCs, not ours); DALI's own TFRecord reader reads the same files as a second opinion. Images: the real photos."""

from __future__ import annotations

import gzip
import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import PHOTOS, convert_images

import fastdata
from converters.images.discover import discover_images
from converters.images.tfrecords import (
    has_tfrecords,
    is_tfrecord,
    masked_crc,
    parse_example,
    record_values,
    records,
)
from converters.table_files import Damage
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

pytest.importorskip("tfrecord")
pytest.importorskip("crc32c")

PHOTO_BYTES = [p.read_bytes() for p in sorted(PHOTOS.glob("*.jpg"))[:9]]
SYNSETS = ["n01530575", "n01440764", "n01443537"]  # sorted: n01440764, n01443537, n01530575


def write_tfrecord(path: Path, examples: list[dict]) -> Path:
    """`examples` (feature -> (value, "byte" | "int" | "float")) in a TFRecord file, by the tfrecord package."""
    from tfrecord import TFRecordWriter

    path.parent.mkdir(parents=True, exist_ok=True)
    writer = TFRecordWriter(str(path))
    for example in examples:
        writer.write(example)
    writer.close()
    return path


def slim_example(i: int, photo: bytes | None = None) -> dict:
    """A record as TensorFlow's build_imagenet_data.py writes it: its label is the synset's place in sorted order,
    plus one."""
    synset = SYNSETS[i % 3]
    return {"image/encoded": (photo or PHOTO_BYTES[i % len(PHOTO_BYTES)], "byte"), "image/format": (b"JPEG", "byte"),
            "image/class/synset": (synset.encode(), "byte"), "image/class/label": (sorted(SYNSETS).index(synset) + 1,
                                                                                    "int"),
            "image/class/text": (b"some fish", "byte"), "image/filename": (f"{synset}_{i}.JPEG".encode(), "byte"),
            "image/height": (100, "int"), "image/width": (120, "int")}


def slim_tree(src: Path) -> dict[str, dict[str, int]]:
    """Two train files and one validation file; split -> each record's source -> the label it must get."""
    order = sorted(SYNSETS)
    files = {"train-00000-of-00002": range(4), "train-00001-of-00002": range(4, 7),
             "validation-00000-of-00001": range(7, 9)}
    expected: dict[str, dict[str, int]] = {}
    for name, numbers in files.items():
        write_tfrecord(src / name, [slim_example(i) for i in numbers])
        split = expected.setdefault("val" if name.startswith("validation") else "train", {})
        split.update({f"{name}#{k}": order.index(SYNSETS[i % 3]) for k, i in enumerate(numbers)})
    return expected


def labels_by_source(dst: Path, split: str = "train") -> dict[str, int]:
    """Each converted sample's source (`file#record`) -> its label, from the shards' json members (converted
    samples are shuffled: their order is not the records')."""
    import tarfile

    out = {}
    for shard in read_manifest(dst).split(split).shards:
        with tarfile.open(dst / shard.name) as tar:
            for member in tar:
                if member.name.endswith(".json"):
                    meta = json.loads(tar.extractfile(member).read())
                    out[meta["source"]] = meta.get("label", -1)
    return out


def eval_labels(dst: Path, split: str) -> list[int]:
    ld = fastdata.loader(dst, split=split, batch_size=4, image_size=32, train=False, backend="kornia", device="cpu",
                         num_threads=2)
    return [v for _, y in ld for v in y.tolist() if v != -100]


def test_tensorflows_imagenet_records_convert_with_the_synsets_as_classes_in_torchvision_order(tmp_path: Path,
                                                                                               capsys):
    expected = slim_tree(tmp_path / "src")
    (tmp_path / "src" / "train-00000-of-00002.idx").write_text("0 1000\n")  # DALI's tfrecord2idx, beside it
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    assert "  val              2 samples" in capsys.readouterr().out
    m = read_manifest(tmp_path / "dst")
    assert m.kind == "images" and m.classes == tuple(sorted(SYNSETS))
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("train-00000-of-00002.idx", "an index of a TFRecord file (DALI's tfrecord2idx writes them), not data")]
    assert {s: m.split(s).samples for s in m.splits} == {"train": 7, "val": 2}
    for split, labels in expected.items():
        assert labels_by_source(tmp_path / "dst", split) == labels
        assert sorted(eval_labels(tmp_path / "dst", split)) == sorted(labels.values())
    assert m.extra["layout"] == "tfrecords"


def test_tensorflow_datasets_records_keep_their_label_ids_and_the_unlabeled_test_split_is_rejected(tmp_path: Path):
    src = tmp_path / "imagenet2012" / "5.1.0"
    write_tfrecord(src / "imagenet2012-train.tfrecord-00000-of-00001",
                   [{"image": (PHOTO_BYTES[i], "byte"), "label": (i % 4, "int"),
                     "file_name": (f"x{i}.JPEG".encode(), "byte")} for i in range(6)])
    write_tfrecord(src / "imagenet2012-test.tfrecord-00000-of-00001",
                   [{"image": (PHOTO_BYTES[i], "byte"), "label": (-1, "int")} for i in range(2)])
    (src / "dataset_info.json").write_text(json.dumps({"name": "imagenet2012"}))
    (src / "label.labels.txt").write_text("a\nb\nc\nd\n")
    result = convert_images(src, tmp_path / "dst", classes=str(src / "label.labels.txt"))
    m = result.manifest
    assert m.classes == ("a", "b", "c", "d") and list(m.splits) == ["train"]
    assert labels_by_source(tmp_path / "dst") == {f"imagenet2012-train.tfrecord-00000-of-00001#{i}": i % 4
                                                  for i in range(6)}
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("dataset_info.json", "not a TFRecord file (this source is read as TFRecord files of images)"),
        ("imagenet2012-test.tfrecord-00000-of-00001#0", "no label (-1 in feature 'label': the split has no labels)"),
        ("imagenet2012-test.tfrecord-00000-of-00001#1", "no label (-1 in feature 'label': the split has no labels)"),
        ("label.labels.txt", "not a TFRecord file (this source is read as TFRecord files of images)")]


def test_named_features_a_gzip_file_and_unlabeled_records(tmp_path: Path):
    examples = [{"jpeg": (PHOTO_BYTES[i], "byte"), "class_id": (7 - i, "int"), "image": (b"not this", "byte")}
                for i in range(3)]
    path = write_tfrecord(tmp_path / "raw" / "data.tfrecord", examples)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "data.tfrecord.gz").write_bytes(gzip.compress(path.read_bytes()))
    m = convert_images(tmp_path / "src", tmp_path / "dst", image_field="jpeg", label_field="class_id").manifest
    assert m.classes == tuple(str(i) for i in range(8)) and m.rejected == ()
    assert labels_by_source(tmp_path / "dst") == {"data.tfrecord.gz#0": 7, "data.tfrecord.gz#1": 6,
                                                  "data.tfrecord.gz#2": 5}
    m = convert_images(tmp_path / "src", tmp_path / "dst2", image_field="jpeg", unlabeled=True).manifest
    assert m.classes == () and m.split("train").samples == 3
    with pytest.raises(ConvertError, match=r"kept no sample: all 3 input\(s\) were rejected \(3 x not an image"):
        # without --image-field, the feature "image" is read: it holds no image
        convert_images(tmp_path / "src", tmp_path / "dst3")


def frames(path: Path) -> list[tuple[int, int]]:
    """(offset, length) of each record's frame in an uncompressed TFRecord file."""
    data, out, pos = path.read_bytes(), [], 0
    while pos < len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        out.append((pos, length))
        pos += 16 + length
    return out


def test_damaged_records_are_rejected_one_by_one_and_damaged_frames_end_the_file(tmp_path: Path):
    src = tmp_path / "src"
    path = write_tfrecord(src / "train-00000-of-00001", [slim_example(i) for i in range(5)])
    data = bytearray(path.read_bytes())
    spans = frames(path)
    data[spans[1][0] + 12 + 100] ^= 0xFF  # record 1's data: its CRC fails
    data[spans[3][0] + 2] ^= 0x01  # record 3's length: its CRC fails, nothing after it can be found
    path.write_bytes(bytes(data))
    garbage = b"\xff" * 20  # a frame whose CRCs hold around bytes that are no Example
    other = src / "train-00001-of-00002"
    other.write_bytes(struct.pack("<Q", len(garbage)) + struct.pack("<I", masked_crc(struct.pack("<Q", 20)))
                      + garbage + struct.pack("<I", masked_crc(garbage)))
    cut = write_tfrecord(src / "train-00002-of-00003", [slim_example(i) for i in range(2)])
    cut.write_bytes(cut.read_bytes()[:-10])
    m = convert_images(src, tmp_path / "dst").manifest
    assert m.split("train").samples == 3  # records 0 and 2 of the first file, record 0 of the cut one
    reasons = {r["source"]: r["reason"] for r in m.rejected}
    assert reasons["train-00000-of-00001#1"] == "damaged: the record fails its CRC"
    assert reasons["train-00000-of-00001#3"] == ("damaged: record 3's length fails its CRC, so no record from it on "
                                                 "can be found")
    assert reasons["train-00001-of-00002#0"].startswith("not a tf.train.Example: ")
    assert reasons["train-00002-of-00003#1"] == "the file is cut short inside record 1"
    assert len(reasons) == 4


def test_a_record_over_the_size_limit_is_skipped_unread_and_the_next_one_read(tmp_path: Path):
    big = bytes(2_100_000)
    path = write_tfrecord(tmp_path / "src" / "a.tfrecords", [slim_example(0), slim_example(1, photo=big),
                                                              slim_example(2)])
    got = list(records(path, limit=2_000_000))
    assert [i for i, _ in got] == [0, 1, 2] and isinstance(got[0][1], bytes) and isinstance(got[2][1], bytes)
    assert got[1][1].startswith("a record of 2100") and got[1][1].endswith("(2000000)")
    packed = tmp_path / "gz" / "a.tfrecords"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert [v for _, v in records(packed, limit=2_000_000)] == [v for _, v in got]  # a gzip stream read past it


@pytest.mark.parametrize(("features", "reason"), [
    ({"image/class/label": (1.5, "float")}, "feature 'image/class/label' holds floats, not image bytes or a label"),
    ({"image/class/label": ([1, 2], "int")},
     "feature 'image/class/label' holds 2 values, not one (a list of classes a record: convert with --multi-label)"),
    ({"image/class/label": ([], "int")}, "feature 'image/class/label' holds 0 values, not one"),
    ({"image/class/label": (b"\xff", "byte")}, "the label in feature 'image/class/label' is not UTF-8 text: b'\\xff'"),
    ({}, "no feature 'image/class/label'"),
])
def test_a_record_without_a_usable_label_is_rejected(tmp_path: Path, features: dict, reason: str):
    good = [{"image/encoded": (PHOTO_BYTES[i], "byte"), "image/class/label": (i, "int")} for i in range(2)]
    write_tfrecord(tmp_path / "src" / "train.tfrecord", [*good, {"image/encoded": (PHOTO_BYTES[2], "byte"),
                                                                 **features}])
    m = convert_images(tmp_path / "src", tmp_path / "dst").manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [("train.tfrecord#2", reason)]
    assert m.classes == ("0", "1")


def test_a_file_without_an_image_feature_or_with_other_labels_is_rejected_whole(tmp_path: Path):
    write_tfrecord(tmp_path / "src" / "a.tfrecord", [{"image": (PHOTO_BYTES[0], "byte"), "label": (0, "int")}])
    write_tfrecord(tmp_path / "src" / "b.tfrecord", [{"image": (PHOTO_BYTES[1], "byte")}])
    write_tfrecord(tmp_path / "src" / "c.tfrecord", [{"pixels": (b"x", "byte"), "label": (0, "int")}])
    write_tfrecord(tmp_path / "src" / "d.tfrecord", [{"image": (1, "int"), "label": (0, "int")}])
    (tmp_path / "src" / "e.tfrecord").write_bytes(b"")
    m = convert_images(tmp_path / "src", tmp_path / "dst").manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("b.tfrecord", "its labels are not those of a.tfrecord (label feature 'label'): convert them apart"),
        ("c.tfrecord", "no image feature (label, pixels): name the one to convert with --image-field"),
        ("d.tfrecord#0", "feature 'image' holds an integer, not image bytes"),
        ("e.tfrecord", "an empty file: no records")]


def test_dalis_tfrecord_reader_reads_the_images_and_labels_ours_reads(tmp_path: Path):
    dali = pytest.importorskip("nvidia.dali")
    import subprocess

    import nvidia.dali.fn as fn
    import nvidia.dali.tfrecord as tfrec

    path = write_tfrecord(tmp_path / "train-00000-of-00001", [slim_example(i) for i in range(5)])
    index = tmp_path / "train.idx"
    subprocess.run([str(Path(sys.executable).parent / "tfrecord2idx"), str(path), str(index)], check=True,
                   capture_output=True)

    @dali.pipeline_def(batch_size=5, num_threads=1, device_id=None)
    def pipe():
        out = fn.readers.tfrecord(path=str(path), index_path=str(index), features={
            "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
            "image/class/synset": tfrec.FixedLenFeature((), tfrec.string, "")})
        return out["image/encoded"], out["image/class/synset"]

    p = pipe()
    p.build()
    images, synsets = p.run()
    theirs = [(np.array(images[i]).tobytes(), np.array(synsets[i]).tobytes().decode()) for i in range(5)]
    from converters.images.table_columns import Columns

    columns = Columns("image/encoded", "image/class/synset", None)
    ours = [record_values(parse_example(data), columns) for _, data in records(path, limit=1 << 24)]
    assert ours == theirs


def test_detection_takes_tfrecord_files_by_their_first_frame_and_not_other_files(tmp_path: Path, monkeypatch):
    slim_tree(tmp_path / "slim")
    assert has_tfrecords(tmp_path / "slim", limit=100)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "train-00000-of-00001").write_bytes(b"\x08" + bytes(11) + b"x" * 8)  # no CRC holds
    (tmp_path / "other" / "notes").write_text("hello\n")
    assert not has_tfrecords(tmp_path / "other", limit=100)
    (tmp_path / "slim" / "photo.jpg").write_bytes(PHOTO_BYTES[0])  # an image file: a folder of images
    assert not has_tfrecords(tmp_path / "slim", limit=100)
    monkeypatch.setitem(sys.modules, "crc32c", None)  # the extra not installed: said, naming it
    with pytest.raises(ConvertError, match=r"TFRecord files are read with the protobuf and crc32c packages: pip "
                                           r"install 'fastdata\[tfrecord\]'"):
        discover_images(tmp_path / "other")


def test_files_cut_in_a_records_last_crc_or_damaged_in_their_gzip_stream_keep_the_records_before(tmp_path: Path):
    path = write_tfrecord(tmp_path / "a" / "shard0", [slim_example(i) for i in range(3)])  # no extension
    data = path.read_bytes()
    path.write_bytes(data[:-2])  # inside record 2's closing CRC
    assert has_tfrecords(tmp_path / "a", limit=10)
    got = list(records(path, limit=1 << 24))
    assert [isinstance(v, bytes) for _, v in got[:2]] == [True, True]
    assert got[2].first == 2 and got[2].reason == "the file is cut short inside record 2"
    packed = bytearray(gzip.compress(data, mtime=0))
    packed[-8] ^= 0xFF  # the gzip trailer's CRC of the whole stream: gzip raises at its end
    (tmp_path / "a" / "shard0").write_bytes(bytes(packed))
    got = list(records(tmp_path / "a" / "shard0", limit=1 << 24))
    assert [isinstance(v, bytes) for _, v in got[:3]] == [True] * 3
    assert len(got) == 4 and got[3].first == 3
    assert got[3].reason.startswith("unreadable from record 3 on: BadGzipFile: CRC check failed 0x")


def test_records_in_parts_make_the_shards_one_run_makes(tmp_path: Path, monkeypatch):
    from converters.assemble import merge
    from converters.spill import Spill

    slim_tree(tmp_path / "src")
    written = []
    flush = Spill.flush
    monkeypatch.setattr(Spill, "flush", lambda self: (flush(self), written.append((self.only, self.size))))
    whole = convert_images(tmp_path / "src", tmp_path / "whole", samples_per_shard=2).manifest
    total = written.pop()[1]
    for part in (0, 1):
        convert_images(tmp_path / "src", tmp_path / "parts", samples_per_shard=2, num_parts=2, part=part)
        assert 0 < written[-1][1] < total  # each part spills its own images only
    merged = merge(tmp_path / "parts")
    assert {s: [sh.sha256 for sh in merged.split(s).shards] for s in merged.splits} == {
        s: [sh.sha256 for sh in whole.split(s).shards] for s in whole.splits}


def test_one_tfrecord_file_given_as_the_source_is_told_to_convert_its_folder(tmp_path: Path, capsys, monkeypatch):
    path = write_tfrecord(tmp_path / "src" / "train-00000-of-00001", [slim_example(0)])
    assert cli(["convert", str(path), str(tmp_path / "dst"), "--no-progress"]) != 0
    assert (f"{path} is a TFRecord file: images are converted from a folder, so convert the folder that holds it "
            f"(fastdata convert {path.parent} DST)") in capsys.readouterr().err
    named = path.rename(path.parent / "x.tfrecord")
    monkeypatch.setitem(sys.modules, "crc32c", None)  # without the extra: by its name
    assert cli(["convert", str(named), str(tmp_path / "dst"), "--no-progress"]) != 0
    assert f"{named} is a TFRecord file: " in capsys.readouterr().err


def test_the_edges_of_a_frame_and_of_the_size_limit(tmp_path: Path):
    path = write_tfrecord(tmp_path / "a.tfrecord", [slim_example(0), slim_example(1)])
    data = path.read_bytes()
    first = frames(path)[0][1]
    assert [isinstance(v, bytes) for _, v in records(path, limit=first)] == [True, False]  # exactly the limit: read
    path.write_bytes(data + b"\x05" * 5)  # a frame of 5 bytes after the last record
    got = list(records(path, limit=1 << 24))
    assert got[-1] == Damage(2, "the file is cut short: record 2's frame has 5 of its 12 bytes")
    path.write_bytes(data[:-100])  # a record skipped for its size is cut short
    assert list(records(path, limit=first))[-1] == Damage(1, "the file is cut short inside record 1")
    assert not is_tfrecord(tmp_path)  # a folder: no file to read
    assert parse_example(b"\xff" * 20).startswith("not a tf.train.Example: Error parsing message")  # protobuf's
    # words after these differ from release to release


def test_records_of_an_image_over_the_size_of_its_pixels_but_under_that_and_other_features_are_kept(tmp_path: Path):
    src = tmp_path / "src"
    write_tfrecord(src / "train.tfrecord", [{"image": (bytes(700_000), "byte"), "label": (0, "int")}])
    found = discover_images(src, max_pixels=1 << 16)  # 1.5 MiB an image, and 1 MiB of other features a record
    assert sum(len(v) for v in found.splits.values()) == 1 and found.rejected == []


def test_no_features_a_long_label_that_is_no_text_unlabeled_on_request_and_linked_files(tmp_path: Path,
                                                                                          monkeypatch):
    src = tmp_path / "src"
    write_tfrecord(src / "a.tfrecord", [{}])
    write_tfrecord(tmp_path / "elsewhere" / "b.tfrecord", [
        {"image": (PHOTO_BYTES[0], "byte"), "label": (b"\xff" * 50, "byte")},
        {"image": (PHOTO_BYTES[1], "byte"), "label": (b"cat", "byte")}])
    (src / "b.tfrecord").symlink_to(tmp_path / "elsewhere" / "b.tfrecord")
    found = discover_images(src)
    assert sorted((r.source, r.reason) for r in found.rejected) == [
        ("a.tfrecord", "no image feature (none): name the one to convert with --image-field"),
        ("b.tfrecord#0", "the label in feature 'label' is not UTF-8 text: " + repr(b"\xff" * 40))]
    assert found.classes == ("cat",)
    found = discover_images(src, unlabeled=True)
    assert found.classes == () and sum(len(v) for v in found.splits.values()) == 2
    monkeypatch.setitem(sys.modules, "google.protobuf.message", None)  # without the extra
    with pytest.raises(ConvertError, match=r"read with the protobuf and crc32c packages: pip install "
                                           r"'fastdata\[tfrecord\]'"):
        discover_images(src)


def test_our_example_schema_reads_what_tensorflows_generated_code_writes_and_the_other_way(tmp_path: Path):
    """converters/images/tf_example.py declares example.proto; the tfrecord package ships protoc's code for it."""
    from tfrecord import example_pb2

    from converters.images.tf_example import example_class

    theirs = example_pb2.Example()
    feature = theirs.features.feature
    feature["b"].bytes_list.value.extend([b"x", b"", bytes(range(256))])
    feature["f"].float_list.value.extend([1.5, -0.25])
    feature["i"].int64_list.value.extend([0, -1, 2**63 - 1])
    feature["empty"].int64_list.SetInParent()
    ours = example_class().FromString(theirs.SerializeToString())
    got = {k: (v.WhichOneof("kind"), list(getattr(v, v.WhichOneof("kind")).value)) for k, v in
           ours.features.feature.items()}
    assert got == {"b": ("bytes_list", [b"x", b"", bytes(range(256))]), "f": ("float_list", [1.5, -0.25]),
                   "i": ("int64_list", [0, -1, 2**63 - 1]), "empty": ("int64_list", [])}
    assert example_pb2.Example.FromString(ours.SerializeToString()) == theirs


def test_a_class_name_with_control_characters_stops_the_run_naming_its_feature(tmp_path: Path):
    write_tfrecord(tmp_path / "src" / "a.tfrecord", [{"image": (PHOTO_BYTES[0], "byte"),
                                                      "label": (b"ca\x1bt", "byte")}])
    with pytest.raises(ConvertError, match=r"^the class 'ca\\x1bt' of feature 'label' holds control characters"):
        discover_images(tmp_path / "src")
