"""DICOM RT Structure Sets (RTSTRUCT) are the masks of the series they outline (converters/dicom/rtstruct.py):
before, a structure set was rejected as a DICOM object without an image. The structure sets are written with
pydicom over the test phantom (conftest_rtstruct.py), their contours placed in pixel coordinates, so each voxel's
class is known: a pixel-by-pixel ray cast is the oracle of the fill."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pydicom")
pytest.importorskip("scipy")
sys.path.insert(0, str(Path(__file__).parent))
from conftest_dicom import PHI_STRINGS, Phantom, convert_dicom, load_volume, read_samples, write_phantom  # noqa: E402
from conftest_rtstruct import inside, on_slice, write_rtstruct  # noqa: E402

PHANTOM = Phantom()
SHAPE = (PHANTOM.rows, PHANTOM.cols)
BOX = [(2.5, 3.5), (2.5, 10.5), (7.5, 10.5), (7.5, 3.5)]  # rows 3..7, columns 4..10: no centre on an edge
RING_OUT = [(14.2, 14.2), (14.2, 30.6), (33.9, 30.6), (33.9, 14.2)]
RING_IN = [(18.3, 18.2), (29.4, 22.1), (20.2, 27.3)]  # a hole: the same ROI's contour inside the other
STAR = [(20.4, 2.3), (24.3, 9.8), (31.2, 3.1), (27.2, 11.4), (38.6, 12.3), (26.1, 13.3), (21.7, 10.2)]
# vertices off the pixel centres' rows and columns: a centre on an edge is either side within rounding


def _samples(dst: Path) -> list[tuple[np.ndarray, np.ndarray | None, dict]]:
    out = []
    for sample in read_samples(dst).values():
        arr, meta = load_volume(sample)
        out.append((arr, np.load(io.BytesIO(sample["label.npy"])) if "label.npy" in sample else None, meta))
    return out


def _contours(polygons_by_slice: dict[int, list[list[tuple[float, float]]]]) -> list[list[tuple[float, float, float]]]:
    return [on_slice(PHANTOM, k, polygon) for k, polygons in polygons_by_slice.items() for polygon in polygons]


def _expected(polygons_by_slice: dict[int, list[list[tuple[float, float]]]], *, xor: bool = False) -> np.ndarray:
    """The oracle's pixels: each slice's polygons united (CLOSED_PLANAR), or combined by exclusive or."""
    out = np.zeros((PHANTOM.slices, *SHAPE), bool)
    for k, polygons in polygons_by_slice.items():
        out[k] = inside(SHAPE, polygons) if xor else np.any([inside(SHAPE, [p]) for p in polygons], axis=0)
    return out


def test_a_series_with_its_structure_set_converts_with_each_roi_filled_as_its_class(tmp_path: Path):
    """Each closed contour fills the voxels whose centres it holds on the slice whose plane holds it; an ROI's
    CLOSED_PLANAR contours unite (one inside another adds nothing: DICOM draws a hole as a keyhole), its
    CLOSEDPLANAR_XOR ones combine by exclusive or (one inside another is a hole); the classes are the ROIs' names
    sorted after the background, an ROI of points is no class, and the patient's name the structure set holds is not
    written."""
    write_phantom(tmp_path / "src" / "ct", PHANTOM)
    tumour, ring = {3: [BOX], 4: [BOX], 9: [STAR], 12: [RING_OUT, RING_IN]}, {6: [RING_OUT, RING_IN], 7: [RING_OUT]}
    marker = [on_slice(PHANTOM, 5, [(10.0, 10.0)])]
    traced = _contours({9: [STAR]})  # an open contour (a line) is drawn by nobody, even in an ROI of areas
    # nor is a "closed" contour of two points (GTV-1's first): it has no area
    write_rtstruct(tmp_path / "src" / "rs.dcm", PHANTOM.series_uid,
                   [("GTV-1", _contours({2: [[(3.5, 3.5), (9.5, 9.5)]]}) + _contours(tumour)), ("Marker", marker),
                    ("Body-Ring", traced + _contours(ring))],
                   kinds={"Marker": "POINT", "Body-Ring": ["OPEN_PLANAR"] + ["CLOSEDPLANAR_XOR"] * 3})
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    assert result.rejected == []
    ((arr, mask, meta),) = _samples(tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == ["background", "Body-Ring", "GTV-1"]
    np.testing.assert_array_equal(arr, PHANTOM.hu())
    expected = np.where(_expected(tumour), 2, np.where(_expected(ring, xor=True), 1, 0))
    assert expected[3, 3:8, 4:11].all() and (expected[3] != 0).sum() == 35  # the oracle itself
    assert expected[6, 14:34, 15:31].any() and not expected[6, 22, 22] and expected[7, 22, 22]
    assert expected[12, 22, 22] == 2  # united: no hole
    np.testing.assert_array_equal(mask, expected)
    assert mask.dtype == np.uint8 and meta["label_max"] == 2 and meta["label"].startswith("file-")
    for written in (tmp_path / "out").rglob("*"):
        if written.is_file():
            data = written.read_bytes()
            assert not any(s.encode() in data for s in (*PHI_STRINGS, "Doe^Jane", "PAT-000123", "Doe plan"))


def _uid(n: int) -> str:
    return f"{PHANTOM.series_uid}.{n}"


def _patient(root: Path, rois, n: int, **kwargs) -> Phantom:
    """Patient n's phantom series under root/ct with a structure set of `rois` beside it (root/rs.dcm)."""
    from dataclasses import replace

    phantom = replace(PHANTOM, series_uid=_uid(n))
    write_phantom(root / "ct", phantom, seed=n)
    write_rtstruct(root / "rs.dcm", phantom.series_uid, rois, **kwargs)
    return phantom


def test_overlapping_rois_reject_their_case_unless_structures_picks_ones_that_do_not(tmp_path: Path):
    """A body outline holds the tumour: one class per voxel cannot hold both, so the case is rejected naming the two
    ROIs; --structures keeps the named ROIs (any case) as classes in its order, the others undrawn, and a patient
    without one of them has none of its voxels."""
    body = _contours({k: [[(0.5, 0.5), (0.5, 34.5), (38.5, 34.5), (38.5, 0.5)]] for k in range(16)})
    tumour, heart = {3: [BOX]}, {12: [RING_OUT]}
    _patient(tmp_path / "src" / "p1", [("GTV-1", _contours(tumour)), ("Heart", _contours(heart)), ("BODY", body)], 1)
    _patient(tmp_path / "src" / "p2", [("Heart", _contours(heart))], 2)
    result = convert_dicom(tmp_path / "src", tmp_path / "all", keep_phi=True)
    assert sorted(r["source"] for r in result.rejected) == ["p1/ct (16 files)"]
    assert result.rejected[0]["reason"] == (  # painted in class order: BODY, GTV-1, Heart
        f"p1/rs.dcm: ROI 'GTV-1' overlaps 'BODY' in {int(_expected(tumour).sum())} voxels, and a label volume holds "
        "one class per voxel; --structures picks ROIs that do not overlap, or --overlap later gives a shared voxel to "
        "the later class")
    result = convert_dicom(tmp_path / "src", tmp_path / "body_last", keep_phi=True,
                           structures=("Heart", "GTV-1", "BODY"))
    shared = int(_expected(tumour).sum() + _expected(heart).sum())
    assert result.rejected[0]["reason"].startswith(  # the body, painted last, over both
        f"p1/rs.dcm: ROI 'BODY' overlaps 'Heart' and 'GTV-1' in {shared} voxels, and a label volume holds one class "
        "per voxel; ")
    result = convert_dicom(tmp_path / "src", tmp_path / "picked", keep_phi=True, structures=("heart", "gtv-1"))
    assert result.rejected == []
    manifest = json.loads((tmp_path / "picked" / "manifest.json").read_text())
    assert manifest["classes"] == ["background", "heart", "gtv-1"]
    assert manifest["preprocessing"]["structures"] == ["heart", "gtv-1"]
    masks = {meta["files_rel"][0].split("/")[0]: mask for _, mask, meta in _samples(tmp_path / "picked")}
    np.testing.assert_array_equal(masks["p1"], np.where(_expected(tumour), 2, np.where(_expected(heart), 1, 0)))
    np.testing.assert_array_equal(masks["p2"], np.where(_expected(heart), 1, 0))
    with pytest.raises(Exception, match=r"--structures names \['Lung-Left'\], which no mask of the source holds; its "
                                        r"structures are \['BODY', 'GTV-1', 'Heart'\]"):
        convert_dicom(tmp_path / "src", tmp_path / "wrong", keep_phi=True, structures=("Heart", "Lung-Left"))


def test_overlap_later_gives_the_organs_priority_over_the_body_in_structures_order(tmp_path: Path):
    """--overlap later paints the ROIs in class order, a later one taking a voxel an earlier one holds: the
    --structures order BODY first gives the organs their voxels inside it. Each sample's json lists what each ROI
    took from which; the split's stats sum the voxels taken; a case without overlap records none."""
    body = {k: [[(0.5, 0.5), (0.5, 34.5), (38.5, 34.5), (38.5, 0.5)]] for k in range(16)}
    tumour, heart = {3: [BOX]}, {12: [RING_OUT]}
    rois = [("GTV-1", _contours(tumour)), ("Heart", _contours(heart)), ("BODY", _contours(body))]
    _patient(tmp_path / "src" / "p1", rois, 1)
    _patient(tmp_path / "src" / "p2", [("Heart", _contours(heart))], 2)
    result = convert_dicom(tmp_path / "src", tmp_path / "out", keep_phi=True, overlap="later",
                           structures=("body", "Heart", "GTV-1"))
    assert result.rejected == []
    samples = {meta["files_rel"][0].split("/")[0]: (mask, meta) for _, mask, meta in _samples(tmp_path / "out")}
    mask, meta = samples["p1"]
    np.testing.assert_array_equal(mask, np.where(_expected(tumour), 3, np.where(_expected(heart), 2,
                                                                                 np.where(_expected(body), 1, 0))))
    assert meta["overlaps"] == [{"class": "Heart", "from": "BODY", "voxels": int(_expected(heart).sum())},
                                {"class": "GTV-1", "from": "BODY", "voxels": int(_expected(tumour).sum())}]
    assert "overlaps" not in samples["p2"][1]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["splits"]["train"]["stats"]["overlap_voxels"] == int(_expected(heart).sum() +
                                                                         _expected(tumour).sum())
    assert manifest["preprocessing"]["overlap"].startswith("later: ")
    result = convert_dicom(tmp_path / "src", tmp_path / "last", keep_phi=True, overlap="later",
                           structures=("GTV-1", "Heart", "body"))  # the body last takes every voxel back
    masks = {meta["files_rel"][0].split("/")[0]: mask for _, mask, meta in _samples(tmp_path / "last")}
    np.testing.assert_array_equal(masks["p1"], np.where(_expected(body), 3, 0))
    from converters.dicom.options import DicomOptions
    from converters.nifti.options import NiftiOptions

    for options in (DicomOptions, NiftiOptions):
        with pytest.raises(ValueError, match="--overlap must be one of reject, later, got 'first'"):
            options(overlap="first")


def test_a_structures_class_matches_rois_by_any_of_its_names(tmp_path: Path):
    """One structure named otherwise at another site ("Heart", "COEUR"): `--structures "Heart|Coeur"` makes them one
    class, named by its first name. Every name is checked: each once in any case, none empty; a class no mask holds
    is named with all its names."""
    from converters.dicom.options import DicomOptions, parse_structures

    heart = {12: [RING_OUT]}
    _patient(tmp_path / "src" / "p1", [("Heart", _contours(heart)), ("GTV-1", _contours({3: [BOX]}))], 1)
    _patient(tmp_path / "src" / "p2", [("COEUR", _contours(heart))], 2)
    result = convert_dicom(tmp_path / "src", tmp_path / "out", keep_phi=True, structures=("Heart|Coeur",))
    assert result.rejected == []
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["classes"] == ["background", "Heart"]
    masks = {meta["files_rel"][0].split("/")[0]: mask for _, mask, meta in _samples(tmp_path / "out")}
    for patient in ("p1", "p2"):
        np.testing.assert_array_equal(masks[patient], _expected(heart).astype(np.uint8))
    assert parse_structures("Heart | Coeur , GTV-1") == ("Heart|Coeur", "GTV-1")
    for bad in (("Heart|HEART",), ("Heart|",), ("Heart", "GTV-1|heart"), ("|Heart",)):
        with pytest.raises(ValueError, match="^--structures must name each structure once"):
            DicomOptions(structures=bad)
    with pytest.raises(ValueError, match=r"^--structures must be names, got \['Heart', 1\]$"):
        DicomOptions(structures=("Heart", 1))
    with pytest.raises(Exception, match=r"--structures names \['Lung_L\|Lung-Left'\], which no mask"):
        convert_dicom(tmp_path / "src", tmp_path / "wrong", keep_phi=True, structures=("Heart", "Lung_L|Lung-Left"))


def test_two_rois_of_one_class_share_voxels_under_either_policy(tmp_path: Path):
    """ROIs whose names --structures matches alike ("Heart" and "HEART", any case) are one class: where both lie
    is that class's, no overlap of two classes."""
    heart, more = {12: [RING_OUT]}, {12: [BOX, RING_IN]}
    _patient(tmp_path / "src" / "p1", [("Heart", _contours(heart)), ("HEART", _contours(more))], 1)
    for policy in ("reject", "later"):
        result = convert_dicom(tmp_path / "src", tmp_path / policy, keep_phi=True, structures=("heart",),
                               overlap=policy)
        assert result.rejected == []
        ((_, mask, meta),) = _samples(tmp_path / policy)
        np.testing.assert_array_equal(mask, (_expected(heart) | _expected(more)).astype(np.uint8))
        assert "overlaps" not in meta
        stats = json.loads((tmp_path / policy / "manifest.json").read_text())["splits"]["train"]["stats"]
        assert "overlap_voxels" not in stats


@pytest.mark.filterwarnings("ignore:Invalid value for VR")
def test_unusable_structure_sets_are_rejected_with_their_reason(tmp_path: Path):
    """What discovery reads (the series referenced, the ROIs' names and numbers, closed contours) and what conversion
    places (contours on the series' slices, points of three finite coordinates, a bounded fill) each reject with
    their reason; a SEG and a structure set of one series are two masks: both are rejected, and the series."""
    from conftest_seg import prepared_sources, write_seg
    from pydicom import dcmread

    src = tmp_path / "src"
    box = _contours({3: [BOX]})
    _patient(src / "two", [("GTV-1", box)], 1)
    sources = prepared_sources(sorted((src / "two" / "ct").iterdir()))
    write_seg(src / "two" / "seg.dcm", sources, [("tumor", _expected({3: [BOX]}))], uid_seed="two")
    write_rtstruct(src / "lone.dcm", _uid(99), [("GTV-1", box)])
    write_rtstruct(src / "both.dcm", _uid(1), [("GTV-1", box)], referenced=(_uid(1), _uid(2)))
    write_rtstruct(src / "blank.dcm", _uid(1), [("GTV-1", box)], referenced=(None,))
    write_rtstruct(src / "points.dcm", _uid(1), [("Marker", box)], kinds={"Marker": "POINT"})
    write_rtstruct(src / "unnamed.dcm", _uid(1), [(" ", box)])
    malformed = write_rtstruct(src / "malformed.dcm", _uid(1), [("GTV-1", box)])
    data, tag = malformed.read_bytes(), b"\x06\x30\x22\x00IS\x02\x00"  # ROINumber, explicit VR: "1 " -> "x1"
    at = data.index(tag) + len(tag)
    malformed.write_bytes(data[:at] + b"x1" + data[at + 2:])
    write_rtstruct(src / "twice.dcm", _uid(1), [("GTV-1", box), ("Heart", box)], numbers={"Heart": 1})
    shifted = [[(x, y, z + 0.7) for x, y, z in contour] for contour in box]  # 0.7 mm off a 2.5 mm stack's slice
    _patient(src / "off", [("GTV-1", shifted)], 3)
    _patient(src / "short", [("GTV-1", [[(1.0, 2.0, 47.5, 4.0)]])], 4)
    _patient(src / "nan", [("GTV-1", [[(1.0, 2.0, 47.5), (float("nan"), 2.0, 47.5), (3.0, 1.0, 47.5)]])], 5)
    _patient(src / "far", [("GTV-1", [[(1.0, 2.0, 47.5), (1e300, 2.0, 47.5), (3.0, 1.0, 47.5)]])], 8)
    _patient(src / "huge", [("GTV-1", [[(1.0, 2.0, 47.5), (1e308, 2.0, 47.5), (-1e308, 1.0, 47.5)]])], 9)
    zigzag = [(r + 0.5 + (c % 2) * 30, c + 0.5) for c in range(35) for r in (0,)]  # 35 edges across 30 rows
    _patient(src / "zigzag", [("GTV-1", [on_slice(PHANTOM, k, zigzag) for k in range(16) for _ in range(3)])], 6)
    _patient(src / "good", [("GTV-1", box)], 7)
    _patient(src / "bare", [("GTV-1", box)], 10)
    bare = dcmread(src / "bare" / "rs.dcm")
    del bare.ROIContourSequence[0].ContourSequence[0].ContourData
    bare.save_as(src / "bare" / "rs.dcm")
    result = convert_dicom(src, tmp_path / "out", keep_phi=True)
    reasons = {r["source"]: r["reason"] for r in result.rejected}
    assert reasons == {
        "two/rs.dcm": "2 masks (segmentations, SEG, and structure sets, RTSTRUCT) of one series: keep one, move the "
                      "others out of the source",
        "two/seg.dcm": "2 masks (segmentations, SEG, and structure sets, RTSTRUCT) of one series: keep one, move the "
                       "others out of the source",
        "two/ct (16 files)": "its 2 masks (segmentations, SEG, and structure sets, RTSTRUCT) were rejected: a series "
                             "converts with one mask",
        "lone.dcm": "a structure set (RTSTRUCT) of a series that is not among this split's images",
        "both.dcm": "a structure set (RTSTRUCT) that references 2 series (ReferencedFrameOfReferenceSequence); "
                    "fastdata reads one that outlines one series of the source",
        "blank.dcm": "a structure set (RTSTRUCT) that references 0 series (ReferencedFrameOfReferenceSequence); "
                     "fastdata reads one that outlines one series of the source",
        "points.dcm": "a structure set (RTSTRUCT) without closed planar contours (no ROI outlines an area)",
        "unnamed.dcm": "a structure set (RTSTRUCT) ROI without its number or its name (StructureSetROISequence)",
        "malformed.dcm": "malformed attribute value in a structure set (RTSTRUCT): ValueError",
        "twice.dcm": "a structure set (RTSTRUCT) of two ROIs named 'Heart' or numbered 1",
        "off/ct (16 files)": "off/rs.dcm: ROI 'GTV-1' contour 0 lies 0.7 mm off the nearest slice's plane (tolerance "
                             "0.625 mm): not on this series' slices",
        "short/ct (16 files)": "short/rs.dcm: ROI 'GTV-1' contour 0: ContourData is not (x, y, z) points of finite "
                               "millimetres",
        "nan/ct (16 files)": "nan/rs.dcm: ROI 'GTV-1' contour 0: ContourData is not (x, y, z) points of finite "
                             "millimetres",
        "bare/ct (16 files)": "bare/rs.dcm: ROI 'GTV-1' contour 0: malformed ContourData (AttributeError)",
        "far/ct (16 files)": "far/rs.dcm: ROI 'GTV-1' contour 0 reaches more than 1e+06 pixels off the slice's "
                             "first pixel",
        "huge/ct (16 files)": "huge/rs.dcm: ROI 'GTV-1' contour 0 reaches more than 1e+06 pixels off the slice's "
                              "first pixel",
        "zigzag/ct (16 files)": "zigzag/rs.dcm: contours crossing the slices' rows more than 64 times a row on "
                                "average; not the outline of an anatomy"}
    ((_, mask, meta),) = _samples(tmp_path / "out")
    assert meta["files_rel"][0].startswith("good/")
    np.testing.assert_array_equal(mask, _expected({3: [BOX]}).astype(np.uint8))


def test_the_mask_moves_and_is_resampled_with_its_image(tmp_path: Path):
    """--orientation flips the filled contours with their image, voxel for voxel; --spacing takes the nearest."""
    tumour, ring = {3: [BOX], 4: [BOX], 9: [STAR]}, {6: [RING_OUT, RING_IN]}
    _patient(tmp_path / "src", [("GTV-1", _contours(tumour)), ("Ring", _contours(ring))], 0)
    expected = np.where(_expected(tumour), 1, np.where(_expected(ring), 2, 0))
    convert_dicom(tmp_path / "src", tmp_path / "ras", orientation="RAS")
    ((arr, mask, meta),) = _samples(tmp_path / "ras")
    assert meta["orientation"] == "RAS"
    np.testing.assert_array_equal(mask, expected[:, ::-1, ::-1])  # LPS -> RAS: rows and columns reversed
    convert_dicom(tmp_path / "src", tmp_path / "coarse", spacing=(5.0, 1.6, 1.4))  # twice the native spacing
    ((arr, mask, meta),) = _samples(tmp_path / "coarse")
    np.testing.assert_array_equal(mask, expected[::2, ::2, ::2])


def test_structures_picks_seg_segments_by_meaning_too_and_is_checked(tmp_path: Path):
    """--structures names a SEG's segments by their meaning: overlapping segments convert once one is left out.
    Names are checked as they are given (each once, any case, no spaces around them), and --structures over a
    source without masks says so."""
    from conftest_seg import prepared_sources, write_seg

    from converters.dicom.options import DicomOptions, parse_structures

    sources = prepared_sources(write_phantom(tmp_path / "src" / "ct", PHANTOM))
    sphere = PHANTOM.hu() > 0
    write_seg(tmp_path / "src" / "seg.dcm", sources, [("tumor", sphere), ("liver", sphere | _expected({3: [BOX]}))])
    with pytest.raises(Exception, match="1 x segment 'Neoplasm' overlaps 'Liver' in "):
        convert_dicom(tmp_path / "src", tmp_path / "both")
    convert_dicom(tmp_path / "src", tmp_path / "liver", structures=("LIVER",))
    ((_, mask, _),) = _samples(tmp_path / "liver")
    np.testing.assert_array_equal(mask, (sphere | _expected({3: [BOX]})).astype(np.uint8))
    assert json.loads((tmp_path / "liver" / "manifest.json").read_text())["classes"] == ["background", "LIVER"]
    assert parse_structures("a, b") == ("a", "b") and parse_structures(None) == ()
    for bad in (("Heart", "heart"), ("",), (" Heart",), parse_structures("a,,b")):
        with pytest.raises(ValueError, match="--structures must name each structure once"):
            DicomOptions(structures=bad)
    write_phantom(tmp_path / "bare", PHANTOM)
    with pytest.raises(Exception, match=r"--structures Heart, but no series of the source has a mask"):
        convert_dicom(tmp_path / "bare", tmp_path / "bare_out", structures=("Heart",))


def test_contour_values_are_read_from_their_bytes_or_from_pydicom_values():
    """ContourData is read from the file's bytes (pydicom's values were three times slower); an element pydicom has
    already converted gives the same numbers, and bytes that are no numbers fail (a rejection, above)."""
    from pydicom.dataelem import DataElement, RawDataElement
    from pydicom.tag import Tag

    from converters.dicom.rtstruct import _numbers

    raw = RawDataElement(Tag(0x30060050), "DS", 17, b"1.5\\-2e1\\ 3 \\4.25 ", 0, False, True)
    np.testing.assert_array_equal(_numbers(raw), [1.5, -20.0, 3.0, 4.25])
    np.testing.assert_array_equal(_numbers(DataElement(0x30060050, "DS", ["1.5", "-2e1", "3"])), [1.5, -20.0, 3.0])
    np.testing.assert_array_equal(_numbers(DataElement(0x30060050, "DS", "7.5")), [7.5])
    with pytest.raises(ValueError):
        _numbers(RawDataElement(Tag(0x30060050), "DS", 7, b"1,5\\2.0", 0, False, True))


def test_contours_of_a_coronal_series_fill_its_rows_and_columns(tmp_path: Path):
    """On coronal slices (rows run from head to feet, slices stack front to back, listed in no order) the contours'
    patient coordinates map onto each slice's own rows and columns: the same pixel polygons, drawn in millimetres
    through the slice's orientation and spacing, fill the same pixels."""
    from conftest_dicom import make_slice

    rows, cols, spacing = 12, 10, (1.5, 0.6)
    orientation = (1.0, 0.0, 0.0, 0.0, 0.0, -1.0)  # along a row: +x; down a column: -z (feet)
    row_dir, col_dir, normal = np.array(orientation[:3]), np.array(orientation[3:]), np.array([0.0, 1.0, 0.0])
    origin = np.array([-3.0, 20.0, 70.0])
    uid = _uid(40)
    for n, k in enumerate((3, 0, 4, 1, 2)):
        make_slice(tmp_path / "src" / "ct" / f"s{n}", np.full((rows, cols), 100, np.uint16), series_uid=uid,
                   position=tuple(origin + 2.0 * k * normal), orientation=orientation, pixel_spacing=spacing,
                   instance=n + 1)

    def mm(k: int, polygon):
        return [tuple(origin + 2.0 * k * normal + c * spacing[1] * row_dir + r * spacing[0] * col_dir)
                for r, c in polygon]

    shape = [(1.3, 1.4), (2.2, 8.7), (10.6, 6.1), (8.1, 0.6)]
    write_rtstruct(tmp_path / "src" / "rs.dcm", uid, [("Organ", [mm(1, shape), mm(3, shape[::-1])])])
    convert_dicom(tmp_path / "src", tmp_path / "out")
    ((_, mask, meta),) = _samples(tmp_path / "out")
    expected = np.zeros((5, rows, cols), np.uint8)
    expected[1] = expected[3] = inside((rows, cols), [shape])
    assert expected[1].sum() > 30
    np.testing.assert_array_equal(mask, expected)
    assert meta["orientation"] == "LIP"  # columns to the left, rows to the feet, slices to the back


def test_an_roi_whose_contours_come_in_two_items_keeps_them_all(tmp_path: Path):
    """ROIContourSequence may list one ROI twice, each item with some of its contours: all are drawn; an item of
    points that names no ROI is passed over."""
    from pydicom import dcmread
    from pydicom.dataset import Dataset

    write_phantom(tmp_path / "src" / "ct", PHANTOM)
    tumour = {3: [BOX], 9: [STAR]}
    path = write_rtstruct(tmp_path / "src" / "rs.dcm", PHANTOM.series_uid, [("GTV-1", _contours(tumour))])
    ds = dcmread(path)
    (item,) = ds.ROIContourSequence
    second = Dataset()
    second.ReferencedROINumber = item.ReferencedROINumber
    second.ContourSequence = [item.ContourSequence.pop()]
    points = Dataset()
    points.ContourSequence = [Dataset()]
    points.ContourSequence[0].ContourGeometricType = "POINT"
    points.ContourSequence[0].ContourData = ["1", "2", "3"]
    ds.ROIContourSequence.extend([second, points])
    ds.save_as(path)
    assert convert_dicom(tmp_path / "src", tmp_path / "out").rejected == []
    ((_, mask, _),) = _samples(tmp_path / "out")
    np.testing.assert_array_equal(mask, _expected(tumour).astype(np.uint8))


def test_a_contour_a_quarter_of_the_slice_gap_off_its_slice_is_on_it():
    """The plane tolerance is a quarter of the slice gap, that far included: 0.625 mm on a 2.5 mm stack places the
    contour on its slice, and a hair more does not."""
    from converters.dicom.geometry import RejectSeries, Slice
    from converters.dicom.rtstruct import _Plane

    slices = [Slice(rel="s", frame=None, shape=(4, 4), position=(0.0, 0.0, 2.5 * k), orientation=(1, 0, 0, 0, 1, 0),
                    pixel_spacing=(1.0, 1.0), slope=1.0, intercept=0.0) for k in range(4)]
    plane = _Plane(slices, "rs")
    assert plane._slice(np.array([[0.0, 0.0, 5.625], [1.0, 0.0, 5.625], [1.0, 1.0, 5.625]]), "a", 0) == 2
    assert plane._slice(np.array([[0.0, 0.0, 4.375], [1.0, 0.0, 4.375], [1.0, 1.0, 4.375]]), "a", 0) == 2
    with pytest.raises(RejectSeries, match="lies 0.626 mm off the nearest slice's plane"):
        plane._slice(np.array([[0.0, 0.0, 5.626], [1.0, 0.0, 5.626], [1.0, 1.0, 5.626]]), "a", 0)


def test_the_plane_of_one_slice_of_unscaled_cosines_and_of_none():
    """A stack of one slice takes a quarter of its thickness; direction cosines a writer did not scale to unit length
    (on slices stacked down z, along their normal) place contours as unit ones do; an image without a position has
    no plane."""
    from dataclasses import replace

    from converters.dicom.geometry import RejectSeries, Slice
    from converters.dicom.rtstruct import _Plane

    one = Slice(rel="s", frame=None, shape=(4, 4), position=(0.0, 0.0, 10.0), orientation=(1, 0, 0, 0, 1, 0),
                pixel_spacing=(1.0, 1.0), slope=1.0, intercept=0.0, thickness=2.0)
    triangle = np.array([[0.0, 0.0, 10.5], [1.0, 0.0, 10.5], [1.0, 1.0, 10.5]])
    assert _Plane([one], "rs")._slice(triangle, "a", 0) == 0
    with pytest.raises(RejectSeries, match=r"lies 0.6 mm off .* \(tolerance 0.5 mm\)"):
        _Plane([one], "rs")._slice(triangle + [0.0, 0.0, 0.1], "a", 0)
    swapped = [replace(one, position=(0.0, 0.0, 10.0 - 2.5 * k), orientation=(0, 2, 0, 2, 0, 0)) for k in range(4)]
    plane = _Plane(swapped, "rs")  # rows along x, columns along y: the normal is -z, the slices go down z
    square = np.array([[0.5, 0.5, 5.0], [0.5, 2.5, 5.0], [2.5, 2.5, 5.0], [2.5, 0.5, 5.0]])
    assert plane._slice(square, "a", 0) == 2 and plane.tolerance == 0.625
    filled = plane.filled([_closed(square)], "a", [10**6])
    assert filled[2].sum() == 4 and filled[2, 1:3, 1:3].all() and filled.sum() == 4
    with pytest.raises(RejectSeries, match=r"^rs: a structure set \(RTSTRUCT\) of an image without a position"):
        _Plane([replace(one, position=None)], "rs")


def _closed(points: np.ndarray):
    from pydicom.dataset import Dataset

    contour = Dataset()
    contour.ContourGeometricType = "CLOSED_PLANAR"
    contour.ContourData = [f"{v:g}" for v in points.ravel()]
    return contour


def test_contours_reaching_past_the_image_fill_what_lies_inside_it(tmp_path: Path):
    """A body outline wider than the field of view (past every edge, row 0 and column 0 included), a contour
    crossing the top edge, and one wholly above the image: each fills the pixels of the image its area holds."""
    write_phantom(tmp_path / "src" / "ct", PHANTOM)
    wide = {0: [[(-3.5, -2.5), (-3.5, 40.5), (43.2, 40.5), (43.2, -2.5)]]}
    top = {5: [[(-6.3, 4.4), (3.6, 9.1), (-1.2, 12.7)]]}
    above = {8: [[(-9.0, 3.0), (-2.0, 5.0), (-4.0, 9.0)]]}
    write_rtstruct(tmp_path / "src" / "rs.dcm", PHANTOM.series_uid,
                   [("Body", _contours(wide)), ("Top", _contours(top)), ("Above", _contours(above))])
    convert_dicom(tmp_path / "src", tmp_path / "out")
    ((_, mask, _),) = _samples(tmp_path / "out")
    expected = np.where(_expected(wide), 2, np.where(_expected(top), 3, 0))
    assert expected[0].all() and expected[5, 0].any() and not _expected(above).any()
    np.testing.assert_array_equal(mask, expected)



def test_a_structure_set_unreadable_at_conversion_is_a_reason(tmp_path: Path):
    """A structure set rewritten between discovery and conversion (here: no DICOM file at all) rejects its series
    with the reason, naming the error's type only (pydicom's messages may quote values)."""
    from converters.dicom.geometry import RejectSeries, Slice
    from converters.dicom.rtstruct import read_mask

    (tmp_path / "rs.dcm").write_bytes(b"not a structure set")
    slices = [Slice(rel="s", frame=None, shape=(4, 4), position=(0.0, 0.0, 0.0), orientation=(1, 0, 0, 0, 1, 0),
                    pixel_spacing=(1.0, 1.0), slope=1.0, intercept=0.0)]
    with pytest.raises(RejectSeries, match=r"^file-1: cannot read the structure set \(InvalidDicomError\)$"):
        read_mask(str(tmp_path / "rs.dcm"), "file-1", slices, ((1, 1),))
