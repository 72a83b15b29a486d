"""The resource monitor's arithmetic on a process tree whose CPU times and memory are made up (fake `os.times`
and psutil processes, powers of two so that every term shows), and its sampler thread."""

from __future__ import annotations

import logging
import threading
import time
from types import SimpleNamespace

import psutil
import pytest

from fastdata.perf import monitor
from fastdata.perf.monitor import ResourceMonitor, Usage, tree_cpu_seconds, tree_rss


class _Child:
    def __init__(self, times: tuple[float, float, float, float] | None, rss: int | None) -> None:
        self._times, self._rss = times, rss

    def cpu_times(self):
        if self._times is None:
            raise psutil.NoSuchProcess(4242)  # exited between listing and reading
        return SimpleNamespace(user=self._times[0], system=self._times[1], children_user=self._times[2],
                               children_system=self._times[3])

    def memory_info(self):
        if self._rss is None:
            raise psutil.NoSuchProcess(4242)
        return SimpleNamespace(rss=self._rss)


class _Me:
    def __init__(self, rss, children: list[_Child], *, fail: bool = False) -> None:
        self.rss, self.kids, self.fail = rss, children, fail

    def children(self, recursive: bool = False) -> list[_Child]:
        if self.fail:
            raise psutil.AccessDenied(1)
        return list(self.kids) if recursive is True else self.kids[:1]  # grandchildren only when recursive

    def memory_info(self):
        return SimpleNamespace(rss=self.rss() if callable(self.rss) else self.rss)


@pytest.fixture
def tree(monkeypatch: pytest.MonkeyPatch) -> _Me:
    me = _Me(1 << 20, [_Child((16.0, 32.0, 64.0, 128.0), 1 << 10), _Child((256.0, 512.0, 0.0, 0.0), 1 << 12),
                       _Child(None, None)])
    monkeypatch.setattr(psutil, "Process", lambda: me)
    monkeypatch.setattr(monitor.os, "times", lambda: SimpleNamespace(user=1.0, system=2.0, children_user=4.0,
                                                                     children_system=8.0))
    return me


def test_cpu_seconds_add_this_process_its_reaped_children_and_every_live_descendant(tree: _Me) -> None:
    assert tree_cpu_seconds() == 1023.0
    assert tree_cpu_seconds(children_only=True) == 1020.0
    tree.fail = True  # the tree cannot be listed: what os.times knows
    assert tree_cpu_seconds() == 15.0


def test_memory_adds_this_process_and_every_live_descendant(tree: _Me) -> None:
    assert tree_rss() == (1 << 20) + (1 << 10) + (1 << 12)
    assert tree_rss(children_only=True) == (1 << 10) + (1 << 12)
    tree.fail = True
    assert tree_rss() == 1 << 20 and tree_rss(children_only=True) == 0


def test_the_sampler_sees_a_peak_that_is_gone_before_the_block_ends(tree: _Me) -> None:
    samples, spike = [], threading.Event()

    def rss() -> int:
        samples.append(time.monotonic())
        return 1 << 30 if spike.is_set() else 1 << 20

    tree.rss = rss
    mon = ResourceMonitor(interval=0.01)
    assert (mon.interval, ResourceMonitor().interval, ResourceMonitor().children_only) == (0.01, 0.05, False)
    with mon:
        assert [t for t in threading.enumerate() if t.name == "fastdata-monitor" and t.daemon]
        spike.set()
        seen = len(samples)
        deadline = time.monotonic() + 10
        while len(samples) < seen + 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        spike.clear()
    assert mon.usage.peak_rss == (1 << 30) + (1 << 10) + (1 << 12)
    assert not [t for t in threading.enumerate() if t.name == "fastdata-monitor"]


def test_usage_is_the_cpu_and_time_between_entry_and_exit(tree: _Me, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([10.0, 12.5])
    cpu = iter([100.0, 103.0])
    monkeypatch.setattr(monitor.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(monitor, "tree_cpu_seconds", lambda children_only: next(cpu) + (0 if children_only else 1))
    monkeypatch.setattr(monitor, "usable_cpus", lambda: 6)
    with ResourceMonitor(children_only=True) as mon:
        pass
    assert mon.usage == Usage(wall_s=2.5, cpu_s=3.0, peak_rss=(1 << 10) + (1 << 12), cores=6)
    assert mon.usage.cores_busy == 1.2 and mon.usage.cpu_percent == pytest.approx(20.0)
    clock, cpu = iter([0.0, 1.0]), iter([5.0, 4.0])  # a clock that went back counts no CPU
    with ResourceMonitor() as mon:
        pass
    assert mon.usage.cpu_s == 0.0 and Usage(0.0, 1.0, 0, 1).cores_busy == 0.0


def test_a_failed_memory_sample_is_logged_and_the_measurement_goes_on(tree: _Me, caplog) -> None:
    def broken() -> int:
        raise OSError("boom")

    tree.rss = broken
    with caplog.at_level(logging.DEBUG, logger="fastdata.perf.monitor"), ResourceMonitor() as mon:
        pass
    assert mon.usage.peak_rss == 0
    assert {r.getMessage() for r in caplog.records} == {"memory sample failed: boom"}


@pytest.mark.parametrize("interval", [0, -1.0])
def test_an_interval_that_is_not_positive_is_refused(interval: float) -> None:
    with pytest.raises(ValueError) as err:
        ResourceMonitor(interval=interval)
    assert str(err.value) == f"interval must be > 0 seconds, got {interval}"


@pytest.mark.parametrize("measure", [tree_cpu_seconds, tree_rss])
def test_without_psutil_the_extra_that_brings_it_is_named(monkeypatch: pytest.MonkeyPatch, measure) -> None:
    import sys

    from fastdata.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "psutil", None)  # as if it were not installed
    with pytest.raises(MissingDependencyError) as err:
        measure()
    assert str(err.value) == "'psutil' is not installed; install it with: pip install 'fastdata[bench]'"
