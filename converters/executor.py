"""Where the shards of a conversion are made: `--executor local` (this machine's worker processes, the engine's
own loop) or `--executor ray` (one Ray task per shard, on any number of machines).

With Ray the driver (`fastdata convert`) discovers, shuffles and plans once, as for a local run; each task
then receives one shard's plan entry and its inputs (paths, never file contents), converts them in one
process, writes the shard under a temporary name unique to the attempt, renames it into place and writes its
record: the commit. A retried or duplicated attempt therefore writes the same bytes under the same name and
is harmless. Tasks never list the source. A worker whose library versions differ from the plan's is refused
(converters/versions.py). A worker or node that dies is retried by Ray (`--retries`), as are OSError and
TimeoutError; shards that still fail are listed in `DST/.partial/failed.json` and the run exits non-zero;
the rerun converts only the shards without a record. Attempts are counted (the summary's retries) with
one empty file per attempt in `DST/.partial/attempts/HOST-PID/` for a local destination, and by a small Ray actor for
a remote one.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from converters.destination import Destination, LocalDestination, RemoteDestination
from converters.plan import ShardPlan
from converters.pool import run_ordered
from converters.sample import WorkItem
from converters.shards import SUFFIX, write_shard
from converters.state import PARTIAL
from converters.versions import VersionMismatch, check_versions
from fastdata.atomic import write_json_atomic
from fastdata.errors import ConvertError, require

log = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")
IN_FLIGHT_PER_CPU = 2  # tasks submitted per cluster CPU: enough to hide scheduling gaps, bounded driver memory


@dataclass(frozen=True)
class DestSpec:
    """How a task on another machine opens the destination (clients are created in the process using them)."""

    target: str
    remote: bool
    storage_options: dict[str, Any] | None = None

    @staticmethod
    def of(dest: Destination) -> DestSpec:
        if isinstance(dest, RemoteDestination):
            return DestSpec(dest.label, True, dest.storage_options)
        return DestSpec(str(Path(dest.work).absolute()), False)  # tasks do not share the driver's cwd

    def open(self) -> Destination:
        if self.remote:
            return RemoteDestination(self.target, storage_options=self.storage_options)
        return LocalDestination(self.target)


@dataclass(frozen=True)
class ShardJob:
    """Everything one task needs for one shard."""

    kind: Any  # converters.kind.Kind
    fmt: str
    dest: DestSpec
    shard: ShardPlan
    items: list[WorkItem]
    options: Any
    layout: Any
    versions: dict[str, str]


def convert_one_shard(job: ShardJob, attempts: AttemptFiles | ActorAttempts | None = None) -> dict[str, Any]:
    """Run one shard's conversion in this process (a Ray task); returns its summary."""
    name = _shard_name(job)
    if attempts is not None:
        attempts.start(name)
    check_versions(job.versions, job.kind.name, where=f"worker {socket.gethostname()} (pid {os.getpid()})")
    dest = job.dest.open()
    dest.prepare()
    results = run_ordered(job.kind.processor(job.options), job.items, jobs=1)
    record = write_shard(job.kind, job.fmt, dest, job.shard, results, job.layout)
    shard = record["shard"] or {}
    return {"name": name, "inputs": len(job.items), "samples": shard.get("samples", 0),
            "rejected": len(record["rejected"])}


def _shard_name(job: ShardJob) -> str:
    return job.shard.name(SUFFIX[job.fmt])


@dataclass(frozen=True)
class AttemptFiles:
    """Counts the attempts of every shard with one empty file per attempt (`NAME.K` for attempt K, created
    exclusively) in a folder of a local destination, which every node sees. It costs no Ray process: the
    actor below, which remote destinations need, is one more worker to start (about 0.5 s of a 2-core
    machine's start-up)."""

    folder: str

    def start(self, name: str) -> None:
        folder = Path(self.folder)
        folder.mkdir(parents=True, exist_ok=True)
        k = 1
        while True:
            try:
                os.close(os.open(folder / f"{name}.{k}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                return
            except FileExistsError:
                k += 1

    def retries(self) -> int:
        folder = Path(self.folder)
        return sum(1 for p in folder.iterdir() if p.suffix != ".1") if folder.is_dir() else 0

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class _Attempts:
    """A Ray actor counting the attempts of every shard (a count above one is a retry)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def start(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1

    def retries(self) -> int:
        return sum(n - 1 for n in self.counts.values())


@dataclass(frozen=True)
class ActorAttempts:
    """The `_Attempts` actor behind the interface of `AttemptFiles` (start, retries, clear), for tasks and driver."""

    actor: Any

    def start(self, name: str) -> None:
        import ray

        ray.get(self.actor.start.remote(name))

    def retries(self) -> int:
        import ray

        return ray.get(self.actor.retries.remote())

    def clear(self) -> None:
        import ray

        ray.kill(self.actor)


@dataclass
class RaySummary:
    shards: int = 0
    samples: int = 0
    rejected: int = 0
    retries: int = 0
    seconds: float = 0.0


def run_ray(jobs: Iterable[ShardJob], *, dest: Destination, address: str | None, num_cpus: int, retries: int,
            task_cpus: float, task_memory: int | None, progress: Callable[[int], None] | None) -> RaySummary:
    """Convert every job as a Ray task, at most IN_FLIGHT_PER_CPU x the cluster's CPUs at once."""
    ray = require("ray", "ray")
    started = not ray.is_initialized()
    if started:
        try:
            ray.init(address=address, num_cpus=None if address else num_cpus, include_dashboard=False,
                     configure_logging=False, log_to_driver=False)
        except ConnectionError as exc:
            raise ConvertError(f"cannot connect to the Ray cluster at --address {address}: {exc}; start one with "
                               "`ray start --head`, or leave --address out for a local Ray instance") from exc
    t0 = time.monotonic()
    summary, failed = RaySummary(), {}
    try:
        if isinstance(dest, LocalDestination):
            # one folder per driver: parts converted at once into one destination count their own retries
            driver = f"{socket.gethostname()}-{os.getpid()}"
            attempts: AttemptFiles | ActorAttempts = AttemptFiles(
                str((dest.work / PARTIAL / "attempts" / driver).absolute()))
            attempts.clear()
        else:
            attempts = ActorAttempts(ray.remote(num_cpus=0)(_Attempts).remote())
        task = ray.remote(convert_one_shard).options(
            num_cpus=task_cpus, memory=task_memory, max_retries=retries,
            retry_exceptions=[OSError, TimeoutError], name="fastdata-shard", runtime_env=_storage_env(dest))
        limit = max(1, int(IN_FLIGHT_PER_CPU * ray.cluster_resources().get("CPU", 1)))
        pending: dict[Any, ShardJob] = {}

        def collect(ready: list[Any]) -> None:
            for ref in ready:
                job = pending.pop(ref)
                name = _shard_name(job)
                try:
                    done = ray.get(ref)
                except ray.exceptions.RayError as exc:  # a task error, or a worker died more than --retries times
                    cause = getattr(exc, "cause", None) or exc
                    if isinstance(cause, VersionMismatch):
                        raise cause from None
                    failed[name] = f"{type(cause).__name__}: {(str(cause).splitlines() or [''])[0]}"
                    continue
                summary.shards += 1
                summary.samples += done["samples"]
                summary.rejected += done["rejected"]
                if progress:
                    progress(done["inputs"])

        for job in jobs:
            while len(pending) >= limit:
                ready, _ = ray.wait(list(pending), num_returns=1)
                collect(ready)
            pending[task.remote(job, attempts)] = job
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            collect(ready)
        summary.retries = attempts.retries()
        attempts.clear()
    finally:
        if started:
            ray.shutdown()
    summary.seconds = time.monotonic() - t0
    log.info("ray: %d shard(s), %d samples, %d rejected, %d retries, %.1f s", summary.shards, summary.samples,
             summary.rejected, summary.retries, summary.seconds)
    if failed:
        _fail(dest, failed, retries)
    return summary


STORAGE_ENV_PREFIXES = ("AWS_", "GOOGLE_", "AZURE_")


def _storage_env(dest: Destination | None) -> dict[str, Any] | None:
    """A remote destination's standard storage variables (endpoint, region, credentials) as the driver sees
    them, for the tasks: workers on other nodes write to the same store as the driver, with the same account."""
    if not isinstance(dest, RemoteDestination):
        return None
    env = {k: v for k, v in os.environ.items() if k.startswith(STORAGE_ENV_PREFIXES)}
    return {"env_vars": env} if env else None


def _fail(dest: Destination, failed: dict[str, str], retries: int) -> None:
    from converters import state

    path = dest.work / state.PARTIAL / "failed.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"failed": failed})
    shown = "; ".join(f"{name}: {why}" for name, why in list(failed.items())[:3])
    more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
    raise ConvertError(f"{len(failed)} shard(s) failed after {retries} retries ({shown}{more}); all are listed in "
                       f"{path}. Fix the cause and rerun the same command: finished shards are kept, only these "
                       "are converted")
