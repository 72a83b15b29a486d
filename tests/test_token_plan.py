"""Planning a token epoch from the lengths alone (fastdata/text/plan.py), read back on small hand-made cases: the
budget cut, the epoch's shuffle and its absence, batches in window order, and how batches are evened out and
dealt again to other ranks."""

from __future__ import annotations

import numpy as np

from fastdata.text.options import SequenceLoaderOptions
from fastdata.text.plan import cut, epoch_order, even_out, plan_sequences, redeal

LENGTHS = np.array([5, 1, 3, 2, 6, 4])


def _lists(batches) -> list[list[int]]:
    return [b.tolist() for b in batches]


def test_without_a_batch_size_a_batch_may_hold_every_sequence() -> None:
    assert _lists(cut(np.arange(5), np.full(5, 3), max_tokens=100, batch_size=None, multiple=1)) == [[0, 1, 2, 3, 4]]
    assert _lists(cut(np.arange(5), np.full(5, 3), max_tokens=9, batch_size=None, multiple=1)) == [[0, 1, 2], [3, 4]]


def test_without_shuffle_the_epoch_is_the_dataset_in_order() -> None:
    opts = SequenceLoaderOptions(max_tokens=12, batch_size=2, bucketing="none", shuffle=False, pad_to_multiple_of=1)
    assert _lists(plan_sequences(LENGTHS, opts, epoch=3)) == [[0, 1], [2, 3], [4, 5]]
    windows = SequenceLoaderOptions(max_tokens=12, batch_size=2, bucketing="length", window=3, shuffle=False,
                                    pad_to_multiple_of=1)
    # each window of 3 sorted by length ([1 3 5], [2 4 6]) and cut, the batches left in window order
    assert _lists(plan_sequences(LENGTHS, windows, epoch=3)) == [[1], [2, 0], [3], [5, 4]]


def test_with_shuffle_each_epoch_visits_every_sequence_in_its_own_order() -> None:
    opts = SequenceLoaderOptions(max_tokens=10_000, batch_size=4, bucketing="none", seed=2, pad_to_multiple_of=1)
    lengths = np.arange(1, 41)
    orders = [np.concatenate(plan_sequences(lengths, opts, epoch=e)).tolist() for e in (0, 1)]
    assert all(sorted(o) == list(range(40)) for o in orders)
    assert orders[0] != list(range(40)) and orders[0] != orders[1]
    assert orders[0] == epoch_order(40, opts, epoch=0)[0].tolist()
    mixture = np.array([7, 7, 3, 9])  # a mixture's epoch: given items, one of them twice
    assert sorted(epoch_order(mixture, opts, epoch=0)[0].tolist()) == [3, 7, 7, 9]


def test_even_out_splits_the_first_of_the_largest_and_pairs_before_repeating() -> None:
    assert _lists(even_out([np.arange(0, 2), np.arange(2, 4)], 3)) == [[0], [1], [2, 3]]
    assert _lists(even_out([np.arange(0, 2)], 2)) == [[0], [1]]
    assert _lists(even_out([np.arange(0, 1), np.arange(1, 2), np.arange(2, 3)], 2)) == [[0], [1], [2], [0]]


def test_redeal_takes_the_rests_by_batch_position_then_rank() -> None:
    rests = [[np.array([0]), np.array([1])], [np.array([2])], [np.array([3]), np.array([4])]]
    assert [_lists(r) for r in redeal(rests, 1)] == [[[0], [2], [3], [1], [4]]]
    assert [_lists(r) for r in redeal(rests, 2)] == [[[0], [3], [4]], [[2], [1], [0]]]
