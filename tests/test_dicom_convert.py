"""DICOM conversion of a synthetic CT series with known geometry: slice order, HU, resampling."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

pytest.importorskip("pydicom")
pytest.importorskip("scipy")

from conftest_dicom import Phantom, convert_dicom, load_volume, read_samples, write_phantom  # noqa: E402


def _world(idx: np.ndarray, meta: dict) -> np.ndarray:
    """Patient coordinates (x, y, z) of voxel indices (k, i, j) from the sample's geometry."""
    return np.asarray(meta["origin"]) + (idx * np.asarray(meta["spacing"])) @ np.asarray(meta["direction"])


def _only_volume(dst):
    samples = read_samples(dst)
    assert len(samples) == 1
    return load_volume(next(iter(samples.values())))


def test_native_spacing_restores_exact_hu_in_position_order(tmp_path):
    ph = Phantom()
    write_phantom(tmp_path / "src" / "scan", ph, seed=3)
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    assert result.rejected == []
    arr, meta = _only_volume(tmp_path / "out")
    assert arr.dtype == np.int16
    np.testing.assert_array_equal(arr, ph.hu())  # slope 0.5 / intercept -1024 applied, slices in z order
    assert meta["spacing"] == [2.5, 0.8, 0.7]
    assert meta["origin"] == list(ph.origin)
    assert meta["direction"] == [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    assert meta["resampled"] is False and meta["units"] == "HU" and meta["modality"] == "CT"
    assert meta["original_shape"] == [ph.slices, ph.rows, ph.cols]


@pytest.mark.parametrize("spacing", [(1.0, 1.0, 1.0), (1.5, 0.6, 1.2)])
def test_resampled_sphere_keeps_hu_position_and_radius(tmp_path, spacing):
    ph = Phantom()
    write_phantom(tmp_path / "src", ph, seed=1)
    convert_dicom(tmp_path / "src", tmp_path / "out", spacing=spacing)
    arr, meta = _only_volume(tmp_path / "out")
    assert meta["spacing"] == list(spacing)
    assert meta["original_spacing"] == [2.5, 0.8, 0.7]
    extent = (np.array(meta["original_shape"]) - 1) * np.array(meta["original_spacing"])
    assert list(arr.shape) == [int(np.floor(e / s + 1e-6)) + 1 for e, s in zip(extent, spacing)]
    # HU: background and sphere interior are exact after linear interpolation of constant regions
    inside = np.argwhere(arr > (ph.sphere_hu + ph.background_hu) / 2)
    centre_world = _world(inside, meta).mean(axis=0)
    voxel = max(spacing)
    assert np.linalg.norm(centre_world - np.asarray(ph.center_mm)) < voxel
    radius = (3 * len(inside) * np.prod(spacing) / (4 * np.pi)) ** (1 / 3)
    assert abs(radius - ph.radius_mm) < voxel
    centre_idx = np.rint((np.asarray(ph.center_mm) - meta["origin"]) @ np.linalg.inv(
        np.asarray(meta["direction"])) / spacing).astype(int)
    assert arr[tuple(centre_idx)] == ph.sphere_hu
    assert arr[0, 0, 0] == ph.background_hu and arr.max() == ph.sphere_hu and arr.min() == ph.background_hu


def test_conversion_is_deterministic_and_resumable(tmp_path):
    for i in range(3):
        write_phantom(tmp_path / "src" / f"s{i}", Phantom(series_uid=f"1.2.3.{i}", slices=6 + i), seed=i)
    a = convert_dicom(tmp_path / "src", tmp_path / "a", spacing=(2.0, 2.0, 2.0), samples_per_shard=2)
    b = convert_dicom(tmp_path / "src", tmp_path / "b", spacing=(2.0, 2.0, 2.0), samples_per_shard=2, jobs=2)
    ha = {s.name: s.sha256 for s in a.manifest.splits["train"].shards}
    assert ha == {s.name: s.sha256 for s in b.manifest.splits["train"].shards}
    assert len(ha) == 2 and a.manifest.kind == "dicom" and a.manifest.num_samples == 3
    # a rerun over a finished destination does nothing
    again = convert_dicom(tmp_path / "src", tmp_path / "a", spacing=(2.0, 2.0, 2.0), samples_per_shard=2)
    assert again.converted == []
    # DALI-style index beside each tar, keys without dots
    for shard in a.manifest.splits["train"].shards:
        idx = (tmp_path / "a" / shard.index).read_text().splitlines()
        assert idx[0] == f"v1.2 {shard.samples}"
        assert all(line.split()[0] == "npy" and line.split()[4] == "json" for line in idx[1:])
    digest = hashlib.sha256((tmp_path / "a" / "train-000000.tar").read_bytes()).hexdigest()
    assert digest == ha["train-000000.tar"]


def test_cli_convert_and_info(tmp_path, capsys):
    from fastdata.cli import main

    write_phantom(tmp_path / "src" / "a", Phantom(slices=6), seed=0)
    (tmp_path / "src" / "notes.txt").write_text("not dicom")
    rc = main(["convert", str(tmp_path / "src"), str(tmp_path / "out"), "--kind", "dicom", "--spacing", "1.0",
               "--salt", "s3cret", "-j", "1", "--no-progress"])
    assert rc == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["kind"] == "dicom" and manifest["preprocessing"]["spacing"] == [1.0, 1.0, 1.0]
    assert manifest["preprocessing"]["pseudonyms"].startswith("keyed by the user's salt")
    assert "s3cret" not in (tmp_path / "out" / "manifest.json").read_text()
    # rejections name files by pseudonym; the private report beside DST maps them back
    [rejected] = manifest["rejected"]
    assert rejected["source"].startswith("file-") and "notes" not in json.dumps(manifest)
    report = [json.loads(line) for line in (tmp_path / "out.private-sources.jsonl").read_text().splitlines()]
    assert {r["name"]: r["path"] for r in report[1:]}[rejected["source"]] == "notes.txt"
    assert "out.private-sources.jsonl" in capsys.readouterr().out
    rc = main(["convert", str(tmp_path / "src"), str(tmp_path / "out2"), "--kind", "dicom", "--strict", "-j", "1",
               "--no-progress"])
    assert rc == 1
    assert main(["info", str(tmp_path / "out")]) == 0
    assert "dicom" in capsys.readouterr().out


def test_split_folders_and_salted_hash(tmp_path):
    write_phantom(tmp_path / "src" / "train" / "a", Phantom(series_uid="1.2.3.1", slices=5), seed=0)
    write_phantom(tmp_path / "src" / "val" / "b", Phantom(series_uid="1.2.3.2", slices=5), seed=0)
    r1 = convert_dicom(tmp_path / "src", tmp_path / "o1", salt="one")
    convert_dicom(tmp_path / "src", tmp_path / "o2", salt="two")
    assert sorted(r1.manifest.splits) == ["train", "val"]
    h1 = load_volume(next(iter(read_samples(tmp_path / "o1", "val").values())))[1]["series"]
    h2 = load_volume(next(iter(read_samples(tmp_path / "o2", "val").values())))[1]["series"]
    assert h1 != h2 and len(h1) == 32


def test_options_are_validated():
    from converters.dicom import DicomOptions
    from converters.dicom.options import parse_spacing

    assert parse_spacing([1.0]) == (1.0, 1.0, 1.0)
    assert parse_spacing([2, 0.5, 0.25]) == (2.0, 0.5, 0.25)  # Z Y X, each in its place
    assert parse_spacing(None) is None
    with pytest.raises(ValueError, match="one value"):
        parse_spacing([1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        DicomOptions(spacing=(1.0, 0.0, 1.0))
    with pytest.raises(ValueError, match="split"):
        DicomOptions(split="a/b")


def test_shards_read_with_the_webdataset_library(tmp_path):
    wds = pytest.importorskip("webdataset")
    import io

    ph = Phantom(slices=5)
    write_phantom(tmp_path / "src", ph, seed=0)
    convert_dicom(tmp_path / "src", tmp_path / "out")
    samples = list(wds.WebDataset(str(tmp_path / "out" / "train-000000.tar"), shardshuffle=False))
    assert len(samples) == 1 and samples[0]["__key__"] == "00000000"
    arr = np.load(io.BytesIO(samples[0]["npy"]), allow_pickle=False)
    np.testing.assert_array_equal(arr, ph.hu())
    assert json.loads(samples[0]["json"])["shape"] == [5, ph.rows, ph.cols]
