"""`make demo` (scripts/demo.py): every step runs on the bundled data and prints what it measured. The
side-by-side benchmark it ends with is checked for its arguments only (tests/test_bench_scripts.py runs
that script end to end)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def test_the_demo_runs_every_step(tmp_path, monkeypatch, capfd):
    import demo

    from benchmarks import images_per_sec

    real_run = subprocess.run
    benches = []

    def run(cmd, *args, **kwargs):
        if any(str(c).endswith("images_per_sec.py") for c in cmd):
            benches.append(images_per_sec.parse_args(cmd[2:]))  # the arguments the script accepts
            return subprocess.CompletedProcess(cmd, 0)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(demo.subprocess, "run", run)
    demo.main(["--quick", "--out", str(tmp_path / "demo")])
    out = capfd.readouterr().out
    assert "OK: 2 shard(s), 59 samples match" in out  # verify --decode over the 59 bundled photos
    for backend in ("dali", "kornia"):
        assert f"  {backend:7s} 48 images/epoch" in out
    assert "padding" in out and out.count("batches/epoch, padding") == 3
    assert "# volume patches: (2, 1, 4, 8, 8) torch.float32" in out
    assert "# brain patches: (2, 1, 16, 16, 16) torch.float32, masks (2, 1, 16, 16, 16) torch.int64" in out
    [bench] = benches
    assert bench.images == 32 and bench.variant == "train" and bench.no_docs
