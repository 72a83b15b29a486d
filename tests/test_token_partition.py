"""The exact partition of a sorted window: as many batches as the greedy cut, each under the budget, the
fewest padded slots of all such partitions (checked against every partition on small windows)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fastdata.text.partition import exact_cut
from fastdata.text.plan import cut


def _slots(batches, lengths, multiple):
    return sum(len(b) * (-(-int(lengths[b].max()) // multiple) * multiple) for b in batches)


def _allowed(b, lengths, max_tokens, batch_size, multiple):
    return len(b) == 1 or (len(b) * (-(-int(lengths[b].max()) // multiple) * multiple) <= max_tokens
                           and (batch_size is None or len(b) <= batch_size))


def _least_slots(window, lengths, batches, **kw):
    """Every way to cut `window` into `batches` consecutive batches (small windows only)."""
    best = None
    for cuts in itertools.combinations(range(1, len(window)), batches - 1):
        parts = np.split(window, cuts)
        if all(_allowed(b, lengths, kw["max_tokens"], kw["batch_size"], kw["multiple"]) for b in parts):
            cost = _slots(parts, lengths, kw["multiple"])
            best = cost if best is None else min(best, cost)
    return best


def _checked_against_every_partition(lengths, kw):
    """(greedy, exact) cuts of `lengths` sorted, after checking the exact one: as many batches as the greedy cut,
    every sequence once and in order, each batch under the budget, the fewest slots of every such partition."""
    window = np.argsort(lengths, kind="stable")
    greedy = cut(window, lengths, **kw)
    with np.errstate(all="raise"):  # no division by an empty sequence's zero slots
        exact = exact_cut(window, lengths, **kw)
    assert len(exact) == len(greedy) and np.array_equal(np.concatenate(exact), window)
    assert all(_allowed(b, lengths, **kw) for b in exact)
    assert _slots(exact, lengths, kw["multiple"]) == _least_slots(window, lengths, len(greedy), **kw)
    return greedy, exact


def test_exact_against_every_partition_of_small_windows():
    rng = np.random.default_rng(0)
    better = 0
    for _ in range(400):
        n = int(rng.integers(1, 11))
        lengths = rng.integers(0, 60, n)  # 0: an empty sequence, which takes no slots
        kw = {"max_tokens": int(rng.integers(60, 300)), "multiple": int(rng.choice([1, 8])),
              "batch_size": None if rng.random() < 0.5 else int(rng.integers(1, 6))}
        greedy, exact = _checked_against_every_partition(lengths, kw)
        better += _slots(greedy, lengths, kw["multiple"]) > _slots(exact, lengths, kw["multiple"])
    assert better > 50  # the greedy cut is often not the optimum, so the comparison above has teeth


def test_exact_against_every_partition_under_tight_budgets():
    """Budgets of a few tokens: runs of empty sequences longer than the budget (they take no slots, so only
    batch_size bounds them) and of one-token sequences that fill it exactly."""
    rng = np.random.default_rng(1)
    many_empty = full_of_ones = 0
    for _ in range(400):
        n = int(rng.integers(2, 13))
        lengths = rng.choice([0, 0, 1, 1, 1, 2, 3, 5], n)
        kw = {"max_tokens": int(rng.integers(2, 9)), "multiple": 1,
              "batch_size": None if rng.random() < 0.7 else int(rng.integers(2, 8))}
        _, exact = _checked_against_every_partition(lengths, kw)
        many_empty += any(len(b) > kw["max_tokens"] and not lengths[b].any() for b in exact)
        full_of_ones += any(len(b) == kw["max_tokens"] > 2 and set(lengths[b].tolist()) == {1} for b in exact)
    assert many_empty > 5 and full_of_ones > 20  # both edges occur, so the checks above reach them


def test_a_known_window_and_its_ties():
    lengths = np.array([8, 8, 8, 16, 16, 16, 16])
    window = np.arange(7)
    # budget 64: greedy takes [8 8 8 16] (64 slots) [16 16 16] (48): 112; exact [8 8 8] (24) [16 16 16 16] (64): 88
    assert [b.tolist() for b in cut(window, lengths, max_tokens=64, batch_size=None, multiple=8)] == [
        [0, 1, 2, 3], [4, 5, 6]]
    assert [b.tolist() for b in exact_cut(window, lengths, max_tokens=64, batch_size=None, multiple=8)] == [
        [0, 1, 2], [3, 4, 5, 6]]
    # a batch one sequence longer ([4 5 7 9], 36 slots) would cost less in all (55) but breaks the budget of 35
    lengths = np.array([16, 4, 5, 1, 9, 7, 0, 1])
    window = np.argsort(lengths, kind="stable")
    assert [lengths[b].tolist() for b in exact_cut(window, lengths, max_tokens=35, batch_size=None, multiple=1)] == [
        [0, 1, 1], [4, 5, 7], [9, 16]]
    # equal costs everywhere: the earliest boundaries win, every time
    same = np.full(6, 8)
    assert [len(b) for b in exact_cut(np.arange(6), same, max_tokens=32, batch_size=None, multiple=8)] == [2, 4]


@pytest.mark.parametrize("kw", [dict(max_tokens=None, batch_size=4), dict(max_tokens=10, batch_size=None)])
def test_one_batch_and_oversized_sequences(kw):
    lengths = np.array([3, 40, 50])
    out = exact_cut(np.arange(3), lengths, multiple=1, **kw)
    assert np.array_equal(np.concatenate(out), np.arange(3))
    if kw["max_tokens"] == 10:  # sequences over the budget each ride alone, as in cut()
        assert [b.tolist() for b in out] == [[0], [1], [2]]


def test_large_heavy_tailed_window_is_planned_quickly_and_never_worse():
    rng = np.random.default_rng(1)
    lengths = np.clip(np.exp(rng.normal(6, 1.3, 16384)), 11, 62621).astype(np.int64)
    window = np.argsort(lengths, kind="stable")
    greedy = cut(window, lengths, max_tokens=65536, batch_size=None, multiple=8)
    exact = exact_cut(window, lengths, max_tokens=65536, batch_size=None, multiple=8)
    assert len(exact) == len(greedy) and _slots(exact, lengths, 8) < _slots(greedy, lengths, 8)
