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
from converters.nifti.discover import SAME_NAME, CaseFiles, discover_nifti  # noqa: E402
from fastdata.errors import ConvertError  # noqa: E402


def _found(root: Path, **options: object):
    """The discovery of `root` with paths shown (--keep-phi's), links followed."""
    return discover_nifti(root, options=NiftiOptions(**options), follow_symlinks=True, private=False)


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
        "direction": [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], "orientation": "LPS",
        "stored_orientation": "LPS", "original_shape": [8, 18, 20],
        "original_spacing": [2.5, 0.7, 0.8], "spatial_units": "mm", "resampled": True,
        "interpolation": "linear (scipy.ndimage.affine_transform, order=1); masks nearest (order=0)",
        "modality": "CT", "units": "HU", "dtype": "int16", "channel": None,
        "min": float(load_volume(sample)[0].min()), "max": float(load_volume(sample)[0].max()), "clipped_voxels": 0,
        "label_dtype": "uint8", "label_max": 2}
    assert load_volume(sample)[0][0, 0, 0] == image[0, 0, 0]  # voxel 0 keeps its place and value
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    values, counts = np.unique(load_volume(sample)[0][load_mask(sample) > 0], return_counts=True)
    assert manifest["splits"]["train"]["stats"] == {"volumes": 1, "voxels": 720, "clipped_voxels": 0,
                                                    "modality": {"CT": 1}, "dtype": {"int16": 1}, "masks": 1,
                                                    "orientation": {"LPS": 1},
                                                    "foreground_values": {str(v): int(c) for v, c in
                                                                          zip(values, counts)}}
    assert manifest["extra"]["members"] == ["npy", "label.npy", "json"]


def test_a_float_image_without_a_mask_and_modality_counts_as_unknown(tmp_path):
    save(tmp_path / "src" / "a.nii.gz", np.linspace(0, 1, 60, dtype=np.float32).reshape(5, 4, 3))
    convert_nifti(tmp_path / "src", tmp_path / "out")
    ((sample),) = read_samples(tmp_path / "out").values()
    assert list(sample) == ["npy", "json"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["splits"]["train"]["stats"] == {"volumes": 1, "voxels": 60, "clipped_voxels": 0,
                                                    "modality": {"unknown": 1}, "dtype": {"float32": 1}, "masks": 0,
                                                    "orientation": {"LPS": 1}}
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
    found = _found(src, channel=1)
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
        ("train", "labelsTr/c_0.nii.gz", "the mask of a case that was rejected"),  # before, in no list at all
        ("train", "labelsTr/orphan.nii.gz", "a mask without an image of the same name in imagesTr"),
        ("", "extra/notes.txt", "not inside imagesTr, labelsTr, imagesTs or labelsTs")]
    again = _found(src, channel=1)
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
    reasons = {private: [r.reason for r in discover_nifti(tmp_path, options=NiftiOptions(), follow_symlinks=True,
                                                          private=private).rejected] for private in (True, False)}
    assert reasons[True][0] == "no mask of the same name in labelsTr"
    assert reasons[False][0] == "no mask of the same name in labelsTr (labelsTr/Smith.nii.gz)"


def test_a_loose_discovery_item_by_item(tmp_path):
    image, mask = case(0, shape=(4, 4, 3))
    save(tmp_path / "train" / "k" / "imaging.nii.gz", image)
    save(tmp_path / "train" / "k" / "segmentation.nii.gz", mask)
    save(tmp_path / "val" / "v.nii", image)
    save(tmp_path / "stray.nii.gz", image)
    (tmp_path / "dataset.json").write_text(json.dumps({"modality": {"0": "CT", "2": "PET"}}))
    found = _found(tmp_path, channel=2)
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
        ("", "stray.nii.gz", "not inside a split folder (train, val, test, "
                             "or an alias of theirs such as training, valid, validation, "
                             "testing)")]
    flat = _found(tmp_path / "val", split="test")
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
    assert _reason(tmp_path, four) == ("4d.nii: a 4D image of 2 channels; pick one with --channel C, or stack them "
                                       "all with --channel all")
    assert _reason(tmp_path, four, axis=2) == "4d.nii: --channel 2, but the image has 2 channel(s)"
    rgb = tmp_path / "rgb.nii"
    nib.save(nib.Nifti1Image(np.zeros((4, 4, 3), dtype=[("R", "u1"), ("G", "u1"), ("B", "u1")]), np.eye(4)), rgb)
    assert _reason(tmp_path, rgb).startswith("rgb.nii: voxels of type [('R', 'u1'), ('G', 'u1'), ('B', 'u1')] and "
                                             "shape [4, 4, 3]; volumes hold one number per voxel")
    inf = save(tmp_path / "inf.nii", np.full((4, 4, 3), np.inf, np.float32))
    assert _reason(tmp_path, inf) == "inf.nii: 48 voxel(s) are NaN or infinite"
    huge = np.full((4, 4, 3), 1.5, np.float64)
    huge[0, 0, :2] = (4e38, -1e300)  # finite as float64; infinite in the float32 a volume is stored as
    assert _reason(tmp_path, save(tmp_path / "huge.nii", huge)) == ("huge.nii: 2 voxel(s) beyond float32's range "
                                                                    "(|value| > 3.403e+38)")
    huge[0, 0, :2] = np.finfo(np.float32).max  # the largest float32 is kept
    arr, _, _ = convert_case(CaseFiles(image=(str(save(tmp_path / "edge.nii", huge)), "edge.nii"), label=None,
                                       axis=None, channel=None, modality="", classes=0), NiftiOptions())
    assert arr.dtype == np.float32 and np.isfinite(arr).all() and float(arr.max()) == np.finfo(np.float32).max


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


def _one(tmp_path: Path, name: str, **options: object) -> tuple[np.ndarray, dict]:
    convert_nifti(tmp_path / "src", tmp_path / name, **options)
    ((sample),) = read_samples(tmp_path / name).values()
    return load_volume(sample)


def test_a_grid_resampled_to_its_own_shape_still_says_resampled(tmp_path):
    save(tmp_path / "src" / "a.nii.gz", np.zeros((4, 4, 4), np.int16), np.eye(4))
    arr, meta = _one(tmp_path, "out", spacing=(0.999, 0.999, 0.999))
    assert arr.shape == (4, 4, 4) and meta["resampled"] is True and meta["spacing"] == [0.999] * 3
    assert _one(tmp_path, "same")[1]["resampled"] is False


def test_edges_of_the_values_a_volume_and_a_mask_keep(tmp_path):
    values = np.zeros((4, 4, 3), np.float32)
    values[0, 0, 0], values[1, 0, 0] = -32768.0, 32767.0  # whole numbers at int16's ends: int16
    save(tmp_path / "src" / "imagesTr" / "a.nii.gz", values)
    save(tmp_path / "src" / "labelsTr" / "a.nii.gz", np.eye(4, 3, dtype=np.float32)[None].repeat(4, 0))  # 0 and 1
    arr, meta = _one(tmp_path, "out")
    assert arr.dtype == np.int16 and (int(arr.min()), int(arr.max())) == (-32768, 32767) and meta["label_max"] == 1
    values[1, 0, 0] = 32768.0  # one past: float32, exactly
    save(tmp_path / "src" / "imagesTr" / "a.nii.gz", values)
    arr, meta = _one(tmp_path, "wide")
    assert arr.dtype == np.float32 and float(arr.max()) == 32768.0 and meta["clipped_voxels"] == 0


def test_4d_files_of_one_channel_and_the_cap_counts_one_channel(tmp_path):
    save(tmp_path / "src" / "one.nii.gz", np.full((4, 4, 3, 1), 3, np.int16))
    save(tmp_path / "src" / "two.nii.gz", np.stack([np.full((4, 4, 3), v, np.int16) for v in (5, 6)], axis=-1))
    convert_nifti(tmp_path / "src", tmp_path / "out", channel=0, max_voxels=48)  # 4 x 4 x 3 per channel
    got = sorted(int(load_volume(s)[0].max()) for s in read_samples(tmp_path / "out").values())
    assert got == [3, 5]
    (tmp_path / "src" / "two.nii.gz").unlink()
    assert int(_one(tmp_path, "plain")[0].max()) == 3  # a 4th axis of 1 needs no --channel


def test_voxel_sizes_are_checked_only_where_the_geometry_comes_from_them(tmp_path):
    image = np.zeros((4, 4, 3), np.int16)
    qform = nib.Nifti1Image(image, None)
    qform.set_qform(np.diag([0.5, 0.5, 0.25, 1.0]), code=1)  # below 1 mm: fine
    qform.set_sform(None, code=0)
    nib.save(qform, tmp_path / "src" / "q.nii") if (tmp_path / "src").mkdir() is None else None
    assert _one(tmp_path, "small")[1]["spacing"] == [0.25, 0.5, 0.5]
    _raw(tmp_path / "src" / "q.nii", 84, "<f", float("nan"))  # pixdim[2]
    with pytest.raises(ConvertError, match=r"voxel sizes \(pixdim\) \[0.5, nan, 0.25\] are not positive"):
        convert_nifti(tmp_path / "src", tmp_path / "nan")
    sform = save(tmp_path / "src" / "q.nii", image, np.diag([2.0, 2.0, 2.0, 1.0]))
    _raw(sform, 80, "<f", 0.0)  # pixdim[1] = 0, but the sform places the voxels: converted
    assert _one(tmp_path, "sform")[1]["spacing"] == [2.0, 2.0, 2.0]


def test_a_header_in_metres_places_the_origin_in_millimetres_and_writes_no_negative_zero(tmp_path):
    affine = np.array([[-0.001, 0, 0, 0.1], [0, -0.001, 0, 0.0], [0, 0, 0.002, -0.3], [0, 0, 0, 1.0]])
    save(tmp_path / "src" / "m.nii.gz", np.zeros((3, 3, 3), np.int16), affine, units="meter")
    convert_nifti(tmp_path / "src", tmp_path / "out")
    ((sample),) = read_samples(tmp_path / "out").values()
    meta = load_volume(sample)[1]
    assert meta["origin"] == pytest.approx([-100.0, 0.0, -300.0], abs=1e-4)  # the header's float32, in mm
    assert meta["direction"][2] == [1.0, 0.0, 0.0]
    assert b"-0.0" not in sample["json"]  # RAS to LPS negates zeros too


def test_nnunet_channels_must_run_from_0_and_need_their_names_when_several(tmp_path):
    image, mask = case(0, shape=(4, 4, 3))
    save(tmp_path / "a" / "imagesTr" / "b_0_0001.nii.gz", image)  # no _0000: not channel files, so no mask for it
    save(tmp_path / "a" / "labelsTr" / "b_0.nii.gz", mask)
    found = _found(tmp_path / "a")
    assert found.splits["train"] == [] and [(r.source, r.reason) for r in found.rejected] == [
        ("imagesTr/b_0_0001.nii.gz", "no mask of the same name in labelsTr (labelsTr/b_0_0001.nii.gz)"),
        ("labelsTr/b_0.nii.gz", "a mask without an image of the same name in imagesTr")]
    for c in range(3):  # case_0000..case_0002 with masks of the same names: cases, though dataset.json names 3
        save(tmp_path / "b" / "imagesTr" / f"case_{c:04d}.nii.gz", image)
        save(tmp_path / "b" / "labelsTr" / f"case_{c:04d}.nii.gz", mask)
    (tmp_path / "b" / "dataset.json").write_text(json.dumps({"channel_names": {"0": "a", "1": "b", "2": "c"}}))
    assert len(_found(tmp_path / "b").splits["train"]) == 3
    for c in range(2):  # x_0000, x_0001 without masks or channel names: two cases
        save(tmp_path / "c" / "imagesTr" / f"x_{c:04d}.nii.gz", image)
    assert len(_found(tmp_path / "c").splits["train"]) == 2
    (tmp_path / "c" / "dataset.json").write_text(json.dumps({"channel_names": {"0": "T1", "2": "T2"}}))
    found = _found(tmp_path / "c")
    assert found.splits["train"] == [] and found.rejected[0].reason.startswith(
        "a case of 2 channel files (0000 (T1), 0001); ")


@pytest.mark.parametrize("text, problem", [
    ('{"labels": {}}', "'labels' must be an object mapping label values to names, got {}"),
    ('{"labels": "liver"}', "'labels' must be an object mapping label values to names, got 'liver'"),
    ('{"labels": {"100000": "x", "0": "bg"}}', "label '100000': 'x' is neither a name nor a label value"),
    ('{"channel_names": {"x": "CT"}}', "'modality'/'channel_names' must map channel numbers to names"),
    ('{"modality": {"0": 1}}', "'modality'/'channel_names' must map channel numbers to names"),
])
def test_a_dataset_json_is_refused_naming_the_file_and_the_problem(tmp_path, text, problem):
    from converters.nifti.dataset_json import read_dataset_json

    (tmp_path / "dataset.json").write_text(text)
    with pytest.raises(ConvertError) as caught:
        read_dataset_json(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / 'dataset.json'}: ") and problem in str(caught.value)


def test_a_dataset_json_with_five_digit_labels_regions_or_too_many_bytes(tmp_path, monkeypatch, caplog):
    from converters.nifti import dataset_json

    (tmp_path / "dataset.json").write_text(json.dumps({"labels": {str(v): f"l{v}" for v in range(12346)}}))
    assert len(dataset_json.read_dataset_json(tmp_path).classes) == 12346  # "12345": five digits, a value
    (tmp_path / "dataset.json").write_text(json.dumps({"labels": {"background": 0, "tumour": [1, 2]}}))
    with caplog.at_level("WARNING", logger="converters.nifti.dataset_json"):
        assert dataset_json.read_dataset_json(tmp_path).classes == ()
    assert caplog.messages == [f"{tmp_path / 'dataset.json'} names regions (label 'tumour' is the values [1, 2]): "
                               "the dataset gets no class names"]
    (tmp_path / "dataset.json").write_text("[]")
    with pytest.raises(ConvertError, match=r"dataset.json holds a list, not an object"):
        dataset_json.read_dataset_json(tmp_path)
    monkeypatch.setattr(dataset_json, "MAX_BYTES", 2)
    (tmp_path / "dataset.json").write_text("{ }")
    with pytest.raises(ConvertError, match=r"dataset.json is larger than 2 bytes: not a dataset description"):
        dataset_json.read_dataset_json(tmp_path)
    (tmp_path / "dataset.json").write_text("{}")
    assert dataset_json.read_dataset_json(tmp_path) == dataset_json.DatasetInfo()  # 2 bytes: read


@pytest.mark.parametrize("field, value, problem", [
    ("channel", 10000, "--channel must be a number in 0..9999 or a name"),
    ("max_voxels", 0, "--max-voxels must be a positive whole number"),
    ("salt", 5, "salt must be a string"),
])
def test_options_refused_at_their_edges(field, value, problem):
    with pytest.raises((ValueError, TypeError), match=problem):
        NiftiOptions(**{field: value})
    assert NiftiOptions(channel=0).channel == 0 and NiftiOptions(channel=9999).channel == 9999


def test_the_processor_records_vanished_files_and_unexpected_errors(tmp_path, monkeypatch):
    from converters import get_kind
    from converters.nifti import case as case_module
    from converters.sample import Rejection, WorkItem

    image, mask = case(0, shape=(4, 4, 3))
    img, msk = save(tmp_path / "i.nii.gz", image), save(tmp_path / "m.nii.gz", mask)
    process = get_kind("nifti").processor(NiftiOptions())

    def item(label: Path) -> WorkItem:
        return WorkItem(split="val", rel="file-1", source=str(img), position=3, payload=CaseFiles(
            image=(str(img), "file-1"), label=(str(label), "file-2"), axis=None, channel=None, modality="", classes=0))

    mask_too = (("file-2", "the mask of a case that was rejected"),)  # listed with the case's rejection
    gone = Rejection("val", "file-1", "file vanished since discovery: file-2", mask_too)
    assert process(item(tmp_path / "gone.nii.gz")) == gone
    monkeypatch.setattr(case_module, "convert_case", lambda *a: 1 / 0)
    assert process(item(msk)) == Rejection("val", "file-1", "unexpected error: ZeroDivisionError", mask_too)
    img.unlink()
    assert process(item(msk)) == Rejection("val", "file-1", "file vanished since discovery: file-1", mask_too)
    assert gone.records() == [{"split": "val", "source": "file-1", "reason": gone.reason},
                              {"split": "val", "source": "file-2", "reason": "the mask of a case that was rejected"}]


def test_a_damaged_mask_is_named_in_its_reason(tmp_path):
    image, _ = case(0, shape=(4, 4, 3))
    img = save(tmp_path / "img.nii", image)
    (tmp_path / "text.nii").write_text("no mask")
    assert _reason(tmp_path, img, tmp_path / "text.nii") == "text.nii: not a readable NIfTI file (ImageFileError)"
    nan = save(tmp_path / "nan.nii", np.full((4, 4, 3), np.nan, np.float32))
    assert _reason(tmp_path, img, nan) == "nan.nii: 48 voxel(s) are NaN or infinite"
    moved = save(tmp_path / "moved.nii", np.zeros((4, 4, 3), np.uint8), np.diag([2.0, 2.0, 2.0, 1.0]))
    _raw(moved, 292, "<f", float("inf"))
    assert _reason(tmp_path, img, moved) == "moved.nii: the affine (sform/qform) is not finite"


def test_channel_names_are_what_file_names_add_to_what_they_share_with_the_mask(tmp_path):
    image, mask = case(0, shape=(4, 4, 3))
    for name in ("P_t1", "P_t2", "P_seg"):  # without the mask, t1 and t2 would share "P_t" and be named 1 and 2
        save(tmp_path / "train" / "P" / f"{name}.nii.gz", mask if name.endswith("seg") else image)
    for name in ("ct", "ct_pet"):  # the shared "ct" leaves "" (the whole name, then) and "_pet" (separators trimmed)
        save(tmp_path / "train" / "Q" / f"{name}.nii.gz", image)
    save(tmp_path / "train" / "Q" / "ct_seg.nii.gz", mask)
    found = _found(tmp_path, channel="t2")
    assert [(it.split, it.rel, it.payload.channel) for it in found.splits["train"]] == [
        ("train", "train/P/P_t2.nii.gz", "t2")]
    assert [r.reason for r in found.rejected][0] == "no channel 't2' (--channel) in this case; its channels are ct, pet"
    found = _found(tmp_path, channel="pet")
    assert [it.rel for it in found.splits["train"]] == ["train/Q/ct_pet.nii.gz"]


def test_the_kind_pseudonymizes_by_its_salt_and_keeps_paths_with_keep_phi(tmp_path, caplog):
    from converters import get_kind
    from converters.dicom.privacy import file_name

    image, _ = case(0, shape=(4, 4, 3))
    save(tmp_path / "imagesTr" / "Smith.nii.gz", image)
    save(tmp_path / "imagesTr" / "Doe.nii.gz", image)
    save(tmp_path / "labelsTr" / "Smith.nii.gz", np.zeros((4, 4, 3), np.uint8))
    kind = get_kind("nifti")
    for salt in ("a", "b"):
        options = NiftiOptions(salt=salt)
        found, paths = kind.pseudonymize(kind.discover(tmp_path, options=options), options)
        (it,) = found.splits["train"]
        assert it.rel == it.payload.image[1] == file_name("imagesTr/Smith.nii.gz", salt)
        assert it.payload.label[1] == file_name("labelsTr/Smith.nii.gz", salt)
        assert paths[it.rel] == "imagesTr/Smith.nii.gz" and found.rejected[0].source == file_name(
            "imagesTr/Doe.nii.gz", salt)
    with caplog.at_level("INFO", logger="converters.dicom.privacy"):
        kind.discover(tmp_path, options=NiftiOptions(salt="s"))
        assert caplog.messages == []
        kind.discover(tmp_path, options=NiftiOptions())
        assert "no --salt given" in caplog.text
    options = NiftiOptions(keep_phi=True)
    found = kind.discover(tmp_path, options=options)
    assert kind.pseudonymize(found, options) == (found, {})
    assert found.rejected[0].reason == "no mask of the same name in labelsTr (labelsTr/Doe.nii.gz)"


def test_a_task_of_test_images_alone_and_the_split_of_a_stray_in_labels(tmp_path):
    image, mask = case(0, shape=(4, 4, 3))
    save(tmp_path / "imagesTs" / "a_0000.nii.gz", image)
    (tmp_path / "dataset.json").write_text(json.dumps({"labels": {"0": "bg", "1": "x"}}))
    found = _found(tmp_path)
    assert list(found.splits) == ["test"] and found.classes == ()  # no mask: no class names
    assert found.splits["test"][0].payload.channel == 0  # nnU-Net's file of channel 0
    save(tmp_path / "imagesTr" / "b.nii.gz", image)
    save(tmp_path / "labelsTr" / "b.nii.gz", mask)
    (tmp_path / "labelsTr" / "notes.txt").write_text("x")
    found = _found(tmp_path)
    assert found.classes == ("bg", "x") and found.splits["train"][0].payload.channel is None
    assert [(r.split, r.source) for r in found.rejected] == [("train", "labelsTr/notes.txt")]


def test_a_nii_and_a_nii_gz_of_one_name_are_both_refused_not_one_silently_kept(tmp_path):
    image, mask = case(0, shape=(4, 4, 3))
    save(tmp_path / "imagesTr" / "a.nii.gz", image)
    save(tmp_path / "imagesTr" / "A.nii", image)
    save(tmp_path / "labelsTr" / "a.nii.gz", mask)
    save(tmp_path / "imagesTr" / "b.nii.gz", image)
    save(tmp_path / "labelsTr" / "b.nii.gz", mask)
    save(tmp_path / "labelsTr" / "b.nii", mask)
    found = _found(tmp_path)
    assert found.splits["train"] == []
    reason = f"2 volume files of this name in one folder ({SAME_NAME}): keep one"
    by_source = {r.source: r.reason for r in found.rejected}
    assert {k: by_source[k] for k in ("imagesTr/A.nii", "imagesTr/a.nii.gz", "labelsTr/b.nii", "labelsTr/b.nii.gz")} \
        == dict.fromkeys(("imagesTr/A.nii", "imagesTr/a.nii.gz", "labelsTr/b.nii", "labelsTr/b.nii.gz"), reason)
    assert by_source["imagesTr/b.nii.gz"] == "no mask of the same name in labelsTr (labelsTr/b.nii.gz)"
    assert by_source["labelsTr/a.nii.gz"] == "a mask without an image of the same name in imagesTr"
    assert len(by_source) == 6


def test_pairing_by_name_keeps_only_one_to_one_pairs():
    from converters.nifti.case_folders import pair_files

    def f(name: str) -> tuple[str, str]:
        return f"/src/d/{name}", f"d/{name}"

    images = [f("a_ct.nii"), f("a_pet.nii"), f("b.nii"), f("Volume-3.nii.gz")]
    masks = [f("a_seg.nii"), f("b_seg.nii"), f("SEGMENTATION-3.nii.gz"), f("c-label.nii")]
    pairs, rest = pair_files(images, masks)
    assert pairs == [(f("Volume-3.nii.gz"), f("SEGMENTATION-3.nii.gz")), (f("b.nii"), f("b_seg.nii"))]
    assert rest == [f("a_ct.nii"), f("a_pet.nii"), f("a_seg.nii"), f("c-label.nii")]  # "a" names two images
    assert pair_files([f("Liver.nii")], [f("liver_SEG.nii")])[0] == [(f("Liver.nii"), f("liver_SEG.nii"))]  # any case
    pairs, rest = pair_files([f("x.nii")], [f("x_seg.nii"), f("x-mask.nii")])  # two masks claim one image
    assert pairs == [] and rest == [f("x-mask.nii"), f("x.nii"), f("x_seg.nii")]


def test_a_file_linked_from_a_stray_folder_is_still_taken_in_its_split(tmp_path):
    """The stray folder was walked with the discovery's own walk, before the split folders: the file it links to
    was then 'reached through a link, taken once' in train, and rejected in both places."""
    save(tmp_path / "train" / "a.nii.gz", case(0, shape=(4, 4, 3))[0])
    (tmp_path / "stray").mkdir()
    os.symlink(tmp_path / "train" / "a.nii.gz", tmp_path / "stray" / "link.nii.gz")
    found = _found(tmp_path)
    assert [it.rel for it in found.splits["train"]] == ["train/a.nii.gz"]
    assert [(r.source, r.reason) for r in found.rejected] == [
        ("stray/link.nii.gz", "not inside a split folder (train, val, test, "
                              "or an alias of theirs such as training, valid, validation, "
                              "testing)")]
