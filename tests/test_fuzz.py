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
