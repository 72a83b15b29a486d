"""Device augmentation of patch batches: shapes and dtype kept, elastic field smooth, seeded."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("kornia")

from fastdata.volumes.augment import VolumeAugment, elastic, normalise, rot90_hw  # noqa: E402
from fastdata.volumes.options import VolumeLoaderOptions  # noqa: E402
from fastdata.volumes.patches import crop, eval_plan, sliding_windows, window_starts  # noqa: E402


def _batch(b=3, size=(24, 24, 24)):
    g = torch.Generator().manual_seed(0)
    return torch.rand(b, 1, *size, generator=g)


@pytest.mark.parametrize("margin", [0, 4])
def test_augment_keeps_patch_shape_and_dtype(margin):
    opts = VolumeLoaderOptions(patch_size=(16, 16, 16), crop_margin=margin, elastic_prob=1.0, affine_prob=1.0)
    aug = VolumeAugment(opts)
    x = _batch(size=opts.cut_size)
    assert opts.cut_size == (16 + 2 * margin,) * 3
    torch.manual_seed(1)
    y, none = aug(x)
    assert none is None and y.shape == (3, 1, 16, 16, 16) and y.dtype == torch.float32
    torch.manual_seed(1)
    torch.testing.assert_close(aug(x)[0], y, rtol=0, atol=0)  # seeded -> reproducible
    names = [type(m).__name__ for m in [*aug.kornia, aug.affine]]
    assert {"RandomDepthicalFlip3D", "RandomVerticalFlip3D", "RandomHorizontalFlip3D", "RandomAffine3D"} <= set(names)
    assert ("RandomCrop3D" in names) == (margin > 0)


def test_elastic_is_identity_at_zero_and_smooth_otherwise():
    x = _batch()
    torch.testing.assert_close(elastic(x, prob=1.0, grid=4, magnitude=0.0)[0], x)
    torch.testing.assert_close(elastic(x, prob=0.0, grid=4, magnitude=3.0)[0], x)
    torch.manual_seed(0)
    y, _ = elastic(x, prob=1.0, grid=4, magnitude=3.0)
    assert y.shape == x.shape and not torch.allclose(y, x)
    const = torch.full((2, 1, 12, 12, 12), 0.25)
    torch.testing.assert_close(elastic(const, prob=1.0, grid=3, magnitude=2.0)[0], const)  # border padding
    ramp = torch.linspace(0, 1, 24).view(1, 1, 1, 1, 24).expand(1, 1, 24, 24, 24).contiguous()
    warped, _ = elastic(ramp, prob=1.0, grid=4, magnitude=1.0)
    assert float((warped - ramp).abs().max()) < 0.25  # a few voxels of displacement, not noise


def test_rot90_permutes_values_only():
    x = _batch(b=4, size=(8, 12, 12))
    torch.manual_seed(3)
    y, _ = rot90_hw(x)
    assert y.shape == x.shape
    for b in range(4):
        assert torch.equal(torch.sort(y[b].flatten()).values, torch.sort(x[b].flatten()).values)


def test_normalise_window_and_fixed_zscore():
    hu = torch.tensor([-2000.0, -1000.0, -300.0, 400.0, 3000.0]).view(1, 1, 1, 1, 5)
    w = normalise(hu, VolumeLoaderOptions(window=(-1000, 400)))
    torch.testing.assert_close(w.flatten(), torch.tensor([0.0, 0.0, 0.5, 1.0, 1.0]))
    z = normalise(hu, VolumeLoaderOptions(zscore=(-300.0, 700.0)))
    torch.testing.assert_close(z.flatten(), (hu.flatten() + 300) / 700)


def test_window_starts_cover_and_end_at_the_border():
    assert window_starts(10, 16, 0) == [0]
    assert window_starts(16, 16, 0) == [0]
    assert window_starts(40, 16, 4) == [0, 12, 24]
    assert window_starts(41, 16, 0) == [0, 16, 25]
    assert len(sliding_windows((40, 16, 10), (16, 16, 16), (4, 0, 0))) == 3



def test_eval_plan_marks_exactly_the_padding_repeats_as_duplicates():
    """Three one-window volumes on 2 and 4 ranks: every rank gets as many patches, the repeats that pad the
    plan (and only they) are marked, so the loader's `duplicate` flag tells a metric what to leave out."""
    shapes, whole, none = [(16, 16, 16)] * 3, (16, 16, 16), (0, 0, 0)

    def plan(rank: int, world: int) -> list[tuple[int, tuple, bool]]:
        return [(p.volume, p.start, p.duplicate)
                for p in eval_plan(shapes, patch=whole, overlap=none, rank=rank, world_size=world)]

    assert [plan(r, 2) for r in range(2)] == [[(0, none, False), (1, none, False)],
                                              [(2, none, False), (0, none, True)]]
    assert [plan(r, 4) for r in range(4)] == [[(0, none, False)], [(1, none, False)], [(2, none, False)],
                                              [(0, none, True)]]
    assert [plan(r, 3) for r in range(3)] == [[(v, none, False)] for v in range(3)]
    assert eval_plan([], patch=whole, overlap=none, rank=0, world_size=2) == []

def test_crop_pads_outside_the_volume():
    import numpy as np

    vol = np.arange(27, dtype=np.int16).reshape(3, 3, 3)
    out = crop(vol, (-1, 0, 1), (4, 3, 3), pad_value=-5)
    assert out.shape == (4, 3, 3) and (out[0] == -5).all() and (out[1:, :, 2] == -5).all()
    np.testing.assert_array_equal(out[1:, :, :2], vol[:, :, 1:])
