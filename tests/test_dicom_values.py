"""DICOM values that would silently give a wrong or enormous volume: rejected with a reason, never guessed."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pydicom")
pytest.importorskip("scipy")

from conftest_dicom import (  # noqa: E402
    PLANE,
    Phantom,
    convert_dicom,
    edit_dicom,
    load_volume,
    make_slice,
    read_samples,
    reasons_by_path,
    stack_series,
    write_phantom,
)

from fastdata.cli import main as cli  # noqa: E402


def _series(root, uid, n=3, **slice_kwargs):
    stack_series(root, uid=uid, zs=tuple(2.0 * k for k in range(n)), **slice_kwargs)


@pytest.fixture
def bad_values(tmp_path):
    src = tmp_path / "src"
    write_phantom(src / "good", Phantom(slices=4), seed=0)
    _series(src / "nan_slope", "1.7.1")
    edit_dicom(src / "nan_slope" / "01.dcm", RescaleSlope="NaN")
    _series(src / "inf_intercept", "1.7.2")
    edit_dicom(src / "inf_intercept" / "02.dcm", RescaleIntercept="inf")
    _series(src / "zero_slope", "1.7.3")
    edit_dicom(src / "zero_slope" / "00.dcm", RescaleSlope="0")
    _series(src / "zero_spacing", "1.7.4", pixel_spacing=(0.0, 0.0))
    _series(src / "nan_position", "1.7.5")
    edit_dicom(src / "nan_position" / "01.dcm", ImagePositionPatient=["0", "nan", "2"])
    _series(src / "huge_slope", "1.7.6")
    edit_dicom(src / "huge_slope" / "02.dcm", RescaleSlope="1e39")  # a float64, but no float32: infinite
    return src


def test_non_finite_and_zero_values_are_rejected(bad_values, tmp_path):
    result = convert_dicom(bad_values, tmp_path / "out")
    reasons = reasons_by_path(result)
    assert reasons["nan_slope (3 files)"] == "nan_slope/01.dcm: RescaleSlope nan is not a finite number"
    assert reasons["inf_intercept (3 files)"] == "inf_intercept/02.dcm: RescaleIntercept inf is not a finite number"
    assert reasons["zero_slope (3 files)"].startswith("zero_slope/00.dcm: RescaleSlope 0 maps every stored value")
    assert reasons["zero_spacing (3 files)"].startswith("zero_spacing/00.dcm: PixelSpacing [0.0, 0.0] is not positive")
    assert reasons["nan_position (3 files)"].startswith("nan_position/01.dcm: ImagePositionPatient")
    assert reasons["huge_slope (3 files)"] == "huge_slope/02.dcm: RescaleSlope 1e+39 is beyond float32's range"
    assert len(reasons) == 6 and result.manifest.num_samples == 1


@pytest.mark.parametrize("spacing", ["nan", "inf", "0", "-1"])
def test_spacing_must_be_positive_and_finite(tmp_path, spacing, capsys):
    write_phantom(tmp_path / "src" / "a", Phantom(slices=4), seed=0)
    rc = cli(["convert", str(tmp_path / "src"), str(tmp_path / "out"), "--kind", "dicom", "--spacing", spacing,
              "--salt", "s", "-j", "1", "--no-progress"])
    assert rc == 2 and "--spacing must be three positive" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_voxel_cap_before_decoding_and_before_resampling(tmp_path, monkeypatch):
    import converters.dicom.series as series
    import converters.dicom.slices as slices

    write_phantom(tmp_path / "src" / "big", Phantom(rows=40, cols=36, slices=16), seed=0)  # 23040 voxels
    _series(tmp_path / "src" / "small", "1.7.8")  # 192 voxels
    decoded = []
    pixels = slices.pixels
    monkeypatch.setattr(slices, "pixels", lambda ds, rel: decoded.append(rel) or pixels(ds, rel))
    result = convert_dicom(tmp_path / "src", tmp_path / "o1", max_voxels=20_000)
    reason = reasons_by_path(result)["big (16 files)"]
    assert reason.startswith("the series holds at least 20160 voxels, more than --max-voxels 20000"), reason
    assert len(decoded) == 3 + 13  # the small series, and the big one's files up to the cap: no more

    resampled = []
    resample = series.resample
    monkeypatch.setattr(series, "resample", lambda values, *a, **k: resampled.append(values.shape) or
                        resample(values, *a, **k))
    result = convert_dicom(tmp_path / "src", tmp_path / "o2", max_voxels=30_000, spacing=(0.25, 0.25, 0.25))
    reason = reasons_by_path(result)["big (16 files)"]
    assert reason == ("resampled to [0.25, 0.25, 0.25] mm the series would hold 1868625 voxels, more than "
                      "--max-voxels 30000 (about 21 MiB of memory to convert)")  # 12 bytes a voxel
    assert resampled == [(3, 8, 8)] and result.manifest.num_samples == 1  # 29x29x17 = 14297 voxels: under the cap


def test_per_slice_rescale_is_applied_per_slice(tmp_path):
    """PET and some MR/CT store a RescaleSlope/Intercept per slice: each slice's own pair must be used."""
    pairs = [(1.0, 0.0), (2.0, -10.0), (0.5, 100.0)]
    for k, (slope, intercept) in enumerate(pairs):
        make_slice(tmp_path / "src" / "s" / f"{k:02d}.dcm", PLANE, series_uid="1.7.9", instance=k + 1,
                   position=(0.0, 0.0, 2.0 * k), pixel_spacing=(1.0, 1.0), slope=slope, intercept=intercept)
    convert_dicom(tmp_path / "src", tmp_path / "out")
    arr, _ = load_volume(next(iter(read_samples(tmp_path / "out").values())))
    for k, (slope, intercept) in enumerate(pairs):
        np.testing.assert_array_equal(arr[k], np.rint(PLANE * slope + intercept).astype(np.int16))
