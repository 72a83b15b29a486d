"""Every failure of the image loader (kornia backend) gives a clear error naming the file (and key), never a hang."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
import torch
from conftest_images import corrupt_sample, fix_shard_size, jpg_entry, loader, make_datasets, set_manifest

from fastdata.errors import ManifestError, ShardError


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_datasets(tmp_path_factory.mktemp("pristine"))


@pytest.fixture
def ds(pristine, tmp_path) -> dict[str, Path]:
    """A private copy each test may damage."""
    return {k: Path(shutil.copytree(v, tmp_path / k)) for k, v in pristine.items()}


def test_missing_directory(tmp_path):
    with pytest.raises(ManifestError, match="does not exist"):
        loader(tmp_path / "nope")


def test_missing_manifest(ds):
    (ds["wds"] / "manifest.json").unlink()
    with pytest.raises(ManifestError, match="no manifest.json"):
        loader(ds["wds"])


def test_glob_matching_nothing(ds):
    with pytest.raises(ManifestError, match="matches no file"):
        loader(str(ds["wds"] / "test-*.tar"))


def test_unknown_split(ds):
    with pytest.raises(ManifestError, match=r"unknown split 'test'.*\['train', 'val'\]"):
        loader(ds["wds"], split="test")


@pytest.mark.parametrize("split", [["val"], {"val": 1}, 0, True, b"val", ("val",)])
def test_a_split_that_is_not_a_name_is_refused_with_its_option(ds, split):
    """Before, a list or dict raised "unhashable type: 'list'", and a number "unknown split 0"."""
    with pytest.raises(ValueError, match=r"^split=.* is not allowed; split must be a split's name, a string"):
        loader(ds["wds"], split=split)
    with pytest.raises(ValueError, match=r"^split=.* is not allowed"):
        loader(f"http://127.0.0.1:9/{ds['wds'].name}", split=split)  # refused before any request


def test_a_split_refused_is_named_whole_or_cut_at_80_characters(ds):
    with pytest.raises(ValueError) as err:
        loader(ds["wds"], split=["val"])
    assert str(err.value) == ("split=['val'] is not allowed; split must be a split's name, a string such as 'train' "
                              "(or None: train when there is one)")
    with pytest.raises(ValueError) as err:
        loader(ds["wds"], split=list(range(100)))
    assert str(err.value).startswith(f"split={repr(list(range(100)))[:77]}... is not allowed")


def test_a_split_without_shards_is_refused_with_where_to_look(ds):
    """A manifest may list a split whose every input was rejected (an edited or foreign one does)."""
    import json

    path = ds["wds"] / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["splits"]["test"] = {**manifest["splits"]["val"], "bytes": 0, "samples": 0, "shards": [],
                                  "class_counts": [0] * len(manifest["classes"])}
    path.write_text(json.dumps(manifest))
    with pytest.raises(ManifestError) as err:
        loader(ds["wds"], split="test")
    root = ds["wds"].absolute()
    assert str(err.value) == (f"split 'test' of {root} holds no shard (every input was rejected?); see "
                              f"`fastdata info {root} --rejected`")


def test_other_format_version(ds):
    set_manifest(ds["wds"], format_version=99)
    with pytest.raises(ManifestError, match="format_version 99"):
        loader(ds["wds"])


def test_missing_shard(ds):
    (ds["wds"] / "train-000001.tar").unlink()
    with pytest.raises(ShardError, match="train-000001.tar.*missing"):
        loader(ds["wds"], split="train")


def test_truncated_tar_shard(ds):
    path = ds["wds"] / "train-000001.tar"
    path.write_bytes(path.read_bytes()[:3000])
    with pytest.raises(ShardError, match="train-000001.tar.*truncated"):
        loader(ds["wds"], split="train")
    fix_shard_size(ds["wds"], "train-000001.tar")  # even with a manifest that agrees, the index catches it
    with pytest.raises(ShardError, match=r"train-000001.tar is truncated: sample \d{8}"):
        list(loader(ds["wds"], split="train", train=False))


def test_truncated_arrow_shard(ds):
    path = ds["arrow"] / "val-000000.arrow"
    path.write_bytes(path.read_bytes()[:2000])
    with pytest.raises(ShardError, match="val-000000.arrow.*truncated"):
        loader(ds["arrow"], split="val")
    fix_shard_size(ds["arrow"], "val-000000.arrow")
    with pytest.raises(ShardError, match="val-000000.arrow.*truncated"):
        list(loader(ds["arrow"], split="val", train=False))


@pytest.mark.parametrize("device_decode", [False, True])
@pytest.mark.parametrize("train", [True, False])
def test_corrupt_jpeg_names_shard_and_key(ds, train, device_decode):
    key = corrupt_sample(ds["wds"], "train-000001.tar", 2)
    ld = loader(ds["wds"], split="train", train=train, batch_size=2, seed=1, device_decode=device_decode)
    with pytest.raises(ShardError, match=rf"corrupt JPEG in .*train-000001.tar, key {key}"):
        list(ld)
    with pytest.raises(ShardError, match=key):  # a second pass fails the same way: nothing is stuck
        list(ld)


@pytest.mark.parametrize("device_decode", [False, True])
def test_truncated_jpeg_inside_shard_is_an_error(ds, device_decode):
    offset, size, key = jpg_entry(ds["wds"], "val-000000.tar", 1)
    path = ds["wds"] / "val-000000.tar"
    data = bytearray(path.read_bytes())
    data[offset + size // 2: offset + size] = bytes(size - size // 2)  # second half zeroed: truncated scan
    path.write_bytes(bytes(data))
    with pytest.raises(ShardError, match=rf"val-000000.tar, key {key}"):
        list(loader(ds["wds"], split="val", train=False, device_decode=device_decode))


def test_skip_train_fills_batches_from_following_samples(ds, caplog):
    key = corrupt_sample(ds["wds"], "train-000000.tar", 0)
    ld = loader(ds["wds"], split="train", train=True, batch_size=4, on_error="skip", drop_last=False)
    with caplog.at_level(logging.WARNING, logger="fastdata.images.kornia_backend"):
        batches = list(ld)
    assert ld.skipped == 1 and key in caplog.text
    assert len(batches) == len(ld) == 3 and all(y.shape == (4,) and (y >= 0).all() for _, y in batches)
    state = ld.state_dict()
    assert state["skipped"] == 1 and state["cursor"] == 13  # 12 rows + 1 skipped: wrapped once


@pytest.mark.parametrize("device_decode", [False, True])
def test_skip_eval_turns_corrupt_sample_into_padding(ds, device_decode):
    corrupt_sample(ds["wds"], "val-000000.tar", 1)
    ld = loader(ds["wds"], split="val", train=False, batch_size=4, on_error="skip", device_decode=device_decode)
    labels = torch.cat([y for _, y in ld])
    assert ld.skipped == 1 and labels[1] == -100 and int((labels >= 0).sum()) == 6 and len(labels) == 8


def test_skip_arrow_shard(ds):
    """Corrupt an image inside an Arrow shard: skip counts it, raise names the shard and key."""
    import pyarrow as pa

    path = ds["arrow"] / "train-000000.arrow"
    with pa.OSFile(str(path)) as f:
        row = pa.ipc.open_stream(f).read_all().slice(2, 1).to_pylist()[0]
    data = bytearray(path.read_bytes())
    start = data.find(row["image"]["bytes"])
    assert start > 0
    data[start + 2:start + 602] = bytes(range(256)) * 2 + bytes(88)  # keep the SOI marker, wreck the headers
    path.write_bytes(bytes(data))
    with pytest.raises(ShardError, match=rf"train-000000.arrow, key {row['key']}"):
        list(loader(ds["arrow"], split="train", train=False))
    ld = loader(ds["arrow"], split="train", train=False, on_error="skip")
    assert int((torch.cat([y for _, y in ld]) >= 0).sum()) == 11 and ld.skipped == 1


def test_every_sample_corrupt_raises_instead_of_spinning(ds):
    for shard, n in (("val-000000.tar", 4), ("val-000001.tar", 3)):
        for line in range(n):
            corrupt_sample(ds["wds"], shard, line)
    with pytest.raises(ShardError, match="every sample"):
        list(loader(ds["wds"], split="val", train=True, batch_size=2, on_error="skip"))
    with pytest.raises(ShardError, match="every sample"):  # eval: not an epoch of padding rows
        list(loader(ds["wds"], split="val", train=False, batch_size=2, on_error="skip"))


def test_an_epoch_with_more_bad_than_good_samples_still_completes(ds):
    """The skip budget is the epoch's sample count: 4 bad samples of 7 are skipped, not taken for 'every sample'."""
    for shard, lines in (("val-000000.tar", (0, 1, 3)), ("val-000001.tar", (2,))):
        for line in lines:
            corrupt_sample(ds["wds"], shard, line)
    ld = loader(ds["wds"], split="val", train=False, batch_size=7, on_error="skip")
    labels = torch.cat([y for _, y in ld])
    assert ld.skipped == 4 and int((labels >= 0).sum()) == 3 and int((labels == -100).sum()) == 4


def test_resume_after_skipped_samples_is_exact(ds):
    """The state's cursor counts skipped samples, so a resumed loader continues where the batches left off."""
    corrupt_sample(ds["wds"], "train-000000.tar", 1)
    corrupt_sample(ds["wds"], "train-000002.tar", 0)
    kw = dict(split="train", train=True, batch_size=3, on_error="skip", seed=2)
    full = loader(ds["wds"], **kw)
    want = [x for x, _ in full]
    first = loader(ds["wds"], **kw)
    it = iter(first)
    next(it)
    next(it)
    state = first.state_dict()
    it.close()
    fresh = loader(ds["wds"], **kw)
    fresh.load_state_dict(state)
    got = [x for x, _ in fresh]
    assert len(got) == len(want) - 2 and all(torch.equal(a, b) for a, b in zip(got, want[2:]))
    assert fresh.skipped == full.skipped >= 2  # both corrupt samples met (and counted) exactly as uninterrupted


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_an_extreme_aspect_ratio_is_refused_in_eval_not_resized(tmp_path, backend):
    """A 1 x 50000 strip would become 256 x 12.8 M pixels in eval: refused (or skipped), memory stays bounded."""
    if backend == "dali":
        pytest.importorskip("nvidia.dali")
    import io

    import numpy as np
    from conftest_adopt import encoded, raw_tar
    from PIL import Image

    from converters.adopt import AdoptOptions, adopt

    buf = io.BytesIO()
    Image.fromarray(np.zeros((1, 50000, 3), np.uint8)).save(buf, "PNG")
    raw_tar(tmp_path / "s" / "a.tar", [("strip.png", buf.getvalue()), ("strip.cls", b"0"),
                                       ("ok.jpg", encoded("JPEG")), ("ok.cls", b"0")])
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    kw = dict(split="train", train=False, batch_size=2, backend=backend, image_size=224)
    with pytest.raises(ShardError, match="extreme aspect ratio"):
        list(loader(tmp_path / "s", **kw))
    ld = loader(tmp_path / "s", on_error="skip", **kw)
    assert [y.tolist() for _, y in ld] == [[-100, 0]] or [y.tolist() for _, y in ld] == [[0, -100]]
    assert ld.skipped >= 1


def test_a_shard_cut_short_after_it_was_opened_names_the_sample(ds):
    """The index was checked against the file at open; a file truncated later is caught at the read."""
    from fastdata.dataset import open_dataset
    from fastdata.images.reader import SplitReader

    reader = SplitReader(open_dataset(ds["wds"]))
    first = reader.read(0)
    assert len(first.data) > 0
    shard = first.shard
    offset, _, key = jpg_entry(ds["wds"], shard.name, 1)
    with open(shard, "r+b") as f:
        f.truncate(offset + 10)
    with pytest.raises(ShardError, match=rf"{shard.name} is truncated at sample {key}; re-run `fastdata convert`$"):
        reader.read(1)
    reader.close()


def test_a_shard_cut_short_between_members_read_apart_names_the_sample(tmp_path):
    """Members more than a page apart are read one `pread` each (an adopted shard may hold a large member between
    a sample's image and label); a file truncated after open inside the second read is caught too."""
    from conftest_adopt import photo_bytes, raw_tar

    from converters.adopt import AdoptOptions, adopt
    from fastdata.dataset import open_dataset
    from fastdata.images.reader import SplitReader

    members = []
    for i, (_, data) in enumerate(photo_bytes(2)):
        members += [(f"s{i}.jpg", data), (f"s{i}.bin", b"x" * 20000), (f"s{i}.cls", b"1")]
    shard = raw_tar(tmp_path / "wds" / "a-000000.tar", members)
    adopt(tmp_path / "wds", options=AdoptOptions(jobs=1))
    reader = SplitReader(open_dataset(tmp_path / "wds"))
    assert reader.read(1).label == 1  # both reads whole
    cls_offset = next(m.offset_data for m in __import__("tarfile").open(shard) if m.name == "s1.cls")
    with open(shard, "r+b") as f:
        f.truncate(cls_offset)
    with pytest.raises(ShardError, match=r"a-000000.tar is truncated at sample s1"):
        reader.read(1)
    assert reader.read(0).label == 1  # the sample before the cut still reads
    reader.close()
