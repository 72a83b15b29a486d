"""How many CPUs this process may use: the fewest of those the scheduler lets it run on (taskset, the cpuset of a
Slurm job or a Kubernetes pod) and those its cgroup's CPU quota grants (`docker run --cpus 2`, a Kubernetes CPU
limit), rounded up. `os.cpu_count()` counts the machine's: on a 128-core node, a 4-CPU Slurm job's
`fastdata convert` defaulted to 128 worker processes (and refused them, past the limit of 4 a CPU).

Every default that scales with the CPUs (conversion workers, the thread counts `bench` tries) comes from
`usable_cpus()`; a loader's decode and reader threads from `cpus_per_process()`, the share of one of the processes a
launcher started on this machine (torchrun's 8 ranks of an 8-GPU node each took every core: 8 times too many
threads)."""

from __future__ import annotations

import math
import os
from pathlib import Path

from fastdata.cgroup import MOUNT, SELF, folders, read_int, read_text
from fastdata.distributed import launched_local_processes


def usable_cpus(*, mount: Path = MOUNT, membership: Path = SELF) -> int:
    """CPUs this process may use, at least 1 (the paths are for tests)."""
    count = _affinity()
    quota = quota_cpus(mount=mount, membership=membership)
    return max(1, min(count, quota) if quota is not None else count)


def cpus_per_process() -> int:
    """`usable_cpus()` shared among the processes a launcher started on this machine (`LOCAL_WORLD_SIZE`, which
    torchrun sets; 1 when unset or not a whole number), at least 1. Ranks that a launcher bound to CPUs of their own
    (srun's --cpu-bind) have their share in their affinity already, and no such variable."""
    return max(1, usable_cpus() // max(1, launched_local_processes()))


def _affinity() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def quota_cpus(*, mount: Path = MOUNT, membership: Path = SELF) -> int | None:
    """The CPUs the CPU quotas of this process's cgroup and its parents grant, rounded up (the smallest); None when
    none is set or none can be read (cgroup v2's `cpu.max`, v1's `cpu.cfs_quota_us` over `cpu.cfs_period_us`)."""
    grants = [_v2(folder) if version == 2 else _v1(folder)
              for version, folder in folders("cpu", mount=mount, membership=membership)]
    found = [g for g in grants if g is not None]
    return min(found) if found else None


def _v2(folder: Path) -> int | None:
    fields = read_text(folder / "cpu.max").split()
    if len(fields) != 2 or not all(f.isdigit() for f in fields):  # "max 100000": no quota
        return None
    return _ratio(int(fields[0]), int(fields[1]))


def _v1(folder: Path) -> int | None:
    quota, period = read_int(folder / "cpu.cfs_quota_us"), read_int(folder / "cpu.cfs_period_us")
    return None if quota is None or period is None else _ratio(quota, period)


def _ratio(quota: int, period: int) -> int | None:
    return max(1, math.ceil(quota / period)) if quota > 0 and period > 0 else None
