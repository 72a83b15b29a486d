"""A DICOM series' grid, one function at a time: the geometry refusals word for word, directions made unit length,
the in-plane fall-back spacing, resampling onto a new spacing, the cast to int16 and the rounding of metadata."""

from __future__ import annotations

import numpy as np
import pytest

pydicom = pytest.importorskip("pydicom")
pytest.importorskip("scipy")

from conftest_dicom import PLANE, edit_dicom, make_slice, rejection_of, stack_series  # noqa: E402

from converters.dicom import DicomOptions  # noqa: E402
from converters.dicom.arrays import to_int16  # noqa: E402
from converters.dicom.discover import SeriesFiles  # noqa: E402
from converters.dicom.geometry import RejectSeries  # noqa: E402
from converters.dicom.resample import resample  # noqa: E402
from converters.dicom.series import convert_series  # noqa: E402
from converters.dicom.slices import code_attribute, number  # noqa: E402

OPTS = DicomOptions(salt="t")


def _reason(series: SeriesFiles) -> str:
    return rejection_of(series, OPTS)


def test_geometry_refusals_word_for_word(tmp_path):
    flat = (1, 0, 0, 0, 1, 0)
    assert _reason(stack_series(tmp_path / "z", orientations=[(0, 0, 0, 0, 1, 0)] * 3)) == (
        "degenerate ImageOrientationPatient [0.0, 0.0, 0.0] (zero-length direction)")
    assert _reason(stack_series(tmp_path / "m", orientations=[flat, flat, (0, 1, 0, 1, 0, 0)])) == (
        "mixed slice orientations within the series (2 different ImageOrientationPatient values): not one volume")
    assert _reason(stack_series(tmp_path / "o", orientations=[(1, 0, 0, 0.6, 0.8, 0)] * 3)) == (
        "ImageOrientationPatient row and column directions are not orthogonal")
    duplicate = stack_series(tmp_path / "d", zs=(0.0, 2.0, 2.0, 4.0))
    assert _reason(duplicate) == "duplicate slices: 1 slice(s) share a position with another (02.dcm)"
    unspaced = stack_series(tmp_path / "s")
    edit_dicom(unspaced.files[1][0], PixelSpacing=None)  # one slice without: a None among tuples, sorted as text
    assert _reason(unspaced) == "mixed PixelSpacing within the series: [(1.0, 1.0), None]"


def test_gap_and_shift_tolerances(tmp_path):
    """A gap within 5% of the median and an in-plane shift within half a pixel are one volume; beyond, the refusal
    says which it is."""
    assert convert_series(stack_series(tmp_path / "a", zs=(0.0, 2.0, 4.05, 6.0)), OPTS)[0].shape == (4, 8, 8)
    assert _reason(stack_series(tmp_path / "b", zs=(0.0, 2.0, 4.0, 7.0))) == (
        "irregular slice spacing: gap of 3.000 mm at 4.000 mm along the normal, median gap 2.000 mm (tolerance 5%)")

    def shifted(root, step):
        return stack_series(root, positions=[(step * k, 0.0, 2.0 * k) for k in range(3)], pixel_spacing=(0.5, 0.5))

    assert convert_series(shifted(tmp_path / "c", 0.1), OPTS)[0].shape == (3, 8, 8)  # 0.2 mm: under 0.25
    assert _reason(shifted(tmp_path / "d", 0.15)) == (
        "slices are shifted in-plane by up to 0.30 mm (gantry tilt or sheared stack): not a rectilinear volume")


def test_a_position_of_two_numbers_is_missing_and_a_zero_thickness_absent(tmp_path):
    short = stack_series(tmp_path / "p")
    edit_dicom(short.files[1][0], ImagePositionPatient=["0", "0"])
    assert _reason(short) == ("missing position tags (ImagePositionPatient/ImageOrientationPatient) in 1 of 3 "
                              "slices: 01.dcm")
    _, _, meta = convert_series(stack_series(tmp_path / "t", zs=(0.0,), slice_thickness=0.0), OPTS)
    assert meta["spacing"][0] == 1.0
    assert meta["slice_spacing_source"] == "unknown (single slice, 1 mm assumed); in-plane PixelSpacing"


def test_pixels_no_decoder_can_read_are_named_by_the_error_type(tmp_path, monkeypatch):
    series = stack_series(tmp_path, zs=(0.0,))

    def failing(self):
        raise ValueError("a message that may quote a value")

    monkeypatch.setattr(pydicom.dataset.Dataset, "pixel_array", property(failing))
    assert _reason(series) == "cannot decode pixel data of 00.dcm (Explicit VR Little Endian): ValueError"


@pytest.mark.parametrize("step", ["slices_of", "pixels"])
def test_a_value_pydicom_cannot_parse_is_named_by_its_type(tmp_path, monkeypatch, step):
    import converters.dicom.slices as slices_module

    def failing(ds, rel):
        raise KeyError("a message that may quote a value")

    monkeypatch.setattr(slices_module, step, failing)
    assert _reason(stack_series(tmp_path)) == "00.dcm: malformed attribute value: KeyError"


def test_the_series_is_described_by_its_first_file(tmp_path):
    series = stack_series(tmp_path)
    for path, _ in series.files[1:]:
        edit_dicom(path, Modality="OT")
    assert convert_series(series, OPTS)[2]["modality"] == "CT"


def test_numbers_absent_empty_or_unreadable_take_their_default():
    assert [number(v, 7.0) for v in (None, "", "abc", "2.5", 3)] == [7.0, 7.0, 7.0, 2.5, 3.0]


def test_the_voxel_cap_is_inclusive_and_a_one_pixel_wide_image_is_an_image(tmp_path):
    series = stack_series(tmp_path / "a")  # 3 x 8 x 8 = 192 voxels
    assert convert_series(series, DicomOptions(salt="t", max_voxels=192))[0].shape == (3, 8, 8)
    assert rejection_of(series, DicomOptions(salt="t", max_voxels=191)).startswith(
        "the series holds at least 192 voxels, more than --max-voxels 191")
    line = SeriesFiles("1.2.6", ((str(make_slice(tmp_path / "l.dcm", PLANE[:1], series_uid="1.2.6",
                                                  position=(0.0, 0.0, 0.0))), "l.dcm"),))
    assert convert_series(line, OPTS)[0].shape == (1, 1, 8)


def test_attributes_of_the_first_file_name_it_when_malformed(tmp_path, monkeypatch):
    import converters.dicom.series as series_module

    series = stack_series(tmp_path)
    edit_dicom(series.files[0][0], Modality="ct scan")
    assert _reason(series) == ("00.dcm: malformed Modality attribute (not a code string of at most 16 capitals, "
                               "digits, spaces or underscores)")
    edit_dicom(series.files[0][0], Modality="CT")

    def failing(ds):
        raise ValueError("a message that may quote a name")

    monkeypatch.setattr(series_module, "phi_fields", failing)
    assert rejection_of(series, DicomOptions(salt="t", keep_phi=True)) == (
        "00.dcm: an identifying attribute is malformed (ValueError)")


def test_one_millimetre_slices_are_not_duplicates(tmp_path):
    arr, _, meta = convert_series(stack_series(tmp_path, zs=(0.0, 1.0, 2.0)), OPTS)
    assert arr.shape == (3, 8, 8) and meta["spacing"] == [1.0, 1.0, 1.0]


def test_directions_are_made_unit_length(tmp_path):
    _, _, meta = convert_series(stack_series(tmp_path, orientations=[(2, 0, 0, 0, 2, 0)] * 3), OPTS)
    assert meta["direction"] == [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]


def test_a_stack_without_pixel_spacing_assumes_one_millimetre_and_says_so(tmp_path):
    series = stack_series(tmp_path, zs=(0.0, 3.0, 6.0))
    for path, _ in series.files:
        edit_dicom(path, PixelSpacing=None)
    _, _, meta = convert_series(series, OPTS)
    assert meta["spacing"] == [3.0, 1.0, 1.0]
    assert meta["slice_spacing_source"] == "ImagePositionPatient; in-plane unknown (1 mm assumed)"


def test_metadata_is_rounded_to_six_decimals(tmp_path):
    series = stack_series(tmp_path)
    for path, _ in series.files:
        edit_dicom(path, PixelSpacing=["0.12345678", "0.5"])
    _, _, meta = convert_series(series, OPTS)
    assert meta["spacing"] == [2.0, 0.123457, 0.5]


def test_the_cast_to_int16_clips_and_counts_only_what_lies_outside():
    values = np.array([-32769.0, -32768.0, -32768.4, 0.5, 1.5, 32767.0, 32767.4, 32767.6, 40000.0])
    out, clipped = to_int16(values)
    assert out.dtype == np.int16 and clipped == 3
    assert out.tolist() == [-32768, -32768, -32768, 0, 2, 32767, 32767, 32767, 32767]  # rint: halves to even


def test_a_code_string_pydicom_cannot_parse_is_named_not_quoted():
    class Damaged:
        def get(self, keyword):
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "Jane Doe's name ran on")

    with pytest.raises(RejectSeries) as info:
        code_attribute(Damaged(), "Modality", "one.dcm")
    assert str(info.value) == "one.dcm: malformed Modality attribute (UnicodeDecodeError)"


def test_resampling_is_linear_from_the_first_voxel_and_float32():
    values = np.array([[0, 10, 0]], dtype=np.int16)
    out, spacing = resample(values, (1.0, 2.0), (1.0, 1.0))
    assert out.dtype == np.float32 and spacing == (1.0, 1.0)
    assert out.tolist() == [[0.0, 5.0, 10.0, 5.0, 0.0]]
    down, _ = resample(np.array([[0, 10, 20, 30]], dtype=np.float32), (1.0, 1.0), (1.0, 2.5))
    assert down.tolist() == [[0.0, 25.0]]  # floor(3 * 1 / 2.5) + 1 voxels: the grid stays inside the input
    edge, _ = resample(np.array([[10, 20]], dtype=np.int16), (1.0, 0.7), (1.0, 0.1))
    assert edge.shape == (1, 8) and edge[0, -1] == 20.0  # the last voxel lies a rounding error past the input's
    # edge: it takes the edge's value, where scipy's default mode ("constant") would make it 0


def test_resampling_onto_the_same_spacing_returns_the_values_as_they_are():
    values = np.arange(6, dtype=np.int16).reshape(2, 3)
    out, spacing = resample(values, (10.0, 1.0), (10.0 * (1 + 5e-7), 1.0))  # within a millionth of the larger
    assert out is values and spacing == (10.0, 1.0)


@pytest.mark.parametrize("spacing, target", [((1.0,), (1.0, 1.0)), ((1.0, 1.0), (1.0,))])
def test_resampling_refuses_spacings_of_another_dimension(spacing, target):
    with pytest.raises(ValueError) as info:
        resample(np.zeros((2, 2)), spacing, target)
    assert str(info.value) == f"spacing {spacing} / target {target} do not match an array of 2 dimensions"


@pytest.mark.parametrize("element, bits, dtype", [("FloatPixelData", 32, "<f4"), ("DoubleFloatPixelData", 64, "<f8")])
def test_float_pixel_data_converts_as_its_values(tmp_path, element, bits, dtype):
    """Parametric maps store float pixels in their own elements, with no BitsStored or rescale: the values are
    the volume's, rounded to int16."""
    series = stack_series(tmp_path / "f")
    planes = [np.arange(64, dtype=np.float64).reshape(8, 8) * 1.5 - 20 + k for k in range(3)]
    for (path, _), plane in zip(series.files, planes):
        ds = pydicom.dcmread(path)
        del ds.PixelData, ds.BitsStored, ds.HighBit, ds.PixelRepresentation
        ds.BitsAllocated = bits
        setattr(ds, element, plane.astype(dtype).tobytes())
        ds.save_as(path, enforce_file_format=True)
    arr, _, _ = convert_series(series, OPTS)
    assert arr.dtype == np.int16 and np.array_equal(arr, np.rint(np.stack(planes)).astype(np.int16))


@pytest.mark.filterwarnings("ignore:A value of '0' for .*Number of Frames")  # pydicom reads the file as 1 frame
def test_an_image_of_no_pixels_is_refused_with_its_shape(tmp_path):
    from pydicom.sequence import Sequence

    path = make_slice(tmp_path / "z.dcm", PLANE[:0], series_uid="1.2.9", position=(0.0, 0.0, 0.0))
    series = SeriesFiles("1.2.9", ((str(path), "z.dcm"),))
    assert _reason(series) == "z.dcm: an image of [0, 8] pixels"
    edit_dicom(path, Rows=4, NumberOfFrames=0, PerFrameFunctionalGroupsSequence=Sequence([]))  # no frames at all
    assert _reason(series) == "z.dcm: an image of 0 pixels"
