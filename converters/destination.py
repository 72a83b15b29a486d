"""Where a conversion's output goes: a local folder, or a remote dataset folder (`s3://`, `gs://`, `az://`).

The engine writes shards into `dest.work`, a local folder, and keeps its resumable state through the
destination (the plan, one record per finished shard, the manifest last):

- `LocalDestination`: `work` is DST itself; the state is `DST/.partial/` (state.py).
- `RemoteDestination`: `work` is a local staging folder. A finished shard is uploaded (multipart when large),
  its size checked on the store, and only then its record is uploaded to `DST/.partial/records/`; the local
  copy is then deleted, so staging holds a few shards at most. The manifest is uploaded last, so a reader
  never sees a manifest naming a missing shard. A killed run resumes from the records on the store (from any
  machine); `--num-parts/--part` and `--merge` work the same way.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from converters import state
from converters.lock import exclusive_lock
from fastdata.atomic import dumps_json
from fastdata.errors import ConvertError, ManifestError
from fastdata.manifest import MANIFEST_NAME, Manifest, read_manifest, write_manifest

log = logging.getLogger(__name__)


class LocalDestination:
    def __init__(self, path: Path | str) -> None:
        self.work = Path(path)
        self.label = str(path)

    def state(self, fingerprint: str) -> str:
        return state.destination_state(self.work, fingerprint)

    @contextlib.contextmanager
    def lock(self, part: int, num_parts: int) -> Iterator[None]:
        """Held for a whole conversion: a second run of the same part into this destination is refused.
        When the run leaves no plan behind (finished, or failed before planning) nothing of it stays."""
        path = self.work / state.PARTIAL / f"{state.LOCK_PREFIX}{part}-of-{num_parts}"
        try:
            with exclusive_lock(path, what=self.label):
                yield
        finally:
            if not (self.work / state.PARTIAL / state.PLAN).exists():
                path.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    (self.work / state.PARTIAL).rmdir()

    def read_manifest(self) -> Manifest:
        return read_manifest(self.work)

    def has_plan(self) -> bool:
        return (self.work / state.PARTIAL / state.PLAN).exists()

    def prepare(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)

    def load_plan(self) -> dict[str, Any]:
        return state.load_plan(self.work)

    def save_plan(self, plan: dict[str, Any]) -> None:
        state.save_plan(self.work, plan)

    def load_record(self, name: str) -> dict[str, Any] | None:
        return state.load_record(self.work, name)

    def save_record(self, name: str, record: dict[str, Any]) -> None:
        state.save_record(self.work, name, record)

    def write_manifest(self, manifest: Manifest) -> None:
        write_manifest(self.work, manifest)

    def cleanup(self) -> None:
        state.cleanup(self.work)


def staging_dir(url: str) -> Path:
    """The default local staging folder of a remote destination (under the user cache folder)."""
    from fastdata.storage.cache import default_cache_dir

    return default_cache_dir().parent / "staging" / hashlib.sha256(url.encode()).hexdigest()[:24]


class RemoteDestination:
    def __init__(self, url: str, *, staging: Path | str | None = None,
                 storage_options: dict[str, Any] | None = None) -> None:
        from fastdata.storage.client import RemoteStore

        self.store = RemoteStore(url, storage_options)
        self.storage_options = storage_options
        self.label = self.store.url
        self.work = Path(staging) if staging is not None else staging_dir(self.store.url)

    def _get_json(self, name: str, *, fix: str) -> dict[str, Any] | None:
        """A state file or the manifest on the store, None when it is not there; ConvertError (with `fix`) when it is
        not a JSON object."""
        from fastdata.errors import StorageError

        try:
            data = self.store.read(name)
        except StorageError as exc:
            if exc.status == 404:
                return None
            raise
        return state.read_state(data, self.label + name, fix=fix)

    @property
    def _manifest_fix(self) -> str:
        return f"delete {self.label}{MANIFEST_NAME} to convert into {self.label} again"

    def _get_plan(self) -> dict[str, Any] | None:
        return self._get_json(f"{state.PARTIAL}/{state.PLAN}", fix=state.plan_fix(self.label))

    def lock(self, part: int, num_parts: int):
        """One writer per destination on this machine (a lock beside the staging folder); runs on other
        machines are told apart by their records, which only finished shards have."""
        return exclusive_lock(self.work.with_name(f"{self.work.name}.lock-part-{part}-of-{num_parts}"),
                              what=self.label)

    def state(self, fingerprint: str) -> str:
        found = self._get_json(MANIFEST_NAME, fix=self._manifest_fix)
        if found is not None:
            manifest = Manifest.from_dict(found, where=self.label + MANIFEST_NAME)
            if manifest.fingerprint == fingerprint:
                return "complete"
            raise ConvertError(f"destination {self.label} already holds a different dataset (fingerprint "
                               f"{manifest.fingerprint[:12]}, this conversion is {fingerprint[:12]}): pick another "
                               "folder, or delete that dataset to replace it")
        plan = self._get_plan()
        if plan is not None:
            if plan.get("fingerprint") == fingerprint:
                return "resume"
            raise ConvertError(f"destination {self.label} holds an unfinished conversion of a different dataset or "
                               f"with other options (fingerprint {str(plan.get('fingerprint'))[:12]}, this one is "
                               f"{fingerprint[:12]}): rerun that conversion with its original arguments, or delete "
                               f"{self.label}{state.PARTIAL}/")
        return "fresh"

    def read_manifest(self) -> Manifest:
        data = self._get_json(MANIFEST_NAME, fix=self._manifest_fix)
        if data is None:  # nothing there: neither a finished conversion nor parts to merge
            raise ManifestError(f"no {MANIFEST_NAME} at {self.label}: no conversion was finished or started there "
                                "(check the URL)")
        return Manifest.from_dict(data, where=self.label + MANIFEST_NAME)

    def has_plan(self) -> bool:
        return self._get_plan() is not None

    def prepare(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)

    def load_plan(self) -> dict[str, Any]:
        plan = self._get_plan()
        if plan is None:
            raise ConvertError(f"no conversion in progress at {self.label} (no {state.PARTIAL}/{state.PLAN}); "
                               "run `fastdata convert` first")
        local = self.work / state.PARTIAL / state.PLAN
        if not local.exists() or _fingerprint_of(local) != plan.get("fingerprint"):
            shutil.rmtree(self.work, ignore_errors=True)  # staging of another conversion: start it afresh
            self.prepare()
            state.save_plan(self.work, plan)
        return plan

    def save_plan(self, plan: dict[str, Any]) -> None:
        shutil.rmtree(self.work, ignore_errors=True)
        self.prepare()
        state.save_plan(self.work, plan)
        self.store.upload(f"{state.PARTIAL}/{state.PLAN}", dumps_json(plan).encode())

    def load_record(self, name: str) -> dict[str, Any] | None:
        """The record of a finished shard: the one this machine uploaded, else the store's (a record is
        uploaded only after its shard, so one on the store means the shard is there)."""
        local = state.record_path(self.work, name)
        if local.exists():
            return state.usable_record(str(local), lambda: state.read_state(local.read_bytes(), str(local),
                                                                            fix=state.REDO))
        where = f"{state.PARTIAL}/records/{name}.json"
        return state.usable_record(self.label + where, lambda: self._store_record(where))

    def _store_record(self, where: str) -> dict[str, Any] | None:
        """A record on the store, if its shard is there in the size it records."""
        record = self._get_json(where, fix=state.REDO)
        if record is None:
            return None
        shard = record.get("shard")
        if shard is not None and self.store.size(shard["name"]) != shard["bytes"]:
            log.warning("%s%s is missing or of another size: converting it again", self.label, shard["name"])
            return None
        return record

    def save_record(self, name: str, record: dict[str, Any]) -> None:
        shard = record.get("shard")
        if shard is not None:
            if shard.get("index"):  # the index first: a shard under its final name always has its index
                self.store.upload(shard["index"], self.work / shard["index"])
            self.store.upload(shard["name"], self.work / shard["name"])
        self.store.upload(f"{state.PARTIAL}/records/{name}.json", dumps_json(record).encode())
        state.save_record(self.work, name, record)
        if shard is not None:
            for local in (shard["name"], shard.get("index")):
                if local:
                    (self.work / local).unlink(missing_ok=True)
        log.info("uploaded %s to %s", name, self.label)

    def write_manifest(self, manifest: Manifest) -> None:
        self.store.upload(MANIFEST_NAME, dumps_json(manifest.to_dict()).encode())

    def cleanup(self) -> None:
        """After the manifest: remove the in-progress state from the store and the local staging folder."""
        plan = self._get_plan()
        if plan is not None:
            for shard in plan.get("shards", []):
                name = f"{shard['split']}-{shard['index']:06d}{plan['suffix']}"
                self.store.delete(f"{state.PARTIAL}/records/{name}.json")
            self.store.delete(f"{state.PARTIAL}/{state.PLAN}")
        shutil.rmtree(self.work, ignore_errors=True)


def _fingerprint_of(plan: Path) -> object:
    """The fingerprint of a staging folder's plan; None for one that cannot be read (staging starts afresh)."""
    try:
        return state.read_state(plan.read_bytes(), str(plan), fix="").get("fingerprint")
    except (ConvertError, OSError):
        return None


def destination(dst: str | Path, *, staging: Path | str | None = None,
                storage_options: dict[str, Any] | None = None) -> LocalDestination | RemoteDestination:
    from fastdata.storage.url import is_url

    if is_url(str(dst)):
        return RemoteDestination(str(dst), staging=staging, storage_options=storage_options)
    return LocalDestination(dst)


Destination = LocalDestination | RemoteDestination
