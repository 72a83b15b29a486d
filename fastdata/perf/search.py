"""A small coordinate search over a loader's worker threads and prefetch depth.

First the thread count is varied at the default prefetch depth, then the prefetch depth at the best
thread count. Among settings within `tolerance` of the fastest, the cheapest wins (fewer threads
leave cores to the training step; a shallower queue holds less memory).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Trial:
    num_threads: int
    prefetch: int
    images_per_s: float


@dataclass(frozen=True)
class SearchResult:
    trials: tuple[Trial, ...]
    best: Trial


def thread_candidates(cores: int, /) -> list[int]:
    """A handful of thread counts around the number of cores: a quarter, half, all, and twice."""
    if cores < 1:
        raise ValueError(f"cores must be >= 1, got {cores}")
    from fastdata.images.options import MAX_THREADS

    return sorted({min(n, MAX_THREADS) for n in (max(1, cores // 4), max(1, cores // 2), cores, 2 * cores)})


PREFETCH_CANDIDATES = (1, 2, 4)


def _cheapest_fast(trials: Sequence[Trial], tolerance: float) -> Trial:
    top = max(t.images_per_s for t in trials)
    good = [t for t in trials if t.images_per_s >= (1.0 - tolerance) * top]
    return min(good, key=lambda t: (t.num_threads, t.prefetch))


def search_settings(measure: Callable[[int, int], float], /, *, threads: Sequence[int],
                    prefetches: Sequence[int] = PREFETCH_CANDIDATES, default_prefetch: int = 2,
                    tolerance: float = 0.03) -> SearchResult:
    """Run `measure(num_threads, prefetch) -> images/s` over a few settings and pick the best."""
    if not threads or any(t < 1 for t in threads):
        raise ValueError(f"threads must be a non-empty list of integers >= 1, got {list(threads)}")
    if not prefetches or any(p < 1 for p in prefetches):
        raise ValueError(f"prefetches must be a non-empty list of integers >= 1, got {list(prefetches)}")
    if not 0.0 <= tolerance < 1.0:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance}")
    measured: dict[tuple[int, int], Trial] = {}

    def run(t: int, p: int) -> Trial:
        if (t, p) not in measured:
            rate = float(measure(t, p))
            log.info("num_threads=%d prefetch=%d: %.1f images/s", t, p, rate)
            measured[(t, p)] = Trial(num_threads=t, prefetch=p, images_per_s=rate)
        return measured[(t, p)]

    first_prefetch = default_prefetch if default_prefetch in prefetches else sorted(prefetches)[0]
    stage1 = [run(t, first_prefetch) for t in sorted(set(threads))]
    best_threads = _cheapest_fast(stage1, tolerance).num_threads
    stage2 = [run(best_threads, p) for p in sorted(set(prefetches))]
    best = _cheapest_fast(stage2, tolerance)
    return SearchResult(trials=tuple(measured.values()), best=best)
