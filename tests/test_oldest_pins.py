"""pyproject.toml's lower bounds and scripts/oldest.txt, the releases `make test-oldest` runs the suite on, name
the same versions: a bound raised or lowered in one file and not the other fails here, so every bound stays one the
suite passed on (docs/testing.md, "The oldest releases")."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")
from packaging.requirements import Requirement  # noqa: E402  (after the skip: Python 3.10 has no tomllib)
from packaging.utils import canonicalize_name  # noqa: E402
from packaging.version import Version  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOOLS = {"bench", "dev", "all"}  # extras of the benchmarks and the tests: newest releases, not lower bounds


def lower_bounds() -> dict[str, Version]:
    """Every `>=` bound of fastdata's dependencies and its extras but the tools' (a name in two extras: its bound,
    which must be the same in both)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra, reqs in project["optional-dependencies"].items():
        if extra not in TOOLS:
            lines += reqs
    bounds: dict[str, Version] = {}
    for line in lines:
        req = Requirement(line)
        (spec,) = [s for s in req.specifier if s.operator == ">="]
        name = canonicalize_name(req.name)
        assert bounds.setdefault(name, Version(spec.version)) == Version(spec.version), f"{name}: two bounds"
    return bounds


def oldest_pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (ROOT / "scripts" / "oldest.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_every_lower_bound_is_the_release_make_test_oldest_installs() -> None:
    bounds, pins = lower_bounds(), oldest_pins()
    assert {"torch", "numpy", "pyarrow", "nvidia-dali-cuda120", "obstore"} <= set(bounds)
    assert bounds == pins


def test_the_set_up_script_installs_the_pins_and_every_extra_it_tests(tmp_path: Path) -> None:
    script = (ROOT / "scripts" / "setup_oldest_env.sh").read_text()
    assert "-r scripts/oldest.txt" in script and "-c scripts/oldest.txt" in script
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(project["optional-dependencies"]) - TOOLS
    assert f'-e ".[{",".join(sorted(extras, key=list(project["optional-dependencies"]).index))},dev]"' in script
