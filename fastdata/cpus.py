"""How many CPUs this process may use: the fewest of those the scheduler lets it run on (taskset, the cpuset of a
Slurm job or a Kubernetes pod) and those its cgroup's CPU quota grants (`docker run --cpus 2`, a Kubernetes CPU
limit), rounded up. `os.cpu_count()` counts the machine's: on a 128-core node, a 4-CPU Slurm job's
`fastdata convert` defaulted to 128 worker processes (and refused them, past the limit of 4 a CPU).

Every default that scales with the CPUs (conversion workers, decode and reader threads, the thread counts `bench`
tries) comes from `usable_cpus()`."""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
SELF = Path("/proc/self/cgroup")


def usable_cpus(*, cgroup: Path = CGROUP, membership: Path = SELF) -> int:
    """CPUs this process may use, at least 1 (the paths are for tests)."""
    count = _affinity()
    quota = quota_cpus(cgroup=cgroup, membership=membership)
    return max(1, min(count, quota) if quota is not None else count)


def _affinity() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def quota_cpus(*, cgroup: Path = CGROUP, membership: Path = SELF) -> int | None:
    """The CPUs the CPU quotas of this process's cgroup and its parents grant, rounded up (the smallest); None when
    none is set or none can be read (cgroup v2's `cpu.max`, v1's `cpu.cfs_quota_us` over `cpu.cfs_period_us`)."""
    try:
        lines = membership.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    grants = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # cgroup v2: one hierarchy
            grants += [_v2(folder / "cpu.max") for folder in _upward(cgroup, path)]
        elif "cpu" in controllers.split(","):  # cgroup v1: the hierarchy the cpu controller is mounted on
            mount = cgroup / controllers if (cgroup / controllers).is_dir() else cgroup / "cpu"
            grants += [_v1(folder) for folder in _upward(mount, path)]
    found = [g for g in grants if g is not None]
    return min(found) if found else None


def _upward(mount: Path, path: str) -> list[Path]:
    """The folders of cgroup `path` under `mount` and of its parents, those that exist (in a container the mount is
    the container's own cgroup, and the path as the host names it does not exist under it)."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    folders = [mount.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]
    return [f for f in folders if f.is_dir()]


def _v2(cpu_max: Path) -> int | None:
    fields = _read(cpu_max).split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _ratio(fields[0], fields[1])


def _v1(folder: Path) -> int | None:
    return _ratio(_read(folder / "cpu.cfs_quota_us").strip(), _read(folder / "cpu.cfs_period_us").strip())


def _ratio(quota: str, period: str) -> int | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return max(1, math.ceil(q / p)) if q > 0 and p > 0 else None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return ""
