"""DICOM Segmentation objects (SEG) are the masks of the series they segment (converters/dicom/segmentation.py):
before, a SEG file was converted as a series of its own, its frames taken for a volume. The SEGs are written with
highdicom over the test phantom (conftest_seg.py), so each mask voxel is known."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("highdicom")
sys.path.insert(0, str(Path(__file__).parent))
from conftest_dicom import (  # noqa: E402
    PHI_STRINGS,
    Phantom,
    convert_dicom,
    load_volume,
    read_samples,
    reasons_by_path,
    write_phantom,
)
from conftest_seg import prepared_sources, write_seg  # noqa: E402

from fastdata.errors import ConvertError  # noqa: E402

PHANTOM = Phantom()


def _regions(phantom: Phantom = PHANTOM) -> tuple[np.ndarray, np.ndarray]:
    """(the sphere, a box in a corner) as (z, y, x) bool masks over the phantom."""
    sphere = phantom.hu() > 0
    box = np.zeros_like(sphere)
    box[2:6, :5, 30:] = True
    return sphere, box


def _case(root: Path, segments: list[tuple[str, np.ndarray]], phantom: Phantom = PHANTOM, *, seed: int = 0,
          seg_name: str = "seg.dcm") -> Path:
    """The phantom's series under root/ct with a SEG of `segments` beside it at root/seg_name; returns root."""
    sources = prepared_sources(write_phantom(root / "ct", phantom, seed=seed))
    write_seg(root / seg_name, sources, segments, uid_seed=str(root))
    return root


def _samples(dst: Path, split: str = "train") -> list[tuple[np.ndarray, np.ndarray | None, dict]]:
    out = []
    for sample in read_samples(dst, split).values():
        arr, meta = load_volume(sample)
        mask = np.load(io.BytesIO(sample["label.npy"])) if "label.npy" in sample else None
        out.append((arr, mask, meta))
    return out


def test_a_series_with_its_seg_converts_with_the_mask_each_class_by_its_code(tmp_path: Path):
    """The mask lies on the series' slices as the SEG's frames name them (the files' names and instance numbers
    say nothing of the order), each segment's voxels take its class: the classes are the segments' codes, named by
    their meanings, sorted by name after the background. The SEG's copy of the patient's identity is never
    written."""
    sphere, box = _regions()
    _case(tmp_path / "src", [("tumor", sphere), ("liver", box)])
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    assert result.rejected == []
    ((arr, mask, meta),) = _samples(tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == ["background", "Liver", "Neoplasm"]
    assert mask.dtype == np.uint8 and mask.shape == arr.shape
    np.testing.assert_array_equal(mask, np.where(sphere, 2, np.where(box, 1, 0)))
    np.testing.assert_array_equal(arr, PHANTOM.hu())
    assert meta["label_dtype"] == "uint8" and meta["label_max"] == 2 and meta["label"].startswith("file-")
    assert meta["interpolation"] == "linear (scipy.ndimage.affine_transform, order=1); masks nearest (order=0)"
    assert manifest["splits"]["train"]["stats"]["masks"] == 1
    from importlib import metadata

    assert result.manifest.extra["versions"]["highdicom"] == metadata.version("highdicom")  # it places the frames
    for written in (tmp_path / "out").rglob("*"):
        if written.is_file():
            data = written.read_bytes()
            assert not any(phi.encode() in data for phi in PHI_STRINGS), (written, data[:100])


def test_the_mask_moves_and_is_resampled_with_its_image(tmp_path: Path):
    """--orientation flips the mask with its image, voxel for voxel; --spacing resamples it by the nearest voxel,
    so no class value is blended into another."""
    sphere, box = _regions()
    _case(tmp_path / "src", [("tumor", sphere), ("liver", box)])
    expected = np.where(sphere, 2, np.where(box, 1, 0))
    convert_dicom(tmp_path / "src", tmp_path / "ras", orientation="RAS")
    ((arr, mask, meta),) = _samples(tmp_path / "ras")
    assert meta["orientation"] == "RAS"
    np.testing.assert_array_equal(mask, expected[:, ::-1, ::-1])  # LPS -> RAS: rows and columns reversed
    np.testing.assert_array_equal(arr, PHANTOM.hu()[:, ::-1, ::-1])
    convert_dicom(tmp_path / "src", tmp_path / "coarse", spacing=(5.0, 1.6, 1.4))  # twice the native spacing
    ((arr, mask, meta),) = _samples(tmp_path / "coarse")
    assert mask.shape == arr.shape == (8, 20, 18)
    assert set(np.unique(mask)) == {0, 1, 2}
    np.testing.assert_array_equal(mask, expected[::2, ::2, ::2])  # the voxels the coarse grid falls on


def test_a_seg_is_known_by_its_file_meta_when_its_dataset_lacks_the_sop_class(tmp_path: Path):
    """A SEG whose dataset lost its SOPClassUID (its file meta keeps it) is still a segmentation, not a series of
    its own whose frames would be taken for a volume; highdicom cannot read it, and its series says so."""
    from pydicom import dcmread

    sphere, _ = _regions()
    _case(tmp_path / "src", [("tumor", sphere)])
    seg = dcmread(tmp_path / "src" / "seg.dcm")
    del seg.SOPClassUID
    seg.save_as(tmp_path / "src" / "seg.dcm")
    with pytest.raises(ConvertError, match=r"1 x cannot read the segmentation \(AttributeError\)"):
        convert_dicom(tmp_path / "src", tmp_path / "out")


def test_a_seg_without_highdicom_rejects_its_series_saying_what_to_install(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch):
    sphere, _ = _regions()
    _case(tmp_path / "src" / "a", [("tumor", sphere)])
    write_phantom(tmp_path / "src" / "b", replace(PHANTOM, series_uid=PHANTOM.series_uid + ".1"), seed=1)
    monkeypatch.setitem(sys.modules, "highdicom", None)  # import highdicom raises ImportError
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    ((rel, reason),) = reasons_by_path(result).items()
    assert rel == "a/ct (16 files)" and reason.endswith(
        ": a segmentation (SEG), which fastdata reads with highdicom: 'highdicom' is not installed; install it with: "
        "pip install 'fastdata[dicom]'")


def test_resampling_never_blends_one_class_into_another(tmp_path: Path):
    """At a spacing that is no multiple of the native one, the sphere's class (2) beside the background (0) stays 2
    or 0: a linear resample would make its rim 1, a class (the liver's) it is not."""
    sphere, _ = _regions()
    corner = np.zeros_like(sphere)
    corner[:2, :3, :3] = True  # the liver's class, far from the sphere
    _case(tmp_path / "src", [("tumor", sphere), ("liver", corner)])
    convert_dicom(tmp_path / "src", tmp_path / "out", spacing=(3.0, 1.1, 0.9))
    ((arr, mask, _),) = _samples(tmp_path / "out")
    assert mask.shape == arr.shape and set(np.unique(mask)) == {0, 1, 2}
    assert not np.any(mask[:, 5:, 5:] == 1)  # 1 only in the corner
    assert arr[mask == 2].mean() > 600 > 100 > arr[mask == 0].mean()  # the class lies on the sphere (800 HU; 0 out)


def test_a_seg_that_names_only_the_slices_it_covers(tmp_path: Path):
    """A SEG made from the slices its segments cover references no other slice of its series: those are
    background."""
    sphere, _ = _regions()
    sources = prepared_sources(write_phantom(tmp_path / "src" / "ct", PHANTOM))
    covered = [k for k in range(PHANTOM.slices) if sphere[k].any()]
    assert 0 < len(covered) < PHANTOM.slices
    write_seg(tmp_path / "src" / "seg.dcm", [sources[k] for k in covered], [("tumor", sphere[covered])])
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    assert result.rejected == []
    ((_, mask, _),) = _samples(tmp_path / "out")
    np.testing.assert_array_equal(mask, sphere.astype(np.uint8))


def test_one_structure_is_one_class_whatever_its_segment_number_in_each_seg(tmp_path: Path):
    """Two series whose SEGs number their segments in opposite orders (and one SEG with a third structure): the
    liver is one class value in both, as is the tumour."""
    sphere, box = _regions()
    _case(tmp_path / "src" / "a", [("tumor", sphere), ("liver", box)])
    other = replace(PHANTOM, series_uid=PHANTOM.series_uid + ".2")
    kidney = np.zeros_like(sphere)
    kidney[10:, 30:, :4] = True
    _case(tmp_path / "src" / "b", [("liver", box), ("kidney", kidney), ("tumor", sphere)], other, seed=1)
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    assert result.rejected == []
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == ["background", "Kidney", "Liver", "Neoplasm"]
    masks = sorted((m for _, m, _ in _samples(tmp_path / "out")), key=lambda m: bool(np.any(m == 1)))  # a, b
    np.testing.assert_array_equal(masks[0], np.where(sphere, 3, np.where(box, 2, 0)))
    np.testing.assert_array_equal(masks[1], np.where(sphere, 3, np.where(box, 2, np.where(kidney, 1, 0))))


def test_unusable_segmentations_are_rejected_with_their_reason(tmp_path: Path):
    """Two SEGs of one series (which is the mask is not for fastdata to guess: both, and the series, are
    rejected), a SEG of a series not in the source, and one whose segments overlap."""
    from pydicom import dcmread
    from pydicom.uid import generate_uid

    sphere, box = _regions()
    src = tmp_path / "src"
    _case(src / "two", [("tumor", sphere)])
    sources = prepared_sources(sorted((src / "two" / "ct").iterdir()))
    write_seg(src / "two" / "second.dcm", sources, [("liver", box)], uid_seed="second")
    _case(src / "lone", [("tumor", sphere)], replace(PHANTOM, series_uid=PHANTOM.series_uid + ".3"), seed=2)
    for path in (src / "lone" / "ct").iterdir():
        path.unlink()  # its series is gone; the SEG stays
    (src / "lone" / "ct").rmdir()
    overlap = box | sphere
    _case(src / "overlap", [("tumor", sphere), ("liver", overlap)],
          replace(PHANTOM, series_uid=PHANTOM.series_uid + ".4"), seed=3)
    _case(src / "good", [("tumor", sphere)], replace(PHANTOM, series_uid=PHANTOM.series_uid + ".5"), seed=4)
    nowhere = dcmread(src / "good" / "seg.dcm")
    del nowhere.ReferencedSeriesSequence
    nowhere.SOPInstanceUID = generate_uid(entropy_srcs=["nowhere"])
    nowhere.save_as(src / "nowhere.dcm")
    blank = dcmread(src / "good" / "seg.dcm")  # its reference names no series
    del blank.ReferencedSeriesSequence[0].SeriesInstanceUID
    blank.SOPInstanceUID = generate_uid(entropy_srcs=["blank"])
    blank.save_as(src / "blank.dcm")
    result = convert_dicom(src, tmp_path / "out")
    reasons = reasons_by_path(result)
    two = {rel: why for rel, why in reasons.items() if rel.startswith("two/")}
    assert two == {
        "two/seg.dcm": "2 segmentations (SEG) of one series: keep one, move the others out of the source",
        "two/second.dcm": "2 segmentations (SEG) of one series: keep one, move the others out of the source",
        "two/ct (16 files)": "its 2 segmentations (SEG) were rejected: a series converts with one mask"}
    assert reasons["lone/seg.dcm"] == "a segmentation (SEG) of a series that is not among this split's images"
    assert reasons["nowhere.dcm"] == reasons["blank.dcm"] == (
        "a segmentation (SEG) that references 0 series (ReferencedSeriesSequence); fastdata reads one that segments "
        "one series of the source")
    (overlapping,) = [why for rel, why in reasons.items() if rel.startswith("overlap/")]
    assert overlapping == (f"overlap/seg.dcm: segment 'Neoplasm' overlaps 'Liver' in {int(sphere.sum())} voxels, and "
                           "a label volume holds one class per voxel; --structures picks segments that do not "
                           "overlap, or --overlap later gives a shared voxel to the later class")
    assert len(reasons) == 7
    # the classes are those of the SEGs discovery kept: the overlapping one's liver too, rejected as it was later
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["classes"] == ["background", "Liver",
                                                                                      "Neoplasm"]
    ((_, mask, _),) = _samples(tmp_path / "out")
    np.testing.assert_array_equal(mask, np.where(sphere, 2, 0))


def test_overlap_later_paints_segments_in_class_order_not_segment_number_order(tmp_path: Path):
    """--overlap later: the segments are painted in class order (Liver, then Neoplasm: sorted by name; the tumour
    is segment 1), so the tumour keeps its voxels inside the liver; --structures reverses the order and the liver
    takes them. The json counts what was taken."""
    sphere, box = _regions()
    _case(tmp_path / "src", [("tumor", sphere), ("liver", sphere | box)])
    result = convert_dicom(tmp_path / "src", tmp_path / "out", overlap="later")
    assert result.rejected == []
    ((_, mask, meta),) = _samples(tmp_path / "out")
    np.testing.assert_array_equal(mask, np.where(sphere, 2, np.where(box, 1, 0)))
    assert meta["overlaps"] == [{"class": "Neoplasm", "from": "Liver", "voxels": int(sphere.sum())}]
    convert_dicom(tmp_path / "src", tmp_path / "liver_last", overlap="later", structures=("neoplasm", "liver"))
    ((_, mask, meta),) = _samples(tmp_path / "liver_last")
    np.testing.assert_array_equal(mask, np.where(sphere | box, 2, 0))
    assert meta["overlaps"] == [{"class": "Liver", "from": "Neoplasm", "voxels": int(sphere.sum())}]


def test_segmentations_fastdata_cannot_place_are_rejected_before_their_frames_are_read(tmp_path: Path):
    """A SEG whose frames hold more voxels than --max-voxels (the series within it), one whose frames are not its
    series' size, one of a multi-frame series (highdicom places those frames by source frame, which is not read),
    and SEGs whose segments lack their code (or its meaning), or that have none. A FRACTIONAL SEG of values
    between 0 and its maximum (probabilities) is rejected when highdicom reads it."""
    from conftest_dicom import edit_dicom
    from pydicom import dcmread
    from test_dicom_series_detail import _enhanced

    src = tmp_path / "src"
    columns = [np.zeros((PHANTOM.slices, PHANTOM.rows, PHANTOM.cols), bool) for _ in range(3)]
    for n, column in enumerate(columns):
        column[:, :, 2 * n:2 * n + 2] = True  # in every slice: 3 x 16 frames of 40 x 36
    _case(src / "big", list(zip(("tumor", "liver", "kidney"), columns, strict=True)))
    for name, uid in (("small", ".1"), ("multi", ".2"), ("nocode", ".3"), ("empty", ".4"), ("nomeaning", ".5")):
        _case(src / name, [("tumor", columns[0])], replace(PHANTOM, series_uid=PHANTOM.series_uid + uid),
              seed=len(name))
    sources = prepared_sources(write_phantom(src / "fractional" / "ct", replace(
        PHANTOM, series_uid=PHANTOM.series_uid + ".6"), seed=6))
    write_seg(src / "fractional" / "seg.dcm", sources, [("tumor", columns[0] * 0.5)], fractional=True)
    edit_dicom(src / "small" / "seg.dcm", Rows=20)
    _enhanced(src / "multi" / "e.dcm", 3)
    seg = dcmread(src / "multi" / "seg.dcm")
    seg.ReferencedSeriesSequence[0].SeriesInstanceUID = "1.2.7"  # the multi-frame series'
    seg.save_as(src / "multi" / "seg.dcm")
    seg = dcmread(src / "nocode" / "seg.dcm")
    del seg.SegmentSequence[0].SegmentedPropertyTypeCodeSequence
    seg.save_as(src / "nocode" / "seg.dcm")
    seg = dcmread(src / "nomeaning" / "seg.dcm")
    del seg.SegmentSequence[0].SegmentedPropertyTypeCodeSequence[0].CodeMeaning
    seg.save_as(src / "nomeaning" / "seg.dcm")
    seg = dcmread(src / "empty" / "seg.dcm")
    seg.SegmentSequence = []
    seg.save_as(src / "empty" / "seg.dcm")
    result = convert_dicom(src, tmp_path / "out", max_voxels=30_000)  # a series: 16 x 40 x 36 = 23,040 voxels
    reasons = {rel.split("/")[0]: why for rel, why in reasons_by_path(result).items()}
    names = {rel.split("/")[0]: rel for rel in reasons_by_path(result)}
    assert reasons["big"].endswith(": a segmentation of 69120 voxels in its frames, more than --max-voxels 30000")
    assert reasons["small"].endswith(": segmentation frames of 20 x 36 pixels on a series of 40 x 36")
    assert reasons["fractional"].endswith(": cannot read the segmentation (a FRACTIONAL one of values between 0 and "
                                          "its maximum: probabilities) (ValueError)")
    assert reasons["multi"].endswith(": a segmentation of a multi-frame series; its frames are placed on single-frame "
                                     "images only")
    for name in ("nocode", "nomeaning"):
        assert (names[name], reasons[name]) == (f"{name}/seg.dcm", "a segmentation (SEG) segment without its number "
                                                "or its segmented property type (a code, with its meaning)")
    assert (names["empty"], reasons["empty"]) == ("empty/seg.dcm", "a segmentation (SEG) without segments "
                                                  "(SegmentSequence)")
    # kept: the series of the three SEGs rejected at discovery, and multi's phantom, whose SEG now names another
    assert len(reasons_by_path(result)) == 7 and len(_samples(tmp_path / "out")) == 4
    result = convert_dicom(src / "big", tmp_path / "at_bound", max_voxels=69120)  # frames of exactly the bound
    assert result.rejected == [] and len(_samples(tmp_path / "at_bound")) == 1


def test_two_codes_of_one_meaning_are_two_classes_named_with_their_codes(tmp_path: Path):
    """A site's own code beside SNOMED's for one meaning: two classes, each named with its code. A code kept in
    LongCodeValue or URNCodeValue (too long for CodeValue) is a code as well."""
    from pydicom import dcmread

    sphere, box = _regions()
    kidney = np.zeros_like(sphere)
    kidney[10:, 30:, :4] = True
    corner = np.zeros_like(sphere)
    corner[12:, :3, 30:] = True
    _case(tmp_path / "src", [("tumor", sphere), ("local neoplasm", box), ("kidney", kidney), ("liver", corner)])
    seg = dcmread(tmp_path / "src" / "seg.dcm")
    long_code = seg.SegmentSequence[2].SegmentedPropertyTypeCodeSequence[0]
    long_code.LongCodeValue = "64033007-LONG-FORM-OF-THE-CODE"
    del long_code.CodeValue
    urn = seg.SegmentSequence[3].SegmentedPropertyTypeCodeSequence[0]
    urn.URNCodeValue = "urn:example:liver"
    del urn.CodeValue  # its scheme kept: highdicom reads no code without one
    seg.save_as(tmp_path / "src" / "seg.dcm")
    convert_dicom(tmp_path / "src", tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == ["background", "Kidney", "Liver", "Neoplasm (99FD N1)", "Neoplasm (SCT 108369006)"]
    ((_, mask, _),) = _samples(tmp_path / "out")
    np.testing.assert_array_equal(mask, np.select([sphere, box, kidney, corner], [4, 3, 1, 2], 0))


def test_a_loader_yields_the_masks_of_a_dicom_dataset(tmp_path: Path):
    """The volume loader reads a dicom dataset's masks as it reads a nifti one's: patches and their masks, cut
    alike."""
    import fastdata

    sphere, box = _regions()
    _case(tmp_path / "src", [("tumor", sphere), ("liver", box)])
    convert_dicom(tmp_path / "src", tmp_path / "out")
    loader = fastdata.loader(tmp_path / "out", train=False, patch_size=8, batch_size=64, pad_value=0.0)
    values, masks = [], []
    for patches, meta in loader:
        values.append(patches)
        masks.append(meta["labels"])
    import torch

    patches, labels = torch.cat(values), torch.cat(masks)
    assert labels.shape == patches.shape and int(labels.max()) == 2
    assert torch.all(patches[labels == 2] == 800)  # the sphere's HU where its class is
