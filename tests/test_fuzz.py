"""The mutation fuzz suite, a fixed slice of it: every target mutated with seed 0 (`make fuzz` runs many
more cases with a random seed). A finding prints its seed, target and case, and fails this test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_seeded_fuzz_cases_find_nothing(tmp_path: Path):
    out = subprocess.run([sys.executable, str(HERE / "mutation_fuzz.py"), "--cases", "900", "--seed", "0",
                          "--budget", "90", "--out", str(tmp_path / "findings")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    assert "0 finding(s)" in out.stdout
    assert not (tmp_path / "findings").exists()


def test_the_oracle_calls_an_unexpected_exception_a_finding():
    sys.path.insert(0, str(HERE))
    import mutation_fuzz

    from fastdata.errors import ShardError

    def refused():
        raise ShardError("bad shard")

    mutation_fuzz._expect(refused, step="refusal")  # a fastdata error: allowed
    with pytest.raises(mutation_fuzz.Finding, match="ZeroDivisionError"):
        mutation_fuzz._expect(lambda: 1 / 0, step="crash")
    with pytest.raises(mutation_fuzz.Finding, match="KeyError"):
        mutation_fuzz._expect(lambda: {}["x"], ValueError, step="crash")


def test_the_privacy_oracle_sees_identifiers_in_what_is_written_and_what_is_logged():
    sys.path.insert(0, str(HERE))
    import logging

    import mutation_fuzz

    mutation_fuzz._no_phi(["series-0a1b2c: missing slices", '{"modality": "CT"}'])  # nothing identifying
    with pytest.raises(mutation_fuzz.Finding, match="'Doe\\^Jane' written"):
        mutation_fuzz._no_phi(["DICOM object without an image (no Rows/Columns; PN Doe^Jane)"])
    logged = mutation_fuzz._Logged()
    logging.getLogger().addHandler(logged)
    try:
        logging.getLogger("pydicom").warning("Invalid value for VR UI: '1.2.826.0.1.3680043.8.498.1234567890.1X'")
    finally:
        logging.getLogger().removeHandler(logged)
    with pytest.raises(mutation_fuzz.Finding, match="1234567890.1"):
        mutation_fuzz._no_phi(logged.messages)


def test_mutating_a_document_never_changes_the_odd_values_of_later_cases():
    """Found by `--targets state --cases 20000 --seed 77`: an odd list put in one case was the shared object of
    ODD_VALUES, and a later edit in the same case went inside it (`[None]` became `[[None]]`, then itself): from
    then on every document it was put in recursed for ever, a finding of the harness, not of fastdata."""
    import copy
    import random

    sys.path.insert(0, str(HERE))
    from fuzz_mutators import ODD_VALUES, mutate_json

    before = copy.deepcopy([v for v in ODD_VALUES if isinstance(v, list | dict)])
    doc = {"a": [1, {"b": [2, 3]}], "c": {"d": None}}
    for seed in range(3000):
        mutate_json(random.Random(seed), doc)
    assert [v for v in ODD_VALUES if isinstance(v, list | dict)] == before


CASE_SCRIPT = """
import signal, sys, threading
sys.path.insert(0, {here!r})
import mutation_fuzz

signal.signal(signal.SIGALRM, mutation_fuzz._alarm)
stuck = threading.Event()

def hangs_once():
    stuck.wait()

def hangs_in_its_unwinding_too():
    try:
        stuck.wait()
    finally:
        stuck.wait()  # as a loader's finally joining a thread that is deadlocked

try:
    mutation_fuzz.run_case("the first", 1, hangs_once)
except mutation_fuzz.Hang:
    print("Hang raised in the first")
mutation_fuzz.run_case("seed=s target=t case=7 input=x", 1, hangs_in_its_unwinding_too)
print("not reached")
"""


def test_a_case_whose_unwinding_hangs_too_ends_the_run_with_every_threads_stack():
    """A fuzz run (seed 1618) hung without a word: the case alarm raised Hang, but the loader's `finally` then
    joined a thread deadlocked for good, and stdout, written to a file, was still in its buffer. Now a case still
    stuck one time limit after its interruption ends the run, printing the finding and every thread's stack."""
    out = subprocess.run([sys.executable, "-c", CASE_SCRIPT.format(here=str(HERE))], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stdout.startswith("Hang raised in the first\nFINDING hang seed=s target=t case=7 input=x: still stuck "
                                 "1 s after the case was interrupted (threads deadlocked, the run cannot go on)")
    assert "in hangs_in_its_unwinding_too" in out.stdout and "not reached" not in out.stdout
