"""`make mutants` refuses a mutmut runner that would count mutants killed by the fork itself (scripts/mutants.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    if sys.version_info < (3, 11):  # the script reads pyproject.toml with mutmut's `toml` there, not tomllib
        pytest.importorskip("toml", reason="Python 3.10: `make mutants` installs mutmut, which brings toml")
    spec = importlib.util.spec_from_file_location("mutants_script", ROOT / "scripts" / "mutants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_project_runs_each_mutant_from_a_fork_server() -> None:
    assert _script().isolation_problem(ROOT / "pyproject.toml") is None


def test_the_default_fork_runner_is_refused_with_why(tmp_path: Path) -> None:
    script = _script()
    for body in ("[tool.mutmut]\nsource_paths = ['fastdata']\n",
                 "[tool.mutmut]\nprocess_isolation = \"fork\"\n", "[project]\nname = 'x'\n"):
        (tmp_path / "pyproject.toml").write_text(body)
        problem = script.isolation_problem(tmp_path / "pyproject.toml")
        assert problem == ('[tool.mutmut] must set process_isolation = "forkserver": with mutmut\'s default ("fork") '
                           "the tests that read remote datasets fail in every forked child, and every mutant they "
                           "reach is counted killed")
