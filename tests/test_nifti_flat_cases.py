"""Cases of channel files lying in one folder (converters/nifti/case_folders.py, `case_groups` and
`unmasked_groups`): HECKTOR 2021's `hecktor_nii/CHGJ007_ct.nii.gz`, `CHGJ007_pt.nii.gz` and `CHGJ007_ct_gtvt.nii.gz`
beside the next case's files, and BraTS's files taken out of their folders. Before, a folder of several masks with
--channel was rejected whole, and without a mask the folder was one case of every file. The PET lies on another
grid, as HECKTOR's does (`--resample-channels`; its values checked as tests/test_nifti_channel_grid.py checks
them)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("nibabel")
pytest.importorskip("scipy")

from conftest_dicom import load_volume, read_samples, reasons_by_path  # noqa: E402
from conftest_nifti import AFFINE, case, convert_nifti, load_mask, save, zyx  # noqa: E402
from test_nifti_channel_grid import OUTSIDE_SLICES, PET_AFFINE, PET_SHAPE, _positions, activity  # noqa: E402

from converters.nifti.case_folders import MaskWords, case_groups, unmasked_groups  # noqa: E402

PET = activity(_positions(PET_AFFINE, PET_SHAPE)).astype(np.float32)


def _hecktor_2021(root, names=("CHGJ007", "CHGJ008", "CHUS010"), *, masks=True, folders=False):
    """Each case's CT, PET (on PET_AFFINE) and mask (on the CT's grid) in `root`, or in a folder of its own there
    (`folders`: HECKTOR 2021's own layout, `hecktor_nii/CHGJ007/CHGJ007_ct.nii.gz`)."""
    made = {}
    for n, name in enumerate(names):
        image, mask = case(n)
        folder = root / name if folders else root
        save(folder / f"{name}_ct.nii.gz", image)
        save(folder / f"{name}_pt.nii.gz", PET, PET_AFFINE)
        if masks:
            save(folder / f"{name}_ct_gtvt.nii.gz", mask)
        made[name] = (image, mask)
    return made


def _by_source(dst, split="train"):
    return {load_volume(s)[1]["source"]: s for s in read_samples(dst, split).values()}


@pytest.mark.parametrize("folders", [False, True], ids=["one folder", "a folder a case"])
def test_hecktor_2021_cases_stack_their_channels_with_their_masks(tmp_path, folders):
    made = _hecktor_2021(tmp_path / "hecktor_nii", folders=folders)
    where = {name: f"{name}/" if folders else "" for name in made}
    result = convert_nifti(tmp_path / "hecktor_nii", tmp_path / "out", channel="ct,pt", mask_words=("gtvt",),
                           resample_channels=True, keep_phi=True)
    assert result.rejected == []
    samples = _by_source(tmp_path / "out")
    assert sorted(samples) == [f"{where[name]}{name}_ct.nii.gz" for name in sorted(made)]
    inside = _positions(AFFINE, (20, 18, 8))[..., OUTSIDE_SLICES:, :]
    for name, (image, mask) in made.items():
        arr, meta = load_volume(samples[f"{where[name]}{name}_ct.nii.gz"])
        assert meta["channels"] == ["ct", "pt"] and meta["label"] == f"{where[name]}{name}_ct_gtvt.nii.gz"
        np.testing.assert_array_equal(arr[0], zyx(image).astype(np.float32))
        np.testing.assert_allclose(arr[1, OUTSIDE_SLICES:], zyx(activity(inside)), atol=2e-3)
        np.testing.assert_array_equal(load_mask(samples[f"{where[name]}{name}_ct.nii.gz"]), zyx(mask))
    every = convert_nifti(tmp_path / "hecktor_nii", tmp_path / "all", channel="all", mask_words=("gtvt",),
                          resample_channels=True)
    assert every.rejected == [] and len(read_samples(tmp_path / "all")) == 3
    assert {tuple(load_volume(s)[1]["channels"]) for s in read_samples(tmp_path / "all").values()} == {("ct", "pt")}
    ct = convert_nifti(tmp_path / "hecktor_nii", tmp_path / "ct", channel="ct", mask_words=("gtvt",), keep_phi=True)
    assert ct.rejected == []
    for name, (image, _) in made.items():
        arr, meta = load_volume(_by_source(tmp_path / "ct")[f"{where[name]}{name}_ct.nii.gz"])
        assert arr.shape == (8, 18, 20) and "channels" not in meta
        assert meta["label"] == f"{where[name]}{name}_ct_gtvt.nii.gz"
        np.testing.assert_array_equal(arr, zyx(image))


def test_without_channel_a_case_of_channels_is_rejected_saying_which_to_give_and_pairs_still_pair(tmp_path):
    src = tmp_path / "hecktor_nii"
    _hecktor_2021(src, names=("CHGJ007", "CHGJ008"))
    image, mask = case(5)
    save(src / "liver.nii.gz", image)  # a case of one image beside its mask, in the same folder
    save(src / "liver_seg.nii.gz", mask)
    save(src / "kidney_pt.nii.gz", image)  # the one image of a mask named after another channel: no pair
    save(src / "kidney_ct_seg.nii.gz", mask)
    result = convert_nifti(src, tmp_path / "out", mask_words=("gtvt",), keep_phi=True)
    several = ("a case of 2 channel files (ct, pt); pick one by name with --channel NAME, stack some with "
               "--channel NAME,NAME or all of them with --channel all")
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        **{f"CHGJ00{n}_{f}.nii.gz": reason for n in (7, 8) for f, reason in (
            ("ct", several), ("ct_gtvt", "the mask of a case that was rejected"),
            ("pt", "a channel file of a case that was rejected"))},
        **dict.fromkeys(("kidney_ct_seg.nii.gz", "kidney_pt.nii.gz"), (
            "not paired by name in a folder of 4 masks: a mask pairs with the one image named as it is without its "
            "mask word (segmentation-0 and volume-0, liver_seg and liver); or one case per folder, or the "
            "imagesTr/labelsTr layout (docs/volumes.md)"))}
    [(source, sample)] = _by_source(tmp_path / "out").items()
    assert source == "liver.nii.gz" and load_volume(sample)[1]["label"] == "liver_seg.nii.gz"
    np.testing.assert_array_equal(load_mask(sample), zyx(mask))


def test_files_of_no_case_and_images_two_masks_would_take_are_rejected(tmp_path):
    src = tmp_path / "hecktor_nii"
    made = _hecktor_2021(src, names=("CHGJ007", "CHGJ008"))
    save(src / "CHGJ008_pt_gtvt.nii.gz", made["CHGJ008"][1])  # a second mask of CHGJ008's images
    save(src / "scout.nii.gz", made["CHGJ007"][0])  # an image of no case
    save(src / "other_seg.nii.gz", made["CHGJ007"][1])  # a mask of no image
    result = convert_nifti(src, tmp_path / "out", channel="ct,pt", mask_words=("gtvt",), resample_channels=True,
                           keep_phi=True)
    reason = ("in no case of channels in a folder of 4 masks: a case's channel files are named as its mask is "
              "without its mask word, plus a last word (CHGJ007_ct and CHGJ007_pt with CHGJ007_ct_gtvt); or one "
              "case per folder, or the imagesTr/labelsTr layout (docs/volumes.md)")
    rejected = {name: reason for name in ("CHGJ008_ct.nii.gz", "CHGJ008_ct_gtvt.nii.gz", "CHGJ008_pt.nii.gz",
                                          "CHGJ008_pt_gtvt.nii.gz", "other_seg.nii.gz", "scout.nii.gz")}
    assert {r["source"]: r["reason"] for r in result.rejected} == rejected
    assert list(_by_source(tmp_path / "out")) == ["CHGJ007_ct.nii.gz"]
    private = convert_nifti(src, tmp_path / "private", channel="ct,pt", mask_words=("gtvt",), resample_channels=True)
    assert reasons_by_path(private) == rejected  # by pseudonym in the dataset, by path in the private report only
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "private").rglob("*") if p.is_file())
    assert not any(name in written for name in ("CHGJ008", "scout", "other_seg"))


def test_test_cases_without_masks_in_one_folder_are_a_case_each(tmp_path):
    made = _hecktor_2021(tmp_path / "src", names=("CHGJ100", "CHGJ101"), masks=False)
    result = convert_nifti(tmp_path / "src", tmp_path / "out", channel="ct,pt", resample_channels=True,
                           keep_phi=True)
    assert result.rejected == []
    samples = _by_source(tmp_path / "out")
    assert sorted(samples) == ["CHGJ100_ct.nii.gz", "CHGJ101_ct.nii.gz"]
    for name, (image, _) in made.items():
        arr, meta = load_volume(samples[f"{name}_ct.nii.gz"])
        assert meta["channels"] == ["ct", "pt"] and "label" not in meta
        np.testing.assert_array_equal(arr[0], zyx(image).astype(np.float32))


def test_which_images_make_cases_of_channels():
    def files(*names):
        return [(f"/src/{n}.nii.gz", f"{n}.nii.gz") for n in names]

    words = MaskWords(("gtvt",))
    images = files("CHGJ007_ct", "CHGJ007_pt", "BraTS_001_flair", "BraTS_001_t1", "liver", "volume-0")
    masks = files("CHGJ007_ct_gtvt", "BraTS_001_seg", "liver_seg", "segmentation-0")
    groups, rest = case_groups(images, masks, words)
    assert [(m[1], [f[1] for f in g]) for m, g in groups] == [
        ("CHGJ007_ct_gtvt.nii.gz", ["CHGJ007_ct.nii.gz", "CHGJ007_pt.nii.gz"]),  # its name less its last word
        ("BraTS_001_seg.nii.gz", ["BraTS_001_flair.nii.gz", "BraTS_001_t1.nii.gz"])]  # its name less its mask word
    assert [f[1] for f in rest] == ["liver.nii.gz", "liver_seg.nii.gz", "segmentation-0.nii.gz", "volume-0.nii.gz"]
    assert case_groups(images, masks)[0] == groups[1:]  # gtvt is no mask word unless given
    two = files("CHGJ007_ct_gtvt", "CHGJ007_pt_gtvt")
    assert case_groups(files("CHGJ007_ct", "CHGJ007_pt"), two, words) == ([], sorted(
        files("CHGJ007_ct", "CHGJ007_pt") + two, key=lambda f: f[1]))
    cases = unmasked_groups(files("a_1_ct", "a_1_pt", "a_2_ct", "a_2_pt"))
    assert [[f[1] for f in g] for g in cases] == [["a_1_ct.nii.gz", "a_1_pt.nii.gz"],
                                                  ["a_2_ct.nii.gz", "a_2_pt.nii.gz"]]
    assert unmasked_groups(files("t1_pre", "t1_post", "t2_fse")) is None  # other last words: one case
    assert unmasked_groups(files("a_1_ct", "a_1_pt", "a_2_ct", "a_2_pt", "scout")) is None  # a file of no group
    assert unmasked_groups(files("a_1_ct", "a_1_pt")) is None  # one group: the folder is the case
    assert unmasked_groups(files("a_ct", "a_pt", "ct", "pt")) is None  # an image of one word is in no group
    near = case_groups(files("case_1_t1", "case_1_t2", "case_2", "case_4_ct", "case_4"),
                       files("case_1_seg", "case_3_seg", "case_4_ct_seg"))[0]
    assert [(m[1], [f[1] for f in g]) for m, g in near] == [  # case_3's mask takes no case_2: no case_3 image
        ("case_1_seg.nii.gz", ["case_1_t1.nii.gz", "case_1_t2.nii.gz"]),
        ("case_4_ct_seg.nii.gz", ["case_4_ct.nii.gz"])]  # named after its channel: that channel's case


def test_cases_of_one_channel_file_in_the_folder_keep_their_masks(tmp_path):
    src = tmp_path / "hecktor_nii"
    made = {}
    for n, name in enumerate(("CHGJ009", "CHGJ010")):  # CT only: each mask is named after its case's one channel
        made[name] = case(n)
        save(src / f"{name}_ct.nii.gz", made[name][0])
        save(src / f"{name}_ct_gtvt.nii.gz", made[name][1])
    every = convert_nifti(src, tmp_path / "all", channel="all", mask_words=("gtvt",), keep_phi=True)
    assert every.rejected == []
    samples = _by_source(tmp_path / "all")
    for name, (image, mask) in made.items():
        arr, meta = load_volume(samples[f"{name}_ct.nii.gz"])
        assert meta["label"] == f"{name}_ct_gtvt.nii.gz"
        np.testing.assert_array_equal(arr, zyx(image))
        np.testing.assert_array_equal(load_mask(samples[f"{name}_ct.nii.gz"]), zyx(mask))
    _hecktor_2021(src, names=("CHGJ007",))  # beside a case of two channels, without --channel: the CT-only cases pair
    plain = convert_nifti(src, tmp_path / "plain", mask_words=("gtvt",), keep_phi=True)
    assert [r["source"] for r in plain.rejected] == ["CHGJ007_ct.nii.gz", "CHGJ007_ct_gtvt.nii.gz", "CHGJ007_pt.nii.gz"]
    samples = _by_source(tmp_path / "plain")
    assert sorted(samples) == ["CHGJ009_ct.nii.gz", "CHGJ010_ct.nii.gz"]
    for name, (_, mask) in made.items():
        assert load_volume(samples[f"{name}_ct.nii.gz"])[1]["label"] == f"{name}_ct_gtvt.nii.gz"
        np.testing.assert_array_equal(load_mask(samples[f"{name}_ct.nii.gz"]), zyx(mask))


def test_a_case_that_fails_to_convert_is_rejected_in_its_own_split(tmp_path):
    made = _hecktor_2021(tmp_path / "src" / "train", names=("CHGJ007", "CHGJ008"))
    _hecktor_2021(tmp_path / "src" / "val", names=("CHGJ020", "CHGJ021"))
    (tmp_path / "src" / "val" / "CHGJ021_pt.nii.gz").write_bytes(b"\x1f\x8b not a volume")
    result = convert_nifti(tmp_path / "src", tmp_path / "out", channel="ct,pt", mask_words=("gtvt",),
                           resample_channels=True, keep_phi=True)
    assert [(r["split"], r["source"]) for r in result.rejected] == [  # the case, and its other files
        ("val", f"val/CHGJ021_{f}.nii.gz") for f in ("ct", "ct_gtvt", "pt")]
    assert sorted(_by_source(tmp_path / "out")) == [f"train/{name}_ct.nii.gz" for name in sorted(made)]
    assert list(_by_source(tmp_path / "out", "val")) == ["val/CHGJ020_ct.nii.gz"]
