"""`--channel CT,PT` for the dicom kind: the series of one study's frame of reference stacked into one (C, z, y, x)
volume on the first series' grid (converters/dicom/channel_groups.py, channels.py). Every series here is a linear
function of the patient position (conftest_stacks.py), which linear interpolation reproduces exactly: a series sampled
on another's grid must hold that function at every grid voxel within its extent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pydicom")
pytest.importorskip("scipy")

from conftest_dicom import (  # noqa: E402
    PHI_STRINGS,
    convert_dicom,
    edit_dicom,
    load_volume,
    read_samples,
    reasons_by_path,
    write_phantom,
)
from conftest_rtstruct import write_rtstruct  # noqa: E402
from conftest_stacks import FRAME, STUDY, grid_points, pet_ct, second_stack, value_at, write_series  # noqa: E402

from converters.dicom.options import DicomOptions, parse_modalities  # noqa: E402

CT_GRADIENT = (1.0, 1.0, 1.0, 100.0)
STACK = ("CT", "PT")


def _pet_index(points: np.ndarray, origin, spacing, row=(1.0, 0.0, 0.0), col=(0.0, 1.0, 0.0)) -> np.ndarray:
    """(z, y, x) fractional index in a series placed as write_series places it, of patient positions."""
    normal = np.cross(row, col)
    rel = points - np.asarray(origin)
    return np.stack([rel @ normal / spacing[0], rel @ np.asarray(col) / spacing[1], rel @ np.asarray(row) / spacing[2]],
                    axis=-1)


def _within(index: np.ndarray, shape) -> np.ndarray:
    eps = 1e-6
    return np.all((index >= -eps) & (index <= np.asarray(shape) - 1 + eps), axis=-1)


def _only_sample(dst: Path) -> tuple[np.ndarray, dict, dict[str, bytes]]:
    samples = read_samples(dst)
    assert len(samples) == 1, sorted(samples)
    sample = next(iter(samples.values()))
    arr, meta = load_volume(sample)
    return arr, meta, sample


def test_a_pet_series_lands_on_its_ct_grid_voxel_for_voxel(tmp_path, caplog):
    """The stack is the CT's grid and json; the PET channel holds the PET's values at each CT voxel's position, and
    its smallest value where the CT reaches past the PET's extent (counted)."""
    pet_ct(tmp_path / "src")
    with caplog.at_level("INFO", logger="converters.dicom.discover"):
        result = convert_dicom(tmp_path / "src", tmp_path / "out", channels=STACK)
    assert result.rejected == [] and "found 1 stack(s) of CT,PT series (0 files rejected)" in caplog.text
    arr, meta, _ = _only_sample(tmp_path / "out")
    assert arr.shape == (2, 12, 20, 18) and arr.dtype == np.float32
    assert (meta["axes"], meta["channels"], meta["shape"], meta["modality"]) == ("czyx", ["CT", "PT"], [12, 20, 18],
                                                                                 "CT+PT")
    assert meta["spacing"] == [2.0, 0.8, 0.9] and meta["origin"] == [0.0, 0.0, 0.0]
    points = grid_points(meta)
    ct = value_at(points, CT_GRADIENT)
    np.testing.assert_allclose(arr[0], np.rint(ct))  # the CT as stored: whole HU
    inside = _within(_pet_index(points, (1.5, -2.0, 4.0), (4.0, 3.0, 3.0)), (6, 8, 8))
    assert 0 < inside.sum() < inside.size
    np.testing.assert_allclose(arr[1][inside], value_at(points[inside]), rtol=1e-6)
    pet = meta["stacked"][0]
    smallest = value_at(np.array([1.5, -2.0, 4.0]))
    assert pet["outside_value"] == smallest and np.all(arr[1][~inside] == smallest)
    assert pet["outside_voxels"] == int((~inside).sum())
    assert (pet["modality"], pet["original_shape"], pet["original_spacing"], pet["files"]) == ("PT", [6, 8, 8],
                                                                                           [4.0, 3.0, 3.0], 6)
    split = json.loads((tmp_path / "out" / "manifest.json").read_text())["splits"]["train"]
    assert split["stats"]["modality"] == {"CT+PT": 1} and split["stats"]["series"] == 1
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["preprocessing"]["channels"] == ["CT", "PT"]
    assert "sampled onto it by patient position" in manifest["preprocessing"]["stacking"]
    assert manifest["extra"]["masks"].endswith("in a stack (--channel), any one series' mask, on the first channel's "
                                               "grid")


def test_a_rotated_pet_and_a_resampled_reoriented_ct_grid(tmp_path):
    """The PET's rows run along the patient's y and its columns along -x, and the CT is resampled to 1.5 mm and
    reoriented to RAS: each PET voxel is still found by its position, and the stack lies on the CT's output grid."""
    write_series(tmp_path / "src" / "ct", uid="1.2.9.2.100", modality="CT", shape=(12, 20, 18), origin=(0.0, 0.0, 0.0),
                 spacing=(2.0, 1.0, 1.0), gradient=CT_GRADIENT)  # whole HU: a linear function exactly
    row, col = (0.0, 1.0, 0.0), (-1.0, 0.0, 0.0)
    write_series(tmp_path / "src" / "pet", uid="1.2.9.2.200", modality="PT", shape=(6, 8, 8),
                 origin=(20.5, -2.0, 4.0), spacing=(4.0, 3.0, 3.0), row=row, col=col, slope=0.25)
    convert_dicom(tmp_path / "src", tmp_path / "out", channels=STACK, spacing=(1.5, 1.5, 1.5), orientation="RAS")
    arr, meta, _ = _only_sample(tmp_path / "out")
    assert meta["orientation"] == "RAS" and meta["spacing"] == [1.5, 1.5, 1.5] and arr.shape[1:] == tuple(meta["shape"])
    points = grid_points(meta)
    inside = _within(_pet_index(points, (20.5, -2.0, 4.0), (4.0, 3.0, 3.0), row, col), (6, 8, 8))
    assert 0 < inside.sum() < inside.size
    np.testing.assert_allclose(arr[1][inside], value_at(points[inside]), rtol=1e-6)
    np.testing.assert_allclose(arr[0], value_at(points, CT_GRADIENT), atol=1e-3)  # linear in a float stack
    assert meta["stacked"][0]["orientation"] == "PRS"  # as the PET is stored: its x towards P, y towards R


def test_a_whole_valued_stack_is_int16(tmp_path):
    """A CT beside an MR of whole values, on the CT's grid points (the MR's voxels on the CT's): int16, exact."""
    write_series(tmp_path / "src" / "ct", uid="1.2.9.3.100", modality="CT", shape=(4, 6, 6), origin=(0.0, 0.0, 0.0),
                 spacing=(2.0, 1.0, 1.0), gradient=CT_GRADIENT)
    write_series(tmp_path / "src" / "mr", uid="1.2.9.3.200", modality="MR", shape=(8, 12, 12),
                 origin=(0.0, 0.0, 0.0), spacing=(1.0, 0.5, 0.5), gradient=(2.0, 2.0, 1.0, 50.0))
    convert_dicom(tmp_path / "src", tmp_path / "out", channels=("CT", "MR"))
    arr, meta, _ = _only_sample(tmp_path / "out")
    assert arr.dtype == np.int16 and meta["dtype"] == "int16" and meta["channels"] == ["CT", "MR"]
    points = grid_points(meta)
    np.testing.assert_array_equal(arr[1], value_at(points, (2.0, 2.0, 1.0, 50.0)))
    assert meta["stacked"][0]["outside_voxels"] == 0 and meta["units"].startswith("CT: HU; MR: ")


def test_the_channel_order_is_the_option_order(tmp_path):
    """--channel PT,CT: the PET is the grid and channel 0."""
    pet_ct(tmp_path / "src")
    convert_dicom(tmp_path / "src", tmp_path / "out", channels=("PT", "CT"))
    arr, meta, _ = _only_sample(tmp_path / "out")
    assert meta["channels"] == ["PT", "CT"] and meta["shape"] == [6, 8, 8] and meta["spacing"] == [4.0, 3.0, 3.0]
    points = grid_points(meta)
    np.testing.assert_allclose(arr[0], value_at(points), rtol=1e-6)
    inside = _within(_pet_index(points, (0.0, 0.0, 0.0), (2.0, 0.8, 0.9)), (12, 20, 18))
    np.testing.assert_allclose(arr[1][inside], np.rint(value_at(points[inside], CT_GRADIENT)), atol=1.0)


def _box(z: float, x0: float, x1: float, y0: float, y1: float) -> list[tuple[float, float, float]]:
    return [(x0, y0, z), (x1, y0, z), (x1, y1, z), (x0, y1, z)]


def test_the_mask_of_the_pet_goes_onto_the_ct_grid_nearest(tmp_path):
    """A structure set drawn on the PET: label.npy on the CT's grid, each CT voxel taking the class of the PET voxel
    nearest to it (the PET's own mask, converted alone, read at the nearest index)."""
    src = pet_ct(tmp_path / "src")
    contours = [_box(4.0 + 4.0 * k, 5.0, 14.0, 2.0, 11.0) for k in range(1, 4)]
    write_rtstruct(src / "pet" / "rs.dcm", "1.2.9.1.200", [("Lesion", contours)])
    convert_dicom(src, tmp_path / "out", channels=STACK)
    arr, meta, sample = _only_sample(tmp_path / "out")
    labels = np.load(__import__("io").BytesIO(sample["label.npy"]))
    assert labels.shape == arr.shape[1:] and labels.dtype == np.uint8 and meta["label_max"] == 1
    assert meta["stacked"][0]["label"] == meta["label"]
    alone = tmp_path / "alone"
    (alone / "pet").mkdir(parents=True)
    for path in (src / "pet").iterdir():
        (alone / "pet" / path.name).write_bytes(path.read_bytes())
    convert_dicom(alone, tmp_path / "pet-out")
    (own,) = [np.load(__import__("io").BytesIO(s["label.npy"])) for s in read_samples(tmp_path / "pet-out").values()]
    assert own.sum() > 0
    position = _pet_index(grid_points(meta), (1.5, -2.0, 4.0), (4.0, 3.0, 3.0))
    within = _within(position, (6, 8, 8))
    index = np.floor(position + 0.5).astype(int)  # a voxel half-way between two takes the later one
    expected = np.zeros(labels.shape, np.uint8)
    expected[within] = own[tuple(index[within].T)]
    np.testing.assert_array_equal(labels, expected)
    assert labels.sum() > 0


def test_the_mask_of_the_ct_stays_on_its_grid(tmp_path):
    src = pet_ct(tmp_path / "src")
    write_rtstruct(src / "ct" / "rs.dcm", "1.2.9.1.100", [("Body", [_box(2.0 * k, 1.0, 9.0, 1.0, 9.0)
                                                                    for k in range(2, 6)])])
    convert_dicom(src, tmp_path / "out", channels=STACK)
    arr, meta, sample = _only_sample(tmp_path / "out")
    labels = np.load(__import__("io").BytesIO(sample["label.npy"]))
    assert labels.shape == arr.shape[1:] and labels[2:6].any() and not labels[:2].any() and not labels[6:].any()
    assert "label" not in meta["stacked"][0] and meta["label"].endswith(".dcm") is False  # a pseudonym


def test_what_cannot_be_stacked_is_recorded(tmp_path):
    """Each series of no stack is a rejection that says why; the stack beside them converts."""
    src = pet_ct(tmp_path / "src" / "good")
    write_series(src / "mr", uid="1.2.9.1.300", modality="MR", shape=(2, 4, 4), origin=(0.0, 0.0, 0.0),
                 spacing=(1.0, 1.0, 1.0))
    scout = write_series(src / "scout", uid="1.2.9.1.400", modality="CT", shape=(1, 4, 4), origin=(0.0, 0.0, 0.0),
                         spacing=(1.0, 1.0, 1.0), gradient=CT_GRADIENT)
    edit_dicom(scout[0], ImageType=["ORIGINAL", "PRIMARY", "LOCALIZER"])
    lone = tmp_path / "src" / "lone"
    write_series(lone, uid="1.2.9.5.100", modality="CT", shape=(3, 4, 4), origin=(0.0, 0.0, 0.0),
                 spacing=(1.0, 1.0, 1.0), gradient=CT_GRADIENT, study="1.2.9.5", frame="1.2.9.5.1")
    unplaced = tmp_path / "src" / "unplaced"
    write_series(unplaced, uid="1.2.9.6.100", modality="PT", shape=(3, 4, 4), origin=(0.0, 0.0, 0.0),
                 spacing=(1.0, 1.0, 1.0), frame=None)
    nostudy = write_series(tmp_path / "src" / "nostudy", uid="1.2.9.9.100", modality="PT", shape=(1, 4, 4),
                           origin=(0.0, 0.0, 0.0), spacing=(1.0, 1.0, 1.0))
    edit_dicom(nostudy[0], StudyInstanceUID=None)
    twice = tmp_path / "src" / "twice"
    for n in (1, 2):
        write_series(twice / f"pet{n}", uid=f"1.2.9.7.{n}", modality="PT", shape=(3, 4, 4), origin=(0.0, 0.0, 0.0),
                     spacing=(1.0, 1.0, 1.0), study="1.2.9.7", frame="1.2.9.7.9")
    write_series(twice / "ct", uid="1.2.9.7.3", modality="CT", shape=(3, 4, 4), origin=(0.0, 0.0, 0.0),
                 spacing=(1.0, 1.0, 1.0), gradient=CT_GRADIENT, study="1.2.9.7", frame="1.2.9.7.9")
    result = convert_dicom(tmp_path / "src", tmp_path / "out", channels=STACK)
    reasons = reasons_by_path(result)
    assert len(read_samples(tmp_path / "out")) == 1
    by_folder = {path.split(" ")[0]: reason for path, reason in reasons.items()}
    assert "modality MR is not among --channel CT,PT" in by_folder["good/mr"]
    assert "a localizer (ImageType LOCALIZER)" in by_folder["good/scout/400-000.dcm"]
    assert "holds no PT series to stack with it" in by_folder["lone"]
    assert "no FrameOfReferenceUID" in by_folder["unplaced"]
    assert "no StudyInstanceUID" in by_folder["nostudy/100-000.dcm"]
    assert sum("2 PT series share its study's frame of reference" in r for r in reasons.values()) == 3
    assert len(reasons) == 8


def test_each_study_is_its_own_stack_though_they_share_a_frame_of_reference(tmp_path):
    """Two studies of one frame of reference (a scanner that keeps it over a patient's visits): two stacks, never one
    of four series."""
    pet_ct(tmp_path / "src" / "visit1")
    pet_ct(tmp_path / "src" / "visit2", ct_uid="1.2.9.8.100", pet_uid="1.2.9.8.200", study="1.2.9.8")
    result = convert_dicom(tmp_path / "src", tmp_path / "out", channels=STACK)
    assert result.rejected == [] and len(read_samples(tmp_path / "out")) == 2


def test_two_masks_in_one_stack_reject_it(tmp_path):
    src = pet_ct(tmp_path / "src" / "a")
    write_rtstruct(src / "ct" / "rs.dcm", "1.2.9.1.100", [("Body", [_box(4.0, 1.0, 9.0, 1.0, 9.0)])])
    write_rtstruct(src / "pet" / "rs.dcm", "1.2.9.1.200", [("Lesion", [_box(8.0, 5.0, 14.0, 2.0, 11.0)])])
    second_stack(tmp_path / "src" / "b")
    result = convert_dicom(tmp_path / "src", tmp_path / "out", channels=STACK)
    assert len(read_samples(tmp_path / "out")) == 1
    reasons = list(reasons_by_path(result).values())
    assert reasons == ["2 of the series stacked with it have a mask (SEG, RTSTRUCT): a stack converts with one"] * 2
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["classes"] == []  # a rejected mask's classes


def test_a_pet_beside_the_ct_but_not_over_it_is_rejected(tmp_path):
    pet_ct(tmp_path / "src" / "a", origin=(500.0, 0.0, 0.0))
    second_stack(tmp_path / "src" / "b")
    result = convert_dicom(tmp_path / "src", tmp_path / "out", channels=STACK)
    (reason,) = reasons_by_path(result).values()
    assert "no voxel of the stack's grid lies within this PT series" in reason


def test_a_stack_past_max_voxels_is_rejected_before_it_is_sampled(tmp_path):
    from fastdata.errors import ConvertError

    pet_ct(tmp_path / "src")
    with pytest.raises(ConvertError, match="1 x its 2 channels on the CT grid would hold 8640 voxels, more than "
                                           "--max-voxels 8639"):
        convert_dicom(tmp_path / "src", tmp_path / "out", channels=STACK, max_voxels=12 * 20 * 18 * 2 - 1)
    assert convert_dicom(tmp_path / "src", tmp_path / "ok", channels=STACK, max_voxels=12 * 20 * 18 * 2).rejected == []


def test_suv_applies_to_the_pet_channel(tmp_path):
    """--suv: the PET channel is SUVbw (the PET's values times its SUV factor), the CT channel HU."""
    from conftest_pet import WEIGHT
    attrs = {"Units": "BQML", "CorrectedImage": ["DECY", "ATTN"], "DecayCorrection": "ADMIN",
             "PatientWeight": f"{WEIGHT}"}
    from pydicom.dataset import Dataset
    item = Dataset()
    item.RadionuclideTotalDose = "3.52e8"
    item.RadionuclideHalfLife = "6586.2"
    pet_ct(tmp_path / "src", RadiopharmaceuticalInformationSequence=[item], **attrs)
    convert_dicom(tmp_path / "src", tmp_path / "plain", channels=STACK)
    convert_dicom(tmp_path / "src", tmp_path / "suv", channels=STACK, suv=True)
    plain, _, _ = _only_sample(tmp_path / "plain")
    suv, meta, _ = _only_sample(tmp_path / "suv")
    np.testing.assert_array_equal(suv[0], plain[0])
    np.testing.assert_allclose(suv[1], plain[1] * (WEIGHT * 1000 / 3.52e8), rtol=1e-5)
    assert meta["units"].startswith("CT: HU; PT: SUVbw")


def test_no_identifier_reaches_the_stack_and_keep_phi_lists_every_file(tmp_path):
    src = pet_ct(tmp_path / "src")
    write_rtstruct(src / "pet" / "rs.dcm", "1.2.9.1.200", [("Lesion", [_box(8.0, 5.0, 14.0, 2.0, 11.0)])])
    convert_dicom(tmp_path / "src", tmp_path / "out", channels=STACK)
    _, _, sample = _only_sample(tmp_path / "out")
    text = sample["json"].decode()
    for secret in (*PHI_STRINGS, STUDY, FRAME, "1.2.9.1.100", "1.2.9.1.200", "pet", "ct/", "rs.dcm"):
        assert secret not in text
    convert_dicom(tmp_path / "src", tmp_path / "kept", channels=STACK, keep_phi=True)
    _, meta, _ = _only_sample(tmp_path / "kept")
    assert len(meta["files_rel"]) == 12 and all(r.startswith("ct/") for r in meta["files_rel"])
    assert len(meta["stacked"][0]["files_rel"]) == 6 and all(r.startswith("pet/") for r in
                                                              meta["stacked"][0]["files_rel"])


def test_a_vanished_file_of_a_stacked_series_rejects_the_stack(tmp_path):
    from converters import get_kind
    from converters.dicom.series import process_series
    from converters.sample import Rejection

    pet_ct(tmp_path / "src")
    opts = DicomOptions(salt="s", channels=STACK)
    (item,) = get_kind("dicom").discover(tmp_path / "src", options=opts).splits["train"]
    assert len(item.payload.channels) == 1 and item.rel == ". (18 files)"
    Path(item.payload.channels[0].files[2][0]).unlink()
    sample = process_series(item, opts=opts)
    assert isinstance(sample, Rejection) and "vanished since discovery" in sample.reason


def test_the_loader_reads_a_stack_as_two_channels(tmp_path):
    import fastdata

    pet_ct(tmp_path / "src")
    convert_dicom(tmp_path / "src", tmp_path / "out", channels=STACK)
    loader = fastdata.loader(str(tmp_path / "out"), patch_size=(8, 8, 8), batch_size=1, pad_value=0,
                             train=False)
    (x, _), *_ = list(loader)
    assert tuple(x.shape) == (1, 2, 8, 8, 8)


@pytest.mark.parametrize("text", ["CT", "CT,CT", "CT,", "C T,PT", "ct,pt"])
def test_channel_options_are_checked(text):
    with pytest.raises(ValueError, match="--channel stacks the series of two or more modalities"):
        DicomOptions(channels=tuple(text.split(",")))
    if text != "ct,pt":
        with pytest.raises(ValueError):
            DicomOptions(channels=parse_modalities(text))
    else:
        assert DicomOptions(channels=parse_modalities(text)).channels == ("CT", "PT")


def test_a_series_without_the_option_still_converts_alone(tmp_path):
    """Without --channel the two series of a study are two samples, as before."""
    pet_ct(tmp_path / "src")
    write_phantom(tmp_path / "src" / "other")
    convert_dicom(tmp_path / "src", tmp_path / "out")
    assert len(read_samples(tmp_path / "out")) == 3


@pytest.mark.parametrize("planar", ["CT", "PT"])
def test_a_planar_image_in_a_stack_rejects_it(tmp_path, planar):
    """A single image without a position (a radiograph) has no place on a grid, first channel or not."""
    study = tmp_path / "src" / "a"
    for modality, uid in (("CT", "1.2.9.4.100"), ("PT", "1.2.9.4.200")):
        paths = write_series(study / modality, uid=uid, modality=modality, shape=(1 if modality == planar else 3, 4, 4),
                             origin=(0.0, 0.0, 0.0), spacing=(1.0, 1.0, 1.0), gradient=CT_GRADIENT, study="1.2.9.4",
                             frame="1.2.9.4.1")
        if modality == planar:
            edit_dicom(paths[0], ImagePositionPatient=None)
    second_stack(tmp_path / "src" / "b")
    result = convert_dicom(tmp_path / "src", tmp_path / "out", channels=STACK)
    assert reasons_by_path(result) == {"a (4 files)":  # the stack: the folder its series share
                                       "a/PT/200-000.dcm: a planar image without a position cannot be placed on the CT "
                                       "grid (--channel stacks volumes)" if planar == "PT" else
                                       "a/CT/100-000.dcm: a planar image without a position: --channel stacks volumes"}


def test_overlaps_in_the_mask_of_a_stacked_series_are_the_samples(tmp_path):
    """--overlap later in a structure set drawn on the PET: the sample's overlaps and the split's overlap_voxels say
    what moved, as for a mask of the first series."""
    src = pet_ct(tmp_path / "src")
    write_rtstruct(src / "pet" / "rs.dcm", "1.2.9.1.200", [("Body", [_box(8.0, 2.0, 20.0, -1.0, 17.0)]),
                                                            ("Lesion", [_box(8.0, 5.0, 14.0, 2.0, 11.0)])])
    convert_dicom(src, tmp_path / "out", channels=STACK, overlap="later")
    _, meta, _ = _only_sample(tmp_path / "out")
    (moved,) = meta["overlaps"]
    assert (moved["class"], moved["from"]) == ("Lesion", "Body") and moved["voxels"] > 0
    stats = json.loads((tmp_path / "out" / "manifest.json").read_text())["splits"]["train"]["stats"]
    assert stats["overlap_voxels"] == moved["voxels"]


def test_a_segmentation_of_the_pet_goes_onto_the_ct_grid(tmp_path):
    """A SEG (autoPET's lesions are one) of the PET series: its frames are placed on the PET's slices by their
    SOPInstanceUIDs, then onto the CT's grid by the nearest PET voxel."""
    pytest.importorskip("highdicom")
    from conftest_seg import prepared_sources, write_seg

    src = pet_ct(tmp_path / "src")
    sources = prepared_sources(sorted((src / "pet").glob("*.dcm")), frame_of_reference=FRAME)
    lesion = np.zeros((6, 8, 8), bool)
    lesion[2:4, 2:5, 3:6] = True
    write_seg(src / "pet" / "seg.dcm", sources, [("tumor", lesion)])
    convert_dicom(src, tmp_path / "out", channels=STACK)
    arr, meta, sample = _only_sample(tmp_path / "out")
    labels = np.load(__import__("io").BytesIO(sample["label.npy"]))
    position = _pet_index(grid_points(meta), (1.5, -2.0, 4.0), (4.0, 3.0, 3.0))
    within = _within(position, (6, 8, 8))
    index = np.floor(position + 0.5).astype(int)
    expected = np.zeros(labels.shape, np.uint8)
    expected[within] = lesion[tuple(index[within].T)]
    np.testing.assert_array_equal(labels, expected)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert labels.sum() > 0 and manifest["classes"] == ["background", "Neoplasm"]
