"""Reused batch buffers (fastdata/images/buffers.py) and the one-pass uint8 -> normalised float conversion:
a buffer is handed out again only when nothing outside the pool refers to it, so a batch the user keeps is
never overwritten; the conversion equals (x / 255 - mean) / std in every layout and block size."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest_images import loader, make_datasets

from fastdata.images.buffers import BufferPool


def test_a_buffer_comes_back_only_once_nothing_refers_to_it():
    pool = BufferPool(keep=2)
    a = pool.take((4, 3), np.float32)
    view = torch.from_numpy(a)[1:]  # a tensor view holds the array
    del a
    b = pool.take((4, 3), np.float32)
    assert not np.shares_memory(b, view.numpy()) and pool.reused == 0
    del view
    c = pool.take((4, 3), np.float32)
    assert pool.reused == 1 and len(pool) == 2
    del b
    d = pool.take((4, 3), np.float32)  # the freed second buffer; `c` is still held
    assert pool.reused == 2 and not np.shares_memory(c, d)


def test_the_pool_keeps_at_most_keep_and_makes_room_with_a_free_buffer_of_another_shape():
    pool = BufferPool(keep=2)
    held = [pool.take((2, 2), np.uint8), pool.take((2, 2), np.uint8)]
    extra = pool.take((2, 2), np.uint8)  # both pooled ones held: a fresh, unpooled one
    assert len(pool) == 2 and not any(np.shares_memory(extra, h) for h in held)
    del held[1], extra
    small = pool.take((1, 2), np.uint8)  # the short last batch replaces the free (2, 2) buffer
    assert len(pool) == 2 and pool.reused == 0
    del small
    assert pool.take((1, 2), np.uint8).shape == (1, 2) and pool.reused == 1
    with pytest.raises(ValueError, match="keep"):
        BufferPool(keep=0)


@pytest.mark.parametrize("channels_last", [True, False])
@pytest.mark.parametrize("block", [1 << 18, 100])  # one block, and many blocks of a few rows each
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "uint8"])
def test_uint8_batches_are_normalised_in_one_pass_as_by_the_formula(monkeypatch, channels_last, block, dtype):
    import fastdata.images.device_aug as device_aug
    from fastdata.images.device_aug import DeviceAugment
    from fastdata.images.options import ImageLoaderOptions

    monkeypatch.setattr(device_aug, "_BLOCK", block)
    opts = ImageLoaderOptions(batch_size=3, image_size=16, device="cpu", backend="kornia", dtype=dtype,
                              channels_last=channels_last)
    images = torch.randint(0, 256, (3, 16, 16, 3), dtype=torch.uint8)
    x = images.permute(0, 3, 1, 2).double()
    mean = torch.tensor(opts.mean, dtype=torch.float64).view(1, 3, 1, 1)
    std = torch.tensor(opts.std, dtype=torch.float64).view(1, 3, 1, 1)
    aug = DeviceAugment(opts, torch.device("cpu"))
    got = aug(images)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    assert got.dtype == getattr(torch, dtype) and got.is_contiguous(memory_format=fmt)
    if dtype == "uint8":  # no normalisation: the pixels themselves, in the asked memory format
        assert torch.equal(got, images.permute(0, 3, 1, 2))
    else:
        tol = 1e-5 if dtype == "float32" else 2e-2
        torch.testing.assert_close(got.double(), (x / 255 - mean) / std, rtol=tol, atol=tol)
    unit = aug.unit(images)  # what an augment hook receives
    assert unit.dtype == torch.float32 and unit.is_contiguous(memory_format=fmt)
    torch.testing.assert_close(unit.double(), x / 255, rtol=1e-6, atol=1e-6)


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return make_datasets(tmp_path_factory.mktemp("buffers"))["wds"]


@pytest.mark.parametrize("dtype", ["float32", "uint8"])
def test_a_batch_the_user_keeps_is_never_overwritten_and_released_ones_are_reused(ds, dtype):
    ld = loader(ds, backend="kornia", train=True, dtype=dtype, batch_size=2, prefetch=1, seed=3)
    kept = []
    for epoch in range(3):
        ld.set_epoch(epoch)
        for x, _ in ld:
            kept.append((x, x.clone()))  # every batch stays alive
    assert all(torch.equal(x, copy) for x, copy in kept)
    ptrs = {x.data_ptr() for x, _ in kept}
    assert len(ptrs) == len(kept)  # no two live batches share memory
    del kept
    seen = []
    for epoch in range(3):
        ld.set_epoch(epoch)
        for x, _ in ld:
            seen.append(x.data_ptr())  # released at the next step: its buffer can come back
    assert len(set(seen)) < len(seen)
