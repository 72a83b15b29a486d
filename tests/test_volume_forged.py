"""A volume shard is untrusted input: the loader plans with each sample's json, so the json is checked
against the npy header it describes (shape, spacing), and the npy header against the member's size."""

from __future__ import annotations

import io
import json
import tarfile

import numpy as np
import pytest

pytest.importorskip("pydicom")

from conftest_dicom import Phantom, convert_dicom, write_phantom  # noqa: E402

import fastdata  # noqa: E402
from fastdata.errors import ShardError  # noqa: E402


@pytest.fixture
def dst(tmp_path):
    write_phantom(tmp_path / "src" / "a", Phantom(slices=6), seed=0)
    convert_dicom(tmp_path / "src", tmp_path / "out")
    return tmp_path / "out"


def _rewrite(shard, change):
    """Rewrite the shard's members through change(name, data) -> data (same names, same order; None drops the
    member), and its size and sha256 in the manifest, as a forger would."""
    import hashlib

    with tarfile.open(shard) as tar:
        members = [(m.name, tar.extractfile(m).read()) for m in tar]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            data = change(name, data)
            if data is None:
                continue
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    shard.write_bytes(buf.getvalue())
    manifest = json.loads((shard.parent / "manifest.json").read_text())
    for entry in manifest["splits"]["train"]["shards"]:
        if entry["name"] == shard.name:
            entry.update(bytes=len(buf.getvalue()), sha256=hashlib.sha256(buf.getvalue()).hexdigest())
    (shard.parent / "manifest.json").write_text(json.dumps(manifest))


def _json(change):
    def edit(name, data):
        return json.dumps(change(json.loads(data))).encode() if name.endswith(".json") else data
    return edit


def _npy(array):
    def edit(name, data):
        if not name.endswith(".npy"):
            return data
        out = io.BytesIO()
        np.save(out, array, allow_pickle=True)
        return out.getvalue()
    return edit


@pytest.mark.parametrize("change, message", [
    (_json(lambda m: {**m, "shape": [4000, 5000, 6000]}), "json shape .* does not match the npy array's"),
    (_json(lambda m: {**m, "shape": "big"}), "json shape"),
    (_json(lambda m: {**m, "spacing": [1.0, float("nan"), 1.0]}), "json spacing"),
    (_json(lambda m: {**m, "spacing": [1.0, 0.0, 1.0]}), "json spacing"),
    (_json(lambda m: [m]), "not an object"),
    (lambda name, data: b'{"shape": ' + b"9" * 5000 + b"}" if name.endswith(".json") else data,
     "unreadable json member: unreadable JSON: Exceeds the limit"),
    (lambda name, data: b"[" * 100_000 + b"]" * 100_000 if name.endswith(".json") else data,
     "unreadable json member: JSON nested too deeply"),
    (_npy(np.zeros((2, 3, 4), dtype=object)), "numeric C-order array"),
    (_npy(np.zeros((2, 3, 4, 5), dtype=np.int16)), r"a 4D npy array of 2 channels, but its json names the channels "
                                                    "None"),
    (_npy(np.zeros((2, 3, 4, 5, 6), dtype=np.int16)), r"expected a 2D, 3D or \(channels first\) 4D numeric"),
    (lambda name, data: data[:-10] if name.endswith(".npy") else data, "not what the header"),
    (lambda name, data: b"\x93NUMPY\x09\x00" + data[8:] if name.endswith(".npy") else data, "unreadable npy header"),
])
def test_forged_volume_samples_are_refused_when_the_loader_opens(dst, change, message):
    _rewrite(dst / "train-000000.tar", change)
    with pytest.raises(ShardError, match=message):
        fastdata.loader(dst, batch_size=1, patch_size=(4, 8, 8), num_workers=1)


def test_the_untouched_shard_loads(dst):
    _rewrite(dst / "train-000000.tar", lambda name, data: data)
    x, meta = next(iter(fastdata.loader(dst, batch_size=1, patch_size=(4, 8, 8), num_workers=1)))
    assert x.shape == (1, 1, 4, 8, 8)
