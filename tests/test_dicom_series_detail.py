"""One DICOM series, attribute by attribute: every field of the sample's metadata, the enhanced multi-frame
functional groups, MONOCHROME1, the spacing fall-backs and the exact wording of each rejection."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging

import numpy as np
import pytest

pydicom = pytest.importorskip("pydicom")
pytest.importorskip("scipy")

from conftest_dicom import PLANE, edit_dicom, make_slice, rejection_of, stack_series  # noqa: E402

from converters.dicom import DicomOptions  # noqa: E402
from converters.dicom.discover import SeriesFiles  # noqa: E402
from converters.dicom.geometry import RejectSeries  # noqa: E402
from converters.dicom.privacy import file_name, phi_fields, series_hash  # noqa: E402
from converters.dicom.series import convert_series, process_series  # noqa: E402
from converters.dicom.slices import pixels  # noqa: E402
from converters.sample import Rejection, WorkItem  # noqa: E402

OPTS = DicomOptions(salt="t")


def _single(tmp_path, **attrs) -> SeriesFiles:
    path = make_slice(tmp_path / "one.dcm", PLANE, series_uid="1.2.9", position=(0.0, 0.0, 0.0),
                      pixel_spacing=(0.5, 0.5))
    edit_dicom(path, **attrs)
    return SeriesFiles("1.2.9", ((str(path), "one.dcm"),))


def test_every_metadata_field_of_a_stack(tmp_path):
    arr, _, meta = convert_series(stack_series(tmp_path), OPTS)
    assert meta == {
        "series": series_hash("1.2.3", "t"), "ndim": 3, "axes": "zyx", "shape": [3, 8, 8],
        "spacing": [2.0, 1.0, 1.0], "origin": [0.0, 0.0, 0.0],
        "direction": [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]],
        "orientation": "LPS", "stored_orientation": "LPS", "original_shape": [3, 8, 8],
        "original_spacing": [2.0, 1.0, 1.0],
        "slice_spacing_source": "ImagePositionPatient; in-plane PixelSpacing", "resampled": False,
        "interpolation": "linear (scipy.ndimage.affine_transform, order=1)", "modality": "CT", "units": "HU",
        "dtype": "int16",
        "photometric": "MONOCHROME2", "transfer_syntaxes": ["Explicit VR Little Endian"], "files": 3,
        "slices": 3, "min": 0, "max": 63, "clipped_voxels": 0,
    }
    np.testing.assert_array_equal(arr, np.stack([PLANE] * 3).astype(np.int16))


def test_units_name_the_rescale_outside_ct(tmp_path):
    _, _, meta = convert_series(stack_series(tmp_path, modality="MR"), OPTS)
    assert meta["units"] == "rescaled stored values (RescaleSlope/RescaleIntercept applied)"


def test_resampled_when_only_the_spacing_changes(tmp_path):
    """0.99 mm columns keep 8 of them ((8 - 1) * 1.0 / 0.99 = 7.07): the shape is the same, the spacing is not."""
    _, _, meta = convert_series(stack_series(tmp_path), DicomOptions(salt="t", spacing=(2.0, 1.0, 0.99)))
    assert meta["shape"] == [3, 8, 8] and meta["spacing"] == [2.0, 1.0, 0.99] and meta["resampled"] is True


def test_sample_json_is_canonical_and_stats_count_the_series(tmp_path):
    series = stack_series(tmp_path)
    sample = process_series(WorkItem("train", "s", "s", position=3, payload=series), opts=OPTS)
    raw = sample.members["json"]
    assert raw == json.dumps(json.loads(raw), sort_keys=True).encode()
    assert json.loads(raw)["key"] == "00000003"
    assert sample.stats == {"series": 1, "slices": 3, "voxels": 192, "clipped_voxels": 0,
                            "modality": {"CT": 1}, "ndim": {"3": 1}, "orientation": {"LPS": 1}}
    assert np.load(__import__("io").BytesIO(sample.members["npy"])).shape == (3, 8, 8)


def test_a_file_gone_since_discovery_an_unknown_modality_and_an_unexpected_error(tmp_path, monkeypatch):
    """Each becomes a rejection of its series in its split, or a count under 'unknown': never an exception."""
    import converters.dicom.series as series_module
    from converters.dicom.series import SeriesProcessor

    series = stack_series(tmp_path / "a")
    item = WorkItem("val", "ct/a", "ct/a", position=0, payload=series)
    edit_dicom(series.files[0][0], Modality=None)
    assert process_series(item, opts=OPTS).stats["modality"] == {"unknown": 1}
    (tmp_path / "a" / "01.dcm").unlink()
    assert process_series(item, opts=OPTS) == Rejection("val", "ct/a", "file vanished since discovery: 01.dcm")

    def broken(*args, **kwargs):
        raise ValueError("a message that may quote a value")

    monkeypatch.setattr(series_module, "process_series", broken)
    assert SeriesProcessor(OPTS)(item) == Rejection("val", "ct/a", "unexpected error: ValueError")


def test_single_slice_spacing_from_slice_thickness_or_assumed(tmp_path):
    _, _, meta = convert_series(_single(tmp_path / "a", SliceThickness="3.5"), OPTS)
    assert meta["spacing"] == [3.5, 0.5, 0.5]
    assert meta["slice_spacing_source"] == "SliceThickness (single slice); in-plane PixelSpacing"
    _, _, meta = convert_series(_single(tmp_path / "b"), OPTS)
    assert meta["spacing"] == [1.0, 0.5, 0.5]
    assert meta["slice_spacing_source"] == "unknown (single slice, 1 mm assumed); in-plane PixelSpacing"


def test_imager_pixel_spacing_is_the_fallback(tmp_path):
    _, _, meta = convert_series(_single(tmp_path, PixelSpacing=None, ImagerPixelSpacing=["0.25", "0.3"]), OPTS)
    assert meta["spacing"][1:] == [0.25, 0.3]


def test_planar_image_names_its_spacing_source(tmp_path):
    _, _, meta = convert_series(_single(tmp_path / "a", ImagePositionPatient=None), OPTS)
    assert meta["ndim"] == 2 and meta["spacing"] == [0.5, 0.5] and meta["slice_spacing_source"] == "PixelSpacing"
    _, _, meta = convert_series(_single(tmp_path / "b", ImagePositionPatient=None, PixelSpacing=None), OPTS)
    assert meta["spacing"] == [1.0, 1.0] and meta["slice_spacing_source"] == "unknown (1 mm assumed)"


def test_monochrome1_is_inverted_within_bits_stored(tmp_path):
    series = _single(tmp_path, PhotometricInterpretation="MONOCHROME1", BitsStored=12, HighBit=11)
    arr, _, meta = convert_series(series, OPTS)
    np.testing.assert_array_equal(arr[0], (4095 - PLANE.astype(np.int64)).astype(np.int16))
    assert meta["photometric"] == "MONOCHROME1"


def _enhanced(path, frames: int, *, per_frame_spacing=(0.4, 0.6), slope=None, thickness="2.5", shared=True,
              step: float = 3, in_shared: bool = False):
    """An enhanced multi-frame CT: positions and pixel spacing per frame, thickness (and slope) shared."""
    from pydicom.dataset import Dataset
    from pydicom.sequence import Sequence

    make_slice(path, PLANE, series_uid="1.2.7", position=None, orientation=None)
    ds = pydicom.dcmread(path)
    for name in ("PixelSpacing", "RescaleSlope", "RescaleIntercept"):
        delattr(ds, name)
    ds.NumberOfFrames = frames
    ds.PixelData = np.ascontiguousarray(np.stack([PLANE + k for k in range(frames)]), dtype="<u2").tobytes()
    items = []
    for k in range(frames):
        item = Dataset()
        position, orientation, measures = Dataset(), Dataset(), Dataset()
        position.ImagePositionPatient = ["0", "0", f"{step * k}"]
        orientation.ImageOrientationPatient = ["1", "0", "0", "0", "1", "0"]
        if not in_shared:
            measures.PixelSpacing = [f"{v}" for v in per_frame_spacing]
        item.PlanePositionSequence = Sequence([position])
        item.PlaneOrientationSequence = Sequence([orientation])
        item.PixelMeasuresSequence = Sequence([measures])
        if slope is not None and not in_shared:
            transform = Dataset()
            transform.RescaleSlope, transform.RescaleIntercept = f"{slope}", "-10"
            item.PixelValueTransformationSequence = Sequence([transform])
        items.append(item)
    ds.PerFrameFunctionalGroupsSequence = Sequence(items)
    if shared:
        group, measures = Dataset(), Dataset()
        measures.SliceThickness = thickness
        group.PixelMeasuresSequence = Sequence([measures])
        if in_shared:  # what a frame's own groups leave out comes from here
            measures.PixelSpacing = [f"{v}" for v in per_frame_spacing]
            if slope is not None:
                transform = Dataset()
                transform.RescaleSlope, transform.RescaleIntercept = f"{slope}", "-10"
                group.PixelValueTransformationSequence = Sequence([transform])
        ds.SharedFunctionalGroupsSequence = Sequence([group])
    ds.save_as(path, enforce_file_format=True)
    return SeriesFiles("1.2.7", ((str(path), path.name),))


def test_enhanced_multiframe_reads_each_functional_group(tmp_path):
    arr, _, meta = convert_series(_enhanced(tmp_path / "e.dcm", 2, slope=2), OPTS)
    assert meta["spacing"] == [3.0, 0.4, 0.6] and meta["slices"] == 2
    np.testing.assert_array_equal(arr, np.stack([PLANE * 2 - 10, (PLANE + 1) * 2 - 10]).astype(np.int16))


def test_enhanced_multiframe_defaults_and_shared_thickness(tmp_path):
    arr, _, meta = convert_series(_enhanced(tmp_path / "e.dcm", 1), OPTS)  # no transformation group: 1 and 0
    np.testing.assert_array_equal(arr[0], PLANE.astype(np.int16))
    assert meta["spacing"] == [2.5, 0.4, 0.6]  # one frame: the shared SliceThickness is the z spacing
    assert meta["slice_spacing_source"].startswith("SliceThickness (single slice)")


def test_enhanced_multiframe_falls_back_to_the_shared_groups(tmp_path):
    arr, _, meta = convert_series(_enhanced(tmp_path / "e.dcm", 2, slope=2, in_shared=True), OPTS)
    assert meta["spacing"] == [3.0, 0.4, 0.6]
    np.testing.assert_array_equal(arr, np.stack([PLANE * 2 - 10, (PLANE + 1) * 2 - 10]).astype(np.int16))
    _, _, alone = convert_series(_enhanced(tmp_path / "f.dcm", 1, shared=False), OPTS)  # no thickness anywhere
    assert alone["spacing"][0] == 1.0
    assert alone["slice_spacing_source"] == "unknown (single slice, 1 mm assumed); in-plane PixelSpacing"


def test_a_single_slice_takes_spacing_between_slices_before_its_thickness(tmp_path):
    _, _, meta = convert_series(_single(tmp_path, SpacingBetweenSlices="3", SliceThickness="5"), OPTS)
    assert meta["spacing"] == [3.0, 0.5, 0.5]


def test_enhanced_multiframe_bad_frame_is_named(tmp_path):
    series = _enhanced(tmp_path / "e.dcm", 2, slope=2, thickness="-1")
    with pytest.raises(RejectSeries, match=r"^e\.dcm frame 0: slice thickness/spacing -1\.0 is not positive"):
        convert_series(series, OPTS)


def test_frames_and_functional_groups_must_agree_in_number(tmp_path):
    series = _enhanced(tmp_path / "e.dcm", 2)
    edit_dicom(series.files[0][0], NumberOfFrames=3)
    with pytest.raises(RejectSeries) as info:
        convert_series(series, OPTS)
    assert str(info.value) == "e.dcm: 3 frames but 2 per-frame functional groups"


def test_two_frames_without_functional_groups_are_refused(tmp_path):
    path = make_slice(tmp_path / "m.dcm", PLANE, series_uid="1.2.8", position=(0.0, 0.0, 0.0))
    edit_dicom(path, NumberOfFrames=2, PixelData=np.stack([PLANE, PLANE]).astype("<u2").tobytes())
    with pytest.raises(RejectSeries, match=r"m\.dcm is a multi-frame object \(2 frames\) without per-frame "
                                           r"positions \(PerFrameFunctionalGroupsSequence\)"):
        convert_series(SeriesFiles("1.2.8", ((str(path), "m.dcm"),)), OPTS)


def test_rejection_wording(tmp_path):
    def reason(series) -> str:
        return rejection_of(series, OPTS)

    bad_orientation = _single(tmp_path / "o", ImageOrientationPatient=["1", "0", "nan", "0", "1", "0"])
    assert reason(bad_orientation).startswith("one.dcm: ImageOrientationPatient ")
    spacings = stack_series(tmp_path / "p")
    edit_dicom(spacings.files[1][0], PixelSpacing=["0.5", "0.5"])
    assert reason(spacings) == "mixed PixelSpacing within the series: [(0.5, 0.5), (1.0, 1.0)]"
    gap = stack_series(tmp_path / "g", zs=(0.0, 2.0, 4.0, 6.0, 12.0))
    assert reason(gap).endswith("where 2.000 mm is expected (~2 slice(s) missing)")
    sheared = stack_series(tmp_path / "s", positions=[(1.5 * k, 0.0, 2.0 * k) for k in range(3)])
    assert reason(sheared) == ("slices are shifted in-plane by up to 3.00 mm (gantry tilt or sheared stack): "
                               "not a rectilinear volume")
    no_pos = stack_series(tmp_path / "n", zs=(0.0, 2.0, 4.0, 6.0, 8.0))
    for path, _ in no_pos.files:
        edit_dicom(path, ImagePositionPatient=None)
    assert reason(no_pos).endswith("5 of 5 slices: 00.dcm, 01.dcm, 02.dcm and 2 more")
    for n, named in ((3, "00.dcm, 01.dcm, 02.dcm"), (4, "00.dcm, 01.dcm, 02.dcm and 1 more")):
        edges = stack_series(tmp_path / f"n{n}", zs=tuple(2.0 * k for k in range(n)))
        for path, _ in edges.files:
            edit_dicom(path, ImagePositionPatient=None)
        assert reason(edges) == ("missing position tags (ImagePositionPatient/ImageOrientationPatient) in "
                                 f"{n} of {n} slices: {named}")
    frames = _enhanced(tmp_path / "e.dcm", 3, step=0)  # every frame at one position
    assert reason(frames) == "duplicate slices: 2 slice(s) share a position with another (e.dcm frame 1, e.dcm frame 2)"
    short = _single(tmp_path / "r", Rows=4)
    assert reason(short) == "one.dcm: pixel data of shape [2, 4, 8] does not match Rows/Columns/frames"


def test_read_errors_never_name_the_source_path(tmp_path, monkeypatch):
    series = _single(tmp_path)
    path = series.files[0][0]

    def failing(p, *a, **k):
        raise OSError(5, "Input/output error", p)  # its str() names the path

    monkeypatch.setattr(pydicom, "dcmread", failing)
    with pytest.raises(RejectSeries) as info:
        convert_series(series, OPTS)
    assert str(info.value) == "cannot read one.dcm: OSError: Input/output error"
    assert path not in str(info.value)


def test_undecodable_pixels_without_a_transfer_syntax_say_so():
    from pydicom.dataset import Dataset, FileMetaDataset

    ds = Dataset()
    ds.file_meta = FileMetaDataset()
    ds.Rows, ds.Columns, ds.SamplesPerPixel = 8, 8, 1
    ds.PixelData = b"\0\1"
    with pytest.raises(RejectSeries, match=r"^cannot decode pixel data of x\.dcm \(unknown transfer syntax\): "):
        pixels(ds, "x.dcm")


def test_pseudonyms_are_keyed_and_domain_separated():
    def keyed(kind, value, salt, n):
        return hmac.new(f"fastdata-dicom\0{salt}".encode(), f"{kind}\0{value}".encode(),
                        hashlib.sha256).hexdigest()[:n]

    assert series_hash("1.2.3", "s") == keyed("series", "1.2.3", "s", 32)
    assert file_name("a/b.dcm", "s") == "file-" + keyed("file", "a/b.dcm", "s", 20)
    assert series_hash("x", "s")[:20] != file_name("x", "s")[5:]


def test_phi_fields_leave_out_empty_values(tmp_path):
    path = make_slice(tmp_path / "p.dcm", PLANE, series_uid="1.2.5", position=(0.0, 0.0, 0.0))
    edit_dicom(path, InstitutionName="")
    fields = phi_fields(pydicom.dcmread(path))
    assert "InstitutionName" not in fields and fields["PatientID"] == "PID-7731-SECRET"


def test_an_enhanced_object_of_zero_frames_is_an_empty_image(tmp_path):
    from pydicom.sequence import Sequence

    path = make_slice(tmp_path / "z.dcm", PLANE, series_uid="1.2.6", position=(0.0, 0.0, 0.0))
    ds = pydicom.dcmread(path)
    ds.NumberOfFrames = 0
    ds.PerFrameFunctionalGroupsSequence = Sequence([])
    ds.save_as(path, enforce_file_format=True)
    with pytest.raises(RejectSeries, match=r"^z\.dcm: an image of 0 pixels$"):
        convert_series(SeriesFiles("1.2.6", ((str(path), "z.dcm"),)), OPTS)


def test_the_keep_phi_warning_and_the_random_salt_note_read_in_full(caplog):
    from converters.dicom.privacy import note_random_salt, warn_keep_phi

    with caplog.at_level(logging.INFO, logger="converters.dicom.privacy"):
        warn_keep_phi()
        note_random_salt()
    assert caplog.messages == [
        "!" * 78,
        "--keep-phi: patient names, IDs, birth dates, accession numbers, institution, descriptions, UIDs",
        "and source paths WILL be written into this dataset. Do not share it outside the approved environment.",
        "!" * 78,
        "no --salt given: series are named with a random salt drawn for this conversion, so its pseudonyms cannot "
        "be linked to any other conversion; pass --salt SECRET (or set FASTDATA_DICOM_SALT) for pseudonyms that "
        "are the same across conversions",
    ]


def test_a_frame_s_own_thickness_wins_and_a_position_may_come_from_the_shared_groups(tmp_path):
    from pydicom.sequence import Sequence

    series = _enhanced(tmp_path / "e.dcm", 1)  # shared SliceThickness 2.5
    ds = pydicom.dcmread(series.files[0][0])
    frame, shared = ds.PerFrameFunctionalGroupsSequence[0], ds.SharedFunctionalGroupsSequence[0]
    frame.PixelMeasuresSequence[0].SliceThickness = "4"
    frame.PlanePositionSequence[0].ImagePositionPatient = ["5", "6", "7"]
    ds.save_as(series.files[0][0], enforce_file_format=True)
    _, _, meta = convert_series(series, OPTS)
    assert meta["spacing"] == [4.0, 0.4, 0.6] and meta["origin"] == [5.0, 6.0, 7.0]
    shared.PlanePositionSequence = frame.PlanePositionSequence  # now only in the shared group
    del frame.PlanePositionSequence
    ds.save_as(series.files[0][0], enforce_file_format=True)
    _, _, meta = convert_series(series, OPTS)
    assert meta["origin"] == [5.0, 6.0, 7.0]
    shared.PlanePositionSequence = Sequence([])  # an empty group gives nothing: a frame without a position
    ds.save_as(series.files[0][0], enforce_file_format=True)
    _, _, meta = convert_series(series, OPTS)
    assert meta["ndim"] == 2 and meta["axes"] == "yx"  # is a planar image
