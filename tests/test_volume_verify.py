"""`fastdata verify` on volume datasets: the volume loader's checks of every sample, and with --decode every
volume and mask read in full against its json. Forged shards here are rewritten with their index and hashes,
as a forger would, so that only these checks can see them."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile

import numpy as np
import pytest

pytest.importorskip("nibabel")
pytest.importorskip("scipy")

from conftest_nifti import case, convert_nifti, save  # noqa: E402
from test_volume_forged import _rewrite  # noqa: E402

from fastdata.verify import verify_dataset  # noqa: E402
from fastdata.wds_index import Member, format_index, split_name  # noqa: E402

SHARD = "train-000000.tar"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("verify")
    for n in range(2):
        image, mask = case(n)
        save(root / "src" / "imagesTr" / f"c{n}.nii.gz", image)
        save(root / "src" / "labelsTr" / f"c{n}.nii.gz", mask)
    (root / "src" / "dataset.json").write_text(json.dumps({"labels": {"0": "background", "1": "a", "2": "b"}}))
    convert_nifti(root / "src", root / "out")
    return root / "out"


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def _forged(dataset, tmp_path, change):
    """A copy of `dataset` whose first shard's members went through change(name, data) (test_volume_forged's
    `_rewrite`: the shard's size and hash follow), with a new index and its hash in the manifest."""
    dst = tmp_path / "forged"
    shutil.copytree(dataset, dst)
    shard = dst / SHARD
    _rewrite(shard, change)
    samples: dict[str, list[Member]] = {}
    with tarfile.open(shard) as tar:
        for m in tar:
            key, ext = split_name(m.name)
            samples.setdefault(key, []).append(Member(ext, m.offset_data, m.size, m.name))
    index = format_index(list(samples.values()))
    manifest = json.loads((dst / "manifest.json").read_text())
    (entry,) = [e for e in manifest["splits"]["train"]["shards"] if e["name"] == SHARD]
    (dst / entry["index"]).write_bytes(index)
    entry.update(index_sha256=hashlib.sha256(index).hexdigest())
    (dst / "manifest.json").write_text(json.dumps(manifest))
    return dst


def _first(ext, replace):
    """A change of the first sample's member `ext` only."""
    def change(name, data):
        return replace(data) if name == f"00000000.{ext}" else data
    return change


def test_a_converted_dataset_verifies_clean_with_and_without_decode(dataset):
    assert verify_dataset(dataset) == [] and verify_dataset(dataset, decode=True) == []


def test_a_rewritten_shard_with_its_hashes_still_passes_without_decode_only_when_its_headers_agree(dataset,
                                                                                                   tmp_path):
    same = _forged(dataset, tmp_path, lambda name, data: data)
    assert verify_dataset(same, decode=True) == []  # the forger's machinery itself changes nothing


def _meta(change):
    return _first("json", lambda data: json.dumps(change(json.loads(data))).encode())


@pytest.mark.parametrize(("change", "decode", "problem"), [
    (_meta(lambda m: {**m, "shape": [1, 2, 3]}), False,
     "sample 00000000 in {shard}: json shape [1, 2, 3] does not match the npy array's [8, 18, 20]"),
    (_first("label.npy", lambda d: _npy(np.zeros((2, 2, 2), np.uint8))), False,
     "sample 00000000 in {shard}: its mask is uint8 of shape [2, 2, 2], not uint8 or uint16 of its image's shape "
     "[8, 18, 20]"),
    (_meta(lambda m: {**m, "max": m["max"] + 1}), True,
     "{shard}: sample 00000000: the json records max {max1!r}, the array's is {max0}"),
    (_meta(lambda m: {**m, "min": "low"}), True,
     "{shard}: sample 00000000: the json records min 'low', the array's is {min0}"),
    (_first("label.npy", lambda d: _npy(np.full((8, 18, 20), 3, np.uint8))), True,
     ("{shard}: sample 00000000: mask value 3, but the dataset names 3 classes (0..2)",
      "{shard}: sample 00000000: the json records label_max 2, the mask's is 3")),
    (_meta(lambda m: {**m, "label_max": 1}), True,
     "{shard}: sample 00000000: the json records label_max 1, the mask's is 2"),
    (_first("npy", lambda d: _npy(np.full((8, 18, 20), np.nan, np.float32))), True,
     "{shard}: sample 00000000: 2880 voxel(s) are NaN or infinite"),
])
def test_forged_samples_are_reported(dataset, tmp_path, change, decode, problem):
    from conftest_dicom import load_volume, read_samples

    meta = load_volume(read_samples(dataset)["00000000"])[1]
    forged = _forged(dataset, tmp_path, change)
    shard = forged / SHARD
    expected = [p.format(shard=shard, max1=meta["max"] + 1, max0=float(meta["max"]), min0=float(meta["min"]))
                for p in ((problem,) if isinstance(problem, str) else problem)]
    assert verify_dataset(forged, decode=decode) == expected
    if decode:
        assert verify_dataset(forged) == []  # the headers agree: only reading the arrays finds it


def test_a_float_volume_that_disagrees_with_its_json_is_reported_and_the_cli_exits_non_zero(dataset, tmp_path,
                                                                                            capsys):
    from fastdata.cli import main as cli

    volume = np.linspace(-1, 1, 8 * 18 * 20, dtype=np.float32).reshape(8, 18, 20)
    forged = _forged(dataset, tmp_path, _first("npy", lambda d: _npy(volume)))
    assert cli(["verify", str(forged)]) == 0
    assert cli(["verify", str(forged), "--decode"]) == 1
    assert "sample 00000000: the json records min" in capsys.readouterr().out


def test_a_dicom_dataset_verifies_clean_with_decode(tmp_path):
    pytest.importorskip("pydicom")
    from conftest_dicom import Phantom, convert_dicom, write_phantom

    write_phantom(tmp_path / "src" / "p0", Phantom(slices=4, rows=12, cols=10))
    convert_dicom(tmp_path / "src", tmp_path / "out")
    assert verify_dataset(tmp_path / "out", decode=True) == []


def test_a_mask_is_a_member_some_volumes_have(tmp_path):
    """A volume without a mask has no label.npy: an unmasked nifti dataset, and a dicom dataset of a series with a
    segmentation (SEG) beside one without, verify clean. Before, verify reported every unmasked nifti sample for
    its missing label.npy. A sample without its json is still reported."""
    pytest.importorskip("nibabel")
    pytest.importorskip("highdicom")
    from dataclasses import replace

    from conftest_dicom import Phantom, convert_dicom, write_phantom
    from conftest_seg import prepared_sources, write_seg

    save(tmp_path / "nii" / "a.nii.gz", np.linspace(0, 1, 60, dtype=np.float32).reshape(5, 4, 3))
    convert_nifti(tmp_path / "nii", tmp_path / "nii_out")
    assert verify_dataset(tmp_path / "nii_out", decode=True) == []
    phantom = Phantom(slices=4, rows=12, cols=10)
    sources = prepared_sources(write_phantom(tmp_path / "dcm" / "p0", phantom))
    write_seg(tmp_path / "dcm" / "p0" / "seg.dcm", sources, [("tumor", phantom.hu() > 0)])
    write_phantom(tmp_path / "dcm" / "p1", replace(phantom, series_uid=phantom.series_uid + ".1"), seed=1)
    convert_dicom(tmp_path / "dcm", tmp_path / "dcm_out", samples_per_shard=2)
    assert verify_dataset(tmp_path / "dcm_out", decode=True) == []
    forged = _forged(tmp_path / "dcm_out", tmp_path, lambda name, data: None if name.endswith(".json") else data)
    shard = forged / SHARD
    assert verify_dataset(forged) == [
        f"{shard}: sample 00000000 has members ['label.npy', 'npy'], expected ['json', 'label.npy', 'npy']",
        f"{shard}: sample 00000001 has members ['npy'], expected ['json', 'label.npy', 'npy']"]


def test_a_json_true_is_no_number_to_match():
    from fastdata.volumes.sample_check import _same

    assert _same(1, 1.0) and _same(0.1234565, 0.1234568) and not _same(True, 1.0) and not _same("1", 1.0)
    assert _same(1000.0, 1000.0009) and not _same(1000.0, 1000.002)  # 6 decimals of the value's size
    assert _same(0.0, 1e-6) and not _same(0.0, 1.5e-6)


def test_a_volume_that_changed_after_it_was_indexed_is_reported(dataset, monkeypatch):
    import fastdata.volumes.store as store

    def gone(data):
        raise ValueError("unreadable npy header: gone")

    monkeypatch.setattr(store, "load_npy", gone)  # the loader's reader, which verify --decode reads with
    problems = verify_dataset(dataset, decode=True)
    assert problems == [f"sample {key} in {dataset / SHARD} has an unreadable npy member: unreadable npy header: gone"
                        for key in ("00000000", "00000001")]
