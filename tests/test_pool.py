"""The conversion pool (converters/pool.py) on its own: results in input order, in chunks of the processor's
`chunk_size` through its `process_batch`, one item at a time when the batch call fails or miscounts, a failing
item recorded as a rejection of that item alone, and a bounded number of items taken from the input ahead of
the results (memory stays flat). Each case runs in-process (1 job) and on forked workers (2 jobs) alike."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import wait_until

from converters.pool import CHUNK, IN_FLIGHT_PER_JOB, chunk_size, run_ordered
from converters.sample import Rejection, WorkItem


def _items(n: int, split: str = "val") -> list[WorkItem]:
    return [WorkItem(split=split, rel=f"f{i}.jpg", source=f"/src/f{i}.jpg", position=i) for i in range(n)]


class _Batched:
    """Converts a chunk at once and says so in each result; `short` returns one result too few, `raises` fails."""

    chunk_size = 3

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode

    def process_batch(self, items: list[WorkItem]) -> list[Rejection]:
        if self.mode == "raises":
            raise RuntimeError("the batch call failed")
        out = [Rejection(it.split, it.rel, f"batch of {len(items)} from {items[0].rel}") for it in items]
        return out[:-1] if self.mode == "short" else out

    def __call__(self, item: WorkItem) -> Rejection:
        if item.rel == "f4.jpg":
            raise ValueError("bad input 4")
        return Rejection(item.split, item.rel, "one")


class _One:
    """A processor without process_batch (chunk_size as given)."""

    def __init__(self, size: object = CHUNK) -> None:
        self.chunk_size = size

    def __call__(self, item: WorkItem) -> Rejection:
        return Rejection(item.split, item.rel, "one")


def _reasons(results: list) -> list[tuple[str, str, str]]:
    return [(r.split, r.source, r.reason) for r in results]


@pytest.mark.parametrize("jobs", [1, 2])
def test_chunks_go_through_process_batch_in_input_order(jobs: int) -> None:
    got = _reasons(list(run_ordered(_Batched(), _items(8), jobs=jobs)))
    firsts = ["f0.jpg"] * 3 + ["f3.jpg"] * 3 + ["f6.jpg"] * 2
    sizes = [3] * 6 + [2] * 2
    assert got == [("val", f"f{i}.jpg", f"batch of {sizes[i]} from {firsts[i]}") for i in range(8)]


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("mode", ["short", "raises"])
def test_a_failing_or_miscounting_batch_falls_back_to_one_item_at_a_time(jobs: int, mode: str) -> None:
    got = _reasons(list(run_ordered(_Batched(mode), _items(6), jobs=jobs)))
    expected = [("val", f"f{i}.jpg", "one") for i in range(6)]
    expected[4] = ("val", "f4.jpg", "unexpected error: ValueError: bad input 4")  # only its own input rejected
    assert got == expected


def test_the_fallback_and_a_failing_item_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="converters.pool"):
        list(run_ordered(_Batched("short"), _items(6), jobs=1))
        list(run_ordered(_Batched("raises"), _items(3), jobs=1))
    messages = [(r.getMessage(), r.exc_info[0] if r.exc_info else None) for r in caplog.records]
    assert messages == [
        ("process_batch returned 2 results for 3 items; retrying one by one", None),
        ("process_batch returned 2 results for 3 items; retrying one by one", None),
        ("unexpected error on f4.jpg", ValueError),  # with its traceback
        ("batched processing failed; retrying one by one", RuntimeError),
    ]


@pytest.mark.parametrize(("given", "used"), [(1, 1), (7, 7), (0, CHUNK), (-2, CHUNK), ("3", CHUNK), (2.0, CHUNK),
                                             (None, CHUNK)])
def test_chunk_size_is_the_processors_when_it_is_a_positive_int(given: object, used: int) -> None:
    assert chunk_size(_One(given)) == used
    assert chunk_size(lambda item: item) == CHUNK  # no attribute


@pytest.mark.parametrize("jobs", [1, 2])
def test_items_taken_ahead_of_the_first_result_are_bounded(jobs: int) -> None:
    taken = 0

    def source():
        nonlocal taken
        for item in _items(100):
            taken += 1
            yield item

    results = run_ordered(_One(), source(), jobs=jobs)
    try:
        first = next(results)
        assert first.source == "f0.jpg"
        assert taken == (CHUNK if jobs == 1 else jobs * IN_FLIGHT_PER_JOB * CHUNK)
        assert [r.source for r in results] == [f"f{i}.jpg" for i in range(1, 100)]
        assert taken == 100
    finally:
        results.close()  # a failed check leaves no worker behind


@pytest.mark.parametrize("jobs", [1, 2])
def test_no_items_give_no_results(jobs: int) -> None:
    assert list(run_ordered(_One(), [], jobs=jobs)) == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_single_item_processor_gets_chunks_of_one(jobs: int) -> None:
    got = _reasons(list(run_ordered(_One(1), _items(5, split="train"), jobs=jobs)))
    assert got == [("train", f"f{i}.jpg", "one") for i in range(5)]


def test_more_local_workers_than_the_machine_can_hold_are_refused(monkeypatch) -> None:
    """`-j 100000` had forked until the machine stopped answering: the local executor starts at most 4 workers a CPU
    (64 at least); Ray's --jobs counts a cluster's CPUs and is not bounded here."""
    import converters.pool as pool
    from converters import get_kind
    from converters.adopt import AdoptOptions
    from converters.engine import ConvertConfig

    monkeypatch.setattr(pool, "usable_cpus", lambda: 32)
    assert pool.local_jobs_limit() == 128
    kind = get_kind("images")
    ConvertConfig(jobs=128).validate(kind)
    with pytest.raises(ValueError, match=r"^--jobs 129 would start 129 worker processes on this machine, which has 32 "
                                         r"CPUs: at most 128 \(4 a CPU, 64 at least\); a cluster's CPUs go with "
                                         r"--executor ray$"):
        ConvertConfig(jobs=129).validate(kind)
    ConvertConfig(jobs=100_000, executor="ray").validate(kind)
    assert AdoptOptions(jobs=128).jobs == 128  # `fastdata index -j` starts the same pool
    with pytest.raises(ValueError, match=r"^--jobs 129 would start 129 worker processes .* 64 at least\)$"):
        AdoptOptions(jobs=129)
    monkeypatch.setattr(pool, "usable_cpus", lambda: 2)
    assert pool.local_jobs_limit() == 64


_ORPHAN = textwrap.dedent("""
    import os, sys, time
    from converters.pool import run_ordered
    from converters.sample import WorkItem

    def slow(item):
        os.write(1, f"{os.getpid()}\\n".encode())  # one write: two workers' lines never interleave
        time.sleep(120)

    items = [WorkItem("train", str(i), str(i)) for i in range(8)]  # two chunks: one for each worker
    for _ in run_ordered(slow, items, jobs=2):
        pass
""")


def _alive(pid: int) -> bool:
    """Whether `pid` runs: a zombie (dead, not yet reaped by an init that does not reap) counts as gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_workers_die_with_the_conversion(sig: signal.Signals) -> None:
    """`timeout`'s or a scheduler's SIGTERM, or the OOM killer, ended the conversion's process and left its workers
    blocked on the task queue, orphaned, for ever."""
    proc = subprocess.Popen([sys.executable, "-c", _ORPHAN], stdout=subprocess.PIPE, text=True)
    workers = {int(proc.stdout.readline()) for _ in range(2)}
    try:
        assert len(workers) == 2 and all(_alive(w) for w in workers)
        proc.send_signal(sig)
        proc.wait(timeout=30)
        wait_until(lambda: not any(_alive(w) for w in workers), "the workers died with their parent", timeout=10)
    finally:
        proc.kill()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


class _Finalized:
    """Writes to `marks` when its finalizer runs in a process other than the one that made it (as a DALI pipeline's
    shuts down threads that only exist in its own process)."""

    def __init__(self, marks: Path) -> None:
        self.marks, self.pid, self.cycle = marks, os.getpid(), self

    def __del__(self) -> None:
        if os.getpid() != self.pid:
            with open(self.marks, "a") as f:
                f.write(f"finalized in {os.getpid()}\n")


class _Collects:
    """Runs a full collection in the worker, as any conversion that makes enough objects does."""

    chunk_size = 1

    def __call__(self, item: WorkItem) -> Rejection:
        import gc

        gc.collect()
        return Rejection(item.split, item.rel, "collected")


def test_a_worker_never_finalizes_what_it_inherited(tmp_path: Path) -> None:
    """An object of the conversion's process left for the garbage collector (a reference cycle) is inherited by
    each forked worker: its finalizer ran there when the worker collected, and a DALI pipeline's killed the worker
    with a segmentation fault (converters/pool.py `start_worker`)."""
    import gc

    marks = tmp_path / "marks"
    gc.disable()  # the cycle stays uncollected here until the workers are made
    try:
        _Finalized(marks)
        got = _reasons(list(run_ordered(_Collects(), _items(2), jobs=2)))
    finally:
        gc.enable()
    gc.collect()  # here, in its own process: no mark
    assert got == [("val", f"f{i}.jpg", "collected") for i in range(2)]
    assert not marks.exists(), marks.read_text()
