"""A loader given to `torch.utils.data.DataLoader` (fastdata/closing.py): every kind is an IterableDataset of
whole batches, so `DataLoader(loader, batch_size=None)` passes its batches through unchanged, and a loader
iterated inside a DataLoader worker process refuses with a message saying why, instead of yielding each batch
once per worker; pickling a loader (a DataLoader's spawned workers) says why it cannot be."""

from __future__ import annotations

import copy as copy_module
import pickle

import pytest
import torch
from conftest_kinds import KINDS, kinds_data_fixture, make_loader  # noqa: F401  (the kinds_data fixture)
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)
from torch.utils.data import DataLoader, IterableDataset


def _same(a, b) -> bool:
    """`a` and `b` are the same batch: same containers, equal tensors of one dtype, equal other values. A tuple
    comes through a DataLoader as a list (its `default_convert` does that to every tuple)."""
    if isinstance(a, list) and isinstance(b, tuple):
        return _same(a, list(b))
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("kind", KINDS)
def test_a_dataloader_without_batching_passes_every_batch_through(kind, kinds_data, fortunes_tokens) -> None:
    direct, _ = make_loader(kind, kinds_data, fortunes_tokens)
    wrapped, _ = make_loader(kind, kinds_data, fortunes_tokens)
    assert isinstance(wrapped, IterableDataset)
    through = DataLoader(wrapped, batch_size=None)
    assert len(through) == len(wrapped)
    for epoch in (0, 1):
        direct.set_epoch(epoch)
        wrapped.set_epoch(epoch)
        expected, got = list(direct), list(through)
        assert len(got) == len(expected) > 0
        assert all(_same(g, e) for g, e in zip(got, expected))


@pytest.mark.parametrize("kind", ["images", "text"])
def test_a_loader_refuses_to_run_in_dataloader_workers(kind, kinds_data, fortunes_tokens) -> None:
    loader, _ = make_loader(kind, kinds_data, fortunes_tokens)
    with pytest.raises(RuntimeError, match=r"iterated in DataLoader worker process \d of 2: every worker would "
                                           r"read the whole epoch, so each batch would come 2 times"):
        next(iter(DataLoader(loader, batch_size=None, num_workers=2)))
    assert len(list(loader)) == len(loader)  # the refusal in the workers left this process's loader whole


@pytest.mark.parametrize("kind", KINDS)
def test_a_loader_cannot_be_pickled_or_copied_and_says_so(kind, kinds_data, fortunes_tokens) -> None:
    """A DataLoader with spawned workers pickles its dataset; pickling or copying a loader fails on its threads'
    locks, which told the user nothing. The loader says what it is and what to do instead."""
    loader, _ = make_loader(kind, kinds_data, fortunes_tokens)
    for copy in (pickle.dumps, copy_module.copy, copy_module.deepcopy):
        with pytest.raises(TypeError) as refused:
            copy(loader)
        assert str(refused.value) == (f"a fastdata loader cannot be pickled or copied ({type(loader).__name__} holds "
                                      "threads and open files): build it in the process that iterates it; for "
                                      "DataLoader, pass it with num_workers=0 (it has threads of its own)")
    assert len(list(loader)) == len(loader)  # the loader is unharmed
