"""--resample-channels: a case's channel file or mask off its first channel's grid is sampled onto that grid.

The first channel (a CT) lies on conftest_nifti's AFFINE; the second (a PET) on a grid of twice the spacing in x and
y, its x axis reversed, that reaches only slices 3.. of the CT. Its values are a linear function of the patient
position, which linear interpolation reproduces exactly, so every voxel's expected value is that function at the
voxel's position (computed here from the nibabel affines and the sample json's geometry, not from the converter's
matrices), or the PET's smallest value outside its extent. The grids are placed so that no CT voxel lies halfway
between two PET voxels: the nearest PET voxel of a mask is never a tie."""

from __future__ import annotations

import json
from argparse import Namespace

import numpy as np
import pytest

pytest.importorskip("nibabel")
pytest.importorskip("scipy")

from conftest_dicom import load_volume, read_samples  # noqa: E402
from conftest_nifti import AFFINE, case, convert_nifti, load_mask, save, zyx  # noqa: E402

from fastdata.errors import ConvertError  # noqa: E402

PET_AFFINE = np.array([[1.6, 0.0, 0.0, 84.4], [0.0, -1.4, 0.0, 120.35], [0.0, 0.0, 2.5, -292.5], [0.0, 0.0, 0.0, 1.0]])
PET_SHAPE = (12, 10, 7)  # i, j, k: covers the CT in x and y, slices 3..7 of its 8 in z (and two past it)
OUTSIDE_SLICES = 3


def activity(ras: np.ndarray) -> np.ndarray:
    """The PET's values: a linear function of the RAS position (..., 3) in mm."""
    return 2.0 * ras[..., 0] + 3.0 * ras[..., 1] - 1.5 * ras[..., 2] + 7.0


def _positions(affine: np.ndarray, shape: tuple[int, int, int]) -> np.ndarray:
    """RAS positions (i, j, k, 3) of the voxels of a nibabel image."""
    ijk = np.stack(np.meshgrid(*(np.arange(n) for n in shape), indexing="ij"), axis=-1).astype(np.float64)
    return ijk @ affine[:3, :3].T + affine[:3, 3]


def _pet_mask() -> np.ndarray:
    mask = np.zeros(PET_SHAPE, np.uint8)
    mask[3:7, 2:6, 1:5] = 1
    mask[4:6, 3:5, 2:3] = 2
    mask[3, 2, 1:5] = 2  # on the edge, beside 0: linear sampling would blend it away at the corner
    return mask


def _studies(root, cases=2, *, pet_affine=PET_AFFINE, seg_on_pet=True):
    """Case folders of CT.nii.gz (int16, on AFFINE), PET.nii.gz (float32, on `pet_affine`) and SEG.nii.gz (on the
    PET's grid, or on the CT's)."""
    made = {}
    pet = activity(_positions(pet_affine, PET_SHAPE)).astype(np.float32)
    for n in range(cases):
        image, mask = case(n)
        folder = root / f"CHUM-{n:03d}"
        save(folder / "CT.nii.gz", image)
        save(folder / "PET.nii.gz", pet, pet_affine)
        save(folder / "SEG.nii.gz", *((_pet_mask(), pet_affine) if seg_on_pet else (mask,)))
        made[folder.name] = image
    return made


def _samples(dst):
    return {load_volume(s)[1]["source"].split("/")[0]: s for s in read_samples(dst).values()}


def _nearest_pet_mask() -> np.ndarray:
    """The PET mask at each CT voxel (i, j, k) by the nearest PET voxel; 0 off the PET's extent."""
    index = (_positions(AFFINE, (20, 18, 8)) - PET_AFFINE[:3, 3]) @ np.linalg.inv(PET_AFFINE[:3, :3]).T
    frac = np.abs(index - np.floor(index) - 0.5)
    assert frac.min() > 0.2  # no ties
    near = np.rint(index).astype(int)
    inside = np.all((near >= 0) & (near < PET_SHAPE), axis=-1)
    out = np.zeros((20, 18, 8), np.uint8)
    out[inside] = _pet_mask()[tuple(near[inside].T)]
    return out


@pytest.fixture(scope="module")
def stacked(tmp_path_factory):
    root = tmp_path_factory.mktemp("grids")
    made = _studies(root / "src")
    result = convert_nifti(root / "src", root / "out", channel="CT,PET", resample_channels=True, keep_phi=True)
    return root, made, result


def test_the_pet_is_sampled_at_the_cts_voxels_by_position(stacked):
    root, made, result = stacked
    assert result.rejected == []
    inside = _positions(AFFINE, (20, 18, 8))[..., OUTSIDE_SLICES:, :]
    for name, image in made.items():
        arr, meta = load_volume(_samples(root / "out")[name])
        assert arr.shape == (2, 8, 18, 20) and arr.dtype == np.float32  # the PET's values are not whole
        np.testing.assert_array_equal(arr[0], zyx(image).astype(np.float32))  # the CT as it is alone
        np.testing.assert_allclose(arr[1, OUTSIDE_SLICES:], zyx(activity(inside)), atol=2e-3)
        fill = float(activity(_positions(PET_AFFINE, PET_SHAPE)).astype(np.float32).min())
        np.testing.assert_array_equal(arr[1, :OUTSIDE_SLICES], np.full((OUTSIDE_SLICES, 18, 20), fill, np.float32))
        assert meta["channels"] == ["CT", "PET"] and meta["shape"] == [8, 18, 20]
        pet, seg = meta["onto_grid"]
        assert pet == {"channel": "PET", "original_shape": [7, 10, 12], "original_spacing": [2.5, 1.4, 1.6],
                       "orientation": "RPS", "outside_voxels": OUTSIDE_SLICES * 18 * 20,
                       "outside_value": pytest.approx(fill, abs=1e-3)}
        assert seg["label"] == f"{name}/SEG.nii.gz" and seg["outside_voxels"] == OUTSIDE_SLICES * 18 * 20
        assert meta["label"] == f"{name}/SEG.nii.gz" and meta["label_max"] == 2


def test_the_mask_on_the_pets_grid_takes_its_nearest_voxel(stacked):
    root, made, _ = stacked
    expected = zyx(_nearest_pet_mask())
    assert expected.max() == 2 and np.count_nonzero(expected) > 50
    for name in made:
        labels = load_mask(_samples(root / "out")[name])
        assert labels.dtype == np.uint8
        np.testing.assert_array_equal(labels, expected)


def test_the_manifest_says_how_channels_meet_the_grid(stacked):
    root, _, _ = stacked
    manifest = json.loads((root / "out" / "manifest.json").read_text())
    assert "--resample-channels" in manifest["preprocessing"]["channel_grid"]
    assert manifest["extra"]["channels"] == ["CT", "PET"]


def test_without_the_flag_the_case_is_rejected_and_says_which_flag(stacked):
    root, _, _ = stacked
    with pytest.raises(ConvertError, match=r"all 6 input\(s\) were rejected \(2 x the channel's grid \(shape \[7, 10, "
                       r"12\], spacing \[2.5, 1.4, 1.6\] mm, origin \[-84.4, -120.35, -292.5\]\) is not its case's "
                       r"first channel's .*--resample-channels samples it onto that grid; 2 x a channel file of a case "
                       r"that was rejected; 2 x the mask of a case that was rejected\)"):
        convert_nifti(root / "src", root / "strict", channel="CT,PET", keep_phi=True)


def test_orientation_and_spacing_sample_the_pet_once_onto_the_final_grid(tmp_path):
    """With --orientation RAS and --spacing 5,0.7,0.8 the PET is sampled at the final grid's voxels, whose positions
    the json's origin, direction and spacing give (LPS)."""
    _studies(tmp_path / "src", cases=1)
    result = convert_nifti(tmp_path / "src", tmp_path / "out", channel="CT,PET", resample_channels=True,
                           keep_phi=True, orientation="RAS", spacing=(5.0, 0.7, 0.8))
    assert result.rejected == []
    (sample,) = read_samples(tmp_path / "out").values()
    arr, meta = load_volume(sample)
    assert meta["orientation"] == "RAS" and meta["spacing"] == [5.0, 0.7, 0.8] and arr.shape == (2, 4, 18, 20)
    zyx_index = np.stack(np.meshgrid(*(np.arange(n) for n in arr.shape[1:]), indexing="ij"), axis=-1)
    lps = meta["origin"] + (zyx_index * meta["spacing"]) @ np.asarray(meta["direction"])
    ras = lps * [-1.0, -1.0, 1.0]
    reached = ras[..., 2] >= PET_AFFINE[2, 3] - 1e-6  # the PET's first slice
    assert 0 < reached.sum() < reached.size
    np.testing.assert_allclose(arr[1][reached], activity(ras[reached]), atol=2e-3)
    assert meta["onto_grid"][0]["outside_voxels"] == int((~reached).sum())
    labels = load_mask(sample)
    assert labels.shape == (4, 18, 20) and not labels[~reached].any() and labels[reached].any()


def test_a_pet_stored_with_a_fourth_axis_of_one_is_sampled_as_a_3d_one(tmp_path):
    """Some exporters write a 3D volume as (i, j, k, 1): it is read, placed and sampled as the 3D one."""
    _studies(tmp_path / "src", cases=1, seg_on_pet=False)
    pet = activity(_positions(PET_AFFINE, PET_SHAPE)).astype(np.float32)
    save(tmp_path / "src" / "CHUM-000" / "PET.nii.gz", pet[..., None], PET_AFFINE)
    convert_nifti(tmp_path / "src", tmp_path / "out", channel="CT,PET", resample_channels=True, keep_phi=True)
    (sample,) = read_samples(tmp_path / "out").values()
    arr, meta = load_volume(sample)
    inside = _positions(AFFINE, (20, 18, 8))[..., OUTSIDE_SLICES:, :]
    np.testing.assert_allclose(arr[1, OUTSIDE_SLICES:], zyx(activity(inside)), atol=2e-3)
    assert meta["onto_grid"][0]["outside_voxels"] == OUTSIDE_SLICES * 18 * 20


def test_a_mask_the_grid_never_reaches_rejects_its_case_naming_the_mask(tmp_path):
    far = PET_AFFINE.copy()
    far[2, 3] += 500.0
    _studies(tmp_path / "src", cases=1, pet_affine=far)
    save(tmp_path / "src" / "CHUM-000" / "PET.nii.gz", activity(_positions(PET_AFFINE, PET_SHAPE)).astype(np.float32),
         PET_AFFINE)
    with pytest.raises(ConvertError, match=r"\(1 x no voxel of its case's grid lies within this mask's extent; 1 x a "
                                           r"channel file of a case that was rejected; 1 x the mask of a case"):
        convert_nifti(tmp_path / "src", tmp_path / "out", channel="CT,PET", resample_channels=True, keep_phi=True)


def test_a_pet_the_grid_never_reaches_rejects_its_case(tmp_path):
    far = PET_AFFINE.copy()
    far[2, 3] += 500.0
    _studies(tmp_path / "src", cases=1, pet_affine=far, seg_on_pet=False)
    with pytest.raises(ConvertError, match=r"\(1 x no voxel of its case's grid lies within this channel's extent; "
                                           r"1 x a channel file of a case that was rejected; 1 x the mask of a case"):
        convert_nifti(tmp_path / "src", tmp_path / "out", channel="CT,PET", resample_channels=True, keep_phi=True)


def test_a_mask_on_the_cts_grid_is_used_as_it_is_and_channels_of_whole_values_stay_int16(tmp_path):
    """The SEG on the CT's grid is the CT's mask voxel for voxel; a PET of whole values makes an int16 stack (the
    sampled values rounded)."""
    made = _studies(tmp_path / "src", cases=1, seg_on_pet=False)
    folder = tmp_path / "src" / "CHUM-000"
    whole = np.rint(activity(_positions(PET_AFFINE, PET_SHAPE))).astype(np.int16)
    save(folder / "PET.nii.gz", whole, PET_AFFINE)
    convert_nifti(tmp_path / "src", tmp_path / "out", channel="CT,PET", resample_channels=True, keep_phi=True)
    (sample,) = read_samples(tmp_path / "out").values()
    arr, meta = load_volume(sample)
    assert arr.dtype == np.int16 and [e.get("channel") for e in meta["onto_grid"]] == ["PET"]
    np.testing.assert_array_equal(arr[0], zyx(made["CHUM-000"]))
    np.testing.assert_array_equal(load_mask(sample), zyx(case(0)[1]))
    inside = _positions(AFFINE, (20, 18, 8))[..., OUTSIDE_SLICES:, :]
    assert np.abs(arr[1, OUTSIDE_SLICES:] - zyx(activity(inside))).max() <= 1.0  # rounded after sampling


def test_an_off_grid_channel_keeps_its_place_and_a_finer_mask_is_sampled_onto_a_coarser_first_channel(tmp_path):
    """`--channel CT,PET,CTB`: the PET (sampled) between two channels on the CT's grid. `--channel PET,CT`: the PET's
    coarser grid is the stack's, the CT and its SEG (more voxels than that grid) sampled onto it."""
    made = _studies(tmp_path / "src", cases=1, seg_on_pet=False)
    image = made["CHUM-000"]
    save(tmp_path / "src" / "CHUM-000" / "CTB.nii.gz", image * 2)
    convert_nifti(tmp_path / "src", tmp_path / "three", channel="CT,PET,CTB", resample_channels=True, keep_phi=True)
    (sample,) = read_samples(tmp_path / "three").values()
    arr, meta = load_volume(sample)
    assert meta["channels"] == ["CT", "PET", "CTB"] and [e["channel"] for e in meta["onto_grid"]] == ["PET"]
    np.testing.assert_array_equal(arr[2], zyx(image * 2).astype(np.float32))
    inside = _positions(AFFINE, (20, 18, 8))[..., OUTSIDE_SLICES:, :]
    np.testing.assert_allclose(arr[1, OUTSIDE_SLICES:], zyx(activity(inside)), atol=2e-3)
    result = convert_nifti(tmp_path / "src", tmp_path / "coarse", channel="PET,CT", resample_channels=True,
                           keep_phi=True)
    assert result.rejected == []
    (sample,) = read_samples(tmp_path / "coarse").values()
    arr, meta = load_volume(sample)
    assert arr.shape == (2, 7, 10, 12) and meta["spacing"] == [2.5, 1.4, 1.6]
    np.testing.assert_allclose(arr[0], zyx(activity(_positions(PET_AFFINE, PET_SHAPE))), atol=2e-3)
    labels = load_mask(sample)
    assert labels.shape == (7, 10, 12) and set(np.unique(labels)) == {0, 1, 2}
    assert [e.get("label") for e in meta["onto_grid"]] == [None, "CHUM-000/SEG.nii.gz"]


def test_max_voxels_counts_every_sampled_channel_and_bounds_a_mask_off_the_grid(tmp_path):
    """The stack holds a grid's worth of voxels per channel, the sampled ones too (2 x 2,880 here, the files 3,720);
    a mask off the grid is no longer bounded by it and is checked on its header (40 x 36 x 16 = 23,040 voxels)."""
    _studies(tmp_path / "src", cases=1, seg_on_pet=False)
    with pytest.raises(ConvertError, match=r"\(1 x resampled to \[2.5, 0.7, 0.8\] mm the image would hold 5760 "
                                           r"voxels, more than --max-voxels 5000"):
        convert_nifti(tmp_path / "src", tmp_path / "stack", channel="CT,PET", resample_channels=True, keep_phi=True,
                      max_voxels=5000)
    fine = AFFINE.copy()
    fine[:3, :3] /= 2
    save(tmp_path / "src" / "CHUM-000" / "SEG.nii.gz", np.ones((40, 36, 16), np.uint8), fine)
    with pytest.raises(ConvertError, match=r"\(1 x the mask holds 23040 voxels, more than --max-voxels 10000"):
        convert_nifti(tmp_path / "src", tmp_path / "mask", channel="CT,PET", resample_channels=True, keep_phi=True,
                      max_voxels=10_000)
    result = convert_nifti(tmp_path / "src", tmp_path / "out", channel="CT,PET", resample_channels=True,
                           keep_phi=True, max_voxels=30_000)
    assert result.rejected == []
    (sample,) = read_samples(tmp_path / "out").values()
    assert load_mask(sample).all()  # the fine mask covers the CT's grid


def test_the_flag_reaches_the_options_and_is_checked():
    from converters import get_kind
    from converters.nifti.options import NiftiOptions
    from fastdata.cli import build_parser

    args = build_parser().parse_args(["convert", "src", "dst", "--kind", "nifti", "--resample-channels"])
    assert get_kind("nifti").options_from_args(args).resample_channels is True
    args = build_parser().parse_args(["convert", "src", "dst", "--kind", "nifti"])
    assert get_kind("nifti").options_from_args(args).resample_channels is False
    with pytest.raises(ValueError, match="resample_channels must be True or False"):
        NiftiOptions(resample_channels="yes")  # type: ignore[arg-type]
    assert isinstance(args, Namespace)


def _hecktor(root, cases=2):
    """HECKTOR 2022's layout: imagesTr/CHUM-00N__CT.nii.gz (on AFFINE) and __PT.nii.gz (on the PET's grid), the
    mask labelsTr/CHUM-00N.nii.gz on the CT's grid."""
    made = {}
    pet = activity(_positions(PET_AFFINE, PET_SHAPE)).astype(np.float32)
    for n in range(cases):
        image, mask = case(n)
        name = f"CHUM-{n + 1:03d}"
        save(root / "imagesTr" / f"{name}__CT.nii.gz", image)
        save(root / "imagesTr" / f"{name}__PT.nii.gz", pet, PET_AFFINE)
        save(root / "labelsTr" / f"{name}.nii.gz", mask)
        made[name] = (image, mask)
    return made


def test_hecktors_named_channel_files_stack_with_their_mask(tmp_path):
    made = _hecktor(tmp_path / "src")
    result = convert_nifti(tmp_path / "src", tmp_path / "out", channel="CT,PT", resample_channels=True,
                           keep_phi=True)
    assert result.rejected == []
    samples = {load_volume(s)[1]["source"]: s for s in read_samples(tmp_path / "out").values()}
    assert sorted(samples) == [f"imagesTr/{name}__CT.nii.gz" for name in sorted(made)]
    inside = _positions(AFFINE, (20, 18, 8))[..., OUTSIDE_SLICES:, :]
    for name, (image, mask) in made.items():
        arr, meta = load_volume(samples[f"imagesTr/{name}__CT.nii.gz"])
        assert meta["channels"] == ["CT", "PT"] and meta["channel"] == "CT,PT"
        np.testing.assert_array_equal(arr[0], zyx(image).astype(np.float32))
        np.testing.assert_allclose(arr[1, OUTSIDE_SLICES:], zyx(activity(inside)), atol=2e-3)
        np.testing.assert_array_equal(load_mask(samples[f"imagesTr/{name}__CT.nii.gz"]), zyx(mask))
        assert meta["label"] == f"labelsTr/{name}.nii.gz"
    every = convert_nifti(tmp_path / "src", tmp_path / "all", channel="all", resample_channels=True, keep_phi=True)
    assert every.rejected == []
    assert {load_volume(s)[1]["channels"][1] for s in read_samples(tmp_path / "all").values()} == {"PT"}
    alone = convert_nifti(tmp_path / "src", tmp_path / "ct", channel="CT", keep_phi=True)
    assert alone.rejected == []
    for s in read_samples(tmp_path / "ct").values():
        arr, meta = load_volume(s)
        assert arr.shape == (8, 18, 20) and meta["channel"] == "CT" and "channels" not in meta


def test_hecktor_cases_say_which_channel_to_take(tmp_path):
    made = _hecktor(tmp_path / "src")
    first, second = sorted(made)
    (tmp_path / "src" / "imagesTr" / f"{second}__PT.nii.gz").unlink()
    result = convert_nifti(tmp_path / "src", tmp_path / "none", keep_phi=True)  # the second: its CT alone
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        f"imagesTr/{first}__CT.nii.gz": "a case of 2 channel files (CT, PT); pick one by name with --channel NAME, "
                                        "stack some with --channel NAME,NAME or all of them with --channel all",
        f"imagesTr/{first}__PT.nii.gz": "a channel file of a case that was rejected",
        f"labelsTr/{first}.nii.gz": "the mask of a case that was rejected"}
    result = convert_nifti(tmp_path / "src", tmp_path / "short", channel="CT,PT", resample_channels=True,
                           keep_phi=True)
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        f"imagesTr/{second}__CT.nii.gz": "no channel PT (--channel CT,PT) in this case; its channels are CT",
        f"labelsTr/{second}.nii.gz": "the mask of a case that was rejected"}
    (tmp_path / "src" / "dataset.json").write_text(json.dumps({"labels": {"0": "background", "1": "GTVp"}}))
    (tmp_path / "src" / "labelsTr" / f"{second}.nii.gz").unlink()
    with pytest.raises(ConvertError) as caught:
        convert_nifti(tmp_path / "src", tmp_path / "labels", channel="CT", keep_phi=True)
    assert ("1 x mask value 2, but dataset.json names 2 labels (0..1)" in str(caught.value)
            and "1 x no mask of the same name in labelsTr (labelsTr/CHUM-002.nii.gz)" in str(caught.value))
    from converters.nifti.named_files import Choice, choose

    files = {"CT": ("/a", "a__CT.nii.gz"), "PT": ("/b", "a__PT.nii.gz")}
    assert choose(files, None) == ("a case of 2 channel files (CT, PT); pick one by name with --channel NAME, stack "
                                   "some with --channel NAME,NAME or all of them with --channel all")
    assert choose(files, 0) == ("the channels of this case are named (CT, PT), not numbered: pick one with "
                                "--channel NAME")
    assert choose(files, "MR") == "no channel MR (--channel MR) in this case; its channels are CT, PT"
    assert choose(files, "MR,CT,US") == "no channel MR, US (--channel MR,CT,US) in this case; its channels are CT, PT"
    assert choose(files, "PT").files == (files["PT"],) and not choose(files, "PT").stacked
    assert choose(files, "PT,CT").names == ("PT", "CT")
    assert choose({"PT": files["PT"], "CT": files["CT"]}, "all").names == ("CT", "PT")
    assert choose({"PT": files["PT"]}, "all") == Choice("all", (files["PT"],), ("PT",))
    assert choose({"CT": files["CT"]}, None).names == ("CT",)


def test_names_that_are_not_all_case_and_channel_stay_whole_cases(tmp_path):
    """A file of another name among them (or masks named after no case) keeps the layout's whole cases: liver_0
    with labelsTr/liver_0."""
    from converters.nifti.named_files import named_cases

    assert named_cases([("/x", "imagesTr/a__CT.nii.gz"), ("/y", "imagesTr/b.nii.gz")], set()) is None
    assert named_cases([("/x", "imagesTr/a__CT.nii.gz")], {"a__CT"}) is None
    assert named_cases([("/x", "imagesTr/a__CT.nii.gz")], {"a"}) == {"a": {"CT": ("/x", "imagesTr/a__CT.nii.gz")}}
    assert named_cases([("/x", "imagesTr/a__1CT.nii.gz")], set()) is None  # a channel's name starts with a letter
    image, mask = case(0)
    save(tmp_path / "src" / "imagesTr" / "liver__0.nii.gz", image)
    save(tmp_path / "src" / "labelsTr" / "liver__0.nii.gz", mask)
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert result.rejected == [] and len(read_samples(tmp_path / "out")) == 1


def test_a_pet_whose_axes_are_turned_is_sampled_by_position(tmp_path):
    """The PET's first axis runs along -y and its second along +x (scipy's full matrix, not its diagonal path)."""
    turned = np.array([[0.0, 1.6, 0.0, 84.4], [-1.4, 0.0, 0.0, 120.35], [0.0, 0.0, 2.5, -292.5], [0.0, 0.0, 0.0, 1.0]])
    shape = (10, 12, 7)
    made = _studies(tmp_path / "src", cases=1, seg_on_pet=False)
    save(tmp_path / "src" / "CHUM-000" / "PET.nii.gz", activity(_positions(turned, shape)).astype(np.float32), turned)
    convert_nifti(tmp_path / "src", tmp_path / "out", channel="CT,PET", resample_channels=True, keep_phi=True)
    (sample,) = read_samples(tmp_path / "out").values()
    arr, meta = load_volume(sample)
    inside = _positions(AFFINE, (20, 18, 8))[..., OUTSIDE_SLICES:, :]
    np.testing.assert_array_equal(arr[0], zyx(made["CHUM-000"]).astype(np.float32))
    np.testing.assert_allclose(arr[1, OUTSIDE_SLICES:], zyx(activity(inside)), atol=2e-3)
    assert meta["onto_grid"][0]["outside_voxels"] == OUTSIDE_SLICES * 18 * 20
    assert meta["onto_grid"][0]["original_shape"] == [7, 12, 10]
