"""A subset of a split (`indices=`, FFCV's `Loader(indices=...)`, `torch.utils.data.Subset`): the loader reads those
samples only, with the plan's rules over them (ranks, padding, resume), on both backends (fastdata/planning/subset.py,
order.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_images import (
    image_sets_fixture,  # noqa: F401  (the image_sets fixture)
    loader,
)

import fastdata
from fastdata.images.options import ImageLoaderOptions
from fastdata.images.order import epoch_plan

BACKENDS = ["kornia", "dali"]  # DALI on its CPU operators here
PICKED = [1, 2, 5, 7, 8, 11, 0, 9]  # of train's 12 samples, given unsorted


@pytest.fixture(scope="module")
def ds(image_sets: dict[str, Path]) -> Path:
    return image_sets["wds"]


def _rows(ld) -> list[list[int]]:
    """The global sample index of each real row, batch by batch, of one pass."""
    out = []
    for _, labels in ld:
        out.append(list(ld.backend.last_rows))
        assert len(out[-1]) == int((labels >= 0).sum())
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_eval_ranks_read_each_picked_sample_once_in_order(ds, backend):
    per_rank = []
    for rank in range(3):
        ld = loader(ds, split="train", train=False, backend=backend, indices=PICKED, rank=rank, world_size=3)
        rows = [r for batch in _rows(ld) for r in batch]
        assert len(ld) == 1 and ld.num_samples == len(rows)  # ceil(ceil(8 / 3) / 4) batches, padded
        per_rank.append(rows)
        ld.close()
    assert per_rank == [[0, 1], [2, 5, 7], [8, 9, 11]]  # [floor(r * 8 / 3), floor((r + 1) * 8 / 3)) of the 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_train_epochs_shuffle_the_picked_samples_only(ds, backend):
    ld = loader(ds, train=True, backend=backend, indices=np.array(PICKED), seed=4)
    seen = []
    for epoch in range(3):
        ld.set_epoch(epoch)
        rows = _rows(ld)
        plan = epoch_plan((4, 4, 4), train=True, batch_size=4, keep_last=False, seed=4, epoch=epoch, rank=0,
                          world_size=1, keep=np.isin(np.arange(12), PICKED))
        assert [r for batch in rows for r in batch] == plan.sequence.tolist()
        assert len(rows) == len(ld) == 2 and sorted(r for b in rows for r in b) == sorted(PICKED)
        seen.append(rows)
    assert seen[0] != seen[1] or seen[1] != seen[2]
    ld.close()


def test_a_resume_needs_the_same_subset(ds):
    first = loader(ds, train=True, indices=PICKED, seed=2, batch_size=2)
    first.set_epoch(1)
    it = iter(first)
    next(it)
    state = first.state_dict()
    assert len(state["data_digest"]) == 32 and int(state["data_digest"], 16) >= 0  # a whole split's digest's form
    rest = [(x.clone(), y.clone()) for x, y in it]
    first.close()
    again = loader(ds, train=True, indices=torch.tensor(sorted(PICKED)), seed=2, batch_size=2)  # sorted, a tensor
    again.load_state_dict(state)
    got = [(x.clone(), y.clone()) for x, y in again]
    assert len(got) == len(rest) == 3 and all(torch.equal(a, c) and torch.equal(b, d)
                                              for (a, b), (c, d) in zip(got, rest))
    other = loader(ds, train=True, indices=[1, 2, 5, 7, 8, 11, 0, 10], seed=2, batch_size=2)  # as many, one other
    with pytest.raises(ValueError, match="cannot resume: the state was saved on other data"):
        other.load_state_dict(state)
    whole = loader(ds, train=True, seed=2, batch_size=2)
    with pytest.raises(ValueError, match="cannot resume: the state was saved on other data"):
        whole.load_state_dict(state)
    with pytest.raises(ValueError, match=r"num_samples: saved 8, now 12"):
        whole.load_state_dict({k: v for k, v in state.items() if k != "data_digest"})
    for ld in (again, other, whole):
        ld.close()


def test_a_subset_and_progressive_resizing_together(ds):
    ld = loader(ds, train=False, split="train", indices=PICKED, image_size={0: 16, 1: 24})
    ld.set_epoch(1)
    assert ld.options.image_size == 24 and sorted(r for b in _rows(ld) for r in b) == sorted(PICKED)
    ld.close()


@pytest.mark.parametrize(("indices", "why"), [
    ([], "a non-empty sequence of sample indices"),
    ([True, False, True], "a non-empty sequence of sample indices"),  # a mask is not indices
    ([0.0, 1.0], "a non-empty sequence of sample indices"),
    ([[0, 1]], "a non-empty sequence of sample indices"),
    ("012", "a non-empty sequence of sample indices"),
    ([[0, 1], [2]], "a non-empty sequence of sample indices"),  # ragged: numpy cannot make an array of it
    ([3, 1, 3], r"distinct indices >= 0 \(a sample twice would be read twice an epoch\)"),
    ([-1, 2], "distinct indices >= 0"),
])
def test_indices_that_are_not_a_subset_are_refused(indices, why):
    with pytest.raises(ValueError, match=rf"^indices=.* is not allowed; indices must be {why}"):
        ImageLoaderOptions(backend="kornia", indices=indices)


def test_the_refusal_of_many_indices_is_short_and_past_the_split_is_named(ds):
    with pytest.raises(ValueError, match=r"^indices=\[3, 1, 3\] is not allowed; indices must be distinct indices"):
        ImageLoaderOptions(backend="kornia", indices=[3, 1, 3])
    with pytest.raises(ValueError, match=r"^indices=\(5\.5,\) is not allowed; indices must be a non-empty sequence"):
        ImageLoaderOptions(backend="kornia", indices=(5.5,))
    eighty, eighty_one, many = [100] * 16, [1000] + [100] * 15, [*range(10**5), 0]
    assert (len(repr(eighty)), len(repr(eighty_one))) == (80, 81)
    for value, shown in [(eighty, repr(eighty)), (eighty_one, repr(eighty_one)[:77] + "..."),
                         (many, repr(many)[:77] + "...")]:  # 80 characters of the value at most
        with pytest.raises(ValueError) as err:
            ImageLoaderOptions(backend="kornia", indices=value)
        assert str(err.value).split(" is not allowed")[0] == "indices=" + shown
    assert ImageLoaderOptions(backend="kornia", indices=[3]).indices.tolist() == [3]  # one index is a subset
    with pytest.raises(ValueError, match=r"^indices go up to 12, but the split has 12 samples \(indices 0\.\.11\)$"):
        loader(ds, indices=[0, 12, 5])


def test_the_options_hold_a_sorted_read_only_array_that_equality_ignores():
    opts = ImageLoaderOptions(backend="kornia", indices=range(9, -1, -3))
    assert opts.indices.tolist() == [0, 3, 6, 9] and opts.indices.dtype == np.int64
    with pytest.raises(ValueError, match="read-only"):
        opts.indices[0] = 5
    assert opts == ImageLoaderOptions(backend="kornia") and "indices" not in repr(opts)
    assert np.array_equal(dataclasses.replace(opts, image_size=32).indices, opts.indices)


def test_a_mixture_takes_no_subset(image_sets):
    with pytest.raises(ValueError, match=r"^indices selects samples of one dataset; a mixture draws from its datasets "
                                         r"by their weights \(give each dataset of the mixture its own samples "
                                         r"instead\)$"):
        fastdata.loader([str(image_sets["wds"]), str(image_sets["arrow"])], batch_size=4, image_size=16, device="cpu",
                        backend="kornia", indices=[0, 1])
