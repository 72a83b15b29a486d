"""The pieces of `--executor ray` that run without Ray: one shard's task run in this process, the destination as a
task opens it, the storage variables handed to tasks, and the failure record. tests/test_ray_executor.py runs
them under a real Ray instance; here they run in-process, so a failure points at the piece."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import pytest
from helpers import convert_images, current_umask, make_image_tree, tree_digest

from converters.destination import LocalDestination, RemoteDestination
from converters.executor import AttemptFiles, DestSpec, RaySummary, ShardJob, _fail, _storage_env, convert_one_shard
from converters.versions import VersionMismatch
from fastdata.errors import ConvertError


def run(src: Path, dst: Path, **config: object):
    return convert_images(src, dst, samples_per_shard=4, **config)


@pytest.fixture
def in_process(monkeypatch, tmp_path):
    """`run_ray` replaced by a loop that runs each job's task here, as a Ray worker would; returns what the tasks
    returned and the jobs they were given."""
    seen: dict[str, list] = {"done": [], "jobs": []}

    def run_ray(jobs, *, dest, progress, **_):
        attempts = AttemptFiles(str(tmp_path / "attempts"))
        summary = RaySummary()
        for job in jobs:
            seen["jobs"].append(job)
            done = convert_one_shard(job, attempts)
            seen["done"].append(done)
            summary.shards, summary.samples = summary.shards + 1, summary.samples + done["samples"]
            if progress:
                progress(done["inputs"])
        summary.retries = attempts.retries()
        return summary

    monkeypatch.setattr("converters.executor.run_ray", run_ray)
    return seen


@pytest.mark.parametrize("fmt", ["wds", "arrow"])
def test_the_shard_tasks_write_what_the_local_executor_writes(in_process, tmp_path, fmt):
    src = make_image_tree(tmp_path / "src", classes=2, per_class=5)  # 10 images: shards of 4, 4 and 2
    run(src, tmp_path / "local", format=fmt)
    run(src, tmp_path / "tasks", executor="ray", format=fmt)
    assert tree_digest(tmp_path / "tasks") == tree_digest(tmp_path / "local")
    suffix = {"wds": "tar", "arrow": "arrow"}[fmt]
    assert [d["name"] for d in in_process["done"]] == [f"train-00000{i}.{suffix}" for i in range(3)]
    assert [(d["inputs"], d["samples"], d["rejected"]) for d in in_process["done"]] == [(4, 4, 0), (4, 4, 0),
                                                                                       (2, 2, 0)]
    assert sorted(p.name for p in (tmp_path / "attempts").iterdir()) == [
        f"train-00000{i}.{suffix}.1" for i in range(3)]  # one attempt each
    spec = in_process["jobs"][0].dest
    assert spec == DestSpec(str((tmp_path / "tasks").absolute()), False)


def test_a_task_counts_its_rejections_and_refuses_other_library_versions(in_process, tmp_path):
    src = make_image_tree(tmp_path / "src", classes=1, per_class=3)
    (src / "class_0" / "broken.jpg").write_bytes(b"not a jpeg")
    run(src, tmp_path / "tasks", executor="ray")
    (done,) = in_process["done"]
    assert (done["inputs"], done["samples"], done["rejected"]) == (4, 3, 1)
    job = in_process["jobs"][0]
    other = ShardJob(job.kind, job.fmt, job.dest, job.shard, job.items, job.options, job.layout,
                     {**job.versions, "pillow": "0.0.1"})
    where = re.escape(f"worker {socket.gethostname()} (pid {os.getpid()})")
    with pytest.raises(VersionMismatch, match=rf"^{where} has other library versions .*: pillow 0\.0\.1 \(plan\)"):
        convert_one_shard(other)


def test_a_task_whose_inputs_are_all_rejected_reports_no_samples(in_process, tmp_path):
    src = tmp_path / "src" / "class_0"
    src.mkdir(parents=True)
    for i in range(2):
        (src / f"broken_{i}.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(ConvertError):  # no usable sample at all
        run(src.parent, tmp_path / "tasks", executor="ray")
    assert [(d["inputs"], d["samples"], d["rejected"]) for d in in_process["done"]] == [(2, 0, 2)]


def test_a_task_opens_the_destination_the_driver_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    local = DestSpec.of(LocalDestination("out"))
    assert local == DestSpec(str(tmp_path / "out"), False, None)  # absolute: tasks do not share the driver's cwd
    opened = local.open()
    assert isinstance(opened, LocalDestination) and opened.work == tmp_path / "out"
    options = {"endpoint": "http://127.0.0.1:9", "aws_access_key_id": "k"}
    remote = DestSpec.of(RemoteDestination("s3://bucket/data", staging=tmp_path / "st", storage_options=options))
    assert remote == DestSpec("s3://bucket/data/", True, options)
    back = remote.open()
    assert isinstance(back, RemoteDestination) and back.label == "s3://bucket/data/"
    assert back.storage_options == options


def test_tasks_get_the_drivers_storage_variables_for_a_remote_destination_only(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith(("AWS_", "GOOGLE_", "AZURE_")):
            monkeypatch.delenv(name)
    remote = RemoteDestination("s3://bucket/data", staging=tmp_path / "st")
    assert _storage_env(remote) is None  # nothing to hand over
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/k.json")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT", "acct")
    monkeypatch.setenv("HOME_AWS_NOT", "x")
    assert _storage_env(remote) == {"env_vars": {"AWS_ENDPOINT_URL": "http://127.0.0.1:9",
                                                 "GOOGLE_APPLICATION_CREDENTIALS": "/k.json",
                                                 "AZURE_STORAGE_ACCOUNT": "acct"}}
    assert _storage_env(LocalDestination(tmp_path / "out")) is None
    assert _storage_env(None) is None


def test_attempt_files_count_retries_per_shard(tmp_path):
    attempts = AttemptFiles(str(tmp_path / "partial" / "attempts" / "host-1"))  # its parents made as needed
    assert attempts.retries() == 0  # no folder yet
    for name in ("train-000000.tar", "train-000001.tar", "train-000000.tar", "train-000002.tar", "train-000000.tar"):
        attempts.start(name)
    assert attempts.retries() == 2  # the first shard's second and third attempts
    folder = tmp_path / "partial" / "attempts" / "host-1"
    assert sorted(p.name for p in folder.iterdir()) == ["train-000000.tar.1", "train-000000.tar.2",
                                                        "train-000000.tar.3", "train-000001.tar.1",
                                                        "train-000002.tar.1"]
    assert all(p.stat().st_size == 0 and p.stat().st_mode & 0o777 == 0o644 & ~current_umask() for p in folder.iterdir())
    attempts.clear()
    assert attempts.retries() == 0 and not folder.exists()
    attempts.clear()  # nothing left to remove: no error


@pytest.mark.parametrize(("count", "tail"), [(1, ""), (3, ""), (4, " and 1 more"), (5, " and 2 more")])
def test_failed_shards_are_recorded_and_named(tmp_path, count, tail):
    failed = {f"train-{i:06d}.tar": f"OSError: disk {i}" for i in range(count)}
    (tmp_path / "out" / ".partial").mkdir(parents=True)  # a run leaves it there
    with pytest.raises(ConvertError) as caught:
        _fail(LocalDestination(tmp_path / "out"), failed, 2)
    path = tmp_path / "out" / ".partial" / "failed.json"
    assert json.loads(path.read_text()) == {"failed": failed}
    shown = "; ".join(f"train-{i:06d}.tar: OSError: disk {i}" for i in range(min(count, 3)))
    assert str(caught.value) == (
        f"{count} shard(s) failed after 2 retries ({shown}{tail}); all are listed in {path}. Fix the cause and "
        "rerun the same command: finished shards are kept, only these are converted")
