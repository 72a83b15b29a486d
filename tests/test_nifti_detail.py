"""The nifti kind word for word: a sample's whole json and the manifest's counts, a discovery's every work item and
rejection (with and without --keep-phi), every reason a damaged header gets, and the edges of resampling, the size
cap and the mask's type."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

nib = pytest.importorskip("nibabel")
pytest.importorskip("scipy")

from conftest_dicom import load_volume, read_samples, reasons_by_path  # noqa: E402
from conftest_nifti import AFFINE, case, convert_nifti, decathlon, load_mask, save, zyx  # noqa: E402

from converters.dicom.geometry import RejectSeries  # noqa: E402
from converters.nifti import NiftiOptions  # noqa: E402
from converters.nifti.case import convert_case  # noqa: E402
from converters.nifti.discover import CaseFiles, discover_nifti  # noqa: E402
from fastdata.errors import ConvertError  # noqa: E402


def test_a_sample_json_and_the_manifest_counts_word_for_word(tmp_path):
    decathlon(tmp_path / "src", cases=1, test_cases=0)
    result = convert_nifti(tmp_path / "src", tmp_path / "out", spacing=(2.5, 1.4, 1.6))
    ((sample),) = read_samples(tmp_path / "out").values()
    _, meta = load_volume(sample)
    names = reasons_by_path(result, key="source")
    assert names[meta["source"]] == "imagesTr/liver_0.nii.gz" and names[meta["label"]] == "labelsTr/liver_0.nii.gz"
    assert list(sample) == ["npy", "label.npy", "json"]  # the members in the kind's order
    assert sample["json"] == json.dumps(meta, sort_keys=True).encode()
    image = zyx(case(0)[0])
    assert meta == {
        "key": "00000000", "source": meta["source"], "label": meta["label"], "ndim": 3, "axes": "zyx",
        "shape": [8, 9, 10], "spacing": [2.5, 1.4, 1.6], "origin": [-100.0, -120.0, -300.0],
        "direction": [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], "original_shape": [8, 18, 20],
        "original_spacing": [2.5, 0.7, 0.8], "spatial_units": "mm", "resampled": True,
        "interpolation": "linear (scipy.ndimage.affine_transform, order=1); masks nearest (order=0)",
        "modality": "CT", "units": "HU", "dtype": "int16", "channel": None,
        "min": float(load_volume(sample)[0].min()), "max": float(load_volume(sample)[0].max()), "clipped_voxels": 0,
        "label_dtype": "uint8", "label_max": 2}
    assert load_volume(sample)[0][0, 0, 0] == image[0, 0, 0]  # voxel 0 keeps its place and value
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["splits"]["train"]["stats"] == {"volumes": 1, "voxels": 720, "clipped_voxels": 0,
                                                    "modality": {"CT": 1}, "dtype": {"int16": 1}, "masks": 1}
    assert manifest["extra"]["members"] == ["npy", "label.npy", "json"]


def test_a_float_image_without_a_mask_and_modality_counts_as_unknown(tmp_path):
    save(tmp_path / "src" / "a.nii.gz", np.linspace(0, 1, 60, dtype=np.float32).reshape(5, 4, 3))
    convert_nifti(tmp_path / "src", tmp_path / "out")
    ((sample),) = read_samples(tmp_path / "out").values()
    assert list(sample) == ["npy", "json"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["splits"]["train"]["stats"] == {"volumes": 1, "voxels": 60, "clipped_voxels": 0,
                                                    "modality": {"unknown": 1}, "dtype": {"float32": 1}, "masks": 0}
    meta = load_volume(sample)[1]
    assert (meta["modality"], meta["units"], meta["min"], meta["max"]) == (
        "", "stored values (scl_slope/scl_inter applied)", 0.0, 1.0)


def _decathlon_tree(root: Path) -> Path:
    image, mask = case(0, shape=(4, 4, 3))
    for n in range(2):
        for c in range(2):
            save(root / "imagesTr" / f"b_{n}_{c:04d}.nii.gz", image)
        save(root / "labelsTr" / f"b_{n}.nii.gz", mask)
    save(root / "imagesTr" / "c_0_0000.nii.gz", image)  # one channel of two: rejected without --channel
    save(root / "labelsTr" / "c_0.nii.gz", mask)
    save(root / "labelsTr" / "orphan.nii.gz", mask)
    save(root / "imagesTs" / "t_9_0000.nii.gz", image)
    save(root / "imagesTs" / "t_9_0001.nii.gz", image)
    (root / "extra").mkdir()
    (root / "extra" / "notes.txt").write_text("x")
    (root / "dataset.json").write_text(json.dumps({"labels": {"0": "bg", "1": "a", "2": "b"},
                                                   "channel_names": {"0": "T1", "1": "T2"}}))
    return root


def test_a_decathlon_discovery_item_by_item(tmp_path):
    src = _decathlon_tree(tmp_path / "src")
    found = discover_nifti(src, options=NiftiOptions(channel=1), private=False)
    assert (found.layout, found.classes) == ("decathlon", ("bg", "a", "b"))
    items = {split: [(it.split, it.rel, it.source, it.payload) for it in its] for split, its in found.splits.items()}

    def files(rel: str) -> tuple[str, str]:
        return str(src / rel), rel

    assert items == {
        "train": [("train", f"imagesTr/b_{n}_0001.nii.gz", str(src / f"imagesTr/b_{n}_0001.nii.gz"), CaseFiles(
            image=files(f"imagesTr/b_{n}_0001.nii.gz"), label=files(f"labelsTr/b_{n}.nii.gz"), axis=None, channel=1,
            modality="T2", classes=3)) for n in range(2)],
        "test": [("test", "imagesTs/t_9_0001.nii.gz", str(src / "imagesTs/t_9_0001.nii.gz"), CaseFiles(
            image=files("imagesTs/t_9_0001.nii.gz"), label=None, axis=None, channel=1, modality="T2", classes=3))]}
    assert [(r.split, r.source, r.reason) for r in found.rejected] == [  # dataset.json is no stray file
        ("train", "imagesTr/c_0_0000.nii.gz", "no channel file 0001 (--channel 1) for this case; it has 0000 (T1)"),
        ("train", "labelsTr/orphan.nii.gz", "a mask without an image of the same name in imagesTr"),
        ("", "extra/notes.txt", "not inside imagesTr, labelsTr, imagesTs or labelsTs")]
    again = discover_nifti(src, options=NiftiOptions(channel=1), private=False)
    assert again.identity == found.identity and [it.rel for it in found.splits["train"]] == [
        "imagesTr/b_0_0001.nii.gz", "imagesTr/b_1_0001.nii.gz"]
    assert found.identity[0] == ["train", "imagesTr/b_0_0001.nii.gz", os.path.getsize(src / "imagesTr/b_0_0001.nii.gz"),
                                 ["labelsTr/b_0.nii.gz", os.path.getsize(src / "labelsTr/b_0.nii.gz")]]
    assert found.identity[2][3] is None  # the test case has no mask


def test_a_changed_mask_is_another_dataset_for_a_rerun(tmp_path):
    src = _decathlon_tree(tmp_path / "src")
    convert_nifti(src, tmp_path / "out", channel=1)
    save(src / "labelsTr" / "b_0.nii.gz", np.zeros((4, 4, 3, 1), np.uint8)[..., 0] + 1)
    with pytest.raises(ConvertError, match="already holds a different dataset"):
        convert_nifti(src, tmp_path / "out", channel=1)


def test_a_missing_mask_is_named_only_with_keep_phi(tmp_path):
    image, mask = case(0, shape=(4, 4, 3))
    save(tmp_path / "imagesTr" / "Smith.nii.gz", image)
    save(tmp_path / "labelsTr" / "other.nii.gz", mask)
    reasons = {private: [r.reason for r in discover_nifti(tmp_path, options=NiftiOptions(), private=private).rejected]
               for private in (True, False)}
    assert reasons[True][0] == "no mask of the same name in labelsTr"
    assert reasons[False][0] == "no mask of the same name in labelsTr (labelsTr/Smith.nii.gz)"


def test_a_loose_discovery_item_by_item(tmp_path):
    image, mask = case(0, shape=(4, 4, 3))
    save(tmp_path / "train" / "k" / "imaging.nii.gz", image)
    save(tmp_path / "train" / "k" / "segmentation.nii.gz", mask)
    save(tmp_path / "val" / "v.nii", image)
    save(tmp_path / "stray.nii.gz", image)
    (tmp_path / "dataset.json").write_text(json.dumps({"modality": {"0": "CT", "2": "PET"}}))
    found = discover_nifti(tmp_path, options=NiftiOptions(channel=2), private=False)
    assert found.layout == "split/volume" and found.classes == ()
    assert [(it.split, it.rel, it.source, it.payload) for its in found.splits.values() for it in its] == [
        ("train", "train/k/imaging.nii.gz", str(tmp_path / "train/k/imaging.nii.gz"), CaseFiles(
            image=(str(tmp_path / "train/k/imaging.nii.gz"), "train/k/imaging.nii.gz"),
            label=(str(tmp_path / "train/k/segmentation.nii.gz"), "train/k/segmentation.nii.gz"), axis=2, channel=2,
            modality="PET", classes=0)),
        ("val", "val/v.nii", str(tmp_path / "val/v.nii"), CaseFiles(
            image=(str(tmp_path / "val/v.nii"), "val/v.nii"), label=None, axis=2, channel=2, modality="PET",
            classes=0))]
    assert [(r.split, r.source, r.reason) for r in found.rejected] == [
        ("", "stray.nii.gz", "not inside a split folder (train, val, test, or an alias: training, valid, validation, "
                             "testing)")]
    flat = discover_nifti(tmp_path / "val", options=NiftiOptions(split="test"), private=False)
    assert flat.layout == "volume" and [(it.split, it.rel) for it in flat.splits["test"]] == [("test", "v.nii")]
    assert flat.splits["test"][0].payload.modality == ""


def test_links_are_refused_with_no_follow_symlinks(tmp_path):
    save(tmp_path / "data" / "a.nii.gz", case(0, shape=(4, 4, 3))[0])
    (tmp_path / "src").mkdir()
    os.symlink(tmp_path / "data" / "a.nii.gz", tmp_path / "src" / "a.nii.gz")
    save(tmp_path / "src" / "b.nii.gz", case(1, shape=(4, 4, 3))[0])
    from converters import get_kind

    kind = get_kind("nifti")
    followed = kind.discover(tmp_path / "src", options=NiftiOptions(salt="s"))
    assert [it.rel for it in followed.splits["train"]] == ["a.nii.gz", "b.nii.gz"]
    refused = kind.discover(tmp_path / "src", options=NiftiOptions(salt="s"), follow_symlinks=False)
    assert [it.rel for it in refused.splits["train"]] == ["b.nii.gz"]
    assert [(r.source, r.reason) for r in refused.rejected] == [
        ("a.nii.gz", "symbolic link not followed (--no-follow-symlinks)")]


def _raw(path: Path, offset: int, fmt: str, value: object) -> None:
    data = bytearray(path.read_bytes())
    data[offset:offset + struct.calcsize(fmt)] = struct.pack(fmt, value)
    path.write_bytes(bytes(data))


def _reason(tmp_path: Path, image: Path, label: Path | None = None, **options: object) -> str:
    item = CaseFiles(image=(str(image), image.name), label=None if label is None else (str(label), label.name),
                     axis=options.pop("axis", None), channel=None, modality="", classes=int(options.pop("classes", 0)))
    with pytest.raises(RejectSeries) as caught:
        convert_case(item, NiftiOptions(**options))
    return str(caught.value)


def test_every_reason_a_damaged_header_gets(tmp_path):
    image = case(0, shape=(4, 4, 3))[0]
    two_d = save(tmp_path / "2d.nii", image[..., :1])
    _raw(two_d, 40, "<h", 2)  # dim[0] = 2: a 2D image
    assert _reason(tmp_path, two_d) == "2d.nii: an image of shape [4, 4]; volumes are 3D (or 4D with channels last)"
    five = save(tmp_path / "5d.nii", image[..., None, None].repeat(2, 4))
    assert _reason(tmp_path, five) == ("5d.nii: an image of shape [4, 4, 3, 1, 2]; volumes are 3D (or 4D with "
                                       "channels last)")
    nan = save(tmp_path / "nan.nii", image)
    _raw(nan, 292, "<f", float("nan"))  # srow_x[3]: the origin's x
    assert _reason(tmp_path, nan) == "nan.nii: the affine (sform/qform) is not finite"
    flat = save(tmp_path / "flat.nii", image, np.eye(4))
    _raw(flat, 300, "<f", 0.0)  # srow_y[1]: the j axis has no length
    assert _reason(tmp_path, flat) == "flat.nii: the affine gives voxel axes of length [1.0, 0.0, 1.0] mm"
    sheared = AFFINE.copy()
    sheared[0, 1] = 0.7 * 0.002  # a cosine of 0.002 between i and j
    assert _reason(tmp_path, save(tmp_path / "shear.nii", image, sheared)).startswith(
        "shear.nii: the affine is sheared (voxel axes not orthogonal, |cos| up to 0.0020); resample it to an "
        "orthogonal grid first")
    sheared[0, 1] = 0.7 * 0.0009  # within the tolerance: converted
    arr, _, _ = convert_case(CaseFiles(image=(str(save(tmp_path / "ok.nii", image, sheared)), "ok.nii"), label=None,
                                       axis=None, channel=None, modality="", classes=0), NiftiOptions())
    assert arr.shape == (3, 4, 4)
    (tmp_path / "text.nii").write_text("not an image")
    assert _reason(tmp_path, tmp_path / "text.nii") == "text.nii: not a readable NIfTI file (ImageFileError)"
    four = save(tmp_path / "4d.nii", np.stack([image, image], axis=-1))
    assert _reason(tmp_path, four) == ("4d.nii: a 4D image of 2 channels; fastdata volumes hold one channel: pick one "
                                       "with --channel C")
    assert _reason(tmp_path, four, axis=2) == "4d.nii: --channel 2, but the image has 2 channel(s)"
    rgb = tmp_path / "rgb.nii"
    nib.save(nib.Nifti1Image(np.zeros((4, 4, 3), dtype=[("R", "u1"), ("G", "u1"), ("B", "u1")]), np.eye(4)), rgb)
    assert _reason(tmp_path, rgb).startswith("rgb.nii: voxels of type [('R', 'u1'), ('G', 'u1'), ('B', 'u1')] and "
                                             "shape [4, 4, 3]; volumes hold one number per voxel")
    inf = save(tmp_path / "inf.nii", np.full((4, 4, 3), np.inf, np.float32))
    assert _reason(tmp_path, inf) == "inf.nii: 48 voxel(s) are NaN or infinite"


def test_every_reason_a_mask_gets(tmp_path):
    image, mask = case(0, shape=(4, 4, 3))
    img = save(tmp_path / "img.nii", image)
    two = save(tmp_path / "two.nii", np.stack([mask, mask], axis=-1))
    assert _reason(tmp_path, img, two) == "two.nii: a mask of 2 channels; a mask holds one label value per voxel"
    negative = save(tmp_path / "neg.nii", mask.astype(np.int16) - 1)  # this small mask is all 0: all -1 now
    assert _reason(tmp_path, img, negative) == "neg.nii: mask values must be whole numbers in 0..65535, found -1 .. -1"
    half = save(tmp_path / "half.nii", np.linspace(0, 0.5, 48, dtype=np.float32).reshape(4, 4, 3))
    assert _reason(tmp_path, img, half) == ("half.nii: mask values must be whole numbers in 0..65535, found 0.0 .. 0.5 "
                                            "or fractions")
    big = save(tmp_path / "big.nii", np.full((4, 4, 3), 70000, np.int32))
    assert _reason(tmp_path, img, big).endswith("found 70000 .. 70000")
    assert _reason(tmp_path, img, save(tmp_path / "m.nii", np.ones((4, 4, 3), np.uint8)), classes=1) == (
        "m.nii: mask value 1, but dataset.json names 1 labels (0..0)")
    arr, labels, _ = convert_case(CaseFiles(image=(str(img), "img.nii"), label=(str(tmp_path / "m.nii"), "m.nii"),
                                            axis=None, channel=None, modality="", classes=2), NiftiOptions())
    assert labels is not None and int(labels.max()) == 1  # below the number of labels: kept


@pytest.mark.parametrize("top, dtype", [(255, np.uint8), (256, np.uint16), (65535, np.uint16)])
def test_a_mask_is_uint8_up_to_255_labels_and_uint16_past(tmp_path, top, dtype):
    image = np.zeros((4, 4, 3), np.int16)
    mask = np.zeros((4, 4, 3), np.int32)
    mask[0, 0, 0] = top
    save(tmp_path / "imagesTr" / "a.nii.gz", image)
    save(tmp_path / "labelsTr" / "a.nii.gz", mask)
    convert_nifti(tmp_path, tmp_path / "out")
    ((sample),) = read_samples(tmp_path / "out").values()
    labels = load_mask(sample)
    assert labels.dtype == dtype and int(labels[0, 0, 0]) == top


def test_resampling_never_blends_two_labels_and_keeps_an_axis_of_one_voxel(tmp_path):
    image = np.zeros((8, 6, 1), np.int16)  # one slice
    mask = np.zeros((8, 6, 1), np.uint8)
    mask[4:] = 2  # labels 0 and 2 side by side along i: linear interpolation would make 1 at their border
    save(tmp_path / "imagesTr" / "a.nii.gz", image)
    save(tmp_path / "labelsTr" / "a.nii.gz", mask)
    result = convert_nifti(tmp_path, tmp_path / "out", spacing=(1.0, 0.3, 0.3))
    ((sample),) = read_samples(tmp_path / "out").values()
    arr, meta = load_volume(sample)
    labels = load_mask(sample)
    assert result.rejected == [] and set(np.unique(labels)) == {0, 2}
    assert meta["spacing"] == [2.5, 0.3, 0.3] and arr.shape[0] == 1  # the slice axis keeps its 2.5 mm


def test_the_size_cap_holds_at_its_value_and_says_the_memory(tmp_path):
    src = tmp_path / "src"
    save(src / "a.nii.gz", np.zeros((10, 10, 10), np.int16), np.eye(4))
    save(src / "small.nii.gz", np.zeros((2, 2, 2), np.int16), np.eye(4))
    convert_nifti(src, tmp_path / "exact", max_voxels=1000)  # 1000 voxels, cap 1000: converted
    assert len(read_samples(tmp_path / "exact")) == 2
    reasons = reasons_by_path(convert_nifti(src, tmp_path / "out", spacing=(0.09, 0.09, 0.09),
                                            max_voxels=1_030_300))
    assert reasons == {"a.nii.gz": "resampled to [0.09, 0.09, 0.09] mm the image would hold 1030301 voxels, more "
                                   "than --max-voxels 1030300 (about 12 MiB of memory to convert)"}
    convert_nifti(src, tmp_path / "fits", spacing=(0.09, 0.09, 0.09), max_voxels=1_030_301)
    assert len(read_samples(tmp_path / "fits")) == 2
