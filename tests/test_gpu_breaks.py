"""scripts/gpu_breaks.py, the break-check of the GPU tests: each break still applies to the code it names, and the
harness itself works on the CPU (a break made in a copy of the tree fails the test that guards it there, leaves
this tree as it was, and is reported)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_breaks  # noqa: E402

GUARDED = "tests/test_state_form.py::test_the_check_alone"
CPU_BREAK = gpu_breaks.Break("the version check accepts every state", "fastdata/loader_state.py",
                            "    if type(saved) is int and saved == version:\n        return", "    return", GUARDED)
HARMLESS = gpu_breaks.Break("a comment", "fastdata/loader_state.py", 'VERSION = "version"',
                            'VERSION = "version"  # the same', GUARDED)


def test_every_break_applies_to_the_code_as_it_is_now() -> None:
    assert gpu_breaks.BREAKS and gpu_breaks.missing(gpu_breaks.BREAKS) == []
    for b in gpu_breaks.BREAKS:
        node = b.test.split("::")
        assert (ROOT / node[0]).is_file() and f"def {node[1]}(" in (ROOT / node[0]).read_text()


def test_a_break_is_made_in_a_copy_and_its_test_goes_red_there() -> None:
    before = (ROOT / CPU_BREAK.path).read_text()
    assert gpu_breaks.run_broken(CPU_BREAK) is True
    assert gpu_breaks.run_broken(HARMLESS) is False  # the same test, unbroken code: it passes in the copy
    assert (ROOT / CPU_BREAK.path).read_text() == before


def test_the_report_names_survivors_and_breaks_the_code_has_moved_away_from(capsys, monkeypatch) -> None:
    """The report of each break's run (the run itself, a pytest in a copy of the tree, is the test above)."""
    moved = gpu_breaks.Break("gone", "fastdata/loader_state.py", "no such text", "", GUARDED)
    ran: list[str] = []
    monkeypatch.setattr(gpu_breaks, "run_broken", lambda b, root: ran.append(b.name) or b is CPU_BREAK)
    assert gpu_breaks.main([], breaks=[CPU_BREAK]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"KILLED: {CPU_BREAK.name} ({GUARDED})"
    assert gpu_breaks.main([], breaks=[HARMLESS]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == f"SURVIVED: a comment ({GUARDED})"
    assert gpu_breaks.main([], breaks=[moved]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "MOVED: gone: 'no such text' is not once in fastdata/loader_state.py; move the break with the code"]
    assert ran == [CPU_BREAK.name, HARMLESS.name]  # a moved break is not run


def test_a_copy_that_does_not_import_its_own_fastdata_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="the copy's fastdata is not the one imported"):
        gpu_breaks.run_broken(CPU_BREAK, run=lambda cmd, cwd, env: 1)
