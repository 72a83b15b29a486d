"""`make gpu-check` runs the GPU tests and the cuda benchmark only where CUDA is, and exits 0 without it."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_check  # noqa: E402


def _run(has_cuda: bool, argv=(), rc=0):
    calls: list[list[str]] = []

    def run(cmd):
        calls.append(cmd)
        return rc

    return gpu_check.main(list(argv), run=run, has_cuda=lambda: has_cuda), calls


def test_without_cuda_only_the_plumbing_runs_and_it_exits_0(capsys):
    rc, calls = _run(False)
    assert rc == 0 and len(calls) == 1 and "-m" not in calls[0][3:] and "cuda or device" in calls[0]
    assert "no CUDA device here" in capsys.readouterr().out


def test_with_cuda_the_gpu_tests_and_the_cuda_benchmark_run():
    rc, calls = _run(True)
    assert rc == 0 and len(calls) == 5
    assert calls[1][-4:] == ["-m", "gpu", "-rA", "tests/test_gpu.py"]
    assert calls[2][1:] == ["scripts/gpu_breaks.py"]
    assert calls[3][1:] == ["benchmarks/images_per_sec.py", "--device", "cuda", "--candidates", "abcdefhn", "--reps",
                            "3", "--epochs", "3"]
    assert calls[4][1:] == ["benchmarks/dali_stages.py", "--device", "cuda", "--variants", "nocopy,inline", "--reps",
                            "2", "--epochs", "8", "--json", "bench-out/dali_stages.json"]
    assert _run(True, ["--reps", "2", "--epochs", "4"])[1][3][-4:] == ["--reps", "2", "--epochs", "4"]
    assert len(_run(True, ["--no-bench"])[1]) == 3
    assert [c[1:] for c in _run(True, ["--no-bench", "--no-breaks"])[1][1:]] == [["-m", "pytest", "-q", "-m", "gpu",
                                                                                 "-rA", "tests/test_gpu.py"]]


def test_a_failing_step_fails_the_check(capsys):
    rc, _ = _run(True, rc=1)
    assert rc == 1 and "FAILED" in capsys.readouterr().out


def test_gpu_tests_skip_cleanly_here():
    import subprocess

    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests/test_gpu.py", "-p",
                          "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True)
    import torch

    assert out.returncode == 0, out.stdout  # collected, and (here) skipped rather than failed
    if not torch.cuda.is_available():
        assert "skipped" in out.stdout and "error" not in out.stdout.lower(), out.stdout
