"""Progress of `fastdata convert` and `fastdata index` (fastdata/cli/progress.py): a bar on a terminal; in a log
(stderr a file, as in a batch job), a line every LOG_EVERY seconds and one at the end. Before, a command whose
stderr was not a terminal wrote nothing until it ended, so an hour-long Slurm conversion left an empty log."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest
from conftest_adopt import shardwriter_shards
from helpers import make_image_tree

import fastdata.cli.progress as progress_module
from fastdata.cli import main as cli
from fastdata.cli.progress import BarProgress, LogProgress, duration, progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_a_line_each_interval_with_rate_and_time_left_and_one_at_the_end():
    out, clock = io.StringIO(), Clock()
    shown = LogProgress(1000, "img", "fastdata convert", stream=out, every=60, clock=clock)
    clock.now += 59.9
    shown(100)
    assert out.getvalue() == ""  # the first line comes after one interval
    clock.now += 0.1
    shown(100)  # 200 in 60 s: 3.33 a second, 800 left
    assert out.getvalue() == "fastdata convert: 200/1,000 images (20.0%), 3.33 images/s, about 4m00s left\n"
    clock.now += 30
    shown(300)
    assert out.getvalue().count("\n") == 1  # not again before a whole interval
    clock.now += 30
    shown(100)  # 600 in 120 s
    assert out.getvalue().splitlines()[-1] == ("fastdata convert: 600/1,000 images (60.0%), 5.00 images/s, about "
                                               "1m20s left")
    clock.now += 3600
    shown(400)  # the total: the last line, at once
    assert out.getvalue().splitlines()[-1] == "fastdata convert: 1,000/1,000 images (100.0%) in 1h02m"
    shown.close()
    assert out.getvalue().count("\n") == 3  # closed once


def test_a_closed_count_short_of_its_total_says_how_far_it_got():
    out, clock = io.StringIO(), Clock()
    shown = LogProgress(20_000, "sample", "fastdata convert", stream=out, every=60, clock=clock)
    clock.now += 5
    shown(12_345)
    shown.close()
    assert out.getvalue() == "fastdata convert: 12,345/20,000 samples (61.7%) in 5s\n"
    empty = LogProgress(0, "shard", "fastdata index", stream=io.StringIO(), clock=clock)
    empty.close()
    assert empty.stream.getvalue() == "fastdata index: 0/0 shards in 0s\n"


def test_a_fast_rate_is_shown_whole():
    out, clock = io.StringIO(), Clock()
    shown = LogProgress(10_000, "img", "x", stream=out, every=1, clock=clock)
    clock.now += 2
    shown(2_500)
    assert out.getvalue() == "x: 2,500/10,000 images (25.0%), 1,250 images/s, about 6s left\n"


def test_rates_are_shown_from_the_first_instant_and_by_their_size():
    clock = Clock()
    cases = [  # (seconds since the start, count) -> what the line says after the count
        ((0.5, 10), "10/1,000 images (1.0%), 20 images/s, about 50s left"),  # within the first second
        ((2.0, 20), "20/1,000 images (2.0%), 10 images/s, about 1m38s left"),  # exactly 10: whole
        ((4.0, 2), "2/1,000 images (0.2%), 0.50 images/s, about 33m16s left"),  # under 1 a second
        ((1.0, 0), "0/1,000 images (0.0%)"),  # nothing yet: no rate, no time left
        ((0.0, 5), "5/1,000 images (0.5%)"),  # no time passed: no rate
    ]
    for (seconds, count), said in cases:
        out = io.StringIO()
        shown = LogProgress(1000, "img", "x", stream=out, every=0, clock=clock)
        clock.now += seconds
        shown(count)
        assert out.getvalue() == f"x: {said}\n"


def test_each_line_is_flushed_so_a_log_shows_it_at_once():
    class Counted(io.StringIO):
        flushes = 0

        def flush(self) -> None:
            self.flushes += 1

    out, clock = Counted(), Clock()
    shown = LogProgress(10, "sample", "x", stream=out, every=0, clock=clock)
    clock.now += 1
    shown(3)
    assert out.flushes == 1 and out.getvalue().count("\n") == 1


def test_a_bar_closes_at_its_total():
    bar = BarProgress(2, "shard", scale=False)
    bar(1)
    assert not bar.bar.disable
    bar(1)
    assert bar.bar.disable  # closed: tqdm disables a closed bar


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (59.4, "59s"), (59.6, "1m00s"), (61, "1m01s"),
                                               (3599, "59m59s"), (3600, "1h00m"), (90061, "25h01m")])
def test_durations_read_as_a_person_says_them(seconds: float, text: str):
    assert duration(seconds) == text


def test_a_bar_on_a_terminal_lines_in_a_log_and_nothing_when_turned_off(monkeypatch: pytest.MonkeyPatch):
    assert progress(5, "img", "x", enabled=False) is None
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert isinstance(progress(5, "img", "x", enabled=True), LogProgress)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    bar = progress(5, "img", "x", enabled=True)
    assert isinstance(bar, BarProgress)
    bar.close()


def _lines(err: str, what: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(f"{what}: ")]


def test_convert_writes_progress_lines_to_a_log(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                monkeypatch: pytest.MonkeyPatch):
    src = make_image_tree(tmp_path / "src", classes=2, per_class=4)
    monkeypatch.setattr(progress_module, "LOG_EVERY", 0.0)  # a line at every count
    assert cli(["convert", str(src), str(tmp_path / "a"), "-j", "1", "--samples-per-shard", "3"]) == 0
    lines = _lines(capsys.readouterr().err, "fastdata convert")
    counts = [int(re.match(r"fastdata convert: (\d+)/8 images", line).group(1)) for line in lines]
    assert counts == list(range(1, 9)) and lines[-1].startswith("fastdata convert: 8/8 images (100.0%) in ")
    assert cli(["convert", str(src), str(tmp_path / "b"), "-j", "1", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_convert_logs_its_last_line_when_it_fails(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                  monkeypatch: pytest.MonkeyPatch):
    import converters.engine as engine

    def fail(*args, **kwargs):
        step = args[8]  # _convert_shards(kind, fmt, dest, todo, shuffled, options, discovery, jobs, progress, probed)
        step(2)
        raise OSError("disk gone")

    src = make_image_tree(tmp_path / "src", classes=2, per_class=4)
    monkeypatch.setattr(engine, "_convert_shards", fail)
    assert cli(["convert", str(src), str(tmp_path / "a"), "-j", "1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("fastdata convert: 2/8 images (25.0%) in ")
    assert err[1:] == ["fastdata convert: error: disk gone"]


def test_index_writes_progress_lines_to_a_log(tmp_path: Path, capsys: pytest.CaptureFixture,
                                              monkeypatch: pytest.MonkeyPatch):
    shardwriter_shards(tmp_path / "s", count=6, per_shard=2)
    monkeypatch.setattr(progress_module, "LOG_EVERY", 0.0)
    assert cli(["index", str(tmp_path / "s"), str(tmp_path / "m"), "-j", "1"]) == 0
    lines = _lines(capsys.readouterr().err, "fastdata index")
    assert [line.split(" (")[0] for line in lines] == [f"fastdata index: {i}/3 shards" for i in (1, 2, 3)]


def test_convert_on_a_terminal_shows_a_bar_counted_in_images(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                             monkeypatch: pytest.MonkeyPatch):
    src = make_image_tree(tmp_path / "src", classes=2, per_class=4)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert cli(["convert", str(src), str(tmp_path / "a"), "-j", "1"]) == 0
    err = capsys.readouterr().err
    assert "\r100%" in err and "8.00/8.00" in err and "img/s]" in err and "fastdata convert: " not in err


def test_verify_writes_progress_lines_to_a_log_counted_in_shards(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                 monkeypatch: pytest.MonkeyPatch):
    src = make_image_tree(tmp_path / "src", classes=2, per_class=3)
    assert cli(["convert", str(src), str(tmp_path / "ds"), "-j", "1", "--samples-per-shard", "2",
                "--no-progress"]) == 0
    monkeypatch.setattr(progress_module, "LOG_EVERY", 0.0)
    capsys.readouterr()
    assert cli(["verify", str(tmp_path / "ds")]) == 0
    lines = _lines(capsys.readouterr().err, "fastdata verify")
    assert [line.split(" (")[0] for line in lines] == [f"fastdata verify: {i}/3 shards" for i in (1, 2, 3)]
    assert cli(["verify", str(tmp_path / "ds"), "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
