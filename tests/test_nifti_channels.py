"""--channel all: every channel of a case stacked into one (C, z, y, x) volume (BraTS's modalities, nnU-Net's
channel files, a 4D file), the cases whose channels differ rejected, and the loader's [B, C, D, H, W] patches:
each channel cut, padded, normalised and augmented with the others, its mask alike."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("nibabel")
pytest.importorskip("scipy")
torch = pytest.importorskip("torch")

from conftest_dicom import load_volume, read_samples, reasons_by_path  # noqa: E402
from conftest_nifti import AFFINE, case, convert_nifti, load_mask, save, zyx  # noqa: E402

import fastdata  # noqa: E402
from fastdata.errors import ShardError  # noqa: E402

MODALITIES = ("flair", "t1", "t1ce", "t2")


def _brats(root, cases=2, *, modalities=MODALITIES, first=0):
    """BraTS case folders: channel m of case n is case(n)'s image times m + 1 (flair x1, t1 x2, ...)."""
    made = {}
    for n in range(first, first + cases):
        image, mask = case(n)
        folder = root / f"BraTS20_Training_{n:03d}"
        for m, modality in enumerate(modalities):
            save(folder / f"BraTS20_Training_{n:03d}_{modality}.nii.gz", (image * (m + 1)).astype(np.int16))
        save(folder / f"BraTS20_Training_{n:03d}_seg.nii.gz", mask)
        made[folder.name] = (image, mask)
    return made


def _by_source(dst, split="train"):
    return {load_volume(s)[1]["source"]: s for s in read_samples(dst, split).values()}


@pytest.fixture(scope="module")
def brats(tmp_path_factory):
    root = tmp_path_factory.mktemp("brats")
    made = _brats(root / "src", cases=3)
    convert_nifti(root / "src", root / "out", channel="all", modality="MRI", keep_phi=True)
    return root / "out", made


def test_brats_cases_stack_their_modalities_in_name_order(brats):
    out, made = brats
    samples = _by_source(out)
    for name, (image, mask) in made.items():
        arr, meta = load_volume(samples[f"{name}/{name}_flair.nii.gz"])
        assert arr.shape == (4, 8, 18, 20) and arr.dtype == np.int16
        for m in range(4):
            np.testing.assert_array_equal(arr[m], zyx(image) * (m + 1))
        np.testing.assert_array_equal(load_mask(samples[f"{name}/{name}_flair.nii.gz"]), zyx(mask))
        assert (meta["channels"], meta["axes"], meta["shape"], meta["channel"]) == (
            list(MODALITIES), "czyx", [8, 18, 20], "all")
        assert (meta["min"], meta["max"]) == (float(arr.min()), float(arr.max()))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["extra"]["channels"] == list(MODALITIES)
    assert "foreground_values" not in manifest["splits"]["train"]["stats"]  # CT's numbers: one channel only


def test_the_loader_yields_every_channel_cut_alike(brats):
    out, made = brats
    loader = fastdata.loader(out, train=False, num_workers=1, patch_size=8, batch_size=2, pad_value=-5.0)
    assert loader.channels == MODALITIES
    volumes = {load_volume(s)[1]["key"]: load_volume(s)[0] for s in read_samples(out).values()}
    keys = sorted(volumes)
    seen = 0
    for x, meta in loader:
        assert x.shape[1:] == (4, 8, 8, 8) and meta["labels"].shape[1:] == (1, 8, 8, 8)
        for i in range(x.shape[0]):
            z, y, w = meta["start"][i].tolist()
            volume = volumes[keys[int(meta["volume"][i])]]
            expected = np.full((4, 8, 8, 8), -5.0)
            part = volume[:, z:z + 8, y:y + 8, w:w + 8]
            expected[:, :part.shape[1], :part.shape[2], :part.shape[3]] = part
            np.testing.assert_array_equal(x[i].numpy(), expected)
            seen += 1
    assert seen == 3 * 1 * 3 * 3  # every window of every volume: z 8/8, y 18/8, x 20/8


def test_train_patches_keep_their_channels_and_masks_together(brats):
    """Channel m is channel 0 times m + 1 everywhere, padding (0) included, and augmentation moves all channels
    alike: after any crop, flip, rotation, affine or elastic warp (linear interpolation is linear) it still is."""
    out, _ = brats
    loader = fastdata.loader(out, num_workers=1, patch_size=8, batch_size=3, pad_value=0.0, affine_prob=1.0,
                             elastic_prob=1.0, flip_prob=1.0, seed=4)
    x, meta = next(iter(loader))
    assert x.shape == (3, 4, 8, 8, 8) and bool((x[:, 0] != 0).any())
    for m in range(1, 4):
        torch.testing.assert_close(x[:, m], x[:, 0] * (m + 1), rtol=1e-5, atol=1e-2)
    assert meta["labels"].shape == (3, 1, 8, 8, 8)


def test_zscore_true_standardises_each_channel_of_each_patch(brats):
    out, _ = brats
    loader = fastdata.loader(out, train=False, num_workers=1, patch_size=8, batch_size=2, zscore=True)
    x, _ = next(iter(loader))
    torch.testing.assert_close(x.mean(dim=(2, 3, 4)), torch.zeros(2, 4), rtol=0, atol=1e-4)
    torch.testing.assert_close(x.std(dim=(2, 3, 4)), torch.ones(2, 4), rtol=0, atol=1e-4)


def test_nnunet_channel_files_take_dataset_json_names_and_a_case_short_of_one_is_rejected(tmp_path):
    src = tmp_path / "task"
    for n in range(3):
        image, mask = case(n)
        channels = 2 if n < 2 else 1
        for c in range(channels):
            save(src / "imagesTr" / f"prostate_{n:02d}_{c:04d}.nii.gz", (image + 100 * c).astype(np.int16))
        save(src / "labelsTr" / f"prostate_{n:02d}.nii.gz", mask)
    (src / "dataset.json").write_text(json.dumps({"channel_names": {"0": "T2", "1": "ADC"},
                                                  "labels": {"background": 0, "a": 1, "b": 2}}))
    result = convert_nifti(src, tmp_path / "out", channel="all", keep_phi=True)
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        "imagesTr/prostate_02_0000.nii.gz": "a case of channels (one channel) where most cases have (T2, ADC): "
                                            "--channel all stacks the same channels, in the same order, in every case",
        "labelsTr/prostate_02.nii.gz": "the mask of a case that was rejected"}
    arr, meta = load_volume(_by_source(tmp_path / "out")["imagesTr/prostate_01_0000.nii.gz"])
    np.testing.assert_array_equal(arr[1] - arr[0], np.full((8, 18, 20), 100))
    assert meta["channels"] == ["T2", "ADC"]


@pytest.mark.parametrize(("modality", "names"), [({"0": "FLAIR", "1": "T1w"}, ["FLAIR", "T1w"]),
                                                 (None, ["0", "1"]), ({"0": "CT"}, ["0", "1"])])
def test_4d_images_give_every_channel_and_a_3d_case_among_them_is_rejected(tmp_path, modality, names):
    src = tmp_path / "task"
    for n in range(3):
        image, mask = case(n)
        save(src / "imagesTr" / f"BRATS_{n:03d}.nii.gz", np.stack([image, image + 2], axis=-1))
        save(src / "labelsTr" / f"BRATS_{n:03d}.nii.gz", mask)
    save(src / "imagesTr" / "BRATS_009.nii.gz", case(9)[0])
    save(src / "labelsTr" / "BRATS_009.nii.gz", case(9)[1])
    (src / "imagesTr" / "BRATS_010.nii.gz").write_bytes(b"damaged")  # no header to count: its conversion says why
    save(src / "labelsTr" / "BRATS_010.nii.gz", case(10)[1])
    if modality:
        (src / "dataset.json").write_text(json.dumps({"modality": modality}))
    result = convert_nifti(src, tmp_path / "out", channel="all", keep_phi=True)
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        "imagesTr/BRATS_009.nii.gz": f"a case of channels (one channel) where most cases have ({', '.join(names)}): "
                                     "--channel all stacks the same channels, in the same order, in every case",
        "labelsTr/BRATS_009.nii.gz": "the mask of a case that was rejected",
        "imagesTr/BRATS_010.nii.gz": "imagesTr/BRATS_010.nii.gz: not a readable NIfTI file (ImageFileError)",
        "labelsTr/BRATS_010.nii.gz": "the mask of a case that was rejected"}  # before, a failed case lost its mask
    arr, meta = load_volume(_by_source(tmp_path / "out")["imagesTr/BRATS_002.nii.gz"])
    assert arr.shape == (2, 8, 18, 20) and meta["channels"] == names
    np.testing.assert_array_equal(arr[1], zyx(case(2)[0]) + 2)


def test_a_channel_off_its_cases_grid_and_cases_of_other_modalities_are_rejected(tmp_path):
    _brats(tmp_path / "src", cases=3)
    bad = tmp_path / "src" / "BraTS20_Training_001" / "BraTS20_Training_001_t2.nii.gz"
    save(bad, case(1)[0], np.eye(4))
    shifted = AFFINE.copy()
    shifted[2, 3] += 2.5  # the same spacing and axes, one slice off
    _brats(tmp_path / "src", cases=1, first=3)
    save(tmp_path / "src" / "BraTS20_Training_003" / "BraTS20_Training_003_t1.nii.gz", case(3)[0], shifted)
    _brats(tmp_path / "src", cases=1, modalities=("t1", "t2"), first=5)  # sorts after the usual four
    result = convert_nifti(tmp_path / "src", tmp_path / "out", channel="all", keep_phi=True)
    reasons = {r["source"]: r["reason"] for r in result.rejected}
    assert reasons["BraTS20_Training_001/BraTS20_Training_001_flair.nii.gz"].startswith(
        "BraTS20_Training_001/BraTS20_Training_001_t2.nii.gz: the channel's grid (shape [8, 18, 20], spacing "
        "[1.0, 1.0, 1.0] mm, origin [0.0, 0.0, 0.0]) is not its case's first channel's")
    assert reasons["BraTS20_Training_003/BraTS20_Training_003_flair.nii.gz"].startswith(
        "BraTS20_Training_003/BraTS20_Training_003_t1.nii.gz: the channel's grid (shape [8, 18, 20], spacing "
        "[2.5, 0.7, 0.8] mm, origin [-100.0, -120.0, -297.5]) is not its case's first channel's")
    assert reasons["BraTS20_Training_005/BraTS20_Training_005_t1.nii.gz"] == (
        "a case of channels (t1, t2) where most cases have (flair, t1, t1ce, t2): --channel all stacks the same "
        "channels, in the same order, in every case")
    assert sorted(_by_source(tmp_path / "out")) == ["BraTS20_Training_000/BraTS20_Training_000_flair.nii.gz",
                                                    "BraTS20_Training_002/BraTS20_Training_002_flair.nii.gz"]


def test_channels_are_reoriented_and_resampled_as_each_would_be_alone(tmp_path):
    _brats(tmp_path / "src", cases=1)
    options = {"orientation": "RAS", "spacing": (2.0, 1.0, 1.5), "modality": "MRI"}
    convert_nifti(tmp_path / "src", tmp_path / "all", channel="all", **options)
    ((stacked),) = read_samples(tmp_path / "all").values()
    arr, meta = load_volume(stacked)
    for m, modality in enumerate(MODALITIES):
        convert_nifti(tmp_path / "src", tmp_path / modality, channel=modality, **options)
        ((alone),) = read_samples(tmp_path / modality).values()
        np.testing.assert_array_equal(arr[m], load_volume(alone)[0])
        np.testing.assert_array_equal(load_mask(stacked), load_mask(alone))
        assert {k: v for k, v in load_volume(alone)[1].items() if k not in ("channel", "min", "max", "source")} == {
            k: v for k, v in meta.items() if k not in ("channel", "min", "max", "source", "channels", "axes")
        } | {"axes": "zyx"}


def test_channel_files_are_pseudonymized_and_whole_file_names_are_no_channel_names(tmp_path):
    _brats(tmp_path / "src", cases=2)
    result = convert_nifti(tmp_path / "src", tmp_path / "out", channel="all")
    names = reasons_by_path(result, key="source")
    assert sorted(p for p in names.values() if "_t1ce" in p) == [
        f"BraTS20_Training_00{n}/BraTS20_Training_00{n}_t1ce.nii.gz" for n in range(2)]
    assert "BraTS20" not in (tmp_path / "out" / "manifest.json").read_text()
    image, mask = case(0)
    for name in ("Smith.nii.gz", "Jones.nii.gz", "seg.nii.gz"):
        save(tmp_path / "loose" / "p1" / name, mask if name == "seg.nii.gz" else image)
    with pytest.raises(Exception, match="a case of 2 channel files named by their whole file names: --channel all "
                                        "names the channels by what their file names add"):
        convert_nifti(tmp_path / "loose", tmp_path / "loose_out", channel="all")
    kept = convert_nifti(tmp_path / "loose", tmp_path / "kept", channel="all", keep_phi=True)
    assert kept.rejected == [] and load_volume(next(iter(read_samples(tmp_path / "kept").values())))[1][
        "channels"] == ["Jones", "Smith"]


def test_volumes_of_other_channels_do_not_mix(brats, tmp_path):
    out, _ = brats
    save(tmp_path / "one" / "a.nii.gz", case(0)[0])
    convert_nifti(tmp_path / "one", tmp_path / "single")
    with pytest.raises(ValueError, match=r"the mixed datasets' volumes have other channels \(.*: \['flair', 't1', "
                                         r"'t1ce', 't2'\]; .*: one channel\)"):
        fastdata.loader([out, tmp_path / "single"], num_workers=1, patch_size=8)
    from fastdata.volumes.store import VolumeEntry, _one_layout

    entries = [VolumeEntry("a", tmp_path, (0, 0), {}, channels=("x", "y")), VolumeEntry("b", tmp_path, (0, 0), {})]
    with pytest.raises(ShardError, match=r"somewhere holds volumes of other channels \(\[\['one'\], \['x', 'y'\]\]\)"):
        _one_layout(entries, "somewhere")


def test_verify_decode_reads_every_channel(brats):
    from fastdata.verify import verify_dataset

    out, _ = brats
    assert verify_dataset(out, decode=True) == []


def test_foreground_sampling_without_masks_looks_at_the_first_channel(tmp_path):
    """BraTS's validation cases have no mask: foreground patches centre on voxels above foreground_hu in the first
    channel (a 2-voxel cube here), whatever the other channels hold."""
    image = np.full((20, 18, 8), -1000, np.int16)
    image[14:16, 3:5, 5:7] = 500
    for n in range(2):
        folder = tmp_path / "src" / f"BraTS20_Validation_{n:03d}"
        save(folder / f"BraTS20_Validation_{n:03d}_flair.nii.gz", image)
        save(folder / f"BraTS20_Validation_{n:03d}_t1.nii.gz", np.full_like(image, 900))
    convert_nifti(tmp_path / "src", tmp_path / "out", channel="all")
    loader = fastdata.loader(tmp_path / "out", num_workers=1, patch_size=4, batch_size=2, sampling="foreground",
                             foreground_prob=1.0, augment=False, patches_per_volume=4)
    for x, _ in loader:
        assert x.shape[1] == 2 and bool((x[:, 0] > 0).flatten(1).any(dim=1).all())


def test_a_4d_file_is_read_once_for_every_channel_and_a_damaged_one_is_rejected(tmp_path, monkeypatch):
    """An fMRI run's volumes: nibabel reads a .nii.gz from its start for each slice it is asked for, so a 4D file
    is read in one pass, not once per channel (200 volumes took 100 times longer); each channel, scaled by the
    header's slope and intercept, is what --channel C converts alone."""
    import nibabel as nib
    from nibabel.arrayproxy import ArrayProxy

    rng = np.random.default_rng(5)
    run = rng.integers(-300, 300, (20, 18, 8, 6)).astype(np.int16)
    img = nib.Nifti1Image(run, AFFINE)
    img.header.set_slope_inter(0.5, 7.0)
    (tmp_path / "src").mkdir()
    nib.save(img, str(tmp_path / "src" / "bold.nii.gz"))
    reads = []
    real = ArrayProxy.__getitem__
    monkeypatch.setattr(ArrayProxy, "__getitem__", lambda self, index: reads.append(index) or real(self, index))
    result = convert_nifti(tmp_path / "src", tmp_path / "all", channel="all", keep_phi=True)
    assert result.rejected == [] and len(reads) == 1
    arr, meta = load_volume(_by_source(tmp_path / "all")["bold.nii.gz"])
    assert arr.shape == (6, 8, 18, 20) and meta["channels"] == [str(c) for c in range(6)]
    for c in (0, 3, 5):
        convert_nifti(tmp_path / "src", tmp_path / str(c), channel=c, keep_phi=True)
        np.testing.assert_array_equal(arr[c], load_volume(_by_source(tmp_path / str(c))["bold.nii.gz"])[0])
    np.testing.assert_allclose(arr[5].astype(np.float64), zyx(run[..., 5] * 0.5 + 7.0), atol=0.5)
    whole = (tmp_path / "src" / "bold.nii.gz").read_bytes()
    (tmp_path / "src" / "bold.nii.gz").write_bytes(whole[: len(whole) * 2 // 3])
    with pytest.raises(Exception, match=r"all 1 input\(s\) were rejected \(1 x cannot read the voxels \(EOFError\)\)"):
        convert_nifti(tmp_path / "src", tmp_path / "cut", channel="all", keep_phi=True)


def _autopet(root, cases=2):
    """autoPET's NIfTI cases (FDG-PET-CT-Lesions): a study folder of CT.nii.gz on the CT's own grid, and CTres, PET
    and SUV resampled onto the PET's grid with the lesions' SEG.nii.gz: channel m of case n is case(n)'s image times
    m + 1 (CTres x1, PET x2, SUV x3)."""
    made = {}
    coarse = AFFINE.copy()
    coarse[:3, :3] *= 2  # CT.nii.gz: another grid
    for n in range(cases):
        image, mask = case(n)
        folder = root / f"PETCT_{n:010x}" / "03-23-2003-NA-PET-CT Ganzkoerper  primaer mit KM-10445"
        save(folder / "CT.nii.gz", image.astype(np.int16), coarse)
        for m, name in enumerate(("CTres", "PET", "SUV")):
            save(folder / f"{name}.nii.gz", (image * (m + 1)).astype(np.float32))
        save(folder / "SEG.nii.gz", mask)
        made[folder.relative_to(root).as_posix()] = (image, mask)
    return made


def test_channel_names_stack_the_named_channels_in_their_order(tmp_path):
    """`--channel SUV,CTres` stacks those two of autoPET's four channel files, in that order, on their grid with the
    SEG (CT.nii.gz, on the CT's own grid, is left out); a name a case lacks rejects it naming the absent one; a
    named channel off the others' grid rejects the case as --channel all does."""
    made = _autopet(tmp_path / "src")
    (tmp_path / "src" / "dataset.json").write_text(json.dumps({"channel_names": {"0": "CT"}}))  # no stack's modality
    result = convert_nifti(tmp_path / "src", tmp_path / "out", channel="SUV,CTres", keep_phi=True)
    assert result.rejected == []
    samples = _by_source(tmp_path / "out")
    for folder, (image, mask) in made.items():
        arr, meta = load_volume(samples[f"{folder}/SUV.nii.gz"])
        np.testing.assert_array_equal(arr, np.stack([zyx(image) * 3, zyx(image)]))
        np.testing.assert_array_equal(load_mask(samples[f"{folder}/SUV.nii.gz"]), zyx(mask))
        assert (meta["channels"], meta["channel"], meta["axes"]) == (["SUV", "CTres"], "SUV,CTres", "czyx")
        assert meta["modality"] == ""
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["extra"]["channels"] == ["SUV", "CTres"] and manifest["preprocessing"]["channel"] == "SUV,CTres"
    first = sorted(made)[0]
    (tmp_path / "src" / first / "CTres.nii.gz").unlink()
    result = convert_nifti(tmp_path / "src", tmp_path / "short", channel="SUV,CTres", keep_phi=True)
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        f"{first}/CT.nii.gz": "no channel CTres (--channel SUV,CTres) in this case; its channels are CT, PET, SUV",
        f"{first}/PET.nii.gz": "a channel file of a case that was rejected",  # every file of the case is listed
        f"{first}/SUV.nii.gz": "a channel file of a case that was rejected",
        f"{first}/SEG.nii.gz": "the mask of a case that was rejected"}
    second = sorted(made)[1]
    coarse = AFFINE.copy()
    coarse[:3, :3] *= 2
    save(tmp_path / "src" / second / "PET.nii.gz", made[second][0].astype(np.float32), coarse)
    result = convert_nifti(tmp_path / "src", tmp_path / "grids", channel="SUV,PET", keep_phi=True)
    reasons = {r["source"]: r["reason"] for r in result.rejected}
    assert sorted(reasons) == [f"{second}/{n}.nii.gz" for n in ("PET", "SEG", "SUV")]  # the case by its first channel
    assert (reasons[f"{second}/PET.nii.gz"], reasons[f"{second}/SEG.nii.gz"]) == (
        "a channel file of a case that was rejected", "the mask of a case that was rejected")
    assert reasons[f"{second}/SUV.nii.gz"].startswith(f"{second}/PET.nii.gz: the channel's grid (shape [8, 18, 20], "
                                                     "spacing [5.0, 1.4, 1.6] mm")
    assert sorted(_by_source(tmp_path / "grids")) == [f"{first}/SUV.nii.gz"]


def test_channel_names_are_checked_and_parsed():
    from converters.nifti.options import NiftiOptions, parse_channel

    assert parse_channel("CTres, SUV") == "CTres,SUV" and parse_channel("2") == 2 and parse_channel("t1") == "t1"
    for bad in ("SUV,SUV", "SUV,", "SUV,2", "SUV,all", ",SUV"):
        with pytest.raises(ValueError, match="--channel NAME,NAME must name each channel once"):
            NiftiOptions(channel=bad)
