"""zscore="foreground": the exact foreground histogram the nifti kind counts per split, the statistics drawn from
it (numpy's percentiles, mean and std, to the last bit of a float), the train split's numbers used by every
split's loader, clip=, and what `fastdata info` shows."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("nibabel")
pytest.importorskip("scipy")
torch = pytest.importorskip("torch")

from conftest_dicom import load_volume, read_samples  # noqa: E402
from conftest_nifti import case, convert_nifti, load_mask, save  # noqa: E402

import fastdata  # noqa: E402
from fastdata.volumes.intensity import FOREGROUND, foreground_of, percentile  # noqa: E402
from fastdata.volumes.options import VolumeLoaderOptions  # noqa: E402


@pytest.mark.parametrize("seed", range(6))
def test_histogram_statistics_are_numpys_of_the_voxels_they_count(seed):
    rng = np.random.default_rng(seed)
    voxels = rng.integers(-50, 50, int(rng.integers(1, 400))) * int(rng.integers(1, 30))
    values, counts = np.unique(voxels, return_counts=True)
    for q in (0.0, 0.5, 13.7, 50.0, 99.5, 100.0):
        assert percentile(values, counts, q) == pytest.approx(float(np.percentile(voxels, q)), rel=0, abs=1e-9)
    found = foreground_of({str(v): int(c) for v, c in zip(values, counts)})
    assert found.voxels == voxels.size
    assert found.mean == pytest.approx(float(voxels.mean()), rel=1e-12, abs=1e-9)
    assert found.std == pytest.approx(float(voxels.std()), rel=1e-12, abs=1e-9)
    assert (found.low, found.high) == (pytest.approx(float(np.percentile(voxels, 0.5)), abs=1e-9),
                                       pytest.approx(float(np.percentile(voxels, 99.5)), abs=1e-9))


def test_a_histogram_of_no_voxel_is_refused():
    with pytest.raises(ValueError, match="counts no voxel"):
        foreground_of({"3": 0})


def _kits(root, split, seeds, *, offset=0):
    """KiTS-style case folders of `split`; the image's values shifted by `offset`."""
    for n in seeds:
        image, mask = case(n)
        save(root / split / f"case_{n:05d}" / "imaging.nii.gz", (image + offset).astype(np.int16))
        save(root / split / f"case_{n:05d}" / "segmentation.nii.gz", mask)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("intensity")
    _kits(root / "src", "train", range(3))
    _kits(root / "src", "val", range(3, 5), offset=500)  # another intensity range: its own numbers differ
    convert_nifti(root / "src", root / "out")
    return root / "out"


def _expanded(dst, split):
    voxels = []
    for sample in read_samples(dst, split).values():
        arr, _ = load_volume(sample)
        voxels.append(arr[load_mask(sample) > 0])
    return np.concatenate(voxels)


def test_each_split_counts_every_voxel_under_its_masks_exactly(converted):
    manifest = json.loads((converted / "manifest.json").read_text())
    for split in ("train", "val"):
        values, counts = np.unique(_expanded(converted, split), return_counts=True)
        assert manifest["splits"][split]["stats"][FOREGROUND] == {str(v): int(c) for v, c in zip(values, counts)}


def test_every_split_is_normalised_with_the_train_splits_numbers(converted):
    train = fastdata.loader(converted, zscore="foreground", num_workers=1, patch_size=8)
    voxels = _expanded(converted, "train").astype(np.float64)
    mean, std = float(voxels.mean()), float(voxels.std())
    low, high = float(np.percentile(voxels, 0.5)), float(np.percentile(voxels, 99.5))
    assert train.intensity["window"] is None
    assert train.intensity["zscore"] == (pytest.approx(mean, abs=1e-9), pytest.approx(std, abs=1e-9))
    assert train.intensity["clip"] == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    val = fastdata.loader(converted, split="val", train=False, zscore="foreground", num_workers=1, patch_size=8,
                          batch_size=4)
    assert val.intensity == train.intensity  # never the val split's own numbers
    volumes = {load_volume(s)[1]["key"]: load_volume(s)[0] for s in read_samples(converted, "val").values()}
    keys = sorted(volumes)
    for x, meta in val:
        for i in range(x.shape[0]):
            z, y, w = meta["start"][i].tolist()
            raw = volumes[keys[int(meta["volume"][i])]][z:z + 8, y:y + 8, w:w + 8].astype(np.float64)
            if raw.shape != (8, 8, 8):
                continue  # a window past the volume's end is padded
            expected = (np.clip(raw, low, high) - mean) / std
            np.testing.assert_allclose(x[i, 0].numpy(), expected, rtol=0, atol=1e-5)
    again = fastdata.loader(converted, split="val", train=False, num_workers=1, patch_size=8, **train.intensity)
    assert again.intensity == train.intensity


def test_a_mixture_counts_the_train_splits_of_every_dataset(converted, tmp_path):
    _kits(tmp_path / "src", "train", range(7, 9), offset=-300)
    convert_nifti(tmp_path / "src", tmp_path / "other")
    mixed = fastdata.loader([converted, tmp_path / "other"], zscore="foreground", num_workers=1, patch_size=8)
    voxels = np.concatenate([_expanded(converted, "train"), _expanded(tmp_path / "other", "train")])
    assert mixed.intensity["zscore"] == (pytest.approx(float(voxels.mean()), abs=1e-9),
                                         pytest.approx(float(voxels.std()), abs=1e-9))


def test_datasets_without_a_histogram_say_what_to_pass_instead(tmp_path):
    save(tmp_path / "plain" / "a.nii.gz", case(0)[0])  # no mask
    convert_nifti(tmp_path / "plain", tmp_path / "unmasked")
    image, mask = case(1)
    save(tmp_path / "float" / "imagesTr" / "a.nii.gz", image.astype(np.float32) + 0.5)  # float32: not counted
    save(tmp_path / "float" / "labelsTr" / "a.nii.gz", mask)
    convert_nifti(tmp_path / "float", tmp_path / "floats")
    assert FOREGROUND not in json.loads((tmp_path / "floats" / "manifest.json").read_text())["splits"]["train"][
        "stats"]
    image, mask = case(2)
    save(tmp_path / "tested" / "case_2" / "imaging.nii.gz", image)
    save(tmp_path / "tested" / "case_2" / "segmentation.nii.gz", mask)
    convert_nifti(tmp_path / "tested", tmp_path / "no_train", split="test")
    assert list(json.loads((tmp_path / "no_train" / "manifest.json").read_text())["splits"]) == ["test"]
    with pytest.raises(ValueError, match=r"no_train has none \(no train split"):
        fastdata.loader(tmp_path / "no_train", split="test", zscore="foreground", num_workers=1, patch_size=8)
    for dst in ("unmasked", "floats"):
        with pytest.raises(ValueError, match=rf"{dst} has none \(no train split, no masks, volumes stored as float32, "
                                             r"or converted before fastdata counted it\); pass clip=\(lo, hi\) and "
                                             r"zscore=\(mean, std\) instead"):
            fastdata.loader(tmp_path / dst, zscore="foreground", num_workers=1, patch_size=8)


def test_clip_bounds_the_values_before_a_per_patch_zscore(converted):
    loader = fastdata.loader(converted, train=False, zscore=True, clip=(-100, 100), num_workers=1, patch_size=8,
                             batch_size=1)
    x, meta = next(iter(loader))
    sample = next(s for s in read_samples(converted).values() if load_volume(s)[1]["key"] == meta["keys"][0])
    z, y, w = meta["start"][0].tolist()
    raw = np.clip(load_volume(sample)[0][z:z + 8, y:y + 8, w:w + 8].astype(np.float64), -100, 100)
    expected = (raw - raw.mean()) / raw.std(ddof=1)
    np.testing.assert_allclose(x[0, 0].numpy(), expected, rtol=0, atol=1e-4)


@pytest.mark.parametrize(("given", "problem"), [
    ({"clip": (-100, 100)}, "clip= goes with zscore=True or zscore=\\(mean, std\\)"),
    ({"clip": (-100, 100), "zscore": "foreground"}, "sets its own clip from the dataset"),
    ({"clip": (-100, 100), "window": (-100, 100)}, "window= clips already"),
    ({"clip": (100, -100), "zscore": True}, "clip=\\(100, -100\\) is not allowed"),
    ({"clip": (float("nan"), 1), "zscore": True}, "clip=\\(nan, 1\\) is not allowed"),
    ({"zscore": "fg"}, "or 'foreground' \\(the train split's, clipped as nnU-Net\\)"),
])
def test_intensity_options_are_checked_eagerly(given, problem):
    with pytest.raises(ValueError, match=problem):
        VolumeLoaderOptions(**given)


def test_info_shows_the_numbers_not_the_histogram(converted, capsys):
    from fastdata.cli import main as cli

    assert cli(["info", str(converted)]) == 0
    out = capsys.readouterr().out
    voxels = _expanded(converted, "train")
    assert (f"foreground_values: {voxels.size:,} voxels under masks, mean {voxels.mean():.2f}, std "
            f"{voxels.std():.2f}, percentiles 0.5 / 99.5: {np.percentile(voxels, 0.5):.2f} / "
            f"{np.percentile(voxels, 99.5):.2f} (zscore='foreground')") in out


def test_a_forged_histogram_is_refused_by_the_loader_and_summarised_by_info(converted, tmp_path):
    import shutil

    from fastdata.cli.info import _stat

    forged = tmp_path / "forged"
    shutil.copytree(converted, forged)
    manifest = json.loads((forged / "manifest.json").read_text())
    manifest["splits"]["train"]["stats"][FOREGROUND] = {"air": 3}
    (forged / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="holds a foreground histogram that does not count whole numbers of voxels"):
        fastdata.loader(forged, zscore="foreground", num_workers=1, patch_size=8)
    manifest["splits"]["train"]["stats"][FOREGROUND] = {}
    (forged / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="forged has none"):
        fastdata.loader(forged, zscore="foreground", num_workers=1, patch_size=8)
    assert _stat(FOREGROUND, {"air": 3}) == "1 values (not a histogram of whole numbers)"
    assert _stat(FOREGROUND, {"5": 0}) == "1 values (not a histogram of whole numbers)"
    assert _stat("masks", 3) == "3"


def test_a_foreground_of_one_value_normalises_to_finite_numbers(converted, tmp_path):
    """All foreground voxels equal (std 0, both percentiles equal): the clip and std are widened to the narrowest the
    options take; before, the loader refused its own clip (lo == hi), and a std of 1e-8 made infinities."""
    import shutil

    from fastdata.volumes.options import MIN_SPREAD

    one = tmp_path / "one"
    shutil.copytree(converted, one)
    manifest = json.loads((one / "manifest.json").read_text())
    manifest["splits"]["train"]["stats"][FOREGROUND] = {"40": 1000}
    (one / "manifest.json").write_text(json.dumps(manifest))
    ld = fastdata.loader(one, zscore="foreground", num_workers=1, patch_size=8)
    assert ld.intensity["clip"] == (40.0, 40.0 + MIN_SPREAD) and ld.intensity["zscore"] == (40.0, MIN_SPREAD)
    assert all(bool(torch.isfinite(x).all()) for x, _ in ld)
