"""CPU seconds and peak memory of this process and all its descendants while a block of code runs.

CPU time is exact: `os.times()` covers this process (all threads) and every child it has reaped,
and live descendants are read through psutil at the start and the end of the block. Peak memory
is sampled: a background thread sums the RSS of the process tree every `interval` seconds (shared
pages of forked workers are counted once per process, as `top` would).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass

from fastdata.cpus import usable_cpus
from fastdata.errors import require

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Usage:
    """What a block of code cost the machine."""

    wall_s: float
    cpu_s: float
    peak_rss: int  # bytes
    cores: int

    @property
    def cores_busy(self) -> float:
        """Average number of cores kept busy (cpu seconds per wall second)."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_percent(self) -> float:
        """Share of the whole machine's CPU, in percent (100 = every core busy all the time)."""
        return 100.0 * self.cores_busy / self.cores


def _descendants(proc) -> list:
    psutil = require("psutil", "bench")
    try:
        return proc.children(recursive=True)
    except psutil.Error:
        return []


def tree_cpu_seconds(*, children_only: bool = False) -> float:
    """User + system seconds of this process (unless `children_only`), its reaped children and its
    live descendants."""
    psutil = require("psutil", "bench")
    t = os.times()
    total = t.children_user + t.children_system + (0.0 if children_only else t.user + t.system)
    for child in _descendants(psutil.Process()):
        try:
            c = child.cpu_times()
            total += c.user + c.system + c.children_user + c.children_system
        except psutil.Error:  # exited between listing and reading; os.times counts it once reaped
            pass
    return total


def tree_rss(*, children_only: bool = False) -> int:
    """Resident memory of this process (unless `children_only`) plus its live descendants, in bytes."""
    psutil = require("psutil", "bench")
    me = psutil.Process()
    total = 0 if children_only else me.memory_info().rss
    for child in _descendants(me):
        try:
            total += child.memory_info().rss
        except psutil.Error:
            pass
    return total


class ResourceMonitor:
    """`with ResourceMonitor() as mon: ...` then `mon.usage` (wall, cpu seconds, peak RSS of the tree).

    `children_only=True` leaves this process out (to measure a command run with subprocess)."""

    def __init__(self, *, interval: float = 0.05, children_only: bool = False) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval}")
        self.interval = interval
        self.children_only = children_only
        self._peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = self._cpu0 = 0.0
        self._usage: Usage | None = None

    def _sample(self) -> None:
        try:
            self._peak = max(self._peak, tree_rss(children_only=self.children_only))
        except Exception as exc:  # never let the sampler kill a measurement
            log.debug("memory sample failed: %s", exc)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> ResourceMonitor:
        self._peak = 0
        self._sample()
        self._cpu0 = tree_cpu_seconds(children_only=self.children_only)
        self._t0 = time.perf_counter()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="fastdata-monitor", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self._t0
        cpu = tree_cpu_seconds(children_only=self.children_only) - self._cpu0
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        self._usage = Usage(wall_s=wall, cpu_s=max(cpu, 0.0), peak_rss=self._peak, cores=usable_cpus())

    @property
    def usage(self) -> Usage:
        if self._usage is None:
            raise RuntimeError("ResourceMonitor.usage is available after the `with` block ends")
        return self._usage
