"""Interoperability is part of the shard contract: webdataset, DALI and Hugging Face datasets read our files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers import convert_images

from fastdata.manifest import read_manifest


@pytest.fixture(scope="module")
def photo_shards(photo_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("interop") / "out"
    convert_images(photo_tree, out, samples_per_shard=25, short_side=96)
    return out


def _expected(out: Path) -> dict[str, tuple[int, bytes]]:
    """key -> (label, jpg bytes), read with the standard library's tarfile."""
    import tarfile

    got = {}
    for shard in read_manifest(out).splits["train"].shards:
        with tarfile.open(out / shard.name) as tar:
            members = {m.name: tar.extractfile(m).read() for m in tar}
        for name, data in members.items():
            key, _, ext = name.partition(".")
            if ext == "jpg":
                got[key] = (int(members[f"{key}.cls"]), data)
    return got


def test_index_is_byte_identical_to_wds2idx(photo_shards: Path, tmp_path: Path) -> None:
    for shard in read_manifest(photo_shards).splits["train"].shards:
        ref = tmp_path / f"{shard.name}.ref.idx"
        subprocess.run([sys.executable, "-m", "wds2idx", str(photo_shards / shard.name), str(ref)],
                       check=True, capture_output=True)
        assert (photo_shards / shard.index).read_bytes() == ref.read_bytes()


def test_webdataset_library_reads_every_sample(photo_shards: Path) -> None:
    import webdataset as wds

    expected = _expected(photo_shards)
    urls = [str(photo_shards / s.name) for s in read_manifest(photo_shards).splits["train"].shards]
    seen = {}
    for sample in wds.WebDataset(urls, shardshuffle=False, empty_check=False):
        seen[sample["__key__"]] = (int(sample["cls"]), sample["jpg"])
        assert json.loads(sample["json"])["label"] == int(sample["cls"])
    assert seen == expected


def test_dali_reader_with_our_index_reads_and_decodes_every_sample(photo_shards: Path) -> None:
    from nvidia.dali import fn, pipeline_def, types

    manifest = read_manifest(photo_shards)
    shards = manifest.splits["train"].shards
    n = manifest.splits["train"].samples

    @pipeline_def(batch_size=8, num_threads=2, device_id=None)
    def pipe():
        jpg, cls = fn.readers.webdataset(
            paths=[str(photo_shards / s.name) for s in shards],
            index_paths=[str(photo_shards / s.index) for s in shards],
            ext=["jpg", "cls"], missing_component_behavior="error", pad_last_batch=True, name="r")
        img = fn.decoders.image(jpg, device="cpu", output_type=types.RGB)
        return img, cls

    p = pipe()
    p.build()
    assert p.epoch_size("r") == n
    labels, shapes = [], 0
    for _ in range((n + 7) // 8):
        imgs, cls = p.run()
        for i in range(len(imgs)):
            if len(labels) < n:
                arr = np.array(imgs.at(i))
                assert arr.ndim == 3 and arr.shape[2] == 3 and min(arr.shape[:2]) <= 96
                labels.append(int(bytes(np.array(cls.at(i))).decode()))
                shapes += 1
    assert shapes == n
    assert Counter(labels) == Counter({i: c for i, c in enumerate(manifest.splits["train"].class_counts)})


def test_datasets_from_file_shows_image_and_classlabel(small_tree: Path, tmp_path: Path) -> None:
    import datasets

    convert_images(small_tree, tmp_path / "out", format="arrow", samples_per_shard=100)
    ds = datasets.Dataset.from_file(str(tmp_path / "out" / "train-000000.arrow"))
    assert isinstance(ds.features["image"], datasets.Image)
    assert isinstance(ds.features["label"], datasets.ClassLabel)
    assert ds.features["label"].names == ["class_0", "class_1", "class_2"]
    assert len(ds) == 12
    first = ds[0]
    assert first["image"].mode == "RGB" and first["image"].size == (64, 48)
    assert Counter(ds["label"]) == Counter({0: 4, 1: 4, 2: 4})
