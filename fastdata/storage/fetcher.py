"""Remote shards on local disk when a loader needs them: downloaded into the node cache ahead of use, in
the order the epoch plan will read them, and released once the plan is past them.

`RemoteFiles` belongs to one opened remote split: `local(name)` makes a file (shard or index) local and
holds it; `follow(order)` tells it which shards the plan reads next, soonest first: it prefetches the
first `ahead` of them in a background thread of this process (one per loader; never a forked worker,
see client.py) and publishes the order to the cache for its eviction choices; `release(name)` gives a
shard back. A download whose bytes hash differently from the manifest is fetched once more, then fails
with an error naming the URL. Errors of a prefetch reach the loader when it asks for that shard.

Downloads run in this object's threads only; a loader's thread waiting for one (`local`) gives up when
the stop event it was given with `stop_waits_when` is set, or the process exits, so that a loader left
early (`break`, Ctrl-C) never waits for a slow or stalled server. `close()` cuts the downloads in flight
short.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path

from fastdata.errors import StorageError
from fastdata.exiting import stop_if_exiting
from fastdata.storage.cache import ShardCache
from fastdata.storage.client import ChecksumError, RemoteStore

log = logging.getLogger(__name__)

PREFETCH_SHARDS = 3  # shards downloaded ahead of the one being read, per loader
ON_DEMAND = 4  # threads downloading what was asked for and not prefetched (an index, a shard out of plan)
WAIT_POLL_S = 0.1

_waiter = threading.local()


def stop_waits_when(stop: threading.Event) -> None:
    """From now on, the calling thread's waits for a file (`RemoteFiles.local`) end with a StorageError once
    `stop` is set: what a loader's decode threads call when they start, with their producer's stop event."""
    _waiter.stop = stop


@dataclass(frozen=True)
class RemoteFile:
    """A file of the dataset: its name, size and sha256 (from the manifest; an index's size is not recorded),
    and the store of the folder it lies in."""

    name: str
    size: int | None
    sha256: str | None
    store: RemoteStore  # or, for the indexes of a local folder whose shards are remote, open.LocalFolder


class RemoteFiles:
    def __init__(self, cache: ShardCache, files: Sequence[RemoteFile], *, ahead: int = PREFETCH_SHARDS,
                 on_release: Callable[[str], None] | None = None) -> None:
        self.cache = cache
        self.files = {f.name: f for f in files}
        self.ahead = ahead
        self.on_release = on_release
        self._lock = threading.Lock()
        self._pending: dict[str, Future] = {}
        self._pool = ThreadPoolExecutor(max(1, min(ahead, 4)), thread_name_prefix="fastdata-fetch")
        self._now = ThreadPoolExecutor(ON_DEMAND, thread_name_prefix="fastdata-fetch-now")

    def _fetch(self, f: RemoteFile) -> Callable[[Path], None]:
        def fetch(tmp: Path) -> None:
            if f.size is None:  # a small file whose size the manifest does not record (an index)
                data = f.store.read(f.name)
                if f.sha256 is not None and hashlib.sha256(data).hexdigest() != f.sha256:
                    raise ChecksumError(f"{f.store.url}{f.name}: sha256 differs from the manifest")
                tmp.write_bytes(data)
                return
            try:
                f.store.download(f.name, tmp, size=f.size, sha256=f.sha256)
            except ChecksumError as exc:
                log.warning("%s; downloading it once more", exc)
                f.store.download(f.name, tmp, size=f.size, sha256=f.sha256)

        return fetch

    def _acquire(self, name: str) -> Path:
        f = self.files[name]
        return self.cache.acquire(name, size=f.size, fetch=self._fetch(f))

    def local(self, name: str) -> Path:
        """The local path of `name`, downloading it (or waiting for its prefetch) if needed; held until released.

        The download runs in this object's threads (a prefetch, else one started now); the caller waits for it,
        and gives up when its thread's stop event (`stop_waits_when`) is set or the process exits: the download
        goes on, and a later `local(name)` takes it over."""
        if name not in self.files:
            raise KeyError(f"{name} is not a file of this dataset")
        with self._lock:
            pending = self._pending.get(name)
            if pending is None:
                pending = self._pending[name] = self._now.submit(self._acquire, name)
        stop = getattr(_waiter, "stop", None)
        while True:
            try:
                path = pending.result(timeout=WAIT_POLL_S)
            except FutureTimeout:  # still downloading: the download goes on whatever the caller does now
                stop_if_exiting(f"the wait for {name}")
                if stop is not None and stop.is_set():
                    raise StorageError(f"the wait for {name} abandoned: the loader stopped") from None
                continue
            except BaseException:
                self._forget_pending(name, pending)  # a failed download: asked again, it starts anew
                raise
            self._forget_pending(name, pending)
            return path

    def _forget_pending(self, name: str, pending: Future) -> None:
        with self._lock:
            if self._pending.get(name) is pending:
                del self._pending[name]

    def follow(self, order: Sequence[str]) -> None:
        """The shards the plan reads next, soonest first: prefetch the first `ahead`, tell the cache the rest."""
        self.cache.schedule(order)
        with self._lock:
            for name in order[:self.ahead]:
                if name not in self._pending and not self.cache.held(name):
                    self._pending[name] = self._pool.submit(self._acquire, name)

    def release(self, name: str) -> None:
        with self._lock:
            pending = self._pending.pop(name, None)
        if pending is not None:
            try:
                pending.result()
            except Exception:  # noqa: BLE001 - a failed prefetch of a shard nobody needs any more
                pass
        if self.on_release is not None:
            self.on_release(name)
        self.cache.release(name)

    def close(self) -> None:
        """Cancel what has not started, cut the downloads in flight short, and let the cache go."""
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        for fut in pending:
            fut.cancel()
        for store in {id(f.store): f.store for f in self.files.values()}.values():
            store.abandon()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._now.shutdown(wait=True, cancel_futures=True)
        self.cache.close()
