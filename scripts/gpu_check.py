"""`make gpu-check`: everything that needs CUDA, in one command.

    python scripts/gpu_check.py            # the GPU tests, the CPU plumbing subset, images/s on the GPU
    python scripts/gpu_check.py --no-bench # the tests (and their breaks) only
    python scripts/gpu_check.py --no-bench --no-breaks  # the tests only

1. the device plumbing that runs anywhere (device names, pinning, DALI's device arguments, nvJPEG decode
   plumbing of the kornia backend on the CPU);
2. the tests marked `gpu` (tests/test_gpu.py): DALI `mixed` nvJPEG decode and GPU resize, the kornia backend
   on `cuda` with pinned non-blocking copies and `device_decode`, volume patches and augmentation on `cuda`,
   GPU eval tensors against the CPU ones, user hooks seeded on the device, image-text pairs on `cuda`; then
   `scripts/gpu_breaks.py`, which breaks the code that GPU tests guard, in a copy of the tree, and checks that
   they go red (mutmut runs on the CPU, where they skip);
3. `benchmarks/images_per_sec.py --device cuda --candidates abcdefhn --epochs 3`, which writes the images-cuda
   section of docs/benchmarks.md; (n), DALI's decoder alone, says whether 2x plain DALI on the same shards is
   within reach of any loader decoding with it. On a GPU the first epoch of a loader is mostly start-up (the
   CUDA context, nvJPEG's buffers), so images/s are those of the steady epochs after it; the start-up shows in
   the first-batch column;
4. `benchmarks/dali_stages.py --device cuda --variants nocopy,inline`: where the DALI backend's producer thread
   spends a batch, wall and CPU time per stage (working or waiting), against base: its encoded bytes fed to DALI
   without a copy, and its samples read on the producer thread instead of reading threads that may hold the GIL
   it waits for (printed, and kept in bench-out/dali_stages.json).

On a machine without CUDA, 2 to 4 cannot run: the script says so and exits 0 after 1.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUMBING = ["tests/test_loader_options.py", "tests/test_dali_backend.py", "tests/test_image_loader.py",
            "tests/test_sequence_loader.py", "-k", "cuda or device"]


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


# the default candidates and (n), DALI's decoder alone: whether 2x plain DALI on the same shards (h) is within
# reach of a loader that decodes with DALI's decoder (docs/benchmarks.md)
BENCH_CANDIDATES = "abcdefhn"


def steps(*, cuda: bool, bench: bool, reps: int, epochs: int = 3, breaks: bool = True) -> list[list[str]]:
    py = sys.executable
    out = [[py, "-m", "pytest", "-q", *PLUMBING]]
    if cuda:  # -rA: the measured GPU/CPU pixel differences of the passing tests are shown too
        out.append([py, "-m", "pytest", "-q", "-m", "gpu", "-rA", "tests/test_gpu.py"])
        if breaks:  # the GPU tests, each against the breaks it guards (about 20 s a break)
            out.append([py, "scripts/gpu_breaks.py"])
        if bench:
            out.append([py, "benchmarks/images_per_sec.py", "--device", "cuda", "--candidates", BENCH_CANDIDATES,
                        "--reps", str(reps), "--epochs", str(epochs)])
            # where the DALI backend's producer thread spends a batch (wall and CPU time per stage), the encoded
            # bytes fed without DALI's copy, the samples read without reading threads (12 runs: half again the 8 of
            # base and nocopy, which took about a minute)
            out.append([py, "benchmarks/dali_stages.py", "--device", "cuda", "--variants", "nocopy,inline",
                        "--reps", "2", "--epochs", "8", "--json", "bench-out/dali_stages.json"])
    return out


def main(argv: Sequence[str] | None = None, *, run: Callable[[list[str]], int] | None = None,
         has_cuda: Callable[[], bool] = cuda_available) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--no-bench", action="store_true", help="skip benchmarks/images_per_sec.py --device cuda")
    p.add_argument("--no-breaks", action="store_true", help="skip scripts/gpu_breaks.py")
    p.add_argument("--reps", type=int, default=3, help="timed repetitions of the benchmark (default 3)")
    p.add_argument("--epochs", type=int, default=3,
                   help="epochs of each loader in the benchmark; the first is not timed (default 3)")
    args = p.parse_args(argv)
    run = run or (lambda cmd: subprocess.run(cmd, cwd=ROOT).returncode)
    cuda = has_cuda()
    failed = []
    for cmd in steps(cuda=cuda, bench=not args.no_bench, reps=args.reps, epochs=args.epochs, breaks=not args.no_breaks):
        print("$", " ".join(cmd[1:] if cmd[0] == sys.executable else cmd), flush=True)
        if run(cmd) != 0:
            failed.append(" ".join(cmd[1:]))
    if not cuda:
        print("no CUDA device here (torch.cuda.is_available() is False): ran the CPU plumbing subset only; "
              "the gpu-marked tests and the cuda benchmark need a machine with an NVIDIA GPU")
    if failed:
        print("FAILED: " + "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
