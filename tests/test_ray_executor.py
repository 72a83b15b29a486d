"""`--executor ray`: one Ray task per shard, the same bytes as the local executor and as parts + merge, on
images, text and DICOM; a worker that dies is retried; a shard that keeps failing is listed and the rerun
finishes it; a killed driver resumes; a shard made twice at once leaves one valid file."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'fastdata[ray]')")

from helpers import make_image_tree, tree_digest  # noqa: E402

from converters import get_kind  # noqa: E402
from converters.assemble import merge  # noqa: E402
from converters.engine import ConvertConfig, convert  # noqa: E402
from converters.images import ImageOptions  # noqa: E402
from fastdata.errors import ConvertError, MissingDependencyError  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@pytest.fixture(scope="module", autouse=True)
def ray_instance():
    """One local Ray instance for these tests (about 5 s to start); workers can import tests/ray_kinds.py."""
    ray.init(num_cpus=2, include_dashboard=False, configure_logging=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)])}})
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    return make_image_tree(tmp_path_factory.mktemp("ray") / "src", classes=3, per_class=7)


def convert_images(src: Path, dst: Path, kind=None, progress_factory=None, **config) -> object:
    cfg = {"jobs": 2, "samples_per_shard": 4, **config}
    return convert(kind or get_kind("images"), src, dst, options=ImageOptions(), config=ConvertConfig(**cfg),
                   progress_factory=progress_factory)


@pytest.fixture(scope="module")
def golden(images, tmp_path_factory) -> dict[str, str]:
    dst = tmp_path_factory.mktemp("golden") / "out"
    convert_images(images, dst)
    return tree_digest(dst)


def _ray_line(caplog) -> str:
    (line,) = [r.getMessage() for r in caplog.records if r.name == "converters.executor"]
    return line


def test_images_ray_local_and_parts_write_the_same_bytes(images, golden, tmp_path, caplog):
    done = []
    with caplog.at_level(logging.INFO, logger="converters.executor"):
        result = convert_images(images, tmp_path / "ray", executor="ray", progress_factory=lambda total: done.append)
    assert tree_digest(tmp_path / "ray") == golden
    assert len(result.converted) == 6 and result.retries == 0
    assert sorted(done) == [1, 4, 4, 4, 4, 4]  # each shard's inputs, as its task ends
    assert re.fullmatch(r"ray: 6 shard\(s\), 21 samples, 0 rejected, 0 retries, [0-9.]+ s", _ray_line(caplog))
    for part in range(3):  # parts run with the ray executor too, then merge
        convert_images(images, tmp_path / "parts", executor="ray", num_parts=3, part=part)
    merge(tmp_path / "parts")
    assert tree_digest(tmp_path / "parts") == golden
    assert convert_images(images, tmp_path / "j1", jobs=1) and tree_digest(tmp_path / "j1") == golden


def test_relative_source_and_destination_are_the_driver_s(images, golden, tmp_path, monkeypatch):
    """Ray tasks run in another working directory: paths relative to the driver's must still work."""
    shutil.copytree(images, tmp_path / "src")
    monkeypatch.chdir(tmp_path)
    result = convert_images(Path("src"), Path("out"), executor="ray")
    assert not result.rejected and tree_digest(tmp_path / "out") == golden


def test_the_manifest_records_the_library_versions_that_shape_the_bytes(images, tmp_path):
    import PIL

    manifest = convert_images(images, tmp_path / "ray", executor="ray").manifest
    assert manifest.extra["versions"]["pillow"] == PIL.__version__
    assert "libjpeg-turbo" in manifest.extra["versions"]


def test_text_and_dicom_sources_are_identical_under_ray(tmp_path):
    pytest.importorskip("pydicom")
    from conftest_dicom import Phantom, write_phantom
    from conftest_text import TOKENIZER, copy_fortunes

    from converters.dicom import DicomOptions
    from converters.text import TextOptions

    copy_fortunes(tmp_path / "text", names=("computers", "linux"))
    for k in range(3):
        write_phantom(tmp_path / "dicom" / f"s{k}", Phantom(slices=4, series_uid=f"1.2.3.{k}"), seed=k)
    cases = [("text", TextOptions(tokenizer=str(TOKENIZER), separator="%"), 300),
             ("dicom", DicomOptions(salt="s"), 1)]
    for name, options, per in cases:
        digests = []
        for executor in ("local", "ray"):
            dst = tmp_path / f"{name}-{executor}"
            convert(get_kind(name), tmp_path / name, dst, options=options,
                    config=ConvertConfig(jobs=2, samples_per_shard=per, executor=executor))
            digests.append(tree_digest(dst))
        assert digests[0] == digests[1] and len(digests[0]) > 2, name


def test_a_worker_that_dies_is_retried_and_the_output_is_unchanged(images, golden, tmp_path):
    from ray_kinds import CrashOnceKind

    marker = tmp_path / "crashed"
    result = convert_images(images, tmp_path / "out", kind=CrashOnceKind(marker), executor="ray")
    assert marker.exists()  # a worker did die
    assert result.retries >= 1
    assert tree_digest(tmp_path / "out") == golden


def test_a_shard_that_keeps_failing_is_listed_and_the_rerun_finishes(images, golden, tmp_path, caplog):
    from ray_kinds import BrokenWhileFlagged

    flag = tmp_path / "broken"
    flag.touch()
    kind = BrokenWhileFlagged(flag)
    with caplog.at_level(logging.INFO, logger="converters.executor"), pytest.raises(ConvertError) as err:
        convert_images(images, tmp_path / "out", kind=kind, executor="ray", retries=1)
    partial = tmp_path / "out" / ".partial"
    why = f"OSError: simulated I/O failure ({flag} exists)"
    failed = json.loads((partial / "failed.json").read_text())["failed"]
    assert failed == {name: why for name in golden if name.endswith(".tar")}
    message = re.fullmatch(r"6 shard\(s\) failed after 1 retries \((.*) and 3 more\); all are listed in "
                           + re.escape(str(partial / "failed.json")) + r"\. Fix the cause and rerun the same "
                           r"command: finished shards are kept, only these are converted", str(err.value))
    assert message is not None, str(err.value)
    shown = dict(entry.split(": ", 1) for entry in message.group(1).split("; "))  # the first three to fail
    assert len(shown) == 3 and all(failed[name] == text for name, text in shown.items())
    # every task ran twice (the OSError retried once), and the run's attempt counters are gone
    assert re.fullmatch(r"ray: 0 shard\(s\), 0 samples, 0 rejected, 6 retries, [0-9.]+ s", _ray_line(caplog))
    assert not (partial / "attempts").exists() or not any((partial / "attempts").iterdir())
    assert not (tmp_path / "out" / "manifest.json").exists()
    flag.unlink()  # the fix
    result = convert_images(images, tmp_path / "out", kind=kind, executor="ray")
    assert len(result.converted) == 6
    assert tree_digest(tmp_path / "out") == golden


DRIVER = """
import sys
sys.path[:0] = [{here!r}, {root!r}]
from ray_kinds import SlowKind
from converters.engine import ConvertConfig, convert
from converters.images import ImageOptions
convert(SlowKind({seconds}), {src!r}, {dst!r}, options=ImageOptions(),
        config=ConvertConfig(jobs=2, samples_per_shard=4, executor="ray"))
"""


def test_a_driver_killed_mid_run_resumes(images, golden, tmp_path):
    dst = tmp_path / "out"
    script = tmp_path / "driver.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)]), "RAY_ADDRESS": ""}
    script.write_text(textwrap.dedent(DRIVER.format(here=str(HERE), root=str(ROOT), seconds=0.5, src=str(images),
                                                    dst=str(dst))))
    proc = subprocess.Popen([sys.executable, str(script)], env=env, start_new_session=True)
    records = dst / ".partial" / "records"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (records.is_dir() and any(records.glob("*.json"))):
        assert proc.poll() is None, "the driver ended before any shard was recorded"
        time.sleep(0.1)
    import psutil

    spawned = psutil.Process(proc.pid).children(recursive=True)  # its Ray instance: raylet, GCS, workers
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and the Ray instance it started
    proc.wait()
    for p in spawned:  # Ray's processes outside the group die with their parent, a moment later: not during the
        try:           # rerun (a worker killed mid-shard then races the rerun's attempt at that shard)
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(spawned, timeout=30)
    done = len(list(records.glob("*.json")))  # a record being written when the kill came is a `*.tmp` file
    assert 1 <= done < 6 and not (dst / "manifest.json").exists()
    result = convert_images(images, dst, executor="ray")
    assert len(result.skipped) >= done and len(result.converted) == 6 - len(result.skipped)
    assert tree_digest(dst) == golden


def test_the_same_shard_made_twice_at_once_leaves_one_valid_file(images, golden, tmp_path):
    from converters.executor import DestSpec, ShardJob, convert_one_shard
    from converters.plan import ShardPlan, shuffle_split
    from converters.versions import byte_versions

    kind = get_kind("images")
    discovery = kind.discover(images, options=ImageOptions())
    items = shuffle_split(discovery.splits["train"], seed=0, split="train")
    dst = tmp_path / "out"
    shard = ShardPlan(split="train", index=0, start=0, stop=4, ordinal=0)
    job = ShardJob(kind, "wds", DestSpec(str(dst), False), shard, items[:4], ImageOptions(), None,
                   byte_versions("images"))
    task = ray.remote(convert_one_shard)
    ray.get([task.remote(job), task.remote(job)])
    made = tree_digest(dst)
    assert made["train-000000.tar"] == golden["train-000000.tar"]
    assert made["train-000000.idx"] == golden["train-000000.idx"]
    assert not list(dst.glob("*.tmp"))
    from converters import state

    assert state.load_record(dst, "train-000000.tar") is not None  # whichever attempt's files and record won


def test_a_worker_with_other_library_versions_is_refused(images, tmp_path):
    from converters.executor import DestSpec, ShardJob, run_ray
    from converters.plan import ShardPlan
    from converters.versions import VersionMismatch, byte_versions

    kind = get_kind("images")
    items = kind.discover(images, options=ImageOptions()).splits["train"][:2]
    forged = {**byte_versions("images"), "pillow": "0.0.1"}
    job = ShardJob(kind, "wds", DestSpec(str(tmp_path / "out"), False), ShardPlan("train", 0, 0, 2, 0), items,
                   ImageOptions(), None, forged)
    with pytest.raises(VersionMismatch, match=r"pillow 0.0.1 \(plan\) vs"):
        run_ray([job], dest=None, address=None, num_cpus=2, retries=0, task_cpus=1, task_memory=None, progress=None)


def test_ray_options_are_checked_and_a_missing_extra_is_named(images, tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="--address names a Ray cluster"):
        convert_images(images, tmp_path / "a", address="auto")
    with pytest.raises(ValueError, match="--executor must be one of"):
        convert_images(images, tmp_path / "b", executor="dask")
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(MissingDependencyError, match=r"fastdata\[ray\]"):
        convert_images(images, tmp_path / "c", executor="ray")


def test_ray_tasks_upload_to_an_s3_destination(images, golden, s3, tmp_path):
    """The tasks write to the store with the driver's standard AWS variables (set after Ray started)."""
    import boto3

    from converters.destination import destination

    dest = destination(f"{s3}/in/", staging=tmp_path / "staging")
    result = convert_images(images, dest, executor="ray")
    assert len(result.converted) == 6
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    bucket = s3.removeprefix("s3://")
    for name in ("train-000000.tar", "train-000005.idx", "manifest.json"):
        body = client.get_object(Bucket=bucket, Key=f"in/{name}")["Body"].read()
        assert hashlib.sha256(body).hexdigest() == golden[name], name


def test_the_attempts_actor_counts_like_the_files_and_is_killed_by_clear():
    """Remote destinations count attempts in a Ray actor, behind the same start/retries/clear as AttemptFiles."""
    from converters.executor import ActorAttempts, _Attempts

    attempts = ActorAttempts(ray.remote(num_cpus=0)(_Attempts).remote())
    assert attempts.retries() == 0
    for name in ("train-000000.tar", "train-000001.tar", "train-000000.tar", "train-000000.tar"):
        attempts.start(name)
    assert attempts.retries() == 2
    attempts.clear()  # ray.kill is asynchronous: calls fail once the actor is gone
    deadline = time.monotonic() + 30
    with pytest.raises(ray.exceptions.RayActorError):
        while time.monotonic() < deadline:
            attempts.retries()
            time.sleep(0.05)
