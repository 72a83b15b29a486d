"""A mask stored on a part of its image's grid is padded back onto the whole grid (converters/nifti/case.py,
volume.py `box_in`): older 3D Slicer releases saved segmentations cropped to their segments' extent by default, the
origin moved so that each voxel keeps its place. Before, every such case was rejected ("the mask's grid is not its
image's"). A part off the image's voxels, reaching outside the image, or of other spacing or axes is still
rejected: padding it would move or lose labels."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sitk = pytest.importorskip("SimpleITK")
sys.path.insert(0, str(Path(__file__).parent))
from conftest_dicom import reasons_by_path  # noqa: E402
from conftest_nifti import convert_nifti, volumes_by_source  # noqa: E402

from converters.nifti.volume import Grid, box_in  # noqa: E402

SPACING = (0.7, 0.8, 2.5)  # ITK's (x, y, z)
ORIGIN = (-150.5, -170.0, -310.25)
DIRECTION = (0.0, 1.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 1.0)  # index x along LPS -y, y along +x, z along +z


def image_of(voxels: np.ndarray, origin=ORIGIN, spacing=SPACING) -> sitk.Image:
    image = sitk.GetImageFromArray(voxels)
    image.SetSpacing(spacing)
    image.SetOrigin(origin)
    image.SetDirection(DIRECTION)
    return image


def cropped(whole: sitk.Image, mask: np.ndarray, start: tuple[int, int, int], stop: tuple[int, int, int],
            shift: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> sitk.Image:
    """mask[start:stop] ((z, y, x) array indices) on `whole`'s grid, its origin where that part begins (moved by
    `shift` mm, to put it between voxels)."""
    part = image_of(mask[tuple(slice(a, b) for a, b in zip(start, stop))])
    part.SetOrigin(tuple(np.add(whole.TransformIndexToPhysicalPoint(start[::-1]), shift)))
    return part


def test_a_segmentation_cropped_to_its_extent_is_padded_onto_its_volume(tmp_path: Path):
    rng = np.random.default_rng(0)
    voxels = rng.integers(-1000, 1000, (6, 8, 10)).astype(np.int16)
    mask = np.zeros(voxels.shape, np.uint8)
    mask[1:4, 2:6, 3:8] = rng.integers(1, 3, (3, 4, 5))
    whole = image_of(voxels)
    src = tmp_path / "src"
    parts = {"case01": ((1, 2, 3), (4, 6, 8)),  # the labelled box exactly
             "case02": ((0, 0, 0), (6, 8, 10)),  # the whole grid
             "case03": ((1, 2, 3), (6, 8, 10)),  # up to the far corner
             "case04": ((0, 1, 2), (5, 7, 9))}  # with a margin of zeros
    for case, (start, stop) in parts.items():
        (src / case).mkdir(parents=True)
        sitk.WriteImage(whole, str(src / case / "CT.nrrd"))
        sitk.WriteImage(cropped(whole, mask, start, stop), str(src / case / "Segmentation.seg.nrrd"))
    result = convert_nifti(src, tmp_path / "out")
    assert result.rejected == []
    got = volumes_by_source(tmp_path / "out", result)
    for case in parts:
        arr, labels, _ = got[f"{case}/CT.nrrd"]
        np.testing.assert_array_equal(arr, voxels)
        np.testing.assert_array_equal(labels, mask)


def test_a_nifti_mask_on_a_part_of_its_image_is_padded_too(tmp_path: Path):
    """Not only Slicer's: a KiTS-style case folder of NIfTI files whose mask covers a box of the image."""
    voxels = np.arange(6 * 8 * 10, dtype=np.int16).reshape(6, 8, 10)
    mask = np.zeros(voxels.shape, np.uint8)
    mask[2:5, 1:3, 4:9] = 1
    whole = image_of(voxels)
    case = tmp_path / "src" / "case_00000"
    case.mkdir(parents=True)
    sitk.WriteImage(whole, str(case / "imaging.nii.gz"))
    sitk.WriteImage(cropped(whole, mask, (2, 1, 4), (5, 3, 9)), str(case / "segmentation.nii.gz"))
    result = convert_nifti(tmp_path / "src", tmp_path / "out")
    ((arr, labels, _),) = volumes_by_source(tmp_path / "out", result).values()
    np.testing.assert_array_equal(arr, voxels)
    np.testing.assert_array_equal(labels, mask)


def test_a_part_off_the_voxels_outside_the_image_or_of_another_grid_is_rejected(tmp_path: Path):
    voxels = np.zeros((6, 8, 10), np.int16)
    mask = np.ones(voxels.shape, np.uint8)
    whole = image_of(voxels)
    src = tmp_path / "src"
    other = image_of(mask[1:4, 2:6, 3:8], spacing=(0.7, 0.8, 5.0))
    other.SetOrigin(whole.TransformIndexToPhysicalPoint((3, 2, 1)))
    beyond = image_of(np.ones((3, 4, 5), np.uint8))
    beyond.SetOrigin(whole.TransformIndexToPhysicalPoint((6, 5, 4)))  # its last voxels past the image's
    masks = {"half": cropped(whole, mask, (1, 2, 3), (4, 6, 8), shift=(0.0, 0.0, 1.25)),  # half a slice off
             "other": other, "beyond": beyond, "ok": cropped(whole, mask, (1, 2, 3), (4, 6, 8))}
    for case, part in masks.items():
        (src / case).mkdir(parents=True)
        sitk.WriteImage(whole, str(src / case / "CT.nrrd"))
        sitk.WriteImage(part, str(src / case / "Segmentation.seg.nrrd"))
    reasons = reasons_by_path(convert_nifti(src, tmp_path / "out"))
    assert sorted(reasons) == [f"{c}/{f}" for c in ("beyond", "half", "other") for f in ("CT.nrrd",
                                                                                         "Segmentation.seg.nrrd")]
    assert {reasons[f"{c}/Segmentation.seg.nrrd"] for c in ("beyond", "half", "other")} == {
        "the mask of a case that was rejected"}
    for case in ("beyond", "half", "other"):
        assert reasons[f"{case}/CT.nrrd"].startswith(f"{case}/Segmentation.seg.nrrd: the mask's grid (")
        assert reasons[f"{case}/CT.nrrd"].endswith("), nor a part of it")


def grid(shape=(6, 8, 10), spacing=(2.5, 0.8, 0.7), origin=(0.0, 0.0, 0.0)) -> Grid:
    return Grid(shape=shape, spacing=spacing, origin=origin,
                direction=((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, -1.0, 0.0)), units="mm")


@pytest.mark.parametrize("box, at", [
    (grid(), (0, 0, 0)),
    (grid((3, 4, 5), origin=(0.8, -0.7, 2.5)), (1, 1, 1)),  # one voxel along each axis: z +2.5, y +x 0.8, x -y 0.7
    (grid((1, 1, 1), origin=(7 * 0.8, -9 * 0.7, 5 * 2.5)), (5, 7, 9)),  # the last voxel
    (grid((2, 1, 1), origin=(7 * 0.8, -9 * 0.7, 5 * 2.5)), None),  # one slice past the last
    (grid((1, 1, 1), origin=(0.0, 0.0, -2.5)), None),  # one slice before the first
    (grid((1, 1, 1), origin=(0.0, 0.0, 1.25)), None),  # between slices
    (grid((1, 1, 1), origin=(0.0, 0.0, 2.505)), (1, 0, 0)),  # within the tolerance of a slice (float32 headers)
    (grid((1, 1, 1), spacing=(2.5, 0.8, 0.75)), None),
    (Grid(shape=(1, 1, 1), spacing=(2.5, 0.8, 0.7), origin=(0.0, 0.0, 0.0),
          direction=((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)), units="mm"), None),  # other axes
])
def test_box_in_finds_the_first_voxel_of_a_part_of_the_grid(box: Grid, at: tuple[int, int, int] | None):
    assert box_in(grid(), box) == at
