"""The loader's threads run torch ops serially, without changing torch's thread count anywhere else."""

from __future__ import annotations

import os
import threading

import pytest
import torch
from conftest_images import loader, make_datasets

from fastdata.images import decode
from fastdata.images.intraop import serial_torch

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc (Linux)")


@pytest.fixture(autouse=True)
def two_threads():
    """torch's intra-op count at 2 for the test, whatever the machine or an earlier test left."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def _in_thread(fn):
    out = {}
    thread = threading.Thread(target=lambda: out.update(fn()))
    thread.start()
    thread.join()
    return out


def _threads_started_by_a_large_op(serial: bool) -> dict:
    made = serial_torch() if serial else None
    before = set(os.listdir("/proc/self/task"))
    torch.ones(1 << 22).mul_(2.0)  # far above torch's parallel grain
    # threads that appeared (not a difference of counts: an earlier attempt's team may be exiting meanwhile)
    return {"made": made, "count": torch.get_num_threads(), "started": len(set(os.listdir("/proc/self/task")) - before)}


def test_serial_torch_keeps_a_threads_ops_on_it_and_nobody_elses() -> None:
    # each attempt on a fresh thread (a thread keeps its team); three, so that a thread some other part of the
    # process starts meanwhile cannot decide the outcome
    free = [_in_thread(lambda: _threads_started_by_a_large_op(serial=False)) for _ in range(3)]
    assert max(f["started"] for f in free) >= 1  # an unrestricted thread starts its own OpenMP team
    serial = [_in_thread(lambda: _threads_started_by_a_large_op(serial=True)) for _ in range(3)]
    assert all(s["made"] and s["count"] == 1 for s in serial)
    assert min(s["started"] for s in serial) == 0  # a serial thread starts none
    assert torch.get_num_threads() == 2  # this thread's count is untouched
    later = _in_thread(lambda: {"count": torch.get_num_threads()})
    assert later["count"] == 2  # and so is the count new threads start from


def test_the_loaders_decode_and_producer_threads_are_serial(tmp_path, monkeypatch) -> None:
    from fastdata.images import device_aug

    seen = {}
    real_train, real_rows = decode.decode_train, device_aug._affine_rows

    def train(*args, **kwargs):
        seen.setdefault("decode", set()).add(torch.get_num_threads())
        return real_train(*args, **kwargs)

    def rows(*args, **kwargs):
        seen.setdefault("normalise", set()).add(torch.get_num_threads())
        return real_rows(*args, **kwargs)

    monkeypatch.setattr("fastdata.images.kornia_backend.decode_train", train)
    monkeypatch.setattr(device_aug, "_affine_rows", rows)
    batches = list(loader(make_datasets(tmp_path)["wds"], train=True, channels_last=True))
    assert sum(len(x) for x, _ in batches) > 0
    assert seen == {"decode": {1}, "normalise": {1}}
    assert torch.get_num_threads() == 2


def test_every_openmp_runtime_of_the_process_is_set_and_none_means_no_change(monkeypatch) -> None:
    from fastdata.images import intraop

    calls = []

    class Other:  # a second runtime listed first (an MKL build of numpy brings Intel's)
        def omp_set_num_threads(self, n):
            calls.append(n)

    real = intraop._openmp_runtimes()
    assert real  # this process's torch (PyPI's Linux wheel) brings libgomp
    monkeypatch.setattr(intraop, "_openmp_runtimes", lambda: (Other(), *real))
    assert _in_thread(lambda: {"made": serial_torch(), "count": torch.get_num_threads()}) == {"made": True, "count": 1}
    assert calls == [1]
    monkeypatch.setattr(intraop, "_openmp_runtimes", lambda: ())
    assert _in_thread(lambda: {"made": serial_torch(), "count": torch.get_num_threads()}) == {"made": False, "count": 2}
