"""Epoch order and rank splitting of the image loader, for every rank of world sizes 1-4 in one process."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torchvision.transforms.v2 import functional as TF

from fastdata.images.geometry import (
    Box,
    center_crop_offsets,
    dct_factor,
    random_resized_crop_box,
    resize_short_size,
)
from fastdata.images.order import derive_seed, epoch_plan, epoch_plans, rank_block, shard_sequence, split_sequence


def test_derived_seeds_are_31_bit_distinct_and_take_negative_parts():
    """DALI's graph seed per (seed, rank, world size): every combination its own seed, each a non-negative int32;
    a negative part counts as its 32-bit two's complement."""
    seeds = {derive_seed(a, b, c) for a in range(4) for b in range(4) for c in range(1, 5)}
    assert len(seeds) == 64 and all(0 <= s < 2**31 for s in seeds)
    assert derive_seed(-1, 3) == derive_seed(2**32 - 1, 3) != derive_seed(1, 3)


def plans(n, w, **kw):
    base = dict(batch_size=3, seed=0, epoch=0)
    return [epoch_plan(n, rank=r, world_size=w, **{**base, **kw}) for r in range(w)]


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [1, 7, 10, 13, 24])
@pytest.mark.parametrize("batch_size", [1, 3, 4])
def test_eval_ranks_disjoint_complete_equal_batches(n, world_size, batch_size):
    ps = plans(n, world_size, train=False, keep_last=True, batch_size=batch_size)
    seqs = [p.sequence.tolist() for p in ps]
    flat = [i for s in seqs for i in s]
    assert sorted(flat) == list(range(n)) and len(flat) == n  # complete and disjoint
    assert flat == list(range(n))  # contiguous blocks in dataset order
    counts = {p.num_batches for p in ps}
    assert counts == {math.ceil(math.ceil(n / world_size) / batch_size)}
    for p in ps:
        assert p.padded and p.num_batches * batch_size >= len(p.sequence)
        assert all(p.rows(b) == batch_size for b in range(p.num_batches))


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [7, 13, 24])
def test_train_ranks_disjoint_equal_full_batches(n, world_size):
    ps = plans(n, world_size, train=True, keep_last=False, epoch=3)
    seqs = [set(p.sequence.tolist()) for p in ps]
    assert sum(len(s) for s in seqs) == len(set().union(*seqs))  # disjoint
    assert all(len(s) == n // world_size for s in seqs)
    assert {p.num_batches for p in ps} == {(n // world_size) // 3}
    assert all(p.rows(b) == 3 for p in ps for b in range(p.num_batches))


def test_train_keep_last_gives_partial_final_batch():
    (p,) = plans(10, 1, train=True, keep_last=True, batch_size=4)
    assert p.num_batches == 3 and [p.rows(b) for b in range(3)] == [4, 4, 2] and p.padded is False
    rest = split_sequence(np.arange(10, 20), train=True, batch_size=4, keep_last=True, rank=0, world_size=1)
    assert rest.num_batches == 3 and [rest.rows(b) for b in range(3)] == [4, 4, 2] and rest.padded is False
    assert rest.sequence.tolist() == list(range(10, 20))
    # train: every rank the same count, the smallest block (eval's ranks would take 3 and 2 of the 10 left)
    ranks = [split_sequence(np.arange(10), train=True, batch_size=2, keep_last=True, rank=r, world_size=4)
             for r in range(4)]
    assert [(q.num_batches, q.sequence.tolist()) for q in ranks] == [(1, [0, 1]), (1, [2, 3]), (1, [4, 5]), (1, [6, 7])]


def test_eval_drop_last_has_no_padding():
    ps = plans(10, 3, train=False, keep_last=False, batch_size=2)
    assert {p.num_batches for p in ps} == {1} and not any(p.padded for p in ps)
    assert [p.sequence.tolist() for p in ps] == [[0, 1], [3, 4], [6, 7]]


def test_order_is_pure_function_of_seed_epoch_rank_world():
    a = plans(50, 2, train=True, keep_last=False, seed=7, epoch=1)
    b = plans(50, 2, train=True, keep_last=False, seed=7, epoch=1)
    assert all(np.array_equal(x.sequence, y.sequence) for x, y in zip(a, b))
    c = plans(50, 2, train=True, keep_last=False, seed=7, epoch=2)
    d = plans(50, 2, train=True, keep_last=False, seed=8, epoch=1)
    assert not np.array_equal(a[0].sequence, c[0].sequence)
    assert not np.array_equal(a[0].sequence, d[0].sequence)


def test_rank_block_matches_dali_rule():
    assert [rank_block(7, r, 3) for r in range(3)] == [(0, 2), (2, 4), (4, 7)]


def test_train_reads_each_shard_in_one_stretch_and_mixes_within_windows():
    sizes = (10,) * 20  # 200 samples in 20 shards
    shard_of = np.repeat(np.arange(20), 10)
    (p,) = [epoch_plan(sizes, train=True, batch_size=4, keep_last=False, seed=1, epoch=0, rank=0, world_size=1,
                       window=30)]
    assert sorted(p.sequence.tolist()) == list(range(200))  # a permutation of every sample
    for k in range(0, 200, 30):  # a window of 30 samples draws from at most 4 shards (3 whole + a boundary one)
        assert len(set(shard_of[p.sequence[k:k + 30]].tolist())) <= 4
    last_use = {s: max(np.flatnonzero(shard_of[p.sequence] == s)) for s in range(20)}
    first_use = {s: min(np.flatnonzero(shard_of[p.sequence] == s)) for s in range(20)}
    assert all(last_use[s] - first_use[s] < 60 for s in range(20))  # each shard is done within two windows
    inside = p.sequence[:30]
    assert inside.tolist() != sorted(inside.tolist())  # shuffled inside the window


def test_shard_order_and_windows_change_every_epoch_and_ranks_split_the_shards():
    sizes = (8,) * 12
    a, b = (epoch_plan(sizes, train=True, batch_size=4, keep_last=False, seed=0, epoch=e, rank=0, world_size=1)
            for e in (0, 1))
    assert a.sequence.tolist() != b.sequence.tolist()
    ranks = [epoch_plan(sizes, train=True, batch_size=4, keep_last=False, seed=0, epoch=2, rank=r, world_size=3)
             for r in range(3)]
    shard_sets = [set((r.sequence // 8).tolist()) for r in ranks]
    assert all(len(s) == 4 for s in shard_sets) and len(set().union(*shard_sets)) == 12  # 4 whole shards each


def test_window_none_shuffles_a_rank_block_whole():
    p = epoch_plan((50, 50), train=True, batch_size=4, keep_last=False, seed=0, epoch=0, rank=0, world_size=1,
                   window=None)
    halves = p.sequence[:50] // 50  # with a single window the two shards are interleaved, not one after the other
    assert 0 < halves.sum() < 50


@pytest.mark.parametrize("bad", [dict(window=0), dict(batch_size=0), dict(rank=2), dict(rank=-1), dict(epoch=-1),
                                 dict(seed=-1), dict(sizes=(4, -1))])
def test_bad_plan_arguments_raise(bad):
    good = dict(train=True, batch_size=2, keep_last=False, seed=0, epoch=0, rank=0, world_size=2, window=3)
    epoch_plan((4, 6), **good)  # the same plan with every argument valid
    kw = {**good, **bad}
    sizes = kw.pop("sizes", (4, 6))
    with pytest.raises(ValueError, match="bad plan arguments"):
        epoch_plan(sizes, **kw)


def test_bad_plan_arguments_are_named():
    with pytest.raises(ValueError) as info:
        epoch_plan((1, 2, 3, 4, 5, -6, 7), train=True, batch_size=2, keep_last=False, seed=1, epoch=2, rank=0,
                   world_size=1, window=3)
    assert str(info.value) == ("bad plan arguments: shard sizes (1, 2, 3, 4, 5) batch_size=2 rank=0 world_size=1 "
                               "epoch=2 seed=1 window=3")


def test_a_window_of_one_keeps_the_order_and_a_mixture_sequence_replaces_the_shards():
    mixed = np.arange(100, 110)[::-1].copy()
    p = epoch_plan((4, 6), train=True, batch_size=2, keep_last=False, seed=0, epoch=0, rank=1, world_size=2,
                   window=1, sequence=mixed)
    assert p.sequence.tolist() == mixed[5:].tolist()
    whole = epoch_plan((4, 6), train=True, batch_size=2, keep_last=False, seed=0, epoch=0, rank=0, world_size=1,
                       window=1)
    assert whole.sequence.tolist() == shard_sequence((4, 6), seed=0, epoch=0).tolist()


def test_no_shards_no_samples():
    empty = shard_sequence((), seed=0, epoch=0)
    assert empty.tolist() == [] and empty.dtype == np.int64
    p = epoch_plan((), train=True, batch_size=2, keep_last=True, seed=0, epoch=0, rank=0, world_size=1)
    assert p.num_batches == 0 and len(p.sequence) == 0


def test_random_resized_crop_box_in_bounds_and_in_scale():
    rng = np.random.default_rng(0)
    for _ in range(200):
        h, w = int(rng.integers(20, 300)), int(rng.integers(20, 300))
        box = random_resized_crop_box(rng.random(40), h, w, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3))
        assert 0 <= box.top and box.top + box.height <= h and 0 <= box.left and box.left + box.width <= w
        assert box.height >= 1 and box.width >= 1


def test_random_resized_crop_area_and_ratio_follow_torchvision():
    """Area fraction and log aspect ratio of the boxes have torchvision's distribution (uniform draws
    on `scale` and log `ratio`, redrawn when the box does not fit): means and quartiles agree."""
    from torchvision.transforms import RandomResizedCrop

    def stats(boxes):
        area = np.array([h * w for _, _, h, w in boxes]) / (600 * 800)
        ratio = np.log(np.array([w / h for _, _, h, w in boxes]))
        return area, ratio

    for ratio in ((3 / 4, 4 / 3), (1.0, 2.0)):  # symmetric, and one that tells width from height
        rng = np.random.default_rng(1)
        ours = stats([random_resized_crop_box(rng.random(40), 600, 800, scale=(0.08, 1.0), ratio=ratio)
                      for _ in range(4000)])
        torch.manual_seed(1)
        image = torch.zeros(1, 600, 800)
        theirs = stats([RandomResizedCrop.get_params(image, scale=[0.08, 1.0], ratio=list(ratio))
                        for _ in range(4000)])
        for a, b in zip(ours, theirs):
            assert abs(a.mean() - b.mean()) < 0.02
            quartiles = [0.1, 0.25, 0.5, 0.75, 0.9]
            assert np.allclose(np.quantile(a, quartiles), np.quantile(b, quartiles), atol=0.03)
    ours = stats([random_resized_crop_box(rng.random(40), 600, 800, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3))
                  for _ in range(4000)])
    area, ratio = ours
    assert 0.08 * 0.98 <= area.min() < 0.1 and area.max() <= 1.0
    assert np.log(3 / 4) - 0.01 <= ratio.min() and ratio.max() <= np.log(4 / 3) + 0.01
    narrow = [random_resized_crop_box(rng.random(40), 1000, 1000, scale=(0.5, 0.5), ratio=(2.0, 2.0))
              for _ in range(20)]
    assert all(abs(b.height * b.width / 1e6 - 0.5) < 0.002 and abs(b.width / b.height - 2.0) < 0.01 for b in narrow)


def test_random_resized_crop_fallback_is_central():
    rng = np.random.default_rng(0)
    # a 1000x10 strip can never fit a 3/4..4/3 crop of >= 50% area: central fallback
    box = random_resized_crop_box(rng.random(40), 1000, 10, scale=(0.5, 1.0), ratio=(3 / 4, 4 / 3))
    assert box == Box(top=(1000 - 13) // 2, left=0, height=13, width=10)


@pytest.mark.parametrize("hw", [(48, 64), (64, 48), (37, 33), (100, 101), (256, 341)])
def test_resize_and_center_crop_match_torchvision(hw):
    img = torch.randint(0, 256, (3, *hw), dtype=torch.uint8)
    ref = TF.center_crop(TF.resize(img, [37], antialias=True), [32])
    new_h, new_w = resize_short_size(hw[0], hw[1], 37)
    assert TF.resize(img, [37], antialias=True).shape[-2:] == (new_h, new_w)
    top, left = center_crop_offsets(new_h, new_w, 32)
    ours = TF.resize(img, [new_h, new_w], antialias=True)[:, top:top + 32, left:left + 32]
    assert torch.equal(ours, ref)


def test_dct_factor_keeps_needed_resolution():
    assert dct_factor(1024, 800, 224) == 2
    assert dct_factor(2000, 1900, 224) == 8
    assert dct_factor(300, 300, 224) == 1


def test_a_scaled_box_keeps_at_least_one_pixel_and_no_more():
    assert Box(0, 0, 1, 1).scaled(0.5, 0.5, max_h=10, max_w=10) == Box(0, 0, 1, 1)
    assert Box(4, 6, 2, 2).scaled(0.25, 0.25, max_h=10, max_w=10) == Box(1, 2, 1, 1)
    # a 9 px side decoded at 1/8 is 2 px: the last pixel's box starts at 8 * 2/9 = 1.78, rounded to 2, kept at 1
    assert Box(8, 8, 1, 1).scaled(2 / 9, 2 / 9, max_h=2, max_w=2) == Box(1, 1, 1, 1)
    # a box reaching past the scaled image (scale factors larger than max / full) is cut at its edge
    assert Box(2, 2, 8, 8).scaled(0.5, 0.5, max_h=4, max_w=4) == Box(1, 1, 3, 3)


@pytest.mark.parametrize("train,keep_last,window", [(True, False, 5), (True, True, None), (False, True, 5),
                                                    (False, False, None)])
def test_every_rank_at_once_is_each_rank_alone(train, keep_last, window):
    """`epoch_plans` (what an elastic replay uses) makes the epoch's sequence once; each plan is `epoch_plan`'s."""
    sizes, mixed = (7, 0, 12, 5), np.arange(40, 80)[::-1].copy()
    for sequence in (None, mixed if train else None):
        kw = dict(train=train, batch_size=3, keep_last=keep_last, seed=4, epoch=2, world_size=5, window=window,
                  sequence=sequence)
        every = epoch_plans(sizes, **kw)
        assert len(every) == 5
        for r, plan in enumerate(every):
            alone = epoch_plan(sizes, rank=r, **kw)
            assert (plan.num_batches, plan.batch_size, plan.padded) == (alone.num_batches, alone.batch_size,
                                                                        alone.padded)
            np.testing.assert_array_equal(plan.sequence, alone.sequence)
    with pytest.raises(ValueError, match="bad plan arguments"):
        epoch_plans(sizes, train=train, batch_size=0, keep_last=keep_last, seed=4, epoch=2, world_size=5)
