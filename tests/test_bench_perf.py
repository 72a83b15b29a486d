"""fastdata.perf building blocks: settings search, batch timing/counting, process-tree resource monitor."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import torch

from fastdata.perf.loader_bench import bench, loader_call, measure
from fastdata.perf.monitor import ResourceMonitor
from fastdata.perf.search import search_settings, thread_candidates
from fastdata.perf.throughput import batch_images, epochs, real_images, time_batches


def test_thread_candidates_cover_quarter_to_twice_the_cores():
    assert thread_candidates(1) == [1, 2]
    assert thread_candidates(2) == [1, 2, 4]
    assert thread_candidates(16) == [4, 8, 16, 32]
    with pytest.raises(ValueError, match="cores"):
        thread_candidates(0)


def test_search_varies_threads_then_prefetch_and_prefers_the_cheapest_fast_setting():
    rates = {(1, 2): 100.0, (2, 2): 200.0, (4, 2): 205.0, (2, 1): 150.0, (2, 4): 201.0}
    calls = []

    def measure_fn(t, p):
        calls.append((t, p))
        return rates[(t, p)]

    result = search_settings(measure_fn, threads=[1, 2, 4], prefetches=[1, 2, 4], default_prefetch=2)
    # 4 threads is only 2.5% faster than 2: within the 3% tolerance, so 2 threads wins; then prefetch 2 beats 1
    # and prefetch 4 is within tolerance of it, so the shallower queue wins.
    assert (result.best.num_threads, result.best.prefetch) == (2, 2)
    assert calls == [(1, 2), (2, 2), (4, 2), (2, 1), (2, 4)]  # (2, 2) measured once, not twice
    assert len(result.trials) == 5


def test_search_picks_a_clearly_faster_setting_and_validates_input():
    rates = {(1, 2): 100.0, (2, 2): 100.0, (4, 2): 300.0, (4, 1): 100.0, (4, 4): 400.0}
    result = search_settings(lambda t, p: rates[(t, p)], threads=[1, 2, 4], prefetches=[1, 2, 4])
    assert (result.best.num_threads, result.best.prefetch) == (4, 4)
    with pytest.raises(ValueError, match="threads"):
        search_settings(lambda t, p: 1.0, threads=[])
    with pytest.raises(ValueError, match="prefetches"):
        search_settings(lambda t, p: 1.0, threads=[1], prefetches=[0])
    with pytest.raises(ValueError, match="tolerance"):
        search_settings(lambda t, p: 1.0, threads=[1], tolerance=1.5)


@pytest.mark.parametrize(("cores", "expected"), [(3, [1, 3, 6]), (4, [1, 2, 4, 8]), (6, [1, 3, 6, 12]),
                                               (200, [50, 100, 200, 256])])
def test_thread_candidates_are_whole_numbers_capped_at_the_thread_limit(cores: int, expected: list[int]) -> None:
    assert thread_candidates(cores) == expected


def test_the_tolerance_edge_is_within_and_its_limits(caplog: pytest.LogCaptureFixture):
    import logging

    rates = {(1, 3): 50.0, (2, 3): 100.0, (1, 4): 40.0}
    with caplog.at_level(logging.INFO, logger="fastdata.perf.search"):
        # the default prefetch (2) is not offered: the smallest offered starts; 50 is exactly half of 100
        result = search_settings(lambda t, p: rates[(t, p)], threads=[2, 1], prefetches=[4, 3], tolerance=0.5)
    assert [(t.num_threads, t.prefetch) for t in result.trials] == [(1, 3), (2, 3), (1, 4)]
    assert (result.best.num_threads, result.best.prefetch) == (1, 3)
    assert [r.getMessage() for r in caplog.records] == ["num_threads=1 prefetch=3: 50.0 images/s",
                                                        "num_threads=2 prefetch=3: 100.0 images/s",
                                                        "num_threads=1 prefetch=4: 40.0 images/s"]
    assert search_settings(lambda t, p: 1.0, threads=[1], prefetches=[2], tolerance=0.0).best.prefetch == 2
    with pytest.raises(ValueError) as caught:
        search_settings(lambda t, p: 1.0, threads=[1], tolerance=1.0)
    assert str(caught.value) == "tolerance must be in [0, 1), got 1.0"


def test_batch_images_counts_tuples_tensors_and_lists():
    assert batch_images((torch.zeros(5, 3, 2, 2), torch.zeros(5))) == 5
    assert batch_images(torch.zeros(7, 1)) == 7
    assert batch_images(([1, 2, 3], None)) == 3
    padded = (torch.zeros(4, 3, 2, 2), torch.tensor([0, 2, -100, -100]))  # eval padding rows
    assert batch_images(padded) == 4 and real_images(padded) == 2
    assert real_images(([1, 2, 3], None)) == 3
    multi_hot = torch.tensor([[1.0, 0.0], [0.0, 0.0], [-100.0, -100.0]])  # --multi-label: the last row pads
    assert real_images((torch.zeros(3, 3, 2, 2), multi_hot)) == 2
    assert time_batches(lambda: iter([padded, padded])).images == 4


def test_time_batches_counts_images_and_honours_warmup_and_limits():
    batches = [(torch.zeros(4, 1), torch.zeros(4)) for _ in range(5)] + [(torch.zeros(2, 1), torch.zeros(2))]
    seen = []
    tp = time_batches(lambda: iter(batches), on_batch=seen.append)
    assert (tp.images, tp.batches, tp.first_batch_images) == (22, 6, 4)
    assert len(seen) == 6 and tp.seconds >= tp.first_batch_s >= 0
    tp = time_batches(lambda: iter(batches), warmup_batches=2, max_batches=3)
    assert (tp.images, tp.batches) == (12, 3)
    starts = []
    tp = time_batches(lambda: iter(batches), warmup_batches=5, on_start=lambda: starts.append(len(seen)))
    assert starts == [6] and (tp.images, tp.batches) == (2, 1)  # called once, after the warm-up, before timing
    time_batches(lambda: iter(batches), on_start=lambda: starts.append(-1))
    assert starts == [6]  # without warm-up batches the clock starts before make(): no call
    with pytest.raises(ValueError, match="no batch"):
        time_batches(lambda: iter([]))
    with pytest.raises(ValueError, match="max_batches"):
        time_batches(lambda: iter(batches), max_batches=0)


class _EpochLoader:
    def __init__(self, n: int) -> None:
        self.n, self.epochs = n, []

    def set_epoch(self, e: int) -> None:
        self.epochs.append(e)

    def __iter__(self):
        return iter([(torch.full((2,), float(len(self.epochs))), torch.zeros(2)) for _ in range(self.n)])


def test_epochs_repeats_the_loader_and_sets_each_epoch():
    loader = _EpochLoader(2)
    stream = epochs(loader)
    got = [next(stream)[0][0].item() for _ in range(5)]
    assert got == [1.0, 1.0, 2.0, 2.0, 3.0] and loader.epochs == [0, 1, 2]
    with pytest.raises(ValueError, match="no batch in a whole epoch"):
        next(epochs(_EpochLoader(0)))


def test_monitor_counts_cpu_of_reaped_children_and_memory():
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    with ResourceMonitor(interval=0.01) as mon:
        subprocess.run([sys.executable, "-c", burn], check=True)
    u = mon.usage
    assert u.cpu_s >= 0.25  # the child's own CPU clock ran 0.3 s (margin for clock-tick accounting)
    assert u.peak_rss > 0 and u.wall_s > 0
    assert u.cpu_percent == pytest.approx(100 * u.cpu_s / u.wall_s / u.cores)
    with ResourceMonitor(children_only=True) as mon:
        t = time.process_time()
        while time.process_time() - t < 0.3:  # this process burns CPU, no child does
            pass
    assert mon.usage.cpu_s < 0.15  # children_only leaves this process's own CPU out
    with pytest.raises(RuntimeError, match="after the `with` block"):
        _ = ResourceMonitor().usage


def test_measure_and_bench_with_a_fake_loader_factory():
    made = []

    def factory(source, options):
        made.append(options)
        return _EpochLoader(3)

    m = measure("ds", options={"batch_size": 2}, batches=4, warmup=1, loader_factory=factory)
    assert m.throughput.images == 8 and m.usage is not None
    report = bench("ds", options={"batch_size": 2, "num_threads": 2, "prefetch": 2}, threads=[1, 2],
                   prefetches=[2, 4], batches=2, warmup=0, loader_factory=factory)
    tried = [(o["num_threads"], o["prefetch"]) for o in made[1:]]
    # as given (2, 2) first, then (1, 2); (2, 2) is reused, not rebuilt; then prefetch 4 at the best threads
    assert tried[0] == (2, 2) and (1, 2) in tried and tried.count((2, 2)) == 1
    assert report.search is not None and len(report.measurements) == len(tried)
    assert loader_call("ds/", {"batch_size": 8, "backend": "dali"}) == "fastdata.loader('ds/', batch_size=8, " \
                                                                       "backend='dali')"
