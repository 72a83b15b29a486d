"""Reading an answer's body in chunks, each within the read timeout: what `RemoteStore.read` (a small file, whole)
and `RemoteStore.download` (a shard, into a file) share. A body that does not deliver its next chunk in time (a
stall, or a server dripping bytes) has its socket shut by `inflight.py` and is reported too slow; a read that fails
otherwise is retryable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastdata.errors import require
from fastdata.storage.answers import Retryable
from fastdata.storage.inflight import InFlight

CHUNK = 1 << 16  # bytes per read: a connection that breaks loses at most the chunk in flight


def too_slow(read_timeout: float, have: int) -> Retryable:
    return Retryable(f"less than {CHUNK // 1024} KiB in {read_timeout:g} s (a stalled or dripping server) after "
                     f"{have} bytes")


def stream_body(response: Any, inflight: InFlight, read_timeout: float, take: Callable[[bytes], None],
                failed: Callable[[BaseException], Retryable], have: Callable[[], int]) -> bool:
    """Hand each chunk of `response`'s body to `take` (which may raise, to stop); whether the body was cut for being
    too slow (its socket shut: it may have ended quietly). A read that fails raises `failed(exc)`, or too slow after
    `have()` bytes when it was cut."""
    urllib3 = require("urllib3", "remote")
    try:
        with inflight.reading(response, read_timeout) as body:
            for chunk in response.stream(CHUNK):
                body.moved()
                take(chunk)
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise too_slow(read_timeout, have()) if body.cut else failed(exc) from None
    return body.cut
