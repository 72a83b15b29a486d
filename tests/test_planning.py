"""The planning layer on its own (fastdata/planning/): mixture quotas, cursors carried across epochs, even
repeats, token shares, and the replay of an epoch interrupted on other world sizes."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from fastdata.planning.elastic import check_lineage, replay, resumed_lineage
from fastdata.planning.mixture import Mixture, check_weights, largest_remainder, random_permute


def _local(mix: Mixture, epoch: int, d: int) -> np.ndarray:
    ids = mix.epoch_items(epoch, random_permute(7, mix.sizes))
    return ids[mix.dataset_of(ids) == d] - mix.offsets[d]


@pytest.mark.parametrize("total, weights, expected", [
    (10, (0.7, 0.3), [7, 3]),
    (10, (1, 1, 1), [4, 3, 3]),  # the remainder goes to the earliest of equal shares
    (7, (0.5, 0.25, 0.25), [3, 2, 2]),  # 3.5, 1.75, 1.75: the larger remainders win
    (100, (2, 1), [67, 33]),
])
def test_largest_remainder_sums_exactly(total, weights, expected):
    assert largest_remainder(total, weights) == expected


def test_largest_remainder_of_weights_whose_sum_overflows():
    """Finite weights near the largest float (their sum overflowed: an OverflowError, not a fastdata error) deal
    by their ratios; subnormal ones too."""
    assert largest_remainder(10, [1.5e308, 0.5e308, 1e308]) == [5, 2, 3]
    assert largest_remainder(10, [1e308, 1e308]) == [5, 5]
    assert largest_remainder(4, [5e-324, 1.5e-323]) == [1, 3]


def test_sample_quotas_are_exact_in_every_epoch():
    mix = Mixture(sizes=(50, 7, 23), weights=(0.5, 0.3, 0.2), per_epoch=61)
    assert mix.quotas() == [31, 18, 12]
    for epoch in range(5):
        ids = mix.epoch_items(epoch, random_permute(1, mix.sizes))
        assert Counter(mix.dataset_of(ids).tolist()) == {0: 31, 1: 18, 2: 12}


def test_an_undersampled_dataset_sees_every_item_once_before_any_repeats():
    mix = Mixture(sizes=(23, 40), weights=(0.2, 0.8), per_epoch=20)  # dataset 0: 4 items an epoch of 23
    seen = np.concatenate([_local(mix, e, 0) for e in range(12)])  # 48 items: two whole passes and two more
    assert len(seen) == 48
    assert sorted(seen[:23].tolist()) == list(range(23)) and sorted(seen[23:46].tolist()) == list(range(23))
    assert len(set(seen[46:].tolist())) == 2


@pytest.mark.parametrize("size, quota", [(23, 4), (10, 7), (10, 9), (1000, 333)])
def test_an_epoch_straddling_two_passes_holds_no_item_twice(size, quota):
    mix = Mixture(sizes=(size, 5000), weights=(quota, 5000 - quota), per_epoch=5000)
    assert mix.quotas()[0] == quota
    stream = []
    for epoch in range(3 * size // quota + 2):
        local = _local(mix, epoch, 0)
        assert len(set(local.tolist())) == quota  # no repeat inside an epoch
        stream.extend(local.tolist())
    for p in range(3):  # and still each pass holds every item once
        assert sorted(stream[p * size:(p + 1) * size]) == list(range(size))


def test_an_oversampled_dataset_repeats_whole_passes_evenly():
    mix = Mixture(sizes=(5, 40), weights=(0.5, 0.5))  # dataset 0: 22 or 23 of 5 items an epoch
    for epoch in range(4):
        counts = Counter(_local(mix, epoch, 0).tolist())
        assert set(counts) == set(range(5)) and max(counts.values()) - min(counts.values()) <= 1
    passes = [np.sort(_local(mix, e, 0)) for e in range(2)]
    assert not np.array_equal(_local(mix, 0, 0), _local(mix, 1, 0)) and len(passes[0]) == mix.quotas()[0]


def test_the_union_is_every_item_once_interleaved():
    mix = Mixture(sizes=(6, 3))
    ids = mix.epoch_items(0, random_permute(0, mix.sizes))
    assert sorted(ids.tolist()) == list(range(9))
    owners = mix.dataset_of(ids).tolist()
    assert owners[:3] == [0, 1, 0]  # dataset 1's three items are spread, not appended


def test_token_shares_are_exact_up_to_one_sequence_and_do_not_drift():
    rng = np.random.default_rng(0)
    lengths = (rng.integers(1, 50, 300), rng.integers(1, 400, 80))
    mix = Mixture(sizes=(300, 80), weights=(0.7, 0.3), weight_by="tokens", measures=lengths, per_epoch=9000)
    quotas = mix.quotas()
    assert quotas == [6300, 2700]
    total = [0, 0]
    for epoch in range(6):
        for d in range(2):
            got = int(lengths[d][_local(mix, epoch, d)].sum())
            assert abs(got - quotas[d]) < lengths[d].max()
            total[d] += got
    assert all(abs(total[d] - 6 * quotas[d]) < lengths[d].max() for d in range(2))  # no drift over epochs


def test_mixture_arguments_are_checked():
    with pytest.raises(ValueError, match="finite number > 0"):
        check_weights([1, 0], 2)
    with pytest.raises(ValueError, match="list of 2 numbers"):
        check_weights([1], 2)
    with pytest.raises(ValueError, match="need weights"):
        Mixture(sizes=(3, 4), per_epoch=5)
    with pytest.raises(ValueError, match="at least one item"):
        Mixture(sizes=(3, 0), weights=(1, 1))
    with pytest.raises(ValueError, match="weight_by"):
        Mixture(sizes=(3,), weight_by="bytes")


def _toy_plans(world_size: int) -> list[list[int]]:
    """24 items, 2 per batch, contiguous blocks: the shape of an image plan."""
    per = 24 // world_size
    return [list(range(r * per, (r + 1) * per)) for r in range(world_size)]


def _toy_redeal(rests: list[list[int]], world_size: int) -> list[list[int]]:
    rest = [x for part in rests for x in part]
    per = len(rest) // world_size
    return [rest[r * per:(r + 1) * per] for r in range(world_size)]


def test_replay_deals_the_rest_of_an_epoch_through_every_interruption():
    kw = dict(plans=_toy_plans, rest=lambda plan, done: plan[2 * done:], redeal=_toy_redeal)
    assert replay((), 3, **kw) == _toy_plans(3)
    once = replay(((4, 1),), 2, **kw)  # 4 ranks delivered 1 batch (2 items) each: 16 items left for 2 ranks
    assert [len(p) for p in once] == [8, 8] and not {0, 1, 6, 7, 12, 13, 18, 19} & set(once[0] + once[1])
    twice = replay(((4, 1), (2, 2)), 3, **kw)  # then 2 ranks delivered 2 batches each: 8 left for 3 ranks
    assert sorted(x for p in twice for x in p) == sorted(once[0][4:] + once[1][4:])[:6]


def test_lineage_is_validated_and_grows_only_when_the_world_size_changes():
    assert check_lineage(None) == () and check_lineage([[4, 3]]) == ((4, 3),)
    for bad in ([[4]], [[0, 1]], [[2, -1]], "x", [[2, True]]):
        with pytest.raises(ValueError, match="elastic"):
            check_lineage(bad)
    assert resumed_lineage(((4, 3),), saved_world=2, saved_batch=5, world_size=2) == (((4, 3),), 5)
    assert resumed_lineage(((4, 3),), saved_world=2, saved_batch=5, world_size=3) == (((4, 3), (2, 5)), 0)
