"""On-disk state of a conversion in progress (`DST/.partial/`): the plan and one record per finished
shard. This is what makes a killed run resumable and parts mergeable."""

from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastdata.atomic import write_json_atomic
from fastdata.errors import ConvertError
from fastdata.json_text import BadJSON, parse_json
from fastdata.manifest import MANIFEST_NAME, read_manifest

log = logging.getLogger(__name__)

PARTIAL = ".partial"
PLAN = "plan.json"
LOCK_PREFIX = "lock-part-"  # a run's lock: lock-part-{part}-of-{num_parts} (destination.py)


def partial_dir(dst: Path) -> Path:
    return dst / PARTIAL


def record_path(dst: Path, shard_name: str) -> Path:
    return partial_dir(dst) / "records" / f"{shard_name}.json"


def destination_state(dst: Path, fingerprint: str) -> str:
    """'fresh', 'resume' or 'complete'; raises ConvertError if `dst` holds something else."""
    if dst.exists() and not dst.is_dir():
        raise ConvertError(f"destination {dst} exists and is not a directory")
    if not dst.exists() or not _holds_anything(dst):
        return "fresh"
    if (dst / MANIFEST_NAME).exists():
        found = read_manifest(dst).fingerprint
        if found == fingerprint:
            return "complete"
        raise ConvertError(
            f"destination {dst} already holds a different dataset (fingerprint {found[:12]}, this conversion "
            f"is {fingerprint[:12]}): pick an empty directory, or delete {dst} to replace it"
        )
    plan = partial_dir(dst) / PLAN
    if plan.exists():
        found = load_plan(dst).get("fingerprint", "")
        if found == fingerprint:
            return "resume"
        raise ConvertError(
            f"destination {dst} holds an unfinished conversion of a different dataset or with other "
            f"options (fingerprint {str(found)[:12]}, this one is {fingerprint[:12]}): rerun that conversion "
            f"with its original arguments, or delete {dst}"
        )
    raise ConvertError(f"destination {dst} is not empty and holds no fastdata dataset; pick an empty directory")


def _holds_anything(dst: Path) -> bool:
    """Whether `dst` holds more than the leftovers of a run that failed before its plan was saved (an empty
    `.partial/` and temporary files): such a folder is treated as empty, so the rerun starts."""
    for entry in dst.iterdir():
        if entry.name.endswith(".tmp"):
            continue
        if entry.name == PARTIAL and not (entry / PLAN).exists():
            continue
        return True
    return False


def read_state(data: bytes, where: str, *, fix: str) -> dict[str, Any]:
    """A plan, record or manifest as a conversion wrote it (a JSON object); a ConvertError naming `where` and what to
    do (`fix`) for one that is not: damaged on disk or in transit, or edited."""
    try:
        value = parse_json(data)
    except BadJSON as exc:
        raise ConvertError(f"{where} is damaged ({exc}): {fix}") from None
    if not isinstance(value, dict):
        raise ConvertError(f"{where} is damaged (a JSON {type(value).__name__}, not an object): {fix}")
    return value


def plan_fix(dst: object) -> str:
    return f"delete {dst}{'' if str(dst).endswith('/') else '/'}{PARTIAL}/ to start the conversion over"


def load_plan(dst: Path) -> dict[str, Any]:
    path = partial_dir(dst) / PLAN
    if not path.exists():
        raise ConvertError(f"no conversion in progress in {dst} (missing {path}); run `fastdata convert` first")
    return read_state(path.read_bytes(), str(path), fix=plan_fix(dst))


def save_plan(dst: Path, plan: dict[str, Any]) -> None:
    (partial_dir(dst) / "records").mkdir(parents=True, exist_ok=True)
    write_json_atomic(partial_dir(dst) / PLAN, plan)


def _stat(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _still_written(dst: Path, record: dict[str, Any]) -> bool:
    """Whether the files a record vouches for are still the ones written: size and mtime as recorded, or
    (touched since, e.g. copied) the sha256 recorded for the shard and its index. Also true when two attempts
    at one shard (a retried task whose first attempt still runs) each renamed identical bytes into place and
    the record stat'ed one's tar and the other's index. A truncated or replaced shard fails."""
    shard = record.get("shard")
    if shard is None:
        return True
    written = record.get("written", {})
    for name in (shard["name"], shard.get("index")):
        if not name:
            continue
        found = _stat(dst / name)
        if found is None:
            return False
        if found == written.get(name):
            continue
        if name == shard["name"]:
            same = found[0] == shard["bytes"] and _sha256(dst / name) == shard["sha256"]
        else:  # the index: records before index hashes were kept cannot vouch for a touched one
            expected = record.get("written_sha256", {}).get(name)
            same = expected is not None and _sha256(dst / name) == expected
        if not same:
            log.warning("%s changed since it was recorded: converting it again", dst / name)
            return False
    return True


def load_record(dst: Path, shard_name: str) -> dict[str, Any] | None:
    """The record of a finished shard, or None if the shard must be (re)done: no record, or its files
    missing, truncated or replaced since."""
    path = record_path(dst, shard_name)
    if not path.exists():
        return None

    def load() -> dict[str, Any] | None:
        record = read_state(path.read_bytes(), str(path), fix=REDO)
        return record if _still_written(dst, record) else None

    return usable_record(str(path), load)


REDO = "converting the shard again"  # what a record that cannot vouch for its shard leads to


def usable_record(where: str, load: Callable[[], dict[str, Any] | None]) -> dict[str, Any] | None:
    """`load()`: the record of a finished shard at `where`, or None (its shard is made again). A damaged record, or
    one that is not the record this version writes (a field missing or of another type), is logged as such and
    gives None: never an exception, wherever the record lies (this folder, a remote destination)."""
    try:
        return load()
    except ConvertError as exc:
        log.warning("%s", exc)
    except (KeyError, TypeError, AttributeError):
        log.warning("%s is not a record of this fastdata version: %s", where, REDO)
    return None


def save_record(dst: Path, shard_name: str, record: dict[str, Any]) -> None:
    """Record a finished shard with the size and mtime of its files as written (what resume checks)."""
    shard = record.get("shard")
    if shard is not None:
        names = [n for n in (shard["name"], shard.get("index")) if n]
        record = {**record, "written": {n: _stat(dst / n) for n in names}}
        if shard.get("index"):  # vouches for the index when its mtime changed but not its bytes (below)
            record["written_sha256"] = {shard["index"]: _sha256(dst / shard["index"])}
    path = record_path(dst, shard_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, record)


def cleanup(dst: Path) -> None:
    """After the manifest is written: remove the in-progress state and stray temporary files."""
    shutil.rmtree(partial_dir(dst), ignore_errors=True)
    for tmp in dst.glob("*.tmp"):
        tmp.unlink(missing_ok=True)
