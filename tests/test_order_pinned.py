"""The epoch orders and random draws of every loader, pinned to the values this release computes.

A state saved by `state_dict()` is a position in an order: it resumes exactly only where the order and the draws
are those of the run that saved it. A state saved before an upgrade of fastdata (or of numpy, whose Generator
methods may change between its versions, NEP 19) resumes into the same batches only if nothing below changed. Each
value was computed once and written here by hand; none may change without a release that says that states saved
before it resume into another order (docs/loading.md, "Resume in the middle of an epoch").
"""

from __future__ import annotations

import hashlib

import numpy as np

from fastdata.hooks import hook_seed
from fastdata.images.draws import CAPTION_STREAM, DALI_HOOK_STREAM, sample_draws, uniforms
from fastdata.images.order import derive_seed, epoch_plans
from fastdata.mixing import shard_permute
from fastdata.planning.mixture import Mixture, random_permute
from fastdata.text.options import SequenceLoaderOptions
from fastdata.text.plan import plan_sequences
from fastdata.volumes.patches import random_start, train_plan


def test_the_image_epoch_order() -> None:
    train = epoch_plans((5, 3, 4), train=True, batch_size=2, keep_last=False, seed=7, epoch=1, world_size=2, window=4)
    assert [p.sequence.tolist() for p in train] == [[1, 2, 3, 0, 4, 8], [5, 11, 10, 9, 6, 7]]
    val = epoch_plans((5, 3, 4), train=False, batch_size=2, keep_last=True, seed=7, epoch=1, world_size=2, window=4)
    assert [p.sequence.tolist() for p in val] == [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]
    assert derive_seed(7, 0, 2) == 1687816421  # the DALI graph's seed of rank 0 of 2


def test_the_image_draws() -> None:
    draws = sample_draws(7, 1, np.array([0, 11]))  # crop, flip and jitter of samples 0 and 11 in epoch 1
    assert draws.shape == (2, 45)
    assert draws[:, :3].tolist() == [[0.9988447231762935, 0.4042784984978114, 0.8800524170996159],
                                      [0.09002071808786416, 0.7339010298838958, 0.914952667400103]]
    assert hashlib.sha256(draws.astype("<f8").tobytes()).hexdigest()[:16] == "4baf73caa88dbbcf"
    assert uniforms(7, 1, np.array([3]), count=2, stream=DALI_HOOK_STREAM, dtype=np.float32).tolist() == \
        [[0.6337960362434387, 0.7134681344032288]]
    assert uniforms(7, 1, np.array([3]), count=1, stream=CAPTION_STREAM).tolist() == [[0.41242279346247634]]


def test_the_hook_seed() -> None:
    assert hook_seed(7, 1, 0, 3) == 6872510200115798557
    # a state of 2**63 or more (12484413868912049495 here) is taken modulo 2**63 - 1, into torch's seed range
    assert hook_seed(7, 1, 0, 0) == 3261041832057273688 == 12484413868912049495 - (2**63 - 1)


def test_the_token_batches() -> None:
    lengths = np.array([5, 17, 3, 40, 9, 22, 8, 13, 31, 2, 6, 19, 27, 11, 4, 15])
    plan = {b: [x.tolist() for x in plan_sequences(lengths, SequenceLoaderOptions(max_tokens=64, bucketing=b, seed=7,
                                                                                   window=8), epoch=1)]
            for b in ("length", "none")}
    assert plan == {"length": [[2, 10, 6], [3], [7, 15], [13, 5], [12, 8], [9, 14, 0, 4], [1, 11]],
                    "none": [[5, 9], [4, 8], [14, 0], [12, 13], [7, 11], [1], [3], [15, 6, 10, 2]]}


def test_the_volume_patches() -> None:
    plan = train_plan(5, per_volume=2, seed=7, epoch=1, rank=0, world_size=2)
    assert [(s.volume, s.stream) for s in plan] == [(0, (7, 1, 0, 0, 0)), (0, (7, 1, 0, 1, 0)), (2, (7, 1, 2, 0, 1)),
                                                    (2, (7, 1, 2, 1, 1)), (4, (7, 1, 4, 0, 2)), (4, (7, 1, 4, 1, 2))]
    rng = np.random.default_rng([7, 1, 3, 0, 0])
    assert random_start(np.zeros((10, 12, 14)), (4, 4, 4), rng, foreground=False, threshold=0) == ((6, 7, 7), False)


def test_the_mixture_items() -> None:
    assert Mixture(sizes=(5, 3), weights=(0.7, 0.3), per_epoch=10).epoch_items(1, random_permute(7, (5, 3))).tolist() \
        == [3, 7, 0, 1, 4, 6, 2, 2, 5, 1]
    images = Mixture(sizes=(7, 5), weights=(0.5, 0.5), per_epoch=16).epoch_items(2, shard_permute(7, ((4, 3), (2, 3))))
    assert images.tolist() == [4, 9, 5, 10, 6, 11, 0, 7, 1, 8, 2, 7, 3, 8, 0, 9]
    # two datasets of the same shard layout read their shards in orders of their own, per stream and pass
    permute = shard_permute(7, ((1,) * 8, (1,) * 8))
    assert [permute(d, stream, p).tolist() for d, stream, p in ((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1))] == \
        [[1, 5, 4, 3, 0, 6, 7, 2], [7, 2, 5, 6, 3, 4, 1, 0], [6, 2, 4, 0, 7, 1, 3, 5], [5, 4, 0, 2, 6, 3, 1, 7]]
