"""The one conversion engine every kind uses: discover -> shuffle -> plan shards -> convert in
parallel -> write shards atomically -> record each finished shard -> write the manifest last.

A killed run resumes from the shard records; `--num-parts/--part` converts a disjoint subset of the
shards and `merge()` (assemble.py) assembles the manifest once every part is done.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from converters.assemble import merge
from converters.destination import Destination, LocalDestination, RemoteDestination, destination
from converters.kind import Discovery, Kind
from converters.part_reads import PartReads, spills_nothing
from converters.plan import (
    ShardPlan,
    plan_shards,
    samples_per_shard_from_probe,
    shards_for_part,
)
from converters.pool import check_local_jobs, run_ordered
from converters.private_report import report_path, write_report
from converters.sample import WorkItem
from converters.secret_options import resolve_secrets, secret_fields
from converters.shards import SUFFIX, Progress, samples_of, write_shard
from converters.spill import spilling_only
from converters.survey import fingerprint, local_source, prepared, survey
from converters.versions import byte_versions, check_versions
from fastdata import __version__
from fastdata.cpus import usable_cpus
from fastdata.errors import ConvertError
from fastdata.manifest import Manifest

log = logging.getLogger(__name__)

PROBE_ITEMS = 32  # inputs converted per split to size shards when only --shard-size is given
PROBE_KEEP_BYTES = 64 * 2**20  # probed samples up to this size are kept and written, not converted twice


@dataclass(frozen=True)
class ConvertConfig:
    """Options every kind shares. `jobs`, `num_parts` and `part` never change the output bytes."""

    format: str | None = None
    seed: int = 0
    shard_size: int = 256_000_000
    samples_per_shard: int | None = None
    jobs: int = field(default_factory=usable_cpus)
    num_parts: int = 1
    part: int = 0
    follow_symlinks: bool = True  # False: links in SRC are rejected, not followed (trees from someone else)
    private_report: Path | str | None = None  # where a kind that names sources by pseudonym writes their paths
    executor: str = "local"  # "ray": one Ray task per shard (converters/executor.py)
    address: str | None = None  # ray: the cluster to join ("auto", "ray://host:10001"); None starts a local one
    retries: int = 3  # ray: attempts after the first, for a dead worker or an OSError/TimeoutError
    task_cpus: float = 1.0  # ray: CPUs each shard task requests
    task_memory: int | None = None  # ray: bytes of memory each shard task requests (None: the kind's default)

    def validate(self, kind: Kind) -> str:
        fmt = self.format or kind.formats[0]
        if fmt not in kind.formats:
            raise ValueError(f"--format {fmt!r} is not available for {kind.name}; choose from {list(kind.formats)}")
        if self.shard_size < 1:
            raise ValueError(f"--shard-size must be a positive number of bytes, got {self.shard_size}")
        if self.samples_per_shard is not None and self.samples_per_shard < 1:
            raise ValueError(f"--samples-per-shard must be >= 1, got {self.samples_per_shard}")
        if self.jobs < 1:
            raise ValueError(f"--jobs must be >= 1, got {self.jobs}")
        from converters.executor import EXECUTORS

        if self.executor not in EXECUTORS:
            raise ValueError(f"--executor must be one of {list(EXECUTORS)}, got {self.executor!r}")
        if self.address is not None and self.executor != "ray":
            raise ValueError("--address names a Ray cluster: it needs --executor ray")
        if self.executor == "local":  # Ray's --jobs counts a cluster's CPUs: not bounded here
            check_local_jobs(self.jobs, cluster="; a cluster's CPUs go with --executor ray")
        if not 0 <= self.retries <= 100:
            raise ValueError(f"--retries must be within 0..100, got {self.retries}")
        if not 0 < self.task_cpus <= 1024 or (self.task_memory is not None and self.task_memory < 1):
            raise ValueError(f"--task-cpus must be within (0, 1024] and --task-memory >= 1 byte, got "
                             f"{self.task_cpus} and {self.task_memory}")
        shards_for_part([], num_parts=self.num_parts, part=self.part)
        return fmt


@dataclass(frozen=True)
class ConvertResult:
    dst: Path | str  # the destination folder, or its URL
    manifest: Manifest | None  # None while other parts are still missing
    converted: list[str]
    skipped: list[str]
    rejected: list[dict[str, str]]
    private_report: Path | None = None  # the local file mapping pseudonyms to source paths (not for sharing)
    retries: int = 0  # ray: attempts of shard tasks beyond the first


Probed = dict[tuple[str, int], Any]  # (split, position) -> processor result kept from the probe


def _make_plan(kind: Kind, fmt: str, config: ConvertConfig, options: Any, described: dict[str, Any],
               discovery: Discovery, shuffled: dict[str, list[WorkItem]], fp: str, probed: Probed) -> dict[str, Any]:
    """The shard plan; fills `probed` with the results of the probe so they are not computed twice."""
    fn = kind.processor(options)
    per: dict[str, int] = {}
    kept = 0
    for split, items in shuffled.items():
        if config.samples_per_shard:
            per[split] = config.samples_per_shard
        else:
            probe = _probe_items(kind)
            sizes = []
            for item, result in zip(items[:probe], run_ordered(fn, items[:probe], jobs=config.jobs)):
                nbytes = [s.nbytes for s in samples_of(result)]
                sizes.extend(nbytes)
                if kept + sum(nbytes) <= PROBE_KEEP_BYTES:
                    kept += sum(nbytes)
                    probed[(item.split, item.position)] = result
            per[split] = samples_per_shard_from_probe(sizes, shard_size=config.shard_size, n=len(items))
    plans = plan_shards({s: len(v) for s, v in shuffled.items()}, per)
    preprocessing = {
        **described.get("preprocessing", {}),
        "seed": config.seed,
        "shard_size": config.shard_size,
        "samples_per_shard": per,
        "format": fmt,
    }
    versions = byte_versions(kind.name)  # in the plan (checked on resume, parts, workers) and the manifest
    return {
        "fingerprint": fp,
        "suffix": SUFFIX[fmt],
        "shards": [p.to_dict() for p in plans],
        "manifest": {
            "kind": kind.name,
            "shard_format": fmt,
            "classes": list(discovery.classes),
            "preprocessing": preprocessing,
            "extra": {"members": list(kind.member_order), **described.get("extra", {}), "layout": discovery.layout,
                      "versions": versions},
            "tool_version": __version__,
            "fingerprint": fp,
        },
        "discovery_rejected": [r.to_dict() for r in discovery.rejected],
        "versions": versions,
    }


def _probe_items(kind: Kind) -> int:
    return getattr(kind, "probe_items", PROBE_ITEMS)  # a kind with large samples may probe fewer


def _results(fn: Any, todo: list[ShardPlan], shuffled: dict[str, list[WorkItem]], jobs: int,
             probed: Probed) -> Iterator[Any]:
    """Processor results for every input of `todo`, in order; probed inputs are not converted again."""
    def items() -> Iterator[WorkItem]:
        for p in todo:
            yield from shuffled[p.split][p.start:p.stop]

    skip = frozenset(probed)  # fixed now: the pool pulls items lazily while results are consumed
    computed = run_ordered(fn, (it for it in items() if (it.split, it.position) not in skip), jobs=jobs)
    for it in items():
        kept = probed.pop((it.split, it.position), None)
        yield kept if kept is not None else next(computed)


def _convert_shards(kind: Kind, fmt: str, dest: Destination, todo: list[ShardPlan], shuffled: dict[str, list[WorkItem]],
                    options: Any, discovery: Discovery, jobs: int, progress: Progress | None,
                    probed: Probed) -> None:
    """The local executor: every shard in order, the inputs converted by a pool of `jobs` processes."""
    fn = kind.processor(options)
    layout = kind.arrow_layout(discovery, options) if fmt == "arrow" else None
    results = _results(fn, todo, shuffled, jobs, probed)
    for p in todo:
        write_shard(kind, fmt, dest, p, results, layout, progress)


def _convert_with_ray(kind: Kind, fmt: str, dest: Destination, todo: list[ShardPlan],
                      shuffled: dict[str, list[WorkItem]], options: Any, discovery: Discovery, config: ConvertConfig,
                      plan: dict[str, Any], progress: Progress | None) -> int:
    """The Ray executor: one task per shard (converters/executor.py); returns the number of retries."""
    from converters.executor import DestSpec, ShardJob, run_ray

    layout = kind.arrow_layout(discovery, options) if fmt == "arrow" else None
    spec = DestSpec.of(dest)
    jobs = (ShardJob(kind, fmt, spec, p, shuffled[p.split][p.start:p.stop], options, layout, plan.get("versions") or {})
            for p in todo)
    memory = config.task_memory if config.task_memory is not None else getattr(kind, "task_memory", None)
    summary = run_ray(jobs, dest=dest, address=config.address, num_cpus=config.jobs, retries=config.retries,
                      task_cpus=config.task_cpus, task_memory=memory, progress=progress)
    return summary.retries


def convert(kind: Kind, src: Path | str, dst: Path | str | Destination, *, options: Any, config: ConvertConfig,
            progress_factory: Callable[[int], Progress] | None = None) -> ConvertResult:
    """Convert `src` into shards under `dst` (a local folder, or a URL: see destination.py). Raises
    ConvertError/ValueError before writing anything if the source or destination is unusable."""
    src = local_source(src)
    src = src.absolute() if config.executor == "ray" else src  # Ray tasks have another cwd
    dest = dst if isinstance(dst, LocalDestination | RemoteDestination) else destination(dst)
    fmt = config.validate(kind)
    with spilling_only(()) if config.num_parts > 1 else nullcontext():  # a part spills its own inputs, later
        discovery = survey(kind, src, options=options, config=config)
    fp = fingerprint(kind, fmt, config, options, discovery)
    if isinstance(dest, LocalDestination) and dest.work.exists() and not dest.work.is_dir():
        raise ConvertError(f"destination {dest.label} exists and is not a directory")
    if config.num_parts > 1 and any(not getattr(options, name) for name in secret_fields(options)):
        missing = ", ".join(f"--{name}" for name in secret_fields(options) if not getattr(options, name))
        raise ConvertError(f"a conversion in parts needs {missing}: every part must draw its pseudonyms from the "
                           "same secret (a random one would differ from part to part)")
    with dest.lock(config.part, config.num_parts):
        return _convert_locked(kind, src, dest, fmt, fp, config, options, discovery, progress_factory)


def _convert_locked(kind: Kind, src: Path, dest: Destination, fmt: str, fp: str, config: ConvertConfig, options: Any,
                    discovery: Discovery, progress_factory: Callable[[int], Progress] | None) -> ConvertResult:
    where = dest.state(fp)
    if where == "complete":
        manifest = dest.read_manifest()
        log.info("%s already holds this conversion; nothing to do", dest.label)
        return ConvertResult(dest.label, manifest, [], [], list(manifest.rejected))
    plan = dest.load_plan() if where == "resume" else None
    given = options
    options, kept_secrets = resolve_secrets(options, (plan or {}).get("secrets", {}), label=dest.label)
    discovery, paths, shuffled = prepared(kind, discovery, options, config)
    narrow = PartReads(kind, src, fmt, fp, config, given, options) if spills_nothing(discovery) else None
    report = report_path(dest, config.private_report) if paths else None
    if report is not None:
        write_report(report, dest, src, shuffled, discovery, paths)
    probed: Probed = {}
    if plan is None:
        if narrow and not config.samples_per_shard:  # the probe converts its inputs: read them
            probe = [it for items in shuffled.values() for it in items[:_probe_items(kind)]]
            discovery, shuffled = narrow.read_again(shuffled, probe)
        plan = _make_plan(kind, fmt, config, options, kind.describe(discovery, given), discovery, shuffled, fp,
                          probed)
        plan["secrets"] = kept_secrets
        dest.prepare()
        dest.save_plan(plan)
    else:  # a resume or another part: the shards made here must be the bytes the first ones were made with
        check_versions(plan.get("versions"), kind.name, where="this machine")
    all_shards = [ShardPlan(**d) for d in plan["shards"]]
    mine = shards_for_part(all_shards, num_parts=config.num_parts, part=config.part)
    todo, skipped = [], []
    for p in mine:
        name = p.name(plan["suffix"])
        (skipped if where == "resume" and dest.load_record(name) is not None else todo).append(p)
    if narrow and todo:
        needed = [it for p in todo for it in shuffled[p.split][p.start:p.stop]]
        discovery, shuffled = narrow.read_again(shuffled, needed)
    if skipped:
        log.info("resuming: %d shard(s) already done, %d to convert", len(skipped), len(todo))
    total = sum(p.stop - p.start for p in todo)
    progress = progress_factory(total) if progress_factory else None
    retries = 0
    if config.executor == "ray":
        retries = _convert_with_ray(kind, fmt, dest, todo, shuffled, options, discovery, config, plan, progress)
    else:
        _convert_shards(kind, fmt, dest, todo, shuffled, options, discovery, config.jobs, progress, probed)
    converted = [p.name(plan["suffix"]) for p in todo]
    skipped_names = [p.name(plan["suffix"]) for p in skipped]
    if config.num_parts > 1:
        log.info("part %d/%d done; run `fastdata convert --merge %s` once all parts are done",
                 config.part, config.num_parts, dest.label)
        return ConvertResult(dest.label, None, converted, skipped_names, [], report, retries)
    manifest = merge(dest)
    return ConvertResult(dest.label, manifest, converted, skipped_names, list(manifest.rejected), report, retries)
