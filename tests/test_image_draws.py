"""The random draws of train samples (draws.py): computed per batch, a function of (seed, epoch, index) only,
uniform and independent; the sample stream asks for them once per block; a sample's crop does not depend on
the batch or the rank it is read in."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_images import loader, make_datasets

from fastdata.images.draws import (
    AUGMENT_STREAM,
    CAPTION_STREAM,
    CROP,
    CROP_ATTEMPTS,
    DALI_HOOK_STREAM,
    DRAWS,
    DRAWS_PER_ATTEMPT,
    FLIP,
    JITTER,
    TrainParams,
    integer_below,
    sample_draws,
    train_params,
    uniforms,
)
from fastdata.images.stream import GROUP, SampleStream


def test_a_sample_draws_the_same_numbers_in_any_batch():
    together = sample_draws(7, 3, np.array([3, 5, 9, 1_000_000]))
    assert together.shape == (4, DRAWS) == (4, CROP + CROP_ATTEMPTS * DRAWS_PER_ATTEMPT)
    alone = np.concatenate([sample_draws(7, 3, np.array([i])) for i in (9, 3, 1_000_000, 5)])
    assert np.array_equal(together, alone[[1, 3, 0, 2]])
    assert np.array_equal(sample_draws(7, 3, np.array([5])), sample_draws(7, 3, np.array([5])))
    for other in (sample_draws(8, 3, np.array([5])), sample_draws(7, 4, np.array([5])),
                  sample_draws(7, 3, np.array([6]))):
        assert not np.any(other == together[1])  # another seed, epoch or sample: every number differs


def test_draws_are_uniform_and_independent():
    rows = sample_draws(0, 0, np.arange(20_000))
    assert rows.dtype == np.float64 and rows.min() >= 0.0 and rows.max() < 1.0
    assert np.allclose(rows.mean(axis=0), 0.5, atol=0.01)
    assert np.allclose(np.quantile(rows, [0.1, 0.5, 0.9], axis=0).T, [0.1, 0.5, 0.9], atol=0.015)
    corr = np.corrcoef(rows.T)  # between the numbers of one sample
    assert np.abs(corr[~np.eye(DRAWS, dtype=bool)]).max() < 0.04
    neighbours = [(rows[:-1, 0], rows[1:, 0]),  # consecutive samples
                  (rows[:, 0], sample_draws(1, 0, np.arange(20_000))[:, 0]),  # neighbouring seeds
                  (rows[:, 0], sample_draws(0, 1, np.arange(20_000))[:, 0])]  # neighbouring epochs
    assert all(abs(np.corrcoef(a, b)[0, 1]) < 0.04 for a, b in neighbours)
    assert len(np.unique(rows)) == rows.size  # 53-bit numbers: no repeats in 900k


def test_each_stream_is_its_own_generator_and_float32_stays_below_one():
    idx = np.arange(5000)
    streams = [uniforms(2, 1, idx, count=DRAWS, stream=s)[:, 0]
               for s in (AUGMENT_STREAM, DALI_HOOK_STREAM, CAPTION_STREAM)]
    assert np.array_equal(streams[0], sample_draws(2, 1, idx)[:, 0])
    assert all(abs(np.corrcoef(a, b)[0, 1]) < 0.05 for a, b in [streams[:2], streams[1:], streams[::2]])
    small = uniforms(2, 1, np.arange(200_000), count=8, stream=DALI_HOOK_STREAM, dtype=np.float32)
    assert small.dtype == np.float32 and small.max() < 1.0 and small.min() >= 0.0
    assert np.allclose(small.astype(np.float64) * (1 << 24), np.round(small.astype(np.float64) * (1 << 24)))
    assert [integer_below(u, 3) for u in (0.0, 0.34, 0.67)] == [0, 1, 2]
    top = 1 - 2**-53  # the largest draw
    assert all(integer_below(top, n) == n - 1 for n in (1, 2, 3, 4, 255, 256, 257, 2**40 + 1, 2**52))


def test_huge_seeds_and_indices_draw_valid_numbers():
    rows = sample_draws(2**63 - 1, 10**6, np.array([0, 2**40, 2**62]))
    assert rows.min() >= 0.0 and rows.max() < 1.0 and len(np.unique(rows)) == rows.size


def test_train_params_map_draws_to_torchvision_ranges():
    low = [0.0] * DRAWS
    flip, jitter = train_params(low, (0.4, 0.3, 0.2, 0.1), True)
    assert flip is True and jitter == pytest.approx((0.6, 0.7, 0.8, -0.1))
    flip, jitter = train_params([0.75] * DRAWS, (0.4, 0.3, 1.5, 0.1), True)
    assert flip is False and jitter == pytest.approx((1.2, 1.15, 1.875, 0.05))  # saturation's lower bound is 0
    assert train_params(low, None, False) == TrainParams(False, None)  # hflip off: never mirrored
    rows = sample_draws(1, 0, np.arange(4000)).tolist()
    flips = np.mean([train_params(r, None, True).flip for r in rows])
    assert 0.47 < flips < 0.53
    assert [r[FLIP] < 0.5 for r in rows[:50]] == [train_params(r, None, True).flip for r in rows[:50]]
    jitter = np.array([train_params(r, (0.4, 0.4, 0.4, 0.1), True).jitter for r in rows])
    assert np.all(jitter[:, :3] >= 0.6) and np.all(jitter[:, :3] <= 1.4) and np.all(np.abs(jitter[:, 3]) <= 0.1)
    assert np.allclose(jitter[:, 0], 0.6 + 0.8 * np.array(rows)[:, JITTER][:, 0])


class Counting:
    def __init__(self, seed=5, epoch=2):
        self.calls, self.seed, self.epoch = [], seed, epoch

    def __call__(self, indices):
        self.calls.append(len(indices))
        return sample_draws(self.seed, self.epoch, indices).tolist()


def drain(stream, count):
    return [None if f is None else f.result() for f in (stream.next() for _ in range(count))]


def test_the_stream_draws_once_per_block_and_hands_each_sample_its_row():
    sequence = np.random.default_rng(0).permutation(1000)
    draw = Counting()
    with ThreadPoolExecutor(2) as pool:
        stream = SampleStream(pool, lambda i, row, dest: (i, row), sequence, start=0, limit=1000, ahead=192,
                              padded=False, chunk=64, draw=draw)
        out = drain(stream, 1000)
    assert [i for i, _ in out] == sequence.tolist()
    assert all(row == sample_draws(5, 2, np.array([i]))[0].tolist() for i, row in out)
    assert sum(draw.calls) == 1000 and draw.calls[0] == 192  # the first window at once, then blocks of 64
    assert len(draw.calls) <= 1 + (1000 - 192) // 64 + 1 and min(draw.calls[1:-1]) >= 64


def test_the_stream_pads_eval_and_wraps_train_past_its_limit():
    sequence = np.arange(10, 17)
    with ThreadPoolExecutor(1) as pool:
        ev = SampleStream(pool, lambda i, row, dest: (i, row, dest), sequence, start=2, limit=12, ahead=4,
                          padded=True, chunk=4, place=lambda position: ("row", position))
        # eval: no draws; each real position gets its destination; padding rows are no task
        assert drain(ev, 10) == [(i, None, ("row", i - 10)) for i in range(12, 17)] + [None] * 5
        draw = Counting()
        tr = SampleStream(pool, lambda i, row, dest: (i, dest), sequence, start=5, limit=7, ahead=8, padded=False,
                          chunk=8, draw=draw)
        # replacements of skipped samples wrap around, one at a time; no destination without `place`
        assert drain(tr, 5) == [(15, None), (16, None), (10, None), (11, None), (12, None)]
        assert draw.calls == [2, 1, 1, 1]


class CountingPool(ThreadPoolExecutor):
    def __init__(self, workers):
        super().__init__(workers)
        self.tasks = 0

    def submit(self, *args, **kwargs):
        self.tasks += 1
        return super().submit(*args, **kwargs)


def test_a_pool_task_loads_a_group_of_samples_and_each_keeps_its_own_outcome():
    def load(i, row, dest):
        if i % 10 == 3:
            raise KeyError(i)  # any exception: the position raises it, its group's other samples are delivered
        return i * 2

    with CountingPool(2) as pool:
        stream = SampleStream(pool, load, np.arange(100), start=0, limit=100, ahead=64, padded=False, chunk=32)
        outcomes = []
        for _ in range(100):
            slot = stream.next()
            try:
                outcomes.append(slot.result())
            except KeyError as exc:
                outcomes.append(("failed", exc.args[0]))
    assert outcomes == [("failed", i) if i % 10 == 3 else 2 * i for i in range(100)]
    assert GROUP == 8 and pool.tasks == 13  # blocks of 64, 32 and 4 samples: 8 + 4 + 1 groups


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_datasets(tmp_path_factory.mktemp("draws"))["wds"]


def crops(ld, epoch=0):
    ld.set_epoch(epoch)
    return {row: image for x, _ in ld for row, image in zip(ld.backend.last_rows, x.clone())}


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_a_sample_gets_the_same_crop_in_any_batch_size_and_on_any_rank(ds, backend):
    one = crops(loader(ds, split="train", backend=backend, batch_size=4, dtype="uint8"))
    other = crops(loader(ds, split="train", backend=backend, batch_size=3, dtype="uint8"))
    ranks = {}
    for r in range(2):
        ranks.update(crops(loader(ds, split="train", backend=backend, batch_size=2, dtype="uint8", rank=r,
                                  world_size=2)))
    assert set(one) == set(other) == set(ranks) == set(range(12))
    assert all(torch.equal(one[i], other[i]) and torch.equal(one[i], ranks[i]) for i in one)
    later = crops(loader(ds, split="train", backend=backend, batch_size=4, dtype="uint8"), epoch=1)
    assert sum(not torch.equal(one[i], later[i]) for i in one) >= 10  # another epoch draws again
