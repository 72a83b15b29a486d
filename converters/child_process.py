"""Native readers run in a child process: scipy's MATLAB reader (mat_files.py) and LMDB (images/lsun.py) trust the
files they read, and crash the process (a segmentation fault) on some damaged ones. In a child, such a crash is a
return code the parent turns into a rejection of the file, and the conversion goes on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])  # where `converters` is imported from, for the child


def run_python(code: str, args: list[str], *, timeout: float) -> subprocess.CompletedProcess:
    """Run `code` in a new Python interpreter with `args` (sys.argv[1:]) and `converters` importable; its stdout and
    stderr captured. subprocess.TimeoutExpired past `timeout` seconds."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, env=env, timeout=timeout)
