"""A real two-process run (torch.distributed, gloo): ranks come from the process group, eval visits every
sample once across ranks with equal batch counts, train gives equal batch counts and disjoint samples."""

from __future__ import annotations

import datetime
import hashlib
import json
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from conftest_images import loader, make_datasets

TIMEOUT_S = 90


def _rows(ld) -> tuple[int, list[str], list[int]]:
    """Batches, one fingerprint per real row (its uint8 pixels' hash), labels of all rows."""
    batches, prints, labels = 0, [], []
    for x, y in ld:
        batches += 1
        labels += y.tolist()
        prints += [hashlib.sha1(x[i].numpy().tobytes()).hexdigest() for i in range(len(y)) if y[i] >= 0]
    return batches, prints, labels


def _worker(rank: int, world_size: int, store: str, ds: str, out: str) -> None:
    # a file rendezvous: no port to pick and lose to another process between choosing and binding it
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=60))
    try:
        val = loader(Path(ds), split="val", train=False, dtype="uint8", batch_size=2)  # rank/world from dist
        train = loader(Path(ds), split="train", train=True, dtype="uint8", batch_size=2)
        train.set_epoch(1)
        result = {"rank": val.options.rank, "world": val.options.world_size, "val": _rows(val),
                  "train": _rows(train), "len_train": len(train)}
        gathered: list = [None] * world_size
        dist.all_gather_object(gathered, result)
        if rank == 0:
            Path(out).write_text(json.dumps(gathered))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_datasets(tmp_path_factory.mktemp("dist"))["wds"]


def test_two_process_gloo_run(ds, tmp_path):
    out = tmp_path / "result.json"
    ctx = mp.start_processes(_worker, args=(2, str(tmp_path / "rendezvous"), str(ds), str(out)), nprocs=2, join=False,
                             start_method="spawn")
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while not ctx.join(timeout=1):
            if time.monotonic() > deadline:
                pytest.fail(f"two-process run did not finish in {TIMEOUT_S} s")
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
    r0, r1 = json.loads(out.read_text())
    assert (r0["rank"], r0["world"], r1["rank"], r1["world"]) == (0, 2, 1, 2)
    # eval: equal batch counts, every sample exactly once across ranks, padding marked -100
    assert r0["val"][0] == r1["val"][0] == 2  # ceil(ceil(7/2)/2)
    single = loader(ds, split="val", train=False, dtype="uint8", batch_size=2)
    _, prints, _ = _rows(single)
    assert sorted(r0["val"][1] + r1["val"][1]) == sorted(prints) and len(prints) == 7
    assert r0["val"][2].count(-100) == 1 and r1["val"][2].count(-100) == 0
    # train: same number of full batches on both ranks, disjoint samples
    assert r0["train"][0] == r1["train"][0] == r0["len_train"] == 3  # floor(floor(12/2)/2)
    assert not set(r0["train"][1]) & set(r1["train"][1]) and len(r0["train"][1]) == 6
    assert torch.distributed.is_available()
