"""How many CPUs a process may use (fastdata/cpus.py): its affinity and its cgroup's CPU quota, not the machine's
count. On a 128-core node a 4-CPU Slurm job's `fastdata convert` defaulted to 128 workers and refused them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import fake_cgroup

from fastdata import cpus
from fastdata.cpus import cpus_per_process, quota_cpus, usable_cpus

NONE = Path("/nonexistent/cgroup")  # no cgroup file: no quota


def test_the_affinity_counts_not_the_machine_and_at_least_one(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert usable_cpus(membership=NONE) == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(), raising=False)
    assert usable_cpus(membership=NONE) == 1
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # not Linux: the machine's count
    assert usable_cpus(membership=NONE) == 64
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # undeterminable
    assert usable_cpus(membership=NONE) == 1


@pytest.mark.parametrize(("membership", "files", "grant"), [
    ("0::/\n", {"cpu.max": "200000 100000\n"}, 2),  # docker --cpus 2 (a cgroup namespace: the path is /)
    ("0::/\n", {"cpu.max": "150000 100000\n"}, 2),  # --cpus 1.5: rounded up
    ("0::/\n", {"cpu.max": "50000 100000\n"}, 1),  # half a CPU: one
    ("0::/\n", {"cpu.max": "max 100000\n"}, None),  # no quota
    ("0::/job/step\n", {"job/step/cpu.max": "max 100000", "job/cpu.max": "400000 100000"}, 4),  # a parent's
    ("0::/job/step\n", {"job/step/cpu.max": "800000 100000", "cpu.max": "300000 100000"}, 3),  # the smallest
    ("0::/docker/abc\n", {"cpu.max": "300000 100000"}, 3),  # the host's path, absent in the container: its root
    ("0::/\n", {"cpu.max": "garbage"}, None),
    ("0::/\n", {"cpu.max": "0 100000"}, None),
    ("0::/\n", {"cpu.max": "1 100000"}, 1),  # the least quota there is: one CPU, not none
    ("0::/\n", {"cpu.max": "5 1"}, 5),  # the least period there is
    ("0::/pod:a/b\n", {"pod:a/b/cpu.max": "200000 100000"}, 2),  # a colon within the path is the path's
    ("0::/\n", {"cpu.max": "100000 0"}, None),
    ("0::/\n", {}, None),
    ("4:memory:/x\n1:cpu,cpuacct:/\n", {"cpu,cpuacct/cpu.cfs_quota_us": "250000\n",
                                        "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, 3),  # cgroup v1
    ("1:cpu:/\n", {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),  # v1, no quota
    ("1:cpu:/\n", {"cpu/cpu.cfs_quota_us": "200000\n"}, None),  # v1 without its period: unreadable, no quota
    ("1:cpu:/\n", {"cpu/cpu.cfs_period_us": "100000\n"}, None),
    ("1:cpuacct,cpu:/slurm/job\n", {"cpu/slurm/job/cpu.cfs_quota_us": "100000",
                                    "cpu/slurm/job/cpu.cfs_period_us": "100000"}, 1),  # v1 mounted as cpu/
    ("2:cpuacct:/\n", {"cpuacct/cpu.cfs_quota_us": "100000", "cpuacct/cpu.cfs_period_us": "100000"}, None),  # not cpu
    ("not a cgroup line\n0::/\n", {"cpu.max": "200000 100000"}, 2),
    ("0::/..\n", {"cpu.max": "200000 100000", "../cpu.max": "100000 100000"}, 2),  # no way out of the mount
])
def test_the_cgroup_quota(tmp_path: Path, membership: str, files: dict[str, str], grant: int | None):
    assert quota_cpus(**fake_cgroup(tmp_path, membership, files)) == grant


def test_the_fewest_of_affinity_and_quota(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert usable_cpus(**fake_cgroup(tmp_path, "0::/\n", {"cpu.max": "300000 100000"})) == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert usable_cpus(mount=tmp_path / "mount", membership=tmp_path / "cgroup") == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    (tmp_path / "job").mkdir()
    job = fake_cgroup(tmp_path / "job", "0::/slurm/job_7\n", {"slurm/job_7/cpu.max": "400000 100000"})
    assert usable_cpus(**job) == 4  # the process's own cgroup, as its membership names it, not the mount's root


def test_unreadable_membership_is_no_quota(tmp_path: Path):
    (tmp_path / "cgroup").write_bytes(b"\xff\xfe")
    assert quota_cpus(membership=tmp_path / "cgroup") is None
    assert quota_cpus(membership=tmp_path) is None  # a folder


def test_the_conversion_defaults_to_the_cpus_it_may_use(monkeypatch: pytest.MonkeyPatch):
    """A 4-CPU job on a 128-core machine: 4 conversion (and index) workers; the default was 128, which the pool then
    refused as past 4 a CPU ('--jobs 128 would start 128 worker processes')."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 128)
    monkeypatch.setattr(cpus, "quota_cpus", lambda **kw: None)
    from converters.engine import ConvertConfig
    from fastdata.cli import build_parser

    assert ConvertConfig().jobs == 4
    assert build_parser().parse_args(["convert", "a", "b"]).jobs == 4
    assert build_parser().parse_args(["index", "a"]).jobs == 4
    monkeypatch.setattr(cpus, "quota_cpus", lambda **kw: 2)  # and a quota of 2 (docker --cpus 2)
    assert ConvertConfig().jobs == build_parser().parse_args(["convert", "a", "b"]).jobs == 2


@pytest.mark.parametrize(("local", "share"), [(None, 16), ("8", 2), ("3", 5), ("32", 1), ("0", 16), ("x", 16),
                                             (" 4 ", 4)])
def test_a_loader_takes_its_share_of_the_cpus_of_a_node(monkeypatch: pytest.MonkeyPatch, local, share: int):
    """torchrun's 8 ranks on an 8-GPU node each took every core for their decode threads: 8 times too many."""
    from fastdata.images.options import ImageLoaderOptions
    from fastdata.volumes.options import VolumeLoaderOptions

    monkeypatch.setattr(cpus, "usable_cpus", lambda: 16)
    if local is None:
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local)
    assert cpus_per_process() == share
    assert ImageLoaderOptions(batch_size=2).num_threads == share
    assert VolumeLoaderOptions().num_workers == min(4, share)
