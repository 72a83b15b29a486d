"""`make test` runs the suite in two processes, each test file whole in one of them (docs/testing.md, "Two
processes"): a file's module and session fixtures are built once, and the Ray tests share one instance. A Makefile
that let pytest-xdist split a file across processes would build those twice."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_make_test_runs_two_processes_and_keeps_each_file_whole() -> None:
    makefile = (ROOT / "Makefile").read_text()
    (recipe,) = re.findall(r"^test: .*\n\t(.+)$", makefile, re.MULTILINE)
    assert recipe.endswith("-m pytest -q -n $(TEST_WORKERS) --dist loadfile"), recipe
    assert re.search(r"^TEST_WORKERS \?= 2$", makefile, re.MULTILINE)
    assert '"pytest-xdist>=' in (ROOT / "pyproject.toml").read_text()  # the dev extra installs it


def test_the_ray_tests_are_in_one_file() -> None:
    """One Ray instance a run: only one file may start it (each process would start its own)."""
    starts = re.compile(r"(?m)^\s*ray\.init\(")
    users = sorted(p.name for p in (ROOT / "tests").glob("test_*.py") if starts.search(p.read_text()))
    assert users == ["test_ray_executor.py"]
