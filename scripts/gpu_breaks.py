"""Break the code a GPU test guards and watch the test go red: `make mutants` for the tests that only run on CUDA.

    python scripts/gpu_breaks.py            # every break below, each in its own copy of the tree

mutmut runs where `make test` runs, on the CPU, where the tests marked `gpu` skip: a GPU test that cannot fail
would go unnoticed. Each break here is one textual change to the library (`old` -> `new` in `path`) and the GPU
test that must fail under it. The change is made in a copy of `fastdata/`, `tests/` and `pyproject.toml` in a
temporary folder, never in this tree, and the test runs there with that copy first on `PYTHONPATH`. A break
whose test still passes is reported as SURVIVED, and the script exits 1; so does a break whose `old` text is no
longer in its file (the code moved: the break must move with it).

`make gpu-check` runs it after the GPU tests (scripts/gpu_check.py), on a machine with CUDA only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RACE = "tests/test_gpu.py::test_a_batch_is_read_only_after_the_producer_has_written_it"


@dataclass(frozen=True)
class Break:
    name: str
    path: str  # relative to the repository root
    old: str
    new: str
    test: str  # a pytest node id that must fail under the break


BREAKS = (
    Break("the hook stage reads a batch without waiting for the producer's event",
          "fastdata/images/hook_stage.py", "stream.wait_event(ready)", "pass", RACE),
    Break("a batch on CUDA carries no ready event (`Production._ready` returns None)",
          "fastdata/images/production.py", 'if self._device.type != "cuda":\n            return None', "return None",
          RACE),
    Break("the consumer's stream reads a batch without waiting for its event",
          "fastdata/images/planned.py", "current.wait_event(ready)", "pass", RACE),
    Break("the kornia backend's host batches are not pinned", "fastdata/images/kornia_backend.py",
          'self._pin = self._device.type == "cuda"', "self._pin = False",
          "tests/test_gpu.py::test_kornia_batches_come_from_pinned_memory"),
)


def missing(breaks: Sequence[Break], root: Path = ROOT) -> list[Break]:
    """The breaks whose `old` text is not (exactly once) in their file."""
    return [b for b in breaks if (root / b.path).read_text().count(b.old) != 1]


def copy_tree(root: Path, dest: Path) -> Path:
    """A copy of what the tests import and read: the two packages' sources, the tests and the project file."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in ("fastdata", "converters", "tests"):
        shutil.copytree(root / name, dest / name, ignore=skip)
    shutil.copy2(root / "pyproject.toml", dest / "pyproject.toml")
    return dest


def run_broken(brk: Break, root: Path = ROOT, *, run: Callable[[list[str], Path, dict[str, str]], int] | None = None,
               ) -> bool:
    """Whether `brk.test` fails (True: killed) with the break applied in a copy of the tree."""
    run = run or (lambda cmd, cwd, env: subprocess.run(cmd, cwd=cwd, env=env).returncode)
    with tempfile.TemporaryDirectory(prefix="fastdata-break-") as tmp:
        copy = copy_tree(root, Path(tmp))
        target = copy / brk.path
        target.write_text(target.read_text().replace(brk.old, brk.new, 1))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy), os.environ.get("PYTHONPATH", "")])}
        probe = [sys.executable, "-c", "import fastdata, sys; sys.exit(not fastdata.__file__.startswith(sys.argv[1]))",
                 str(copy)]
        if run(probe, copy, env) != 0:
            raise RuntimeError(f"the copy's fastdata is not the one imported in {copy}: is fastdata installed "
                               "other than editable, or PYTHONPATH ignored?")
        return run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", brk.test], copy, env) != 0


def main(argv: Sequence[str] | None = None, *, breaks: Sequence[Break] = BREAKS, root: Path = ROOT) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.parse_args(argv)
    gone = missing(breaks, root)
    for b in gone:
        print(f"MOVED: {b.name}: {b.old!r} is not once in {b.path}; move the break with the code")
    survived = []
    for b in breaks:
        if b in gone:
            continue
        killed = run_broken(b, root)
        print(f"{'KILLED' if killed else 'SURVIVED'}: {b.name} ({b.test})", flush=True)
        if not killed:
            survived.append(b)
    return 1 if gone or survived else 0


if __name__ == "__main__":
    sys.exit(main())
