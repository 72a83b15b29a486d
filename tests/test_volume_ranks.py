"""One real multi-process run: two ranks under torch.distributed (gloo) pick their rank up by
themselves and get disjoint volumes and the same number of batches."""

from __future__ import annotations

import pytest
import torch.multiprocessing as mp

pytest.importorskip("pydicom")
pytest.importorskip("kornia")

from conftest_dicom import Phantom, convert_dicom, write_phantom  # noqa: E402


def _worker(rank: int, world: int, dst: str, store: str, out) -> None:
    import torch.distributed as dist

    import fastdata

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        loader = fastdata.loader(dst, batch_size=1, patch_size=8, augment=False, num_workers=1)
        keys = [m["keys"][0] for _, m in loader]
        out.put((rank, len(loader), keys))
    finally:
        dist.destroy_process_group()


def test_two_processes_split_the_volumes(tmp_path):
    for i in range(4):
        write_phantom(tmp_path / "src" / f"s{i}", Phantom(series_uid=f"1.3.{i}", slices=6, rows=12, cols=12), seed=i)
    convert_dicom(tmp_path / "src", tmp_path / "out")
    ctx = mp.get_context("spawn")  # forking a process that runs threads (torch's, the tests') can deadlock the child
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, 2, str(tmp_path / "out"), str(tmp_path / "rendezvous"), out))
             for r in range(2)]
    for p in procs:
        p.start()
    results = sorted(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    (r0, n0, k0), (r1, n1, k1) = results
    assert (r0, r1) == (0, 1) and n0 == n1 == 2
    assert not set(k0) & set(k1) and len(set(k0) | set(k1)) == 4
