"""The volume loader: patch shapes, windowing, padding, sliding-window coverage, resume and ranks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("pydicom")
pytest.importorskip("kornia")

from conftest_dicom import Phantom, convert_dicom, load_volume, read_samples, write_phantom  # noqa: E402

import fastdata  # noqa: E402

PATCH = (16, 16, 16)
FAST = {"num_workers": 2, "patch_size": PATCH}


@pytest.fixture(scope="module")
def volumes(tmp_path_factory):
    """Six CT volumes of different sizes (one thinner than a patch), converted at native spacing."""
    root = tmp_path_factory.mktemp("volumes")
    for i in range(6):
        ph = Phantom(series_uid=f"1.2.840.9.{i}", slices=5 if i == 0 else 10 + 2 * i, rows=24 + 2 * i, cols=30,
                     slice_spacing=2.0, pixel_spacing=(1.0, 1.0), origin=(-15.0, -12.0, 40.0),
                     center_mm=(0.0, 0.0, 45.0 + i), radius_mm=5.0, background_hu=-1000 + 100 * i, sphere_hu=600)
        write_phantom(root / "src" / f"s{i}", ph, seed=i)
    convert_dicom(root / "src", root / "out", samples_per_shard=4)
    arrays = {k: load_volume(s)[0] for k, s in read_samples(root / "out").items()}
    return root / "out", arrays


def _all(loader):
    return [(x.clone(), m) for x, m in loader]


def test_train_batches_have_patch_shape_dtype_and_window(volumes):
    dst, arrays = volumes
    loader = fastdata.loader(dst, batch_size=4, window=(-1000, 400), patches_per_volume=3, **FAST)
    assert len(loader) == (6 * 3) // 4
    batches = _all(loader)
    assert len(batches) == len(loader)
    for x, meta in batches:
        assert x.shape == (4, 1, *PATCH) and x.dtype == torch.float32 and x.device.type == "cpu"
        assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
        assert set(meta["keys"]) <= set(arrays) and meta["start"].shape == (4, 3)
    assert len({k for _, m in batches for k in m["keys"]}) == 6


def test_raw_patches_equal_the_stored_volume_and_small_volumes_are_padded(volumes):
    dst, arrays = volumes
    loader = fastdata.loader(dst, batch_size=3, augment=False, pad_value=-2000.0, **FAST)
    for x, meta in loader:
        for b in range(x.shape[0]):
            vol = arrays[meta["keys"][b]]
            start = meta["start"][b].tolist()
            expected = np.full(PATCH, -2000, np.float32)
            src = tuple(slice(max(s, 0), min(s + p, n)) for s, p, n in zip(start, PATCH, vol.shape))
            dst_sl = tuple(slice(sl.start - s, sl.stop - s) for sl, s in zip(src, start))
            expected[dst_sl] = vol[src]
            np.testing.assert_array_equal(x[b, 0].numpy(), expected)
            if vol.shape[0] < PATCH[0]:
                assert (x[b, 0] == -2000).any()


def test_zscore_per_patch(volumes):
    loader = fastdata.loader(volumes[0], batch_size=2, zscore=True, augment=False, **FAST)
    x, _ = next(iter(loader))
    flat = x.view(2, -1)
    assert torch.allclose(flat.mean(1), torch.zeros(2), atol=1e-4)
    assert torch.allclose(flat.std(1), torch.ones(2), atol=1e-3)


def test_foreground_sampling_centres_on_bright_voxels(volumes):
    loader = fastdata.loader(volumes[0], batch_size=3, sampling="foreground", foreground_prob=1.0,
                             foreground_hu=500, augment=False, patches_per_volume=2, **FAST)
    for x, meta in loader:
        assert bool(meta["foreground"].all())
        assert all(bool((x[b] > 500).any()) for b in range(x.shape[0]))


def test_eval_sliding_windows_cover_every_voxel_exactly_once_stitched(volumes):
    dst, arrays = volumes
    loader = fastdata.loader(dst, batch_size=5, train=False, overlap=(4, 4, 4), **FAST)
    seen = {k: np.zeros(a.shape, bool) for k, a in arrays.items()}
    n = 0
    for x, meta in loader:
        assert x.shape[1:] == (1, *PATCH) and not bool(meta["duplicate"].any())
        for b in range(x.shape[0]):
            key, start = meta["keys"][b], meta["start"][b].tolist()
            vol = arrays[key]
            region = tuple(slice(max(s, 0), min(s + p, d)) for s, p, d in zip(start, PATCH, vol.shape))
            local = tuple(slice(r.start - s, r.stop - s) for r, s in zip(region, start))
            np.testing.assert_array_equal(x[b, 0].numpy()[local], vol[region])  # no augmentation in eval
            seen[key][region] = True
            n += 1
    assert n == sum(len(b[1]["keys"]) for b in _all(loader))  # deterministic, repeatable
    assert all(mask.all() for mask in seen.values())
    assert len(loader) == -(-n // 5)


def test_resume_mid_epoch_gives_identical_batches(volumes):
    opts = dict(batch_size=2, window=(-1000, 400), patches_per_volume=1, elastic_prob=1.0, seed=7, **FAST)
    ref = fastdata.loader(volumes[0], **opts)
    ref.set_epoch(3)
    expected = _all(ref)
    first = fastdata.loader(volumes[0], **opts)
    first.set_epoch(3)
    it = iter(first)
    head = [next(it)[0].clone() for _ in range(2)]
    state = first.state_dict()
    assert state["epoch"] == 3 and state["batch"] == 2
    resumed = fastdata.loader(volumes[0], **opts)
    resumed.load_state_dict(state)
    tail = _all(resumed)
    got = head + [x for x, _ in tail]
    assert len(got) == len(expected)
    for a, (b, _) in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert resumed.state_dict()["epoch"] == 4 and resumed.state_dict()["batch"] == 0
    again = fastdata.loader(volumes[0], **opts)
    again.load_state_dict(state)
    again.set_epoch(3)  # the documented resume loop calls set_epoch(state["epoch"]) first: it keeps the point
    assert [x.tolist() for x, _ in _all(again)] == [x.tolist() for x, _ in tail]
    with pytest.raises(ValueError, match="seed"):
        fastdata.loader(volumes[0], **{**opts, "seed": 8}).load_state_dict(state)
    for bad in ({**state, "epoch": -1}, {k: v for k, v in state.items() if k != "batch"}, {**state, "batch": "2"}):
        with pytest.raises(ValueError, match="integer 'epoch' in 0..1000000, an integer 'batch'"):
            resumed.load_state_dict(bad)


def test_order_is_a_function_of_seed_and_epoch(volumes):
    def keys(seed, epoch):
        loader = fastdata.loader(volumes[0], batch_size=1, augment=False, seed=seed, **FAST)
        loader.set_epoch(epoch)
        return [m["keys"][0] for _, m in loader]

    assert keys(0, 0) == keys(0, 0)
    assert keys(0, 0) != keys(0, 1) or keys(0, 0) != keys(0, 2)
    assert sorted(keys(0, 1)) == sorted(keys(1, 1))
    loader = fastdata.loader(volumes[0], batch_size=1, augment=False, **FAST)
    first = [m["keys"][0] for _, m in loader]
    second = [m["keys"][0] for _, m in loader]  # epochs advance by themselves after a full pass
    assert first == keys(0, 0) and second == keys(0, 1)


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_ranks_get_equal_batches_and_together_cover_everything(volumes, world_size):
    dst, arrays = volumes
    train_keys, eval_windows, lengths = [], [], set()
    for rank in range(world_size):
        loader = fastdata.loader(dst, batch_size=1, augment=False, rank=rank, world_size=world_size, **FAST)
        lengths.add(len(loader))
        train_keys.append([m["keys"][0] for _, m in loader])
        ev = fastdata.loader(dst, batch_size=2, train=False, rank=rank, world_size=world_size, **FAST)
        lengths_eval = len(ev)
        eval_windows.append([(m["keys"][b], tuple(m["start"][b].tolist()), bool(m["duplicate"][b]))
                             for _, m in ev for b in range(len(m["keys"]))])
        assert lengths_eval == len(fastdata.loader(dst, batch_size=2, train=False, rank=0, world_size=world_size,
                                                   **FAST))
    assert len(lengths) == 1
    assert set().union(*map(set, train_keys)) == set(arrays)
    assert sum(map(len, train_keys)) == -(-6 // world_size) * world_size
    real = [w[:2] for ws in eval_windows for w in ws if not w[2]]
    assert len(real) == len(set(real))  # disjoint
    single = fastdata.loader(dst, batch_size=2, train=False, **FAST)
    assert sorted(real) == sorted((m["keys"][b], tuple(m["start"][b].tolist()))
                                  for _, m in single for b in range(len(m["keys"])))


def test_bad_options_are_rejected(volumes):
    with pytest.raises(ValueError, match="patch_size"):
        fastdata.loader(volumes[0], patch_size=(0, 16, 16))
    with pytest.raises(ValueError, match="exclusive"):
        fastdata.loader(volumes[0], window=(-1000, 400), zscore=True)
    with pytest.raises(ValueError, match="sampling"):
        fastdata.loader(volumes[0], sampling="edges")
    with pytest.raises(TypeError, match="unknown option"):
        fastdata.loader(volumes[0], image_size=224)
    with pytest.raises(ValueError, match="device"):
        fastdata.loader(volumes[0], device="gpu")


def test_2d_images_load_as_one_slice_volumes(tmp_path):
    import shutil
    from pathlib import Path

    from pydicom.data import get_testdata_file

    tree = Path(get_testdata_file("CT_small.dcm", download=False)).parent / "dicomdirtests" / "77654033"
    cr = sorted(tree.glob("CR*/*"))
    for i, path in enumerate(cr):
        shutil.copy(path, tmp_path / f"cr{i}")
    convert_dicom(tmp_path, tmp_path / "out")
    arrays = {k: load_volume(s)[0] for k, s in read_samples(tmp_path / "out").items()}
    assert arrays and all(a.ndim == 2 for a in arrays.values())
    loader = fastdata.loader(tmp_path / "out", batch_size=len(arrays), patch_size=(1, 8, 8), augment=False,
                             num_workers=1)
    x, meta = next(iter(loader))
    assert x.shape == (len(arrays), 1, 1, 8, 8)
    assert meta["volume_shape"][:, 0].tolist() == [1] * len(arrays)
    for b, key in enumerate(meta["keys"]):
        _, y0, x0 = meta["start"][b].tolist()
        np.testing.assert_array_equal(x[b, 0, 0].numpy(), arrays[key][y0:y0 + 8, x0:x0 + 8])


def test_options_in_hounsfield_units_on_volumes_that_are_not_ct_are_a_warning(volumes, tmp_path, caplog):
    """An MR volume holds rescaled stored values: the default pad_value of -1024 (CT's air), a window or a
    foreground threshold in HU mean nothing there, and patches came out padded with -1024 silently."""
    write_phantom(tmp_path / "mr" / "s0", Phantom(slices=6, series_uid="1.2.3.4"), modality="MR")
    convert_dicom(tmp_path / "mr", tmp_path / "mr_volumes")
    kw = dict(batch_size=1, patch_size=(4, 8, 8))

    def warned(source, **options) -> list[str]:
        caplog.clear()
        with caplog.at_level("WARNING", logger="fastdata.volumes.options"):
            fastdata.loader(source, **kw, **options)
        return [r.getMessage() for r in caplog.records if r.name == "fastdata.volumes.options"]

    ct = volumes[0]
    assert warned(ct) == [] and warned(ct, window=(-1000, 400), sampling="foreground") == []  # CT: in HU
    assert warned(tmp_path / "mr_volumes", pad_value=0.0, zscore=True) == []
    assert warned(tmp_path / "mr_volumes") == [
        f"{tmp_path / 'mr_volumes'} holds MR volumes, whose values are not Hounsfield units, but pad_value=-1024.0 is "
        "in HU (CT's air, window or foreground): pass pad_value= their background (0 for most MR), zscore= instead "
        "of window=, and a foreground_hu= in their own values"]
    both = warned(tmp_path / "mr_volumes", pad_value=0.0, window=(-1000, 400), sampling="foreground")
    assert len(both) == 1 and "but window=(-1000, 400), foreground_hu=-500.0 are in HU" in both[0]
