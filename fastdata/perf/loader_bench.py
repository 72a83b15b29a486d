"""Loader-only throughput of `fastdata.loader(...)` with given options, and the settings search behind
`fastdata bench`. Batches are consumed and dropped: this is the speed the loader can feed at most."""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastdata.cpus import usable_cpus
from fastdata.perf.monitor import ResourceMonitor, Usage
from fastdata.perf.search import PREFETCH_CANDIDATES, SearchResult, search_settings, thread_candidates
from fastdata.perf.throughput import Throughput, epochs, time_batches

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Measurement:
    options: dict[str, Any]
    throughput: Throughput
    usage: Usage | None  # None when psutil is not installed

    @property
    def images_per_s(self) -> float:
        return self.throughput.images_per_s


@dataclass(frozen=True)
class BenchReport:
    baseline: Measurement  # the options as given
    search: SearchResult | None
    measurements: tuple[Measurement, ...]  # every setting measured, baseline first


def _make_loader(source: str | Path, options: dict[str, Any]) -> Any:
    import fastdata

    return fastdata.loader(source, **options)


def measure(source: str | Path, /, *, options: dict[str, Any], batches: int = 10, warmup: int = 2,
            loader_factory: Any = _make_loader) -> Measurement:
    """Build one loader, skip `warmup` batches, then time `batches` batches (epochs repeat as needed)."""
    if batches < 1:
        raise ValueError(f"batches must be >= 1, got {batches}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    gc.collect()
    mon = ResourceMonitor() if importlib.util.find_spec("psutil") is not None else None
    loader = loader_factory(source, options)
    try:
        with mon if mon is not None else contextlib.nullcontext():
            stream = epochs(loader)
            tp = time_batches(lambda: stream, max_batches=batches, warmup_batches=warmup)  # closes the stream
    finally:
        del loader
        gc.collect()
    usage = mon.usage if mon is not None else None
    log.info("%s: %.1f images/s over %d batches", options, tp.images_per_s, tp.batches)
    return Measurement(options=dict(options), throughput=tp, usage=usage)


def bench(source: str | Path, /, *, options: dict[str, Any], search: bool = True,
          threads: list[int] | None = None, prefetches: list[int] | None = None, batches: int = 10,
          warmup: int = 2, loader_factory: Any = _make_loader) -> BenchReport:
    """Measure `options` as given, then (with `search`) a few num_threads x prefetch settings."""
    baseline = measure(source, options=options, batches=batches, warmup=warmup, loader_factory=loader_factory)
    measured = [baseline]
    if not search:
        return BenchReport(baseline=baseline, search=None, measurements=tuple(measured))
    threads = threads or thread_candidates(usable_cpus())
    prefetches = prefetches or list(PREFETCH_CANDIDATES)

    def run(t: int, p: int) -> float:
        if {**options, "num_threads": t, "prefetch": p} == options:
            return baseline.images_per_s  # the settings as given, measured already
        m = measure(source, options={**options, "num_threads": t, "prefetch": p}, batches=batches,
                    warmup=warmup, loader_factory=loader_factory)
        measured.append(m)
        return m.images_per_s

    default_prefetch = int(options.get("prefetch", 2))
    result = search_settings(run, threads=threads, prefetches=prefetches, default_prefetch=default_prefetch)
    return BenchReport(baseline=baseline, search=result, measurements=tuple(measured))


def loader_call(source: str | Path, options: dict[str, Any]) -> str:
    """The Python call that builds a loader with these options, e.g. for copying into a training script."""
    args = ", ".join(f"{k}={v!r}" for k, v in options.items())
    return f"fastdata.loader({str(source)!r}, {args})"


__all__ = ["BenchReport", "Measurement", "bench", "loader_call", "measure"]
