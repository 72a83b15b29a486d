"""`make mutants`: mutation testing of the modules that decide correctness (pyproject.toml [tool.mutmut]).

mutmut 3 changes one thing at a time in those modules (an operator, a constant, a keyword argument) and runs
the tests that reach the changed function; a mutant no test notices "survived". This script runs it within a
time budget, then prints the score per module and the surviving mutants (`mutmut show NAME` shows one).
docs/testing.md records the last full run and explains every survivor.

    python scripts/mutants.py                 # all modules, all cores, 60 minutes at most
    python scripts/mutants.py --budget 600    # stop after ten minutes (results so far are kept)
    python scripts/mutants.py --sample 0.2    # a fixed fifth of them (--seed picks which)
    python scripts/mutants.py --report-only   # the table of the last run
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.90
_LINE = re.compile(r"^\s*(?P<name>[\w.]+?)\.(?:x_|xǁ)\S*__mutmut_\d+: (?P<status>.+)$")


def mutmut(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("mutmut")
    return subprocess.run([str(exe), *args], cwd=ROOT, text=True, capture_output=True)


def all_mutants() -> list[str]:
    """Every mutant's name, once `mutmut run` has generated them."""
    out = mutmut("results", "--all", "true")
    return sorted(line.split(":")[0].strip() for line in out.stdout.splitlines() if _LINE.match(line))


def sampled(names: list[str], fraction: float, seed: str) -> list[str]:
    """A deterministic sample: a mutant is in it when the hash of (seed, name) falls below `fraction`."""
    def point(name: str) -> float:
        return int(hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return [n for n in names if point(n) < fraction]


def run(jobs: int, budget: float, names: list[str]) -> int:
    """`mutmut run` with its progress on the terminal, stopped (with every worker it forked) after `budget` s."""
    exe = Path(sys.executable).with_name("mutmut")
    proc = subprocess.Popen([str(exe), "run", "--max-children", str(jobs), *names], cwd=ROOT,
                            start_new_session=True)
    try:
        return proc.wait(timeout=budget)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()
        print(f"\ntime budget of {budget:.0f} s reached: the table below covers the mutants run so far; "
              "`make mutants` again continues where this run stopped")
        return 0


def results() -> dict[str, Counter]:
    """{module: Counter(status)} from `mutmut results --all true` (every mutant, killed ones too)."""
    out = mutmut("results", "--all", "true")
    if out.returncode != 0:
        out = mutmut("results")
    per: dict[str, Counter] = defaultdict(Counter)
    for line in out.stdout.splitlines():
        m = _LINE.match(line)
        if m:
            per[m["name"]][m["status"].strip()] += 1
    return per


def survivors() -> list[str]:
    out = mutmut("results")
    return [line.split(":")[0].strip() for line in out.stdout.splitlines() if line.rstrip().endswith("survived")]


def report() -> float:
    stats_path = ROOT / "mutants" / "mutmut-cicd-stats.json"
    mutmut("export-cicd-stats")
    if not stats_path.exists():
        print("no results yet: run `make mutants`")
        return 0.0
    stats = json.loads(stats_path.read_text())
    per = results()
    print(f"{'module':44s} {'killed':>7s} {'survived':>9s} {'no tests':>9s} {'other':>6s} {'score':>6s}")
    for module in sorted(per):
        c = per[module]
        killed = c["killed"] + c["timeout"] + c["segfault"]
        judged = killed + c["survived"] + c["no tests"]
        other = sum(c.values()) - judged
        score = killed / judged if judged else 1.0
        print(f"{module:44s} {killed:7d} {c['survived']:9d} {c['no tests']:9d} {other:6d} {score:6.1%}")
    killed = stats["killed"] + stats["timeout"] + stats["segfault"]
    judged = killed + stats["survived"] + stats["no_tests"]
    score = killed / judged if judged else 0.0
    print(f"\n{killed} of {judged} mutants killed ({score:.1%}; target {TARGET:.0%}); "
          f"{stats['total'] - judged} not run or skipped")
    left = survivors()
    if left:
        print(f"{len(left)} survived (`mutmut show NAME` shows the change):")
        for name in left:
            print(f"  {name}")
    return score


def isolation_problem(pyproject: Path = ROOT / "pyproject.toml") -> str | None:
    """Why the configured runner would report mutants killed that no test killed (None: it would not).

    mutmut's default runner forks each mutant's tests from the process that ran the statistics and the clean
    tests. After remote storage was used in a process, its forked children refuse it (fastdata/storage/client.py:
    obstore's runtime does not survive fork), so every test of remote data fails under every mutant."""
    if sys.version_info >= (3, 11):
        from tomllib import loads
    else:  # Python 3.10: the `toml` package, which mutmut reads pyproject.toml with there
        from toml import loads
    config = loads(pyproject.read_text()).get("tool", {}).get("mutmut", {})
    if config.get("process_isolation") == "forkserver":
        return None
    return ("[tool.mutmut] must set process_isolation = \"forkserver\": with mutmut's default (\"fork\") the tests "
            "that read remote datasets fail in every forked child, and every mutant they reach is counted killed")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=float, default=3600, help="seconds before the run is stopped (default 3600)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants run at once (default: cores)")
    p.add_argument("--sample", type=float, default=1.0, help="fraction of the mutants to run (default 1: all)")
    p.add_argument("--seed", default="0", help="which sample (a mutant's membership is a hash of seed and name)")
    p.add_argument("--report-only", action="store_true", help="print the results of the last run")
    args = p.parse_args(argv)
    if not args.report_only:
        problem = isolation_problem()
        if problem:
            print(problem, file=sys.stderr)
            return 2
        start = time.monotonic()
        names: list[str] = []
        if args.sample < 1:
            if not all_mutants():  # first run: generate the mutants and the test statistics, run none
                run(args.jobs, args.budget, ["generate.only.no_such_mutant"])
            names = sampled(all_mutants(), args.sample, args.seed)
            print(f"running a sample of {len(names)} mutants (--sample {args.sample}, --seed {args.seed})")
        code = run(args.jobs, max(args.budget - (time.monotonic() - start), 1.0), names)
        if code != 0:
            return code
    score = report()
    return 0 if score >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
