"""`measure` and `bench` (`fastdata/perf/loader_bench.py`) with stand-in loaders: the batches they draw, what
reaches each measurement, the settings the search visits, and the refusals in full."""

from __future__ import annotations

import importlib.util
import logging

import pytest
import torch

from fastdata.perf import loader_bench
from fastdata.perf.loader_bench import Measurement, bench, measure
from fastdata.perf.search import PREFETCH_CANDIDATES, thread_candidates
from fastdata.perf.throughput import Throughput


class _Loader:
    def __init__(self) -> None:
        self.drawn = 0

    def __iter__(self):
        for _ in range(5):  # epochs of five batches: `measure` goes on into the next epochs
            self.drawn += 1
            yield torch.zeros(4, 3), torch.tensor([0, 1, 2, -100])


def test_measure_skips_two_batches_and_times_ten_by_default(caplog) -> None:
    made = []

    def factory(source, options):
        made.append((source, options, _Loader()))
        return made[-1][2]

    with caplog.at_level(logging.INFO, logger="fastdata.perf.loader_bench"):
        m = measure("shards/", options={"batch_size": 4}, loader_factory=factory)
    ((source, options, loader),) = made
    assert (source, options, loader.drawn) == ("shards/", {"batch_size": 4}, 12)
    assert (m.throughput.batches, m.throughput.images, m.options) == (10, 30, {"batch_size": 4})
    assert m.usage is not None and m.usage.cores >= 1  # psutil is installed here
    assert [r.getMessage() for r in caplog.records] == [
        f"{{'batch_size': 4}}: {m.throughput.images_per_s:.1f} images/s over 10 batches"]
    one = measure("s", options={}, batches=1, warmup=0, loader_factory=lambda s, o: _Loader())
    assert one.throughput.batches == 1


def test_measure_without_psutil_has_no_usage(monkeypatch: pytest.MonkeyPatch) -> None:
    find = importlib.util.find_spec
    monkeypatch.setattr(loader_bench.importlib.util, "find_spec", lambda name: None if name == "psutil" else find(name))
    assert measure("s", options={}, batches=2, loader_factory=lambda s, o: _Loader()).usage is None


@pytest.mark.parametrize(("kw", "message"), [({"batches": 0}, "batches must be >= 1, got 0"),
                                             ({"warmup": -1}, "warmup must be >= 0, got -1")])
def test_measure_refuses_limits_in_full(kw: dict, message: str) -> None:
    with pytest.raises(ValueError) as err:
        measure("s", options={}, loader_factory=lambda s, o: _Loader(), **kw)
    assert str(err.value) == message


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict, int, int]]:
    """`measure` replaced: each setting gets a fixed rate (more threads faster up to 4, prefetch 4 fastest)."""
    seen = []

    def fake(source, *, options, batches, warmup, loader_factory):
        seen.append((dict(options), batches, warmup))
        t, p = options.get("num_threads", 2), options.get("prefetch", 2)
        rate = 100.0 * min(t, 4) + (50.0 if p == 4 else 0.0)
        return Measurement(options=dict(options), throughput=Throughput(int(rate), 1, 1.0, 0.5, 1), usage=None)

    monkeypatch.setattr(loader_bench, "measure", fake)
    return seen


def test_bench_forwards_batches_and_warm_up_to_every_measurement(calls) -> None:
    report = bench("s", options={"num_threads": 2, "prefetch": 1}, threads=[1, 4], prefetches=[1, 4], batches=3,
                   warmup=1)
    assert [c[0] for c in calls] == [{"num_threads": 2, "prefetch": 1}, {"num_threads": 1, "prefetch": 1},
                                     {"num_threads": 4, "prefetch": 1}, {"num_threads": 4, "prefetch": 4}]
    assert {(b, w) for _, b, w in calls} == {(3, 1)}
    assert (report.search.best.num_threads, report.search.best.prefetch) == (4, 4)
    assert len(report.measurements) == 4 and report.baseline.options == {"num_threads": 2, "prefetch": 1}


def test_bench_by_default_tries_the_core_counts_and_prefetch_candidates(calls, monkeypatch) -> None:
    monkeypatch.setattr(loader_bench, "usable_cpus", lambda: 8)
    bench("s", options={"batch_size": 4})  # no prefetch given: the search starts from prefetch 2
    threads = thread_candidates(8)
    assert [c[0] for c in calls[1:len(threads) + 1]] == [{"batch_size": 4, "num_threads": t, "prefetch": 2}
                                                        for t in threads]
    assert {c[0]["prefetch"] for c in calls[len(threads) + 1:]} == set(PREFETCH_CANDIDATES) - {2}
    assert {(b, w) for _, b, w in calls} == {(10, 2)}
    calls.clear()
    monkeypatch.setattr(loader_bench, "usable_cpus", lambda: 1)  # one usable CPU
    bench("s", options={"prefetch": 4}, prefetches=[1, 4])
    assert thread_candidates(1) == [1, 2]  # what one core gives, then prefetch 1 with the faster 2 threads
    assert [c[0] for c in calls[1:]] == [{"prefetch": 4, "num_threads": 1}, {"prefetch": 4, "num_threads": 2},
                                         {"prefetch": 1, "num_threads": 2}]


def test_bench_without_search_measures_the_options_once(calls) -> None:
    report = bench("s", options={"num_threads": 3}, search=False)
    assert report.search is None and len(calls) == 1 and report.measurements == (report.baseline,)
