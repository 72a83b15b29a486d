"""--orientation, shared by the dicom and nifti kinds: the axis code of a volume, reorienting it by permuting and
flipping its axes (every voxel keeps its value and its patient position), masks moved with their images, the
metadata and counts it writes, and the loader's warning for volumes of several orientations."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

pytest.importorskip("nibabel")
pytest.importorskip("scipy")

from conftest_nifti import case, convert_nifti, load_mask, save, zyx  # noqa: E402

from converters.dicom.orientation import Placed, axis_code, check_code, reorient  # noqa: E402
from converters.dicom.resample import target_spacing  # noqa: E402

ALL_CODES = ["".join(letters[i] for letters, i in zip(perm, flips))
             for perm in itertools.permutations(("LR", "PA", "SI")) for flips in itertools.product((0, 1), repeat=3)]


def _positions(volume: Placed) -> np.ndarray:
    """The LPS position (mm) of every voxel of a (z, y, x) volume, shape (z, y, x, 3)."""
    grid = np.stack(np.meshgrid(*(np.arange(n) for n in volume.arrays[0].shape), indexing="ij"), axis=-1)
    steps = np.asarray(volume.direction) * np.asarray(volume.spacing)[:, None]  # row a: the step of array axis a
    return np.asarray(volume.origin) + grid @ steps


def _rotation(seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    return q * np.sign(np.diag(r))


@pytest.mark.parametrize("code", ["LPS", "RAS", "PIR", "SAL", "IRP"])
def test_codes_of_one_letter_per_patient_axis_are_accepted(code):
    check_code(code)


@pytest.mark.parametrize("code", ["LLS", "LP", "LPSI", "lps", "XYZ", "RAI ", "", None, 3, ("L", "P", "S")])
def test_other_codes_are_refused_naming_the_rule(code):
    with pytest.raises(ValueError, match="must be three letters, one each of L/R, A/P and S/I"):
        check_code(code)


def test_axis_codes_name_where_x_y_and_z_point():
    assert axis_code(((0, 0, 1), (0, 1, 0), (1, 0, 0))) == "LPS"  # an axial DICOM series as stored
    assert axis_code(((0, 0, 1), (0, -1, 0), (-1, 0, 0))) == "RAS"  # nibabel's canonical
    assert axis_code(((-1, 0, 0), (0, 0, -1), (0, 1, 0))) == "PIR"  # a sagittal series: x posterior, y inferior
    tilted = (0.0, np.sin(0.3), np.cos(0.3))  # an oblique slice normal: nearest to superior
    assert axis_code((tilted, (0, np.cos(0.3), -np.sin(0.3)), (1, 0, 0))) == "LPS"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_voxel_keeps_its_value_and_its_position_in_every_orientation(seed):
    rng = np.random.default_rng(seed)
    arr = rng.integers(-1000, 1000, size=(3, 4, 5)).astype(np.int16)
    mask = (arr > 0).astype(np.uint8)
    rotation = _rotation(seed)
    volume = Placed((arr, mask), tuple(rng.uniform(0.5, 3.0, 3)), tuple(rng.uniform(-200, 200, 3)),
                    tuple(tuple(rotation[:, a]) for a in range(3)))
    here = _positions(volume).reshape(-1, 3)
    for code in ALL_CODES:
        moved = reorient(volume, code)
        assert axis_code(moved.direction) == code
        assert sorted(moved.arrays[0].shape) == sorted(arr.shape)
        assert sorted(moved.spacing) == sorted(volume.spacing)  # moved with their axes, exactly
        there = _positions(moved).reshape(-1, 3)
        distance = np.linalg.norm(there[:, None] - here[None], axis=-1)
        nearest = distance.argmin(axis=1)  # the stored voxel at each moved voxel's position
        assert distance.min(axis=1).max() < 1e-9 and sorted(nearest) == list(range(arr.size))
        np.testing.assert_array_equal(moved.arrays[0].ravel(), arr.ravel()[nearest])
        np.testing.assert_array_equal(moved.arrays[1], (moved.arrays[0] > 0).astype(np.uint8))
        assert all(a.flags.c_contiguous for a in moved.arrays)
        back = reorient(moved, axis_code(volume.direction))
        np.testing.assert_array_equal(back.arrays[0], arr)
        np.testing.assert_allclose(back.origin, volume.origin, atol=1e-9)
        np.testing.assert_allclose(back.direction, volume.direction, atol=1e-12)


def test_reorienting_an_lps_volume_to_ras_flips_x_and_y_and_moves_the_origin_to_their_far_ends():
    arr = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    lps = Placed((arr,), (3.0, 2.0, 1.0), (10.0, 20.0, 30.0), ((0, 0, 1), (0, 1, 0), (1, 0, 0)))
    ras = reorient(lps, "RAS")
    np.testing.assert_array_equal(ras.arrays[0], arr[:, ::-1, ::-1])
    assert ras.spacing == (3.0, 2.0, 1.0) and ras.origin == (13.0, 24.0, 30.0)
    assert ras.direction == ((0.0, 0.0, 1.0), (0.0, -1.0, 0.0), (-1.0, 0.0, 0.0))
    spl = reorient(lps, "SPL")  # z along x: the array's axes are permuted, spacing with them
    assert spl.arrays[0].shape == (4, 3, 2) and spl.spacing == (1.0, 2.0, 3.0)
    np.testing.assert_array_equal(spl.arrays[0], arr.transpose(2, 1, 0))


def test_spacings_far_apart_keep_their_axes_and_a_far_corner_beyond_floats_is_refused():
    from converters.dicom.geometry import RejectSeries

    arr = np.zeros((2, 3, 4), np.int16)
    volume = Placed((arr,), (1e300, 1.0, 1e-300), (0.0, 0.0, 0.0), ((0, 0, 1), (0, 1, 0), (1, 0, 0)))
    spl = reorient(volume, "SPL")
    assert spl.spacing == (1e-300, 1.0, 1e300) and spl.origin == (0.0, 0.0, 0.0)
    assert all(type(v) is float for axis in spl.direction for v in axis)
    assert reorient(volume, "LPI").origin == (0.0, 0.0, 1e300)
    with pytest.raises(RejectSeries, match=r"reoriented to LPI, voxel \[0, 0, 0\] would lie at a position that is "
                                           r"not finite \(spacing \[1e\+308, 1.0, 1.0\] mm over \[2, 3, 4\] voxels\)"):
        reorient(Placed((arr,), (1e308, 1.0, 1.0), (0.0, 0.0, 1e308), volume.direction), "LPI")


def test_an_axis_of_one_voxel_keeps_its_spacing_wherever_it_lands():
    assert target_spacing((1, 8, 8), (5.0, 0.7, 0.7), (1.0, 1.0, 1.0)) == (5.0, 1.0, 1.0)
    assert target_spacing((8, 8, 1), (0.7, 0.7, 5.0), (1.0, 1.0, 1.0)) == (1.0, 1.0, 5.0)
    assert target_spacing((8, 8), (0.7, 0.6), (2.0, 1.0, 1.0)) == (1.0, 1.0)  # a 2D image takes Y X
    assert target_spacing((8, 8, 8), (0.7, 0.6, 0.5), None) == (0.7, 0.6, 0.5)


def _stored_lps_to_ras(tmp_path):
    image, mask = case(0)  # (i, j, k) arrays; the conftest's AFFINE stores them LPS
    save(tmp_path / "src" / "imagesTr" / "liver_0.nii.gz", image)
    save(tmp_path / "src" / "labelsTr" / "liver_0.nii.gz", mask)
    return image, mask


def test_nifti_images_and_masks_move_together_and_the_json_says_both_orientations(tmp_path):
    from conftest_dicom import load_volume, read_samples

    image, mask = _stored_lps_to_ras(tmp_path)
    convert_nifti(tmp_path / "src", tmp_path / "as_stored")
    convert_nifti(tmp_path / "src", tmp_path / "ras", orientation="RAS")
    ((stored),) = read_samples(tmp_path / "as_stored").values()
    ((ras),) = read_samples(tmp_path / "ras").values()
    arr, meta = load_volume(ras)
    np.testing.assert_array_equal(arr, zyx(image)[:, ::-1, ::-1])
    np.testing.assert_array_equal(load_mask(ras), zyx(mask)[:, ::-1, ::-1])
    old = load_volume(stored)[1]
    assert (old["orientation"], old["stored_orientation"]) == ("LPS", "LPS")
    assert (meta["orientation"], meta["stored_orientation"]) == ("RAS", "LPS")
    assert meta["direction"] == [[0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [-1.0, 0.0, 0.0]]
    # voxel [0, 0, 0] is now the stored volume's far corner in x (20 voxels of 0.8 mm) and y (18 of 0.7 mm)
    assert meta["origin"] == pytest.approx([old["origin"][0] + 19 * 0.8, old["origin"][1] + 17 * 0.7,
                                            old["origin"][2]])
    assert meta["resampled"] is False and meta["original_shape"] == meta["shape"]
    manifest = json.loads((tmp_path / "ras" / "manifest.json").read_text())
    assert manifest["splits"]["train"]["stats"]["orientation"] == {"RAS": 1}
    assert manifest["preprocessing"]["orientation"] == "RAS"


def test_spacing_is_asked_of_the_reoriented_axes(tmp_path):
    """AFFINE spaces (i, j, k) at (0.8, 0.7, 2.5) mm; reoriented to SPL the array's (z, y, x) are (i, j, k), and
    --spacing Z Y X resamples them: 20 voxels of 0.8 mm become 10 of 1.6 (19 * 0.8 / 1.6 = 9.5 gaps)."""
    from conftest_dicom import load_volume, read_samples

    _stored_lps_to_ras(tmp_path)
    convert_nifti(tmp_path / "src", tmp_path / "out", orientation="SPL", spacing=(1.6, 0.7, 2.5))
    ((sample),) = read_samples(tmp_path / "out").values()
    arr, meta = load_volume(sample)
    assert meta["orientation"] == "SPL" and meta["original_spacing"] == [0.8, 0.7, 2.5]
    assert meta["original_shape"] == [20, 18, 8] and list(arr.shape) == [10, 18, 8] == meta["shape"]
    assert load_mask(sample).shape == arr.shape


def test_dicom_series_reoriented_and_a_planar_image_left_as_it_is(tmp_path):
    pytest.importorskip("pydicom")
    from conftest_dicom import PLANE, make_slice, stack_series

    from converters.dicom import DicomOptions
    from converters.dicom.discover import SeriesFiles
    from converters.dicom.series import convert_series, process_series
    from converters.sample import WorkItem

    series = stack_series(tmp_path / "stack")
    arr, _, meta = convert_series(series, DicomOptions(salt="t", orientation="RAS"))
    stored, _, _ = convert_series(series, DicomOptions(salt="t"))
    np.testing.assert_array_equal(arr, stored[:, ::-1, ::-1])
    assert (meta["orientation"], meta["stored_orientation"]) == ("RAS", "LPS")
    assert meta["origin"] == [7.0, 7.0, 0.0] and meta["direction"][2] == [-1.0, 0.0, 0.0]
    sample = process_series(WorkItem("train", "s", "s", position=0, payload=series),
                            opts=DicomOptions(salt="t", orientation="RAS"))
    assert sample.stats["orientation"] == {"RAS": 1}
    path = make_slice(tmp_path / "planar.dcm", PLANE, series_uid="9.9", position=None, pixel_spacing=(0.5, 0.5))
    flat, _, meta = convert_series(SeriesFiles("9.9", ((str(path), "planar.dcm"),)),
                                DicomOptions(salt="t", orientation="RAS"))
    np.testing.assert_array_equal(flat, PLANE.astype(np.int16))
    assert meta["orientation"] is None and meta["stored_orientation"] is None
    sample = process_series(WorkItem("train", "p", "p", position=0,
                                     payload=SeriesFiles("9.9", ((str(path), "planar.dcm"),))),
                            opts=DicomOptions(salt="t", orientation="RAS"))
    assert "orientation" not in sample.stats


def test_the_cli_takes_a_code_in_either_case_and_refuses_a_wrong_one(tmp_path, capsys):
    from conftest_dicom import load_volume, read_samples

    from fastdata.cli import main as cli

    _stored_lps_to_ras(tmp_path)
    common = ["--salt", "s", "-j", "1", "--no-progress"]
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "bad"), "--orientation", "LRS", *common]) == 2
    assert "--orientation must be three letters" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "out"), "--orientation", "ras", *common]) == 0
    ((sample),) = read_samples(tmp_path / "out").values()
    assert load_volume(sample)[1]["orientation"] == "RAS"


def test_the_loader_warns_when_volumes_lie_in_several_orientations(tmp_path, caplog):
    from conftest_dicom import load_volume, read_samples

    import fastdata

    image, _ = case(0)
    save(tmp_path / "lps" / "a.nii.gz", image)
    save(tmp_path / "mixed" / "a.nii.gz", image)
    save(tmp_path / "mixed" / "b.nii.gz", image, np.eye(4))  # stored RAS
    save(tmp_path / "mixed" / "c.nii.gz", image, np.eye(4))
    for name, extra in (("lps", {}), ("mixed", {}), ("one", {"orientation": "LPS"})):
        convert_nifti(tmp_path / ("mixed" if name == "one" else name), tmp_path / f"out_{name}", **extra)
    metas = [load_volume(sample)[1] for sample in read_samples(tmp_path / "out_one").values()]
    assert sorted((m["stored_orientation"], m["orientation"]) for m in metas) == [
        ("LPS", "LPS"), ("RAS", "LPS"), ("RAS", "LPS")]
    with caplog.at_level("WARNING", logger="fastdata.volumes.options"):
        fastdata.loader(tmp_path / "out_lps", patch_size=4, num_workers=1)
        fastdata.loader(tmp_path / "out_one", patch_size=4, num_workers=1)
    assert "orientations" not in caplog.text
    with caplog.at_level("WARNING", logger="fastdata.volumes.options"):
        fastdata.loader(tmp_path / "out_mixed", patch_size=4, num_workers=1)
    assert "the volumes lie in 2 orientations (RAS: 2, LPS: 1" in caplog.text
    assert "convert with --orientation RAS to give them one" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="fastdata.volumes.options"):  # a mixture counts its members together
        fastdata.loader([tmp_path / "out_lps", tmp_path / "out_one"], patch_size=4, num_workers=1)
    assert "orientations" not in caplog.text


def test_no_negative_zero_reaches_the_json():
    """A flipped axis's zero components, and a voxel at the origin, stay 0.0: json would write -0.0."""
    import math

    volume = Placed((np.zeros((1, 1, 1)),), (1.0, 1.0, 1.0), (0.0, 0.0, 0.0), ((0, 0, 1), (0, 1, 0), (1, 0, 0)))
    for code in ("RAS", "RAI", "LPI", "SAR"):
        moved = reorient(volume, code)
        numbers = [*moved.origin, *(v for axis in moved.direction for v in axis)]
        assert all(math.copysign(1.0, v) > 0 for v in numbers if v == 0), (code, numbers)


def test_forged_orientation_counts_are_no_warning_and_no_crash(tmp_path, caplog):
    """The fuzzer's manifest target (seed 1940) made a count '' and a count [1]: the loader raised ValueError and
    TypeError out of a warning. Counts that are not positive whole numbers are skipped."""
    import fastdata

    image, _ = case(0)
    save(tmp_path / "src" / "a.nii.gz", image)
    convert_nifti(tmp_path / "src", tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    for forged, warned in (({"LPS": 1, "RAS": ""}, False), ({"LPS": 1, "RAS": [1]}, False),
                           ({"LPS": 1, "RAS": True}, False), ({"LPS": 1, "RAS": 0}, False),
                           ({"LPS": 1, "RAS": 2}, True)):
        manifest["splits"]["train"]["stats"]["orientation"] = forged
        (tmp_path / "out" / "manifest.json").write_text(json.dumps(manifest))
        caplog.clear()
        with caplog.at_level("WARNING", logger="fastdata.volumes.options"):
            fastdata.loader(tmp_path / "out", patch_size=4, num_workers=1)
        assert ("orientations" in caplog.text) is warned, forged
