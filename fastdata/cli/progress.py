"""Progress of the long commands (`convert`, `index`): a tqdm bar on a terminal; written to a file (the stderr of a
batch job: Slurm's `slurm-%j.out`, a `nohup` log), a line every `LOG_EVERY` seconds and one at the end, so that the
log says how far the command got, how fast it goes and when it should end. A bar's carriage returns in a log make
one line of thousands of updates; no output at all leaves an hour-long job silent until it ends."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

LOG_EVERY = 60.0  # seconds between two lines of a log
WORDS = {"img": "image"}  # a bar's short unit ("img/s"), as a line says it


def duration(seconds: float) -> str:
    """'45s', '12m05s', '3h07m'."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class LogProgress:
    """Counts done of `total` `unit`s; writes `what: done/total units (pct), rate, time left` lines to `stream`,
    the first after `every` seconds, then every `every` seconds, and a last one when the count reaches the total
    or `close()` is called."""

    def __init__(self, total: int, unit: str, what: str, *, stream: TextIO | None = None, every: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.unit, self.what = total, WORDS.get(unit, unit), what
        self.stream, self.every, self.clock = stream, LOG_EVERY if every is None else every, clock
        self.done = 0
        self.start = self.last = clock()
        self.closed = False

    def __call__(self, n: int) -> None:
        self.done += n
        now = self.clock()
        if self.done >= self.total:
            self.close()
        elif now - self.last >= self.every:
            self.last = now
            self._write(now)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._write(self.clock(), last=True)

    def _write(self, now: float, *, last: bool = False) -> None:
        elapsed = now - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        line = f"{self.what}: {self.done:,}/{self.total:,} {self.unit}s"
        if self.total:
            line += f" ({100 * self.done / self.total:.1f}%)"
        if last:
            line += f" in {duration(elapsed)}"
        elif rate > 0:
            shown = f"{rate:,.0f}" if rate >= 10 else f"{rate:.2f}"  # a DICOM series may take seconds
            line += f", {shown} {self.unit}s/s, about {duration((self.total - self.done) / rate)} left"
        stream = self.stream if self.stream is not None else sys.stderr
        print(line, file=stream, flush=True)


class BarProgress:
    """A tqdm bar with the same interface: called with each count, closed at the total or by `close()`."""

    def __init__(self, total: int, unit: str, *, scale: bool) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit=unit, unit_scale=scale, dynamic_ncols=True, smoothing=0.1)

    def __call__(self, n: int) -> None:
        self.bar.update(n)
        if self.bar.n >= self.bar.total:
            self.bar.close()

    def close(self) -> None:
        self.bar.close()


def progress(total: int, unit: str, what: str, *, enabled: bool,
             scale: bool = False) -> BarProgress | LogProgress | None:
    """A bar when stderr is a terminal (`scale`: counts shown as 12.3k), log lines when it is not, nothing when
    `enabled` is False (`--no-progress`)."""
    if not enabled:
        return None
    return BarProgress(total, unit, scale=scale) if sys.stderr.isatty() else LogProgress(total, unit, what)
