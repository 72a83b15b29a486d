"""Write -> read round trips for both shard formats: labels, bytes and counts preserved."""

from __future__ import annotations

import io
import json
import tarfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
from helpers import convert_images, make_image_tree
from PIL import Image

from fastdata.manifest import read_manifest


def _tar_samples(path: Path) -> dict[str, dict[str, bytes]]:
    out: dict[str, dict[str, bytes]] = {}
    with tarfile.open(path) as tar:
        for m in tar:
            key, _, ext = m.name.partition(".")
            out.setdefault(key, {})[ext] = tar.extractfile(m).read()
    return out


def test_wds_round_trip_preserves_bytes_labels_and_counts(small_tree: Path, tmp_path: Path) -> None:
    result = convert_images(small_tree, tmp_path / "out", samples_per_shard=5)
    m = read_manifest(tmp_path / "out")
    assert m.kind == "images" and m.shard_format == "wds"
    assert m.classes == ("class_0", "class_1", "class_2")
    split = m.splits["train"]
    assert split.samples == 12 and len(split.shards) == 3
    assert [s.samples for s in split.shards] == [5, 5, 2]
    assert list(split.class_counts) == [4, 4, 4]
    assert result.rejected == []
    seen = Counter()
    for shard in split.shards:
        samples = _tar_samples(tmp_path / "out" / shard.name)
        assert len(samples) == shard.samples
        for members in samples.values():
            assert set(members) == {"jpg", "cls", "json"}
            info = json.loads(members["json"])
            label = int(members["cls"])
            assert info["label"] == label
            assert info["source"].startswith(f"class_{label}/")
            # small baseline RGB JPEG sources are copied byte for byte
            assert info["copied"] is True
            assert members["jpg"] == (small_tree / info["source"]).read_bytes()
            seen[label] += 1
    assert seen == Counter({0: 4, 1: 4, 2: 4})


def test_shuffle_mixes_classes_across_shards(tmp_path: Path) -> None:
    src = make_image_tree(tmp_path / "src", classes=4, per_class=6, size=(24, 24))
    convert_images(src, tmp_path / "out", samples_per_shard=8, seed=3)
    m = read_manifest(tmp_path / "out")
    for shard in m.splits["train"].shards:
        labels = {int(v["cls"]) for v in _tar_samples(tmp_path / "out" / shard.name).values()}
        assert len(labels) >= 2, f"{shard.name} holds a single class"


def test_arrow_round_trip(small_tree: Path, tmp_path: Path) -> None:
    convert_images(small_tree, tmp_path / "out", format="arrow", samples_per_shard=7)
    m = read_manifest(tmp_path / "out")
    assert m.shard_format == "arrow"
    assert [s.name for s in m.splits["train"].shards] == ["train-000000.arrow", "train-000001.arrow"]
    rows = []
    for shard in m.splits["train"].shards:
        with pa.memory_map(str(tmp_path / "out" / shard.name)) as src:
            table = pa.ipc.open_stream(src).read_all()
        assert table.num_rows == shard.samples
        rows.extend(table.to_pylist())
    assert Counter(r["label"] for r in rows) == Counter({0: 4, 1: 4, 2: 4})
    for r in rows:
        info = json.loads(r["json"])
        assert r["image"]["bytes"] == (small_tree / info["source"]).read_bytes()
        assert r["image"]["path"] == f"{r['key']}.jpg"


def test_split_layout_shares_train_classes(tmp_path: Path) -> None:
    src = make_image_tree(tmp_path / "src", classes=2, per_class=3, splits=("train", "val"))
    make_image_tree(tmp_path / "extra", classes=1, per_class=1)
    (tmp_path / "extra" / "class_0").rename(src / "val" / "zebra")  # a val class train does not have
    convert_images(src, tmp_path / "out")
    m = read_manifest(tmp_path / "out")
    assert set(m.splits) == {"train", "val"}
    assert m.classes == ("class_0", "class_1")
    assert list(m.splits["val"].class_counts) == [3, 3]
    assert [r["source"] for r in m.rejected] == ["val/zebra/img_0.jpg"]
    assert "not among train's classes" in m.rejected[0]["reason"]


def test_flat_folder_with_labels_csv(tmp_path: Path) -> None:
    src = tmp_path / "flat"
    make_image_tree(tmp_path / "tree", classes=1, per_class=4)
    src.mkdir()
    for i, p in enumerate(sorted((tmp_path / "tree" / "class_0").iterdir())):
        p.rename(src / f"ILSVRC2012_val_{i:08d}.JPEG")
    csv = tmp_path / "labels.csv"
    csv.write_text("filename,class\nILSVRC2012_val_00000000.JPEG,n02\nILSVRC2012_val_00000001.JPEG,n01\n"
                   "ILSVRC2012_val_00000002.JPEG,n02\nmissing.JPEG,n01\n")
    convert_images(src, tmp_path / "out", labels=str(csv), split="val")
    m = read_manifest(tmp_path / "out")
    assert m.classes == ("n01", "n02")
    assert list(m.splits["val"].class_counts) == [1, 2]
    reasons = {r["source"]: r["reason"] for r in m.rejected}
    assert "not listed in labels file" in reasons["ILSVRC2012_val_00000003.JPEG"]
    assert "no such file" in reasons["missing.JPEG"]
    members = _tar_samples(tmp_path / "out" / m.splits["val"].shards[0].name)
    assert all(k.isdigit() and "." not in k for k in members)  # lower-case .jpg members, dot-free keys
    assert all(set(v) == {"jpg", "cls", "json"} for v in members.values())


def test_a_labels_csv_with_a_split_column_converts_every_split_with_one_class_list(tmp_path: Path) -> None:
    import fastdata

    make_image_tree(tmp_path / "tree", classes=1, per_class=5)
    src = tmp_path / "flat"
    src.mkdir()
    for i, p in enumerate(sorted((tmp_path / "tree" / "class_0").iterdir())):
        p.rename(src / f"img{i}.jpg")
    csv = tmp_path / "labels.csv"  # val holds no "bird": its "cat" must stay label 1, as in train
    csv.write_text("id,label,split\nimg0,bird,train\nimg1,cat,train\nimg2,dog,train\nimg3,cat,val\nimg4,dog,val\n")
    convert_images(src, tmp_path / "out", labels=str(csv))
    m = read_manifest(tmp_path / "out")
    assert m.classes == ("bird", "cat", "dog") and sorted(m.splits) == ["train", "val"]
    assert list(m.splits["train"].class_counts) == [1, 1, 1] and list(m.splits["val"].class_counts) == [0, 1, 1]
    loader = fastdata.loader(tmp_path / "out", split="val", train=False, batch_size=2, image_size=16, device="cpu",
                             backend="kornia")
    assert sorted(y for _, labels in loader for y in labels.tolist()) == [1, 2]


def test_real_photos_are_baseline_rgb_and_resized(photo_tree: Path, tmp_path: Path) -> None:
    convert_images(photo_tree, tmp_path / "out", samples_per_shard=30, jobs=2, short_side=128)
    m = read_manifest(tmp_path / "out")
    assert m.splits["train"].samples == 59 and not m.rejected
    modes = Counter()
    for shard in m.splits["train"].shards:
        for key, members in _tar_samples(tmp_path / "out" / shard.name).items():
            info = json.loads(members["json"])
            modes[info["orig_mode"]] += 1
            with Image.open(io.BytesIO(members["jpg"])) as im:
                im.load()
                assert im.format == "JPEG" and im.mode == "RGB"
                assert not im.info.get("progressive"), key
                assert min(im.size) == min(128, info["orig_width"], info["orig_height"])
                assert (im.width, im.height) == (info["width"], info["height"])
    assert modes["L"] > 0  # the greyscale photos went through and came out RGB


def test_shard_size_plan_writes_the_same_samples_as_a_fixed_count(tmp_path: Path) -> None:
    """With --shard-size the first inputs are converted once to size the shards and reused, not redone."""
    src = make_image_tree(tmp_path / "src", classes=3, per_class=15, size=(300, 200))
    by_size = convert_images(src, tmp_path / "size", samples_per_shard=None, shard_size=60_000, short_side=64)
    per = read_manifest(tmp_path / "size").preprocessing["samples_per_shard"]["train"]
    assert 1 < per < 45
    convert_images(src, tmp_path / "count", samples_per_shard=per, short_side=64)
    names = [s.name for s in read_manifest(tmp_path / "size").splits["train"].shards]
    assert names == [s.name for s in read_manifest(tmp_path / "count").splits["train"].shards]
    for name in names:
        assert (tmp_path / "size" / name).read_bytes() == (tmp_path / "count" / name).read_bytes()
    keys = [k for name in names for k in _tar_samples(tmp_path / "size" / name)]
    assert sorted(keys) == [f"{i:08d}" for i in range(45)]
    assert by_size.rejected == []
