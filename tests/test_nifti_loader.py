"""The volume loader on a nifti dataset with masks: meta["labels"] holds each patch's mask, cut at the same
place, augmented by the same crops, flips, rotations and warps (nearest-neighbour), in train and eval; foreground
sampling centres on labelled voxels; a forged or partial set of masks is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip("nibabel")
pytest.importorskip("kornia")
pytest.importorskip("scipy")

from conftest_nifti import convert_nifti, save  # noqa: E402
from test_volume_forged import _rewrite  # noqa: E402

import fastdata  # noqa: E402
from fastdata.errors import ShardError  # noqa: E402

PATCH = (12, 12, 12)
BINARY = {"num_workers": 1, "patch_size": PATCH, "pad_value": 0.0, "batch_size": 4}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Four cases whose image is 100 x its binary mask (a cube somewhere in a 24^3 volume): wherever the image is
    within 0.02 of 0 or 100 after any interpolation, the mask's nearest voxel must hold that label."""
    root = tmp_path_factory.mktemp("nifti")
    rng = np.random.default_rng(0)
    for n in range(4):
        mask = np.zeros((24, 24, 24), np.uint8)
        lo = rng.integers(2, 12, 3)
        mask[lo[0]:lo[0] + 9, lo[1]:lo[1] + 9, lo[2]:lo[2] + 9] = 1
        save(root / "src" / "imagesTr" / f"c{n}.nii.gz", mask.astype(np.int16) * 100, np.eye(4))
        save(root / "src" / "labelsTr" / f"c{n}.nii.gz", mask, np.eye(4))
    (root / "src" / "dataset.json").write_text(json.dumps({"labels": {"0": "background", "1": "cube"},
                                                           "modality": {"0": "MRI"}}))
    convert_nifti(root / "src", root / "out")
    return root / "out"


def _agreement(x: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
    """(share of voxels with a whole image value, share of those whose label is the image's) for 100 x mask."""
    y = x / 100
    whole = (y - y.round()).abs() < 0.02
    return float(whole.float().mean()), float((y.round() == labels)[whole].float().mean())


@pytest.mark.parametrize("augment", [
    {"affine_prob": 0.0, "elastic_prob": 0.0},  # crops, flips, rot90: exact
    {"affine_prob": 1.0, "elastic_prob": 0.0, "rotate_degrees": 30.0},
    {"affine_prob": 0.0, "elastic_prob": 1.0, "elastic_magnitude": 3.0},
    {"affine_prob": 1.0, "elastic_prob": 1.0},
])
def test_train_masks_follow_their_patches_through_every_augmentation(dataset, augment):
    loader = fastdata.loader(dataset, patches_per_volume=3, sampling="foreground", foreground_prob=1.0, **BINARY,
                             **augment)
    assert loader.masked and loader.classes == ("background", "cube")
    seen = 0
    for x, meta in loader:
        labels = meta["labels"]
        assert labels.dtype == torch.long and labels.shape == x.shape == (4, 1, *PATCH)
        whole, agree = _agreement(x, labels)
        assert agree == 1.0 and whole > 0.5
        assert set(labels.unique().tolist()) <= {0, 1}
        seen += int(labels.sum())
    assert seen > 0
    if augment["affine_prob"] == 0 and augment["elastic_prob"] == 0:
        for x, meta in loader:
            # float32 rounding of the intensity steps: up to 1.1e-3 with torch 2.2 (`make test-oldest`)
            torch.testing.assert_close(x, meta["labels"].float() * 100, rtol=0, atol=2e-3)


def test_a_resumed_epoch_yields_the_same_masks(dataset):
    make = lambda: fastdata.loader(dataset, patches_per_volume=2, **BINARY)  # noqa: E731
    full = [m["labels"].clone() for _, m in make()]
    loader = make()
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    resumed = make()
    resumed.load_state_dict(state)
    rest = [m["labels"] for _, m in resumed]
    assert len(rest) == len(full) - 1 and all(torch.equal(a, b) for a, b in zip(full[1:], rest))


def test_eval_windows_carry_the_stored_mask_exactly(dataset):
    loader = fastdata.loader(dataset, train=False, num_workers=1, patch_size=PATCH, batch_size=3)
    covered = 0
    for x, meta in loader:
        torch.testing.assert_close(x, meta["labels"].float() * 100, rtol=0, atol=0)
        covered += int(meta["labels"].sum())
    assert covered >= 4 * 9 ** 3  # every cube voxel lies in some window


def test_foreground_sampling_centres_patches_on_labelled_voxels(dataset):
    loader = fastdata.loader(dataset, patches_per_volume=8, sampling="foreground", foreground_prob=1.0,
                             augment=False, num_workers=1, patch_size=(4, 4, 4), batch_size=8)
    for _, meta in loader:
        assert bool(meta["foreground"].all())
        assert bool((meta["labels"].flatten(1).amax(1) == 1).all())  # the centre voxel is labelled, so is the patch


def test_an_augment_hook_sees_the_patches_and_batch_transform_the_masks(dataset):
    got = {}

    def transform(x, meta):
        got["labels"] = meta["labels"]
        return x, meta

    loader = fastdata.loader(dataset, augment=lambda x: x + 1, batch_transform=transform, **BINARY)
    x, meta = next(iter(loader))
    assert got["labels"] is meta["labels"] and float(x.min()) >= 1.0


def test_forged_masks_are_refused_when_the_loader_opens(dataset, tmp_path):
    import io
    import shutil

    def npy(array):
        out = io.BytesIO()
        np.save(out, array)
        return out.getvalue()

    for change, message in [
        (lambda name, data: npy(np.zeros((3, 3, 3), np.uint8)) if name.endswith("label.npy") else data,
         r"its mask is uint8 of shape \[3, 3, 3\], not uint8 or uint16 of its image's shape \[24, 24, 24\]"),
        (lambda name, data: npy(np.zeros((24, 24, 24), np.float32)) if name.endswith("label.npy") else data,
         "its mask is float32"),
    ]:
        dst = tmp_path / "copy"
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(dataset, dst)
        _rewrite(dst / "train-000000.tar", change)
        with pytest.raises(ShardError, match=message):
            fastdata.loader(dst, **BINARY)


def test_a_split_where_only_some_volumes_have_masks_is_refused(tmp_path):
    save(tmp_path / "a" / "imagesTr" / "a.nii.gz", np.zeros((8, 8, 8), np.int16), np.eye(4))
    save(tmp_path / "a" / "labelsTr" / "a.nii.gz", np.zeros((8, 8, 8), np.uint8), np.eye(4))
    save(tmp_path / "b" / "imagesTr" / "b.nii.gz", np.zeros((8, 8, 8), np.int16), np.eye(4))
    convert_nifti(tmp_path / "a", tmp_path / "masked")
    convert_nifti(tmp_path / "b", tmp_path / "bare")
    assert fastdata.loader(tmp_path / "masked", **BINARY).masked
    bare = fastdata.loader(tmp_path / "bare", **{**BINARY, "batch_size": 1})
    assert not bare.masked and "labels" not in next(iter(bare))[1]
    with pytest.raises(ShardError, match="1 of 2 volumes have a mask"):
        fastdata.loader([tmp_path / "masked", tmp_path / "bare"], **BINARY)


def test_foreground_hu_is_not_called_hounsfield_when_masks_choose_the_foreground(dataset, caplog):
    with caplog.at_level("WARNING", logger="fastdata.volumes.options"):
        fastdata.loader(dataset, sampling="foreground", **BINARY)
    assert caplog.text == ""
    with caplog.at_level("WARNING", logger="fastdata.volumes.options"):
        fastdata.loader(dataset, sampling="foreground", **{**BINARY, "pad_value": -1024.0})
    assert "holds MRI volumes" in caplog.text and "but pad_value=-1024.0 is in HU" in caplog.text


def _task(root, labels):
    save(root / "imagesTr" / "a.nii.gz", np.zeros((8, 8, 8), np.int16), np.eye(4))
    save(root / "labelsTr" / "a.nii.gz", np.full((8, 8, 8), len(labels) - 1, np.uint8), np.eye(4))
    (root / "dataset.json").write_text(json.dumps({"labels": {str(i): n for i, n in enumerate(labels)}}))
    return root


def test_masked_datasets_mix_only_when_they_name_the_same_labels_in_order(tmp_path):
    for name, labels in (("a", ["background", "liver", "aorta"]), ("b", ["background", "liver", "aorta"]),
                         ("c", ["background", "aorta", "liver"])):
        convert_nifti(_task(tmp_path / f"src-{name}", labels), tmp_path / name)
    same = fastdata.loader([tmp_path / "a", tmp_path / "b"], **{**BINARY, "batch_size": 2})
    assert same.classes == ("background", "liver", "aorta")  # value order, not a sorted union: 0 stays background
    assert next(iter(same))[1]["labels"].max() == 2
    with pytest.raises(ValueError, match=r"datasets with masks mix only when they name the same labels in the same "
                                         r"order; these differ: .*\['background', 'aorta', 'liver'\]"):
        fastdata.loader([tmp_path / "a", tmp_path / "c"], **BINARY)


def test_dicom_and_nifti_volumes_mix_in_one_loader(tmp_path):
    pytest.importorskip("pydicom")
    from conftest_dicom import Phantom, convert_dicom, write_phantom

    write_phantom(tmp_path / "dicom" / "p0", Phantom(slices=6))
    convert_dicom(tmp_path / "dicom", tmp_path / "ct")
    save(tmp_path / "nifti" / "b.nii.gz", np.zeros((8, 8, 8), np.int16), np.eye(4))
    convert_nifti(tmp_path / "nifti", tmp_path / "nii")
    loader = fastdata.loader([tmp_path / "ct", tmp_path / "nii"], batch_size=2, patch_size=4, num_workers=1,
                             return_dataset=True)
    _, meta = next(iter(loader))
    assert sorted(meta["dataset"].tolist()) == [0, 1] and not loader.masked


def test_warped_masks_take_a_neighbours_label_never_a_blend_of_two(tmp_path):
    """Labels 0 and 2 side by side: a warp that interpolated masks would make 1 along their border."""
    mask = np.zeros((24, 24, 24), np.uint8)
    mask[:, :, 12:] = 2
    save(tmp_path / "src" / "imagesTr" / "c.nii.gz", mask.astype(np.int16), np.eye(4))
    save(tmp_path / "src" / "labelsTr" / "c.nii.gz", mask, np.eye(4))
    convert_nifti(tmp_path / "src", tmp_path / "out")
    for warp in ({"affine_prob": 1.0, "elastic_prob": 0.0, "rotate_degrees": 30.0},
                 {"affine_prob": 0.0, "elastic_prob": 1.0, "elastic_magnitude": 3.0}):
        loader = fastdata.loader(tmp_path / "out", patches_per_volume=4, **BINARY, **warp)
        values = {v for _, meta in loader for v in meta["labels"].unique().tolist()}
        assert values == {0, 2}, warp
