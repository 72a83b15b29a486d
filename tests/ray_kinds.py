"""Kinds that misbehave on purpose, for the Ray executor tests. Ray workers import this module by name (the
test fixture puts tests/ on their PYTHONPATH), so instances travel to them by reference."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from converters import get_kind


class _Wrapped:
    """The images kind with its processor replaced; everything else (name, formats, discovery) is the real one."""

    def __init__(self) -> None:
        self._inner = get_kind("images")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # unpickling looks up __setstate__ before _inner exists
            raise AttributeError(name)
        return getattr(self._inner, name)


@dataclass
class _CrashOnce:
    fn: Any
    marker: str

    def __call__(self, item):
        try:  # the first attempt to reach here creates the marker and dies as a killed worker would
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return self.fn(item)
        os.close(fd)
        os._exit(1)


class CrashOnceKind(_Wrapped):
    """The first input any worker converts kills that worker (os._exit); every later attempt works."""

    def __init__(self, marker: Path) -> None:
        super().__init__()
        self.marker = str(marker)

    def processor(self, options: Any):
        return _CrashOnce(self._inner.processor(options), self.marker)


class BrokenWhileFlagged(_Wrapped):
    """Every shard task fails with an OSError while `flag` exists (a mount gone, a full disk), like a fault
    outside the input that retries cannot fix; removing the flag is the fix."""

    def __init__(self, flag: Path) -> None:
        super().__init__()
        self.flag = str(flag)
        self.driver = os.getpid()  # the driver plans (and probes) normally: only the shard tasks fail

    def processor(self, options: Any):
        if os.getpid() != self.driver and os.path.exists(self.flag):
            raise OSError(f"simulated I/O failure ({self.flag} exists)")
        return self._inner.processor(options)


@dataclass
class _Slow:
    fn: Any
    seconds: float

    def __call__(self, item):
        time.sleep(self.seconds)
        return self.fn(item)


class SlowKind(_Wrapped):
    """Each input takes `seconds` longer, so a test can kill the driver in the middle of a run."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def processor(self, options: Any):
        return _Slow(self._inner.processor(options), self.seconds)
