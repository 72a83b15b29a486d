"""Volume training semantics: foreground sampling centres patches on bright voxels (and uniform sampling
does not), patch positions are seeded, and each augmentation does what it says (flips flip, none is
identity, a rotation by 90 degrees turns the (H, W) plane)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("pydicom")
pytest.importorskip("kornia")

from conftest_dicom import Phantom, convert_dicom, load_volume, read_samples, write_phantom  # noqa: E402

import fastdata  # noqa: E402

PATCH = (8, 8, 8)
NO_AUG = dict(flip_prob=0.0, rot90=False, affine_prob=0.0, elastic_prob=0.0, crop_margin=0)


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    """Two 24x40x40 volumes each holding one small bright sphere (about 0.5% of the voxels)."""
    root = tmp_path_factory.mktemp("sparse")
    for i in range(2):
        ph = Phantom(series_uid=f"1.2.840.8.{i}", slices=24, rows=40, cols=40, slice_spacing=1.0,
                     pixel_spacing=(1.0, 1.0), origin=(0.0, 0.0, 0.0), center_mm=(10.0 + 15 * i, 28.0, 12.0),
                     radius_mm=3.0, background_hu=-1000, sphere_hu=700)
        write_phantom(root / "src" / f"s{i}", ph, seed=i)
    convert_dicom(root / "src", root / "out")
    return root / "out", {k: load_volume(s)[0] for k, s in read_samples(root / "out").items()}


def _patches(dst, arrays, epochs=4, **kw):
    out = []
    loader = fastdata.loader(dst, batch_size=4, patch_size=PATCH, patches_per_volume=8, num_workers=1, **kw)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for x, meta in loader:
            for b in range(x.shape[0]):
                out.append((x[b, 0], meta["keys"][b], tuple(meta["start"][b].tolist()), bool(meta["foreground"][b])))
    return out


def _raw(arrays, key, start):
    return arrays[key][tuple(slice(s, s + p) for s, p in zip(start, PATCH))]


def test_foreground_patches_hold_the_bright_voxels_uniform_ones_rarely_do(sparse):
    dst, arrays = sparse
    fg = _patches(dst, arrays, sampling="foreground", foreground_prob=1.0, foreground_hu=500, augment=False)
    assert all(flag for *_, flag in fg)
    assert all(bool((x > 500).any()) for x, *_ in fg)
    for x, key, start, _ in fg:  # the patch is the stored voxels at its start, untouched
        np.testing.assert_array_equal(x.numpy(), _raw(arrays, key, start))
    uniform = _patches(dst, arrays, sampling="uniform", augment=False)
    hit = np.mean([bool((x > 500).any()) for x, *_ in uniform])
    assert not any(flag for *_, flag in uniform) and hit < 0.3, hit
    half = _patches(dst, arrays, sampling="foreground", foreground_prob=0.5, foreground_hu=500, augment=False)
    share = np.mean([flag for *_, flag in half])
    assert 0.3 < share < 0.7, share


def test_patch_positions_are_seeded(sparse):
    dst, arrays = sparse
    a = [p[1:3] for p in _patches(dst, arrays, epochs=1, seed=1, augment=False)]
    b = [p[1:3] for p in _patches(dst, arrays, epochs=1, seed=1, augment=False)]
    c = [p[1:3] for p in _patches(dst, arrays, epochs=1, seed=2, augment=False)]
    assert a == b and a != c


def test_augmentations_do_what_they_say(sparse):
    dst, arrays = sparse
    fg = dict(sampling="foreground", foreground_prob=1.0, foreground_hu=500)  # patches with an off-centre sphere
    for x, key, start, _ in _patches(dst, arrays, epochs=1, augment=True, **fg, **NO_AUG):
        np.testing.assert_array_equal(x.numpy(), _raw(arrays, key, start))  # every probability 0: identity
    flipped = _patches(dst, arrays, epochs=1, augment=True, **fg, **{**NO_AUG, "flip_prob": 1.0})
    asymmetric = 0
    for x, key, start, _ in flipped:
        raw = _raw(arrays, key, start)
        np.testing.assert_array_equal(x.numpy(), raw[::-1, ::-1, ::-1])
        asymmetric += not np.array_equal(raw, raw[::-1, ::-1, ::-1])
    assert asymmetric > len(flipped) // 2  # the check above could tell a flip from none
    ks = []
    for x, key, start, _ in _patches(dst, arrays, epochs=1, augment=True, **fg, **{**NO_AUG, "rot90": True}):
        raw = torch.from_numpy(np.ascontiguousarray(_raw(arrays, key, start))).float()
        turns = [torch.rot90(raw, k, dims=(-2, -1)) for k in range(4)]
        if any(torch.equal(turns[i], turns[j]) for i in range(4) for j in range(i)):
            continue  # a patch symmetric under some turn cannot tell which one was applied
        k = [k for k in range(4) if torch.equal(turns[k], x)]
        assert len(k) == 1, "not a rotation by a multiple of 90 degrees in the (H, W) plane"
        ks.append(k[0])
    assert len(ks) > 8 and len(set(ks)) >= 3  # the turn is drawn per patch


def test_resume_on_a_rank_of_several_is_exact(sparse):
    dst, _ = sparse
    kw = dict(batch_size=2, patch_size=PATCH, patches_per_volume=4, num_workers=1, rank=1, world_size=2, seed=5)
    want = [x.clone() for x, _ in fastdata.loader(dst, **kw)]
    part = fastdata.loader(dst, **kw)
    it = iter(part)
    next(it)
    state = part.state_dict()
    resumed = fastdata.loader(dst, **kw)
    resumed.load_state_dict(state)
    got = [x.clone() for x, _ in resumed]
    assert len(want) == 2 and len(got) == 1 and torch.equal(got[0], want[1])
    with pytest.raises(ValueError, match="seed"):
        fastdata.loader(dst, **{**kw, "seed": 6}).load_state_dict(state)
    elastic = fastdata.loader(dst, **{**kw, "world_size": 3, "rank": 0})  # tests/test_elastic.py: what it delivers
    elastic.load_state_dict(state)
    assert elastic.state_dict()["elastic"] == [[2, 1]] and elastic.state_dict()["batch"] == 0
