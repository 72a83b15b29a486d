"""Real NIfTI files, as nibabel ships them (MIT licence): an SPM-normalised MR brain stored big-endian
(`anatomical.nii`), an FSL fMRI run of two volumes (`example4d.nii.gz`, 4D) and a NIfTI-2 file. Each converts to
exactly nibabel's voxels in (z, y, x) order, at the affine's place, and loads."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

nib = pytest.importorskip("nibabel")
pytest.importorskip("scipy")
pytest.importorskip("kornia")

from conftest_dicom import load_volume, read_samples, reasons_by_path  # noqa: E402
from conftest_nifti import convert_nifti, zyx  # noqa: E402

import fastdata  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from nifti_sample import anatomical, brain_task, channels_task, structures_task  # noqa: E402

DATA = anatomical().parent


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The 3D files converted as they are, the 4D ones with --channel 1; {file name: (array, json)}."""
    root = tmp_path_factory.mktemp("real")
    samples = {}
    for group, names, channel in (("3d", ["anatomical.nii"], None),
                                  ("4d", ["example4d.nii.gz", "example_nifti2.nii.gz"], 1)):
        (root / group).mkdir()
        for name in names:
            shutil.copyfile(DATA / name, root / group / name)
        result = convert_nifti(root / group, root / f"{group}-out", channel=channel, modality="MRI")
        assert result.rejected == []
        pseudonyms = reasons_by_path(result, key="source")
        for sample in read_samples(root / f"{group}-out").values():
            arr, meta = load_volume(sample)
            samples[pseudonyms[meta["source"]]] = (arr, meta)
    return samples


def test_real_files_convert_to_nibabels_voxels_at_the_affines_place(converted):
    assert sorted(converted) == ["anatomical.nii", "example4d.nii.gz", "example_nifti2.nii.gz"]
    for name, (arr, meta) in converted.items():
        img = nib.load(DATA / name)
        data = np.asarray(img.dataobj)
        expected = zyx(data[..., 1] if data.ndim == 4 else data)  # --channel 1 takes a 4D file's second volume
        np.testing.assert_array_equal(arr, expected)
        assert arr.dtype == np.int16 and arr.dtype.byteorder in "=|<"  # anatomical.nii is stored big-endian
        last = np.array(arr.shape) - 1  # the far corner voxel (k, j, i), at the affine's place in LPS
        lps = np.asarray(meta["origin"]) + (last * np.asarray(meta["spacing"])) @ np.asarray(meta["direction"])
        ras = nib.affines.apply_affine(img.affine, last[::-1])
        np.testing.assert_allclose(lps, ras * [-1, -1, 1], atol=1e-3)
        assert meta["modality"] == "MRI" and meta["channel"] == (None if data.ndim == 3 else 1)
    assert converted["example4d.nii.gz"][1]["spacing"] == pytest.approx([2.2, 2.0, 2.0], abs=1e-5)


def test_the_brain_task_of_the_demo_loads_with_its_mask(tmp_path):
    brain_task(tmp_path / "Task01_Brain")
    convert_nifti(tmp_path / "Task01_Brain", tmp_path / "brain", spacing=(2.0, 2.0, 2.0))
    loader = fastdata.loader(tmp_path / "brain", batch_size=2, patches_per_volume=2, patch_size=16, pad_value=0.0,
                             zscore=True, sampling="foreground", num_workers=1)
    assert loader.classes == ("background", "bright")
    patches, meta = next(iter(loader))
    assert patches.shape == meta["labels"].shape == (2, 1, 16, 16, 16)
    assert 0 < float(meta["labels"].float().mean()) < 1


def test_the_real_brain_as_totalsegmentator_ships_cases_merges_its_structures(tmp_path):
    """Two structures of the real image (the brighter and the dimmer half of the head) become labels 1 and 2 of one
    mask, exactly where their files mark them; meta.csv puts the case in train."""
    from conftest_nifti import load_mask

    structures_task(tmp_path / "ts")
    result = convert_nifti(tmp_path / "ts", tmp_path / "out", modality="MRI")
    assert result.rejected == []
    ((sample),) = read_samples(tmp_path / "out").values()
    values = zyx(np.asarray(nib.load(anatomical()).dataobj))
    middle = np.percentile(values[values > 0], 50)
    expected = np.select([values > middle, values > 0], [1, 2], 0)
    np.testing.assert_array_equal(load_mask(sample), expected)
    np.testing.assert_array_equal(load_volume(sample)[0], values)
    assert fastdata.loader(tmp_path / "out", patch_size=16, num_workers=1).classes == ("background", "bright", "dim")


def test_the_real_brain_as_a_brats_case_of_two_modalities_stacks_them(tmp_path):
    channels_task(tmp_path / "brats")
    result = convert_nifti(tmp_path / "brats", tmp_path / "out", channel="all", modality="MRI")
    assert result.rejected == []
    ((sample),) = read_samples(tmp_path / "out").values()
    arr, meta = load_volume(sample)
    values = zyx(np.asarray(nib.load(anatomical()).dataobj))
    np.testing.assert_array_equal(arr[0], values)
    np.testing.assert_array_equal(arr[1], np.where(values > 0, values.max() - values, 0))
    assert meta["channels"] == ["t1", "t2"]
    x, batch = next(iter(fastdata.loader(tmp_path / "out", patch_size=16, num_workers=1, pad_value=0.0, batch_size=1)))
    assert x.shape == (1, 2, 16, 16, 16) and batch["labels"].shape == (1, 1, 16, 16, 16)
