"""What the storage client makes of an answer: a failure worth another attempt, one no attempt changes (`failure`,
saying what to check), where a ranged answer starts, when its connection may go back to the pool, and the one line
of an obstore error worth showing."""

from __future__ import annotations

from typing import Any

from fastdata.errors import StorageError
from fastdata.numerals import parse_int


class Retryable(Exception):
    """A failure worth another attempt (status in RETRY_STATUS, reset, timeout, body cut short)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def range_start(response: Any) -> int | None:
    """The first byte of a 206 answer's `Content-Range: bytes FIRST-LAST/SIZE` (None when absent or unreadable)."""
    value = (response.headers.get("Content-Range") or "").strip()
    unit, _, span = value.partition(" ")
    first, dash, _ = span.partition("-")
    return parse_int(first) if unit == "bytes" and dash else None


def release(response: Any) -> None:
    """Give a GET's connection back to the pool only when its body was read to the end. One given back with bytes
    unread (a body refused on its size, or abandoned to start over) made the next request on it read them as its
    answer and fail once (2 to 9 of 20 reads after a refused one, measured here); such a connection is closed
    instead."""
    if not response.closed:
        response.close()
    response.release_conn()


def first_line(exc: BaseException) -> str:
    """The first line of an obstore error: the rest is a debug dump of many lines, kept in the chained exception."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def failure(where: str, status: int) -> StorageError:
    """The error of an answer that no retry changes (404, 401/403 once signed again, any other 4xx), saying what to
    check."""
    if status == 404:
        return StorageError(f"{where} does not exist (HTTP 404): check the bucket, the path and the endpoint "
                            "(AWS_ENDPOINT_URL); a dataset folder holds manifest.json", status=status)
    if status in (401, 403):
        return StorageError(f"access to {where} was denied (HTTP {status}): check the credentials "
                            "(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, or storage_options), "
                            "that they may read this bucket and path, and the endpoint", status=status)
    return StorageError(f"{where} answered HTTP {status}", status=status)
