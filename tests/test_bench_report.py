"""What `fastdata bench` prints, line by line, for a report of known numbers (the measurement replaced by a
stand-in), in text and JSON; and which settings reach the measurement."""

from __future__ import annotations

import json

import pytest

from fastdata.cli import main
from fastdata.perf import loader_bench
from fastdata.perf.loader_bench import BenchReport, Measurement
from fastdata.perf.monitor import Usage
from fastdata.perf.search import SearchResult, Trial
from fastdata.perf.throughput import Throughput

BASE = {"batch_size": 8, "train": True, "image_size": 32, "dtype": "float32", "channels_last": True,
        "backend": "kornia", "device": "cpu", "num_threads": 2, "prefetch": 2}


def _m(threads: int, prefetch: int, images: int, seconds: float, usage: Usage | None) -> Measurement:
    return Measurement(options={**BASE, "num_threads": threads, "prefetch": prefetch},
                       throughput=Throughput(images, 4, seconds, 0.5, 8), usage=usage)


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """`bench` replaced: four settings measured; the search's best is 4 threads with prefetch 1, not the fastest
    (8 threads, 3% faster: within the search's tolerance, the cheaper setting wins)."""
    seen = []

    def fake(dataset, *, options, search, threads, prefetches, batches, warmup):
        seen.append(dict(dataset=dataset, options=dict(options), search=search, threads=threads,
                         prefetches=prefetches, batches=batches, warmup=warmup))
        ms = (_m(2, 2, 200, 2.0, Usage(2.0, 3.0, 3 * 2**20 + 2**19, 2)), _m(4, 2, 300, 2.0, None),
              _m(4, 1, 330, 2.0, Usage(2.0, 4.0, 50 * 2**20, 2)), _m(8, 2, 340, 2.0, None))
        best = Trial(num_threads=4, prefetch=1, images_per_s=165.0)
        return BenchReport(baseline=ms[0], search=SearchResult(trials=(best,), best=best) if search else None,
                           measurements=ms if search else ms[:1])

    monkeypatch.setattr(loader_bench, "bench", fake)
    monkeypatch.setattr("fastdata.cli.bench.usable_cpus", lambda: 2)
    return seen


ARGS = ["bench", "ds/", "--batch-size", "8", "--image-size", "32", "--backend", "kornia", "--device", "cpu"]


def test_the_text_report_line_by_line(asked, capsys) -> None:
    assert main([*ARGS, "--threads", "2,4", "--prefetch", "1,2", "--batches", "4", "--warmup", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "fastdata bench ds/: backend=kornia device=cpu batch_size=8 train 32px float32; 4 timed batches per setting "
        "after 1 warm-up, 2 usable CPUs",
        "threads prefetch   images/s  seconds    CPU RSS MiB",
        "      2        2      100.0     2.00    75%       4   (as given)",
        "      4        2      150.0     2.00      -       -",
        "      4        1      165.0     2.00   100%      50",
        "      8        2      170.0     2.00      -       -",
        "",
        "best: num_threads=4 prefetch=1: 165.0 images/s (1.65x the settings as given)",
        "use it in Python:",
        "  fastdata.loader('ds/', batch_size=8, train=True, image_size=32, dtype='float32', channels_last=True, "
        "backend='kornia', num_threads=4, prefetch=1)",
        "re-check it:",
        "  fastdata bench ds/ --batch-size 8 --backend kornia --threads 4 --prefetch 1",
        "(loader alone: a training step that also needs the CPU gets less; `fastdata doctor` measures that)",
    ]
    (call,) = asked
    assert call == dict(dataset="ds/", options=BASE, search=True, threads=[2, 4], prefetches=[1, 2], batches=4,
                        warmup=1)


def test_eval_and_the_defaults_reach_the_report(asked, capsys) -> None:
    assert main([*ARGS, "--eval", "--split", "val"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("fastdata bench ds/: backend=kornia device=cpu batch_size=8 eval 32px float32; 10 timed "
                      "batches per setting after 2 warm-up, 2 usable CPUs")
    assert out[-2] == "  fastdata bench ds/ --batch-size 8 --backend kornia --threads 4 --prefetch 1 --eval"
    (call,) = asked
    assert call["options"] == {**BASE, "train": False, "split": "val"}
    assert (call["search"], call["threads"], call["prefetches"], call["batches"], call["warmup"]) == \
        (True, None, None, 10, 2)


@pytest.mark.parametrize(("extra", "search"), [(["--threads", "3", "--prefetch", "1"], False),
                                               (["--threads", "3"], True), (["--prefetch", "1"], True),
                                               (["--threads", "3", "--prefetch", "1,2"], True),
                                               (["--no-search"], False)])
def test_a_single_setting_is_measured_without_search(asked, capsys, extra: list[str], search: bool) -> None:
    assert main([*ARGS, *extra, "--json"]) == 0
    assert asked[0]["search"] is search


def test_the_json_report(asked, capsys) -> None:
    assert main([*ARGS, "--no-search", "--json"]) == 0
    text = capsys.readouterr().out
    assert text.startswith('{\n "dataset": "ds/",\n "options": {\n  "batch_size": 8,')  # indented by one
    assert json.loads(text) == {
        "dataset": "ds/", "options": BASE, "best": BASE,
        "measurements": [{"options": BASE, "images_per_s": 100.0, "seconds": 2.0, "cpu_percent": 75.0,
                          "peak_rss": 3 * 2**20 + 2**19}]}


@pytest.mark.parametrize("bad", [["--batches", "0"], ["--warmup", "-1"], ["--batches", "100001"],
                                 ["--warmup", "100001"], ["--batches", str(10**29)]])
def test_limits_are_refused_in_full(asked, capsys, bad: list[str]) -> None:
    """10**29 batches ran for ever (found by a sweep of hostile values)."""
    assert main([*ARGS, *bad]) == 2
    assert capsys.readouterr().err.strip().endswith("--batches must be 1 to 100,000 and --warmup 0 to 100,000 (a "
                                                    "measurement, not a training run)")
    assert not asked


def test_the_limits_themselves_are_measured(asked) -> None:
    assert main([*ARGS, "--batches", "100000", "--warmup", "100000"]) == 0
    assert main([*ARGS, "--batches", "1", "--warmup", "0"]) == 0
    assert [(a["batches"], a["warmup"]) for a in asked] == [(100000, 100000), (1, 0)]


def _rate_by_hooks(monkeypatch: pytest.MonkeyPatch, plain: float, hooked: float) -> list[tuple]:
    calls = []

    def fake(dataset, *, options, batches, warmup):
        calls.append((dataset, "augment" in options, batches, warmup))
        rate = hooked if "augment" in options else plain
        return Measurement(options=options, throughput=Throughput(int(rate * 2), 1, 2.0, 1.0, 1), usage=None)

    monkeypatch.setattr(loader_bench, "measure", fake)
    return calls


NOTE = ("(DALI on CPU: with an augment hook the graph hands over [0, 1] images and normalisation runs after the "
        "hook, one more pass over each float batch; see docs/augment.md)")


@pytest.mark.parametrize(("opts", "warmup", "note"), [
    ({"backend": "kornia"}, 6, False),  # prefetch 2 unless given: 2 x (2 + 1) batches in flight
    ({"backend": "dali", "prefetch": 3}, 8, True),
    ({"backend": "dali", "device": "cpu"}, 6, True),
    ({"backend": "dali", "device": "cuda:0"}, 6, False),
])
def test_the_cost_of_identity_hooks_in_full(monkeypatch, capsys, opts: dict, warmup: int, note: bool) -> None:
    import argparse

    from fastdata.cli.bench import _hooks_cost

    calls = _rate_by_hooks(monkeypatch, plain=100.0, hooked=95.0)
    args = argparse.Namespace(dataset="ds/", batches=3, warmup=1)
    assert _hooks_cost(args, opts, reps=2) == (100.0, 95.0)
    assert calls == [("ds/", False, 3, warmup), ("ds/", True, 3, warmup), ("ds/", True, 3, warmup),
                     ("ds/", False, 3, warmup)]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"identity hooks: 95.0 images/s vs 100.0 without (0.950x; medians of 2 alternating runs, "
                        f"{warmup} warm-up batches each)")
    assert lines[1:] == ([NOTE] if note else [])


def test_identity_hooks_without_any_image_say_so(monkeypatch, capsys) -> None:
    import argparse

    from fastdata.cli.bench import _hooks_cost

    _rate_by_hooks(monkeypatch, plain=0.0, hooked=0.0)
    _hooks_cost(argparse.Namespace(dataset="ds/", batches=1, warmup=0), {"backend": "kornia"}, reps=1)
    assert capsys.readouterr().out == "identity hooks: no images measured\n"


def test_one_batch_and_the_resolved_backend_and_device_reach_the_header(asked, capsys) -> None:
    from fastdata.images.loader import build_options

    resolved = build_options()
    assert main(["bench", "ds/", "--batches", "1", "--warmup", "0", "--no-search"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith(
        f"fastdata bench ds/: backend={resolved.backend} device={resolved.device} batch_size=256 train 224px")
    assert (asked[0]["options"]["backend"], asked[0]["options"]["device"]) == (resolved.backend, resolved.device)


def test_a_row_without_thread_settings_shows_dashes() -> None:
    from fastdata.cli.bench import _row

    m = Measurement(options={}, throughput=Throughput(10, 1, 4.0, 1.0, 1), usage=None)
    assert _row(m) == "      -        -        2.5     4.00      -       -"


def test_a_baseline_without_images_prints_no_ratio(monkeypatch, capsys) -> None:
    def fake(dataset, **kw):
        m = _m(2, 2, 0, 1.0, None)
        return BenchReport(baseline=m, search=None, measurements=(m,))

    monkeypatch.setattr(loader_bench, "bench", fake)
    assert main([*ARGS, "--no-search"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3:5] == ["", "use it in Python:"]  # the blank line where the ratio would stand


@pytest.mark.parametrize(("value", "message"), [
    ("0", "argument --threads: expected integers >= 1 like 1,2,4, got '0'"),
    ("1,x", "argument --threads: expected comma-separated integers like 1,2,4, got '1,x'"),
])
def test_a_bad_thread_list_is_refused_in_full(capsys, value: str, message: str) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "ds/", "--threads", value])
    assert capsys.readouterr().err.strip().endswith(message)
