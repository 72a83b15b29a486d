"""NIfTI conversion (--kind nifti): geometry from the affine into the dicom kind's LPS volume format, exact values
and masks, the Decathlon / nnU-Net layouts, channels, and the rejection of what would give a wrong volume."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("nibabel")
pytest.importorskip("scipy")

from conftest_dicom import load_volume, read_samples, reasons_by_path  # noqa: E402
from conftest_nifti import (  # noqa: E402
    AFFINE,
    case,
    convert_nifti,
    decathlon,
    save,
    volumes_by_source,
    zyx,
)


def test_a_decathlon_task_converts_images_masks_classes_and_geometry_exactly(tmp_path):
    made = decathlon(tmp_path / "Task03_Liver")
    result = convert_nifti(tmp_path / "Task03_Liver", tmp_path / "out")
    assert result.rejected == []
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["kind"] == "nifti" and manifest["classes"] == ["background", "liver", "cancer"]
    assert {s: v["samples"] for s, v in manifest["splits"].items()} == {"train": 3, "test": 1}
    assert manifest["splits"]["train"]["stats"]["modality"] == {"CT": 3}
    got = volumes_by_source(tmp_path / "out", result)
    assert sorted(got) == [f"imagesTr/liver_{n}.nii.gz" for n in range(3)]
    for name, (image, mask) in made.items():
        arr, labels, meta = got[f"imagesTr/{name}.nii.gz"]
        assert arr.dtype == np.int16 and labels.dtype == np.uint8
        np.testing.assert_array_equal(arr, zyx(image))
        np.testing.assert_array_equal(labels, zyx(mask))
        assert meta["spacing"] == [2.5, 0.7, 0.8] and meta["shape"] == [8, 18, 20]
        assert meta["origin"] == [-100.0, -120.0, -300.0]  # RAS (100, 120, -300) in LPS
        assert meta["direction"] == [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
        assert meta["units"] == "HU" and meta["label_max"] == 2 and meta["resampled"] is False
    (test,) = volumes_by_source(tmp_path / "out", result, "test").values()
    assert test[1] is None and test[2]["shape"] == [8, 18, 20]


def test_the_json_geometry_puts_every_voxel_where_the_affine_does(tmp_path):
    nib = pytest.importorskip("nibabel")
    affine = np.array([[0.0, 0.0, -1.2, 10.0], [0.9, 0.0, 0.0, -5.0], [0.0, 2.0, 0.0, 30.0], [0, 0, 0, 1.0]])
    image = np.arange(5 * 6 * 7, dtype=np.int16).reshape(5, 6, 7)
    save(tmp_path / "src" / "a.nii", image, affine)
    result = convert_nifti(tmp_path / "src", tmp_path / "out")
    ((arr, _, meta),) = volumes_by_source(tmp_path / "out", result).values()
    np.testing.assert_array_equal(arr, zyx(image))
    rng = np.random.default_rng(0)
    for _ in range(20):
        i, j, k = (int(rng.integers(n)) for n in image.shape)
        ras = nib.affines.apply_affine(affine, [i, j, k])
        lps = np.asarray(meta["origin"]) + np.asarray([k, j, i]) * np.asarray(meta["spacing"]) @ np.asarray(
            meta["direction"])
        np.testing.assert_allclose(lps, ras * [-1, -1, 1], atol=1e-5)
        assert arr[k, j, i] == image[i, j, k]


def test_resampling_interpolates_images_and_takes_the_nearest_label(tmp_path):
    made = decathlon(tmp_path / "src", cases=1, test_cases=0)
    result = convert_nifti(tmp_path / "src", tmp_path / "out", spacing=(1.5, 1.5, 1.5))
    ((arr, labels, meta),) = volumes_by_source(tmp_path / "out", result).values()
    extent = (np.array([8, 18, 20]) - 1) * np.array([2.5, 0.7, 0.8])
    assert list(arr.shape) == list(labels.shape) == [int(np.floor(e / 1.5 + 1e-6)) + 1 for e in extent]
    assert meta["spacing"] == [1.5, 1.5, 1.5] and meta["original_spacing"] == [2.5, 0.7, 0.8]
    assert set(np.unique(labels)) == {0, 1, 2}  # nearest: no value between two labels
    mask = zyx(made["liver_0"][1])
    # voxel (5, 3, 3) lies at (7.5, 4.5, 4.5) mm: input voxel (3.0, 6.43, 5.6), nearest (3, 6, 6), label 2
    assert labels[0, 0, 0] == mask[0, 0, 0] == 0 and labels[5, 3, 3] == mask[3, 6, 6] == 2


def test_integral_values_stay_int16_and_fractions_become_float32(tmp_path):
    save(tmp_path / "src" / "whole.nii.gz", np.full((4, 4, 3), 7.0, np.float32))
    frac = np.linspace(0, 1, 48, dtype=np.float32).reshape(4, 4, 3)
    save(tmp_path / "src" / "frac.nii.gz", frac)
    result = convert_nifti(tmp_path / "src", tmp_path / "out", modality="T2")
    got = volumes_by_source(tmp_path / "out", result)
    whole, _, meta = got["whole.nii.gz"]
    assert whole.dtype == np.int16 and int(whole.max()) == 7 and meta["units"].startswith("stored values")
    arr, _, meta = got["frac.nii.gz"]
    assert arr.dtype == np.float32 and meta["dtype"] == "float32" and meta["modality"] == "T2"
    np.testing.assert_array_equal(arr, zyx(frac))


def test_a_header_in_metres_is_read_in_millimetres(tmp_path):
    save(tmp_path / "src" / "m.nii.gz", np.zeros((3, 3, 3), np.int16), np.diag([0.001, 0.001, 0.002, 1.0]),
         units="meter")
    result = convert_nifti(tmp_path / "src", tmp_path / "out")
    ((_, _, meta),) = volumes_by_source(tmp_path / "out", result).values()
    assert meta["spacing"] == [2.0, 1.0, 1.0] and meta["spatial_units"] == "meter"


def test_nnunet_channel_files_need_a_channel_and_it_picks_its_file(tmp_path):
    src = tmp_path / "Dataset001_Brain"
    for n in range(2):
        for c in range(2):
            save(src / "imagesTr" / f"brain_{n:03d}_{c:04d}.nii.gz", np.full((4, 4, 3), 10 * c + n, np.int16))
        save(src / "labelsTr" / f"brain_{n:03d}.nii.gz", np.ones((4, 4, 3), np.uint8))
    (src / "dataset.json").write_text(json.dumps({"channel_names": {"0": "T1", "1": "FLAIR"},
                                                  "labels": {"background": 0, "tumour": 1}}))
    from fastdata.errors import ConvertError

    with pytest.raises(ConvertError, match=r"holds no nifti input to convert \(6 file\(s\) rejected: 2 x a case of 2 "
                                           r"channel files \(0000 \(T1\), 0001 \(FLAIR\)\); .* --channel C, or "
                                           r"stack them all with --channel all; 2 x a channel file of a case that was "
                                           r"rejected; 2 x the mask of a case that was rejected\)"):
        convert_nifti(src, tmp_path / "a")  # every file of both cases; before, their masks and second files: none
    result = convert_nifti(src, tmp_path / "b", channel=1)
    assert result.rejected == []
    got = volumes_by_source(tmp_path / "b", result)
    assert sorted(got) == ["imagesTr/brain_000_0001.nii.gz", "imagesTr/brain_001_0001.nii.gz"]
    arr, labels, meta = got["imagesTr/brain_001_0001.nii.gz"]
    assert int(arr.max()) == 11 and labels.min() == 1 and meta["modality"] == "FLAIR" and meta["channel"] == 1
    with pytest.raises(ConvertError, match="--channel flair: the imagesTr layout numbers the channels"):
        convert_nifti(src, tmp_path / "d", channel="flair")
    assert json.loads((tmp_path / "b" / "manifest.json").read_text())["classes"] == ["background", "tumour"]
    with pytest.raises(ConvertError, match=r"2 x no channel file 0002 \(--channel 2\) for this case; it has 0000"):
        convert_nifti(src, tmp_path / "c", channel=2)


def test_a_4d_image_needs_a_channel_and_it_takes_that_volume(tmp_path):
    four = np.stack([np.full((4, 4, 3), v, np.int16) for v in (5, 6, 7)], axis=-1)
    save(tmp_path / "src" / "imagesTr" / "p.nii.gz", four)
    save(tmp_path / "src" / "labelsTr" / "p.nii.gz", np.zeros((4, 4, 3), np.uint8))
    save(tmp_path / "src" / "imagesTr" / "q.nii.gz", np.zeros((4, 4, 3, 4), np.int16))  # 4 channels
    save(tmp_path / "src" / "labelsTr" / "q.nii.gz", np.zeros((4, 4, 3), np.uint8))
    save(tmp_path / "src" / "imagesTr" / "r.nii.gz", np.zeros((4, 4, 3), np.int16))  # 3D: converted without
    save(tmp_path / "src" / "labelsTr" / "r.nii.gz", np.zeros((4, 4, 3), np.uint8))
    reasons = reasons_by_path(convert_nifti(tmp_path / "src", tmp_path / "a"))
    assert "a 4D image of 3 channels" in reasons["imagesTr/p.nii.gz"]
    result = convert_nifti(tmp_path / "src", tmp_path / "b", channel=2)
    arr, _, meta = volumes_by_source(tmp_path / "b", result)["imagesTr/p.nii.gz"]
    assert int(arr.min()) == int(arr.max()) == 7 and meta["channel"] == 2
    assert "has 3 channel(s)" in reasons_by_path(convert_nifti(tmp_path / "src", tmp_path / "c", channel=3))[
        "imagesTr/p.nii.gz"]


def test_what_would_give_a_wrong_volume_or_mask_is_rejected_with_its_reason(tmp_path):
    src = tmp_path / "src"
    decathlon(src, cases=1, test_cases=0)
    image, mask = case(0)
    save(src / "imagesTr" / "shifted.nii.gz", image)
    moved = AFFINE.copy()
    moved[0, 3] += 0.5
    save(src / "labelsTr" / "shifted.nii.gz", mask, moved)
    save(src / "imagesTr" / "fractional.nii.gz", image)
    save(src / "labelsTr" / "fractional.nii.gz", mask.astype(np.float32) / 2)
    save(src / "imagesTr" / "unnamed.nii.gz", image)
    save(src / "labelsTr" / "unnamed.nii.gz", mask * 2)  # value 4: dataset.json names 0..2
    save(src / "imagesTr" / "nan.nii.gz", np.full((3, 3, 3), np.nan, np.float32))
    save(src / "labelsTr" / "nan.nii.gz", np.zeros((3, 3, 3), np.uint8))
    sheared = AFFINE.copy()
    sheared[0, 1] = 0.3
    save(src / "imagesTr" / "sheared.nii.gz", image, sheared)
    save(src / "labelsTr" / "sheared.nii.gz", mask, sheared)
    save(src / "imagesTr" / "alone.nii.gz", image)
    save(src / "labelsTr" / "orphan.nii.gz", mask)
    data = (src / "imagesTr" / "liver_0.nii.gz").read_bytes()
    (src / "imagesTr" / "cut.nii.gz").write_bytes(data[: len(data) // 2])
    save(src / "labelsTr" / "cut.nii.gz", mask)
    unit = save(src / "imagesTr" / "unit.nii", image)
    data = bytearray(unit.read_bytes())
    data[123] = 7  # xyzt_units: a spatial code the standard does not define (fuzz seed 1801)
    unit.write_bytes(bytes(data))
    save(src / "labelsTr" / "unit.nii.gz", mask)
    import nibabel as nib

    qform = nib.Nifti1Image(image, None)
    qform.set_qform(np.diag([0.8, 0.7, 2.5, 1.0]), code=1)
    qform.set_sform(None, code=0)
    nib.save(qform, src / "imagesTr" / "pixdim.nii")
    data = bytearray((src / "imagesTr" / "pixdim.nii").read_bytes())
    data[80:84] = bytes(4)  # pixdim[1] = 0.0: nibabel reads it as 1 mm, and the qform is made of it
    (src / "imagesTr" / "pixdim.nii").write_bytes(bytes(data))
    save(src / "labelsTr" / "pixdim.nii.gz", mask)
    (src / "imagesTr" / "notes.txt").write_text("not an image")
    (src / "README.md").write_text("a stray file")
    reasons = reasons_by_path(convert_nifti(src, tmp_path / "out"))
    expected = {
        "labelsTr/shifted.nii.gz": "the mask's grid (shape [8, 18, 20], spacing [2.5, 0.7, 0.8] mm, origin "
                                   "[-100.5, -120.0, -300.0]) is not its image's",
        "labelsTr/fractional.nii.gz": "mask values must be whole numbers",
        "labelsTr/unnamed.nii.gz": "mask value 4, but dataset.json names 3 labels (0..2)",
        "imagesTr/nan.nii.gz": "27 voxel(s) are NaN or infinite",
        "imagesTr/sheared.nii.gz": "the affine is sheared",
        "imagesTr/alone.nii.gz": "no mask of the same name in labelsTr",
        "labelsTr/orphan.nii.gz": "a mask without an image of the same name in imagesTr",
        "imagesTr/cut.nii.gz": "cannot read the voxels",
        "imagesTr/notes.txt": ("not a NIfTI, Analyze, MGH, MINC, AFNI, PAR/REC, MetaImage or NRRD file (.nii, .nii.gz, "
                               ".hdr + .img, .mgz, .mgh, .mnc, .HEAD + .BRIK, .PAR + .REC, .mhd, .mha, .nrrd, .nhdr)"),
        "imagesTr/pixdim.nii": "voxel sizes (pixdim) [0.0, 0.7, 2.5] are not positive, and with no sform",
        "imagesTr/unit.nii": "xyzt_units 7 names no unit the NIfTI standard defines",
        "README.md": "not inside imagesTr, labelsTr, imagesTs or labelsTs",
    }
    # each case that failed lists its mask (before, only its image was in the list)
    masks = {p for p, r in reasons.items() if r == "the mask of a case that was rejected"}
    assert masks == {f"labelsTr/{n}.nii.gz" for n in ("shifted", "fractional", "unnamed", "nan", "sheared", "cut",
                                                      "pixdim", "unit")}
    reasons = {p: r for p, r in reasons.items() if p not in masks}
    # a mask's reason is the case's rejection (named by its image), quoting the mask
    by_reason = {next((p for p in expected if expected[p] in r), None): r for r in reasons.values()}
    assert set(by_reason) == set(expected), reasons
    assert len(reasons) == len(expected)


def test_case_folders_pair_a_mask_with_its_image_and_name_the_channels_of_brats(tmp_path):
    src = tmp_path / "src"
    image, mask = case(0)
    save(src / "train" / "case_00000" / "imaging.nii.gz", image)  # KiTS
    save(src / "train" / "case_00000" / "segmentation.nii.gz", mask)
    for n in range(2):  # BraTS 2020: four modalities and the mask in each case folder
        folder = src / "train" / f"BraTS20_Training_00{n}"
        for value, modality in enumerate(("flair", "t1", "t1ce", "t2")):
            save(folder / f"BraTS20_Training_00{n}_{modality}.nii.gz", np.full(image.shape, value, np.int16))
        save(folder / f"BraTS20_Training_00{n}_seg.nii.gz", mask)
    for value, modality in enumerate(("flair", "t1")):  # BraTS validation: no mask
        save(src / "val" / "BraTS20_Validation_001" / f"BraTS20_Validation_001_{modality}.nii.gz",
             np.full(image.shape, value, np.int16))
    save(src / "val" / "two" / "a_seg.nii.gz", mask)  # two masks in one folder: a_seg pairs with a, b_seg with none
    save(src / "val" / "two" / "b_seg.nii.gz", mask)
    save(src / "val" / "two" / "a.nii.gz", image)
    save(src / "val" / "segmentations" / "liver.nii.gz", mask)  # per-structure masks with no image beside them
    save(src / "val" / "lone" / "only_seg.nii.gz", mask)
    save(src / "val" / "scans" / "x.nii.gz", image)  # a folder of scans without masks: a case each
    save(src / "val" / "scans" / "y.nii.gz", image)
    result = convert_nifti(src, tmp_path / "plain")
    reasons = reasons_by_path(result)
    brats = ("a case of 4 channel files (flair, t1, t1ce, t2); pick one by name with --channel NAME, stack some with "
             "--channel NAME,NAME or all of them with --channel all")
    assert reasons == {
        **{f"train/BraTS20_Training_00{n}/BraTS20_Training_00{n}_{name}.nii.gz": reason
           for n in (0, 1) for name, reason in (("flair", brats), ("seg", "the mask of a case that was rejected"),
                                                *((c, "a channel file of a case that was rejected")
                                                  for c in ("t1", "t1ce", "t2")))},
        "val/two/b_seg.nii.gz": "not paired by name in a folder of 2 masks: a mask pairs with the one image named as "
                                "it is without its mask word (segmentation-0 and volume-0, liver_seg and liver); or "
                                "one case per folder, or the imagesTr/labelsTr layout (docs/volumes.md)",
        "val/segmentations/liver.nii.gz": "a folder of per-structure masks beside 0 images: its masks are the "
                                          "structures of the one image beside it",
        "val/lone/only_seg.nii.gz": "a mask without an image beside it",
    }
    got = volumes_by_source(tmp_path / "plain", result) | volumes_by_source(tmp_path / "plain", result, "val")
    assert sorted(got) == ["train/case_00000/imaging.nii.gz", "val/BraTS20_Validation_001/BraTS20_Validation_001_flair"
                           ".nii.gz", "val/BraTS20_Validation_001/BraTS20_Validation_001_t1.nii.gz",
                           "val/scans/x.nii.gz", "val/scans/y.nii.gz", "val/two/a.nii.gz"]
    assert got["val/two/a.nii.gz"][1] is not None
    arr, labels, _ = got["train/case_00000/imaging.nii.gz"]
    np.testing.assert_array_equal(labels, zyx(mask))
    assert json.loads((tmp_path / "plain" / "manifest.json").read_text())["classes"] == []
    result = convert_nifti(src, tmp_path / "t1ce", channel="t1ce")
    got = volumes_by_source(tmp_path / "t1ce", result) | volumes_by_source(tmp_path / "t1ce", result, "val")
    assert sorted(got) == [f"train/BraTS20_Training_00{n}/BraTS20_Training_00{n}_t1ce.nii.gz" for n in range(2)]
    arr, labels, meta = got["train/BraTS20_Training_001/BraTS20_Training_001_t1ce.nii.gz"]
    assert int(arr.max()) == 2 and labels is not None and meta["channel"] == "t1ce"
    reasons = reasons_by_path(result)
    assert reasons["train/case_00000/imaging.nii.gz"] == ("no channel 't1ce' (--channel) in this case; its channels "
                                                          "are named by their whole file names")
    assert reasons["val/BraTS20_Validation_001/BraTS20_Validation_001_flair.nii.gz"] == (
        "no channel 't1ce' (--channel) in this case; its channels are flair, t1")
    convert_nifti(src, tmp_path / "flair", channel="flair")
    assert len(read_samples(tmp_path / "flair", "val")) == 1  # the validation case, without a mask


@pytest.mark.parametrize("text, problem", [
    ("{", "invalid JSON"),
    ('{"labels": {"0": "a", "2": "b"}}', "are not 0, 1, 2"),
    ('{"labels": {"0": "a", "1": "a"}}', "the same name"),
    ('{"labels": {"0": 3.5}}', "neither a name nor a label value"),
    ('{"modality": ["CT"]}', "must map channel numbers to names"),
    ('[1]', "not an object"),
])
def test_a_dataset_json_that_says_something_impossible_stops_the_conversion(tmp_path, text, problem):
    from fastdata.errors import ConvertError

    decathlon(tmp_path / "src", cases=1, test_cases=0)
    (tmp_path / "src" / "dataset.json").write_text(text)
    with pytest.raises(ConvertError, match=problem):
        convert_nifti(tmp_path / "src", tmp_path / "out")


def test_no_source_path_reaches_the_dataset_without_keep_phi(tmp_path):
    src = tmp_path / "src"
    save(src / "imagesTr" / "Smith_John.nii.gz", case(0)[0])
    save(src / "labelsTr" / "Smith_John.nii.gz", case(0)[1])
    save(src / "imagesTr" / "Doe_Jane.nii.gz", case(1)[0])  # rejected: no mask
    result = convert_nifti(src, tmp_path / "out")
    everything = b"".join(p.read_bytes() for p in (tmp_path / "out").iterdir())
    assert b"Smith" not in everything and b"Doe" not in everything
    assert "Smith_John" in result.private_report.read_text()
    kept = convert_nifti(src, tmp_path / "kept", keep_phi=True)
    assert kept.private_report is None
    ((meta),) = [load_volume(s)[1] for s in read_samples(tmp_path / "kept").values()]
    assert meta["source"] == "imagesTr/Smith_John.nii.gz" and meta["label"] == "labelsTr/Smith_John.nii.gz"


def test_a_header_declaring_too_many_voxels_is_rejected_before_its_voxels_are_read(tmp_path):
    save(tmp_path / "src" / "big.nii.gz", np.zeros((10, 10, 10), np.int16))
    save(tmp_path / "src" / "small.nii.gz", np.zeros((2, 2, 2), np.int16))
    reasons = reasons_by_path(convert_nifti(tmp_path / "src", tmp_path / "out", max_voxels=999))
    assert "the image holds 1000 voxels, more than --max-voxels 999" in reasons["big.nii.gz"]
    reasons = reasons_by_path(convert_nifti(tmp_path / "src", tmp_path / "out2", max_voxels=1000,
                                            spacing=(0.5, 0.5, 0.5)))
    assert "resampled to [0.5, 0.5, 0.5] mm the image would hold" in reasons["big.nii.gz"]


@pytest.mark.parametrize("field, value, problem", [
    ("channel", -1, "--channel must be a number in 0..9999 or a name"),
    ("channel", True, "--channel must be a number in 0..9999 or a name"),
    ("channel", "2x", "or a name that starts with a letter"),
    ("channel", "../t1", "or a name that starts with a letter"),
    ("modality", "C/T", "--modality must be a name"),
    ("spacing", (1.0, 0.0, 1.0), "--spacing must be three positive"),
    ("split", "a/b", "split"),
])
def test_options_are_refused_eagerly(field, value, problem):
    from converters.nifti import NiftiOptions

    with pytest.raises(ValueError, match=problem):
        NiftiOptions(**{field: value})


def test_the_cli_detects_nifti_and_takes_a_channel_by_name(tmp_path, capsys):
    from fastdata.cli import main as cli

    image, mask = case(0)
    for modality, value in (("flair", 1), ("t1", 2)):
        save(tmp_path / "src" / "P1" / f"P1_{modality}.nii.gz", np.full(image.shape, value, np.int16))
    save(tmp_path / "src" / "P1" / "P1_seg.nii.gz", mask)
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "out"), "--channel", "t1", "--modality", "MRI",
                "--salt", "s", "-j", "1", "--no-progress"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["kind"] == "nifti" and manifest["splits"]["train"]["stats"]["modality"] == {"MRI": 1}
    ((sample),) = read_samples(tmp_path / "out").values()
    arr, meta = load_volume(sample)
    assert int(arr.max()) == 2 and meta["channel"] == "t1" and meta["units"].startswith("stored values")
    assert cli(["info", str(tmp_path / "out")]) == 0
    assert "nifti" in capsys.readouterr().out


def test_case_names_ending_in_four_digits_are_cases_not_nnunet_channels(tmp_path):
    """AMOS names its cases amos_0001 in imagesTr and labelsTr; nnU-Net's single-channel files are NAME_0000 with
    masks NAME. Both convert, one case per image; only the second drops the _0000."""
    image, mask = case(0)  # labels 0, 1, 2
    for n in (1, 2, 5):
        save(tmp_path / "amos" / "imagesTr" / f"amos_{n:04d}.nii.gz", image)
        save(tmp_path / "amos" / "labelsTr" / f"amos_{n:04d}.nii.gz", mask)
    save(tmp_path / "amos" / "imagesTs" / "amos_0500.nii.gz", image)
    save(tmp_path / "amos" / "imagesTs" / "amos_0501.nii.gz", image)
    result = convert_nifti(tmp_path / "amos", tmp_path / "a")
    assert result.rejected == []
    assert len(volumes_by_source(tmp_path / "a", result)) == 3
    assert len(volumes_by_source(tmp_path / "a", result, "test")) == 2
    for n in range(3):
        save(tmp_path / "nnunet" / "imagesTr" / f"case_{n:03d}_0000.nii.gz", image)
        save(tmp_path / "nnunet" / "labelsTr" / f"case_{n:03d}.nii.gz", mask)
    result = convert_nifti(tmp_path / "nnunet", tmp_path / "b")
    got = volumes_by_source(tmp_path / "b", result)
    assert result.rejected == [] and len(got) == 3 and all(labels is not None for _, labels, _ in got.values())
    (tmp_path / "nnunet" / "dataset.json").write_text(json.dumps({"labels": {"background": 0, "a": 1}}))
    from fastdata.errors import ConvertError

    with pytest.raises(ConvertError, match=r"all 6 input\(s\) were rejected \(3 x mask value 2, but dataset.json "
                                           r"names 2 labels \(0..1\); 3 x the mask of a case that was rejected\)"):
        convert_nifti(tmp_path / "nnunet", tmp_path / "c")


def test_case_folders_check_masks_against_a_dataset_json_too(tmp_path):
    image, mask = case(0, shape=(6, 6, 4))
    save(tmp_path / "src" / "case_00000" / "imaging.nii.gz", image)
    save(tmp_path / "src" / "case_00000" / "segmentation.nii.gz", mask)
    save(tmp_path / "src" / "case_00001" / "imaging.nii.gz", image)
    save(tmp_path / "src" / "case_00001" / "segmentation.nii.gz", mask * 3)  # labels 0 and 3
    (tmp_path / "src" / "dataset.json").write_text(json.dumps({"labels": {"0": "bg", "1": "kidney", "2": "tumor"}}))
    result = convert_nifti(tmp_path / "src", tmp_path / "out")
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["classes"] == ["bg", "kidney", "tumor"]
    assert reasons_by_path(result) == {"case_00001/imaging.nii.gz": "case_00001/segmentation.nii.gz: mask value 3, "
                                                                    "but dataset.json names 3 labels (0..2)",
                                       "case_00001/segmentation.nii.gz": "the mask of a case that was rejected"}


def test_a_folder_of_several_masks_pairs_each_with_the_image_of_its_name(tmp_path):
    """LiTS ships `volume-N.nii` and `segmentation-N.nii` side by side in one folder."""
    from conftest_nifti import case as make_case

    src = tmp_path / "Training Batch 1"
    for n in (0, 1, 10):
        image, mask = make_case(n, shape=(6, 5, 4))
        save(src / f"volume-{n}.nii", image + n)
        save(src / f"segmentation-{n}.nii", mask)
    save(src / "liver.nii.gz", make_case(3, shape=(6, 5, 4))[0])
    save(src / "liver_seg.nii.gz", make_case(3, shape=(6, 5, 4))[1])
    save(src / "segmentation-7.nii", make_case(7, shape=(6, 5, 4))[1])  # no volume-7
    save(src / "volume-8.nii", make_case(8, shape=(6, 5, 4))[0])  # no segmentation-8
    result = convert_nifti(src, tmp_path / "out")
    got = volumes_by_source(tmp_path / "out", result)
    assert sorted(got) == ["liver.nii.gz", "volume-0.nii", "volume-1.nii", "volume-10.nii"]
    assert all(labels is not None for _, labels, _ in got.values())
    arr, _, _ = got["volume-10.nii"]
    np.testing.assert_array_equal(arr, zyx(make_case(10, shape=(6, 5, 4))[0] + 10))  # its own mask's volume
    assert set(reasons_by_path(result)) == {"segmentation-7.nii", "volume-8.nii"}
    assert all(r.startswith("not paired by name in a folder of 5 masks") for r in reasons_by_path(result).values())
