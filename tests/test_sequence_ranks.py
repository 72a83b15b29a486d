"""Rank splitting of token batches: for world sizes 1-4, equal batch counts, disjoint, complete;
plus one real two-process torch.distributed run."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import numpy as np
import pytest
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)

import fastdata
from fastdata.text.plan import deal, even_out


@pytest.mark.parametrize("kw", [{"bucketing": "length", "max_tokens": 2048},
                                {"bucketing": "none", "max_tokens": 4096, "pad_to_multiple_of": 1},
                                {"bucketing": "pack", "max_tokens": 2048, "block_size": 512}])
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_ranks_equal_disjoint_complete(fortunes_tokens: Path, kw: dict, world_size: int) -> None:
    loaders = [fastdata.loader(fortunes_tokens, rank=r, world_size=world_size, seed=1, **kw) for r in range(world_size)]
    for lo in loaders:
        lo.set_epoch(4)
    counts = {len(lo) for lo in loaders}
    assert len(counts) == 1  # DDP never waits on a rank with fewer batches
    taken = np.concatenate([b for lo in loaders for b in lo.batch_indices()])
    if kw["bucketing"] == "pack":  # units are packed rows
        n = loaders[0]._plan()[1].total
        assert sorted(taken.tolist()) == list(range(-(-n // kw["block_size"])))
    else:
        assert sorted(taken.tolist()) == list(range(len(loaders[0].store)))  # disjoint and complete
    batches = [sum(1 for _ in lo) for lo in loaders]
    assert batches == [counts.pop()] * world_size


def test_even_out_splits_batches_then_repeats_only_single_sequence_batches() -> None:
    batches = [np.arange(0, 5), np.arange(5, 7), np.arange(7, 8)]
    out = even_out(batches, 4)
    assert len(out) == 4 and sorted(np.concatenate(out).tolist()) == list(range(8))
    singles = [np.array([0]), np.array([1]), np.array([2])]
    padded = even_out(singles, 2)
    assert [b.tolist() for b in padded] == [[0], [1], [2], [0]]
    # [0..4] is the largest: split into [0, 1] + [2, 3, 4], then dealt round robin
    assert [b.tolist() for b in deal(batches, rank=0, world_size=2)] == [[0, 1], [5, 6]]
    assert [b.tolist() for b in deal(batches, rank=1, world_size=2)] == [[2, 3, 4], [7]]


def _worker(rank: int, tokens: str, store: str, queue) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    try:
        loader = fastdata.loader(tokens, max_tokens=2048, seed=2)  # rank/world from torch.distributed
        queue.put((rank, len(loader), sorted(np.concatenate(loader.batch_indices()).tolist())))
    finally:
        dist.destroy_process_group()


def test_two_real_processes_split_by_torch_distributed(fortunes_tokens: Path, tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    store = str(tmp_path / "rendezvous")
    procs = [ctx.Process(target=_worker, args=(r, str(fortunes_tokens), store, queue)) for r in range(2)]
    for p in procs:
        p.start()
    got = dict((r, (n, idx)) for r, n, idx in (queue.get(timeout=120) for _ in procs))
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert got[0][0] == got[1][0]
    assert not set(got[0][1]) & set(got[1][1])
    single = fastdata.loader(fortunes_tokens, max_tokens=2048, seed=2, rank=0, world_size=2)
    assert got[0][1] == sorted(np.concatenate(single.batch_indices()).tolist())  # same plan as explicit ranks
    assert len(got[0][1]) + len(got[1][1]) == len(single.store)
