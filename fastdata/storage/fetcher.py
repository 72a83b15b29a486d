"""Remote shards on local disk when a loader needs them: downloaded into the node cache ahead of use, in
the order the epoch plan will read them, and released once the plan is past them.

`RemoteFiles` belongs to one opened remote split: `local(name)` makes a file (shard or index) local and
holds it; `follow(order)` tells it which shards the plan reads next, soonest first: it prefetches the
first `ahead` of them in a background thread of this process (one per loader; never a forked worker,
see client.py) and publishes the order to the cache for its eviction choices; `release(name)` gives a
shard back. A download whose bytes hash differently from the manifest is fetched once more, then fails
with an error naming the URL. Errors of a prefetch reach the loader when it asks for that shard.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fastdata.storage.cache import ShardCache
from fastdata.storage.client import ChecksumError, RemoteStore

log = logging.getLogger(__name__)

PREFETCH_SHARDS = 3  # shards downloaded ahead of the one being read, per loader


@dataclass(frozen=True)
class RemoteFile:
    """A file of the dataset: its name, size and sha256 (from the manifest; an index's size is not recorded),
    and the store of the folder it lies in."""

    name: str
    size: int | None
    sha256: str | None
    store: RemoteStore


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
        """The local path of `name`, downloading it (or waiting for its prefetch) if needed; held until released."""
        if name not in self.files:
            raise KeyError(f"{name} is not a file of this dataset")
        with self._lock:
            pending = self._pending.pop(name, None)
        if pending is not None:
            return pending.result()
        return self._acquire(name)

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
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        for fut in pending:
            fut.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.cache.close()
