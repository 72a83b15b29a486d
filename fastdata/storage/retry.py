"""When and how long to wait before retrying a request to remote storage.

Retried: 408, 425, 429 and 5xx answers, connection errors, resets, timeouts and bodies cut short, with
exponential backoff and full jitter, waiting exactly what a `Retry-After` header asks (seconds or an HTTP
date) when the server sends one, up to a total deadline. Not retried: 4xx answers that will not change
(400, 401, 403, 404, 416): they fail at once with the URL and what to check.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass

RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 10  # requests per operation, the first included
    base_delay: float = 0.2  # seconds; attempt k waits up to base_delay * 2**k
    max_delay: float = 20.0  # cap of one backoff wait (a Retry-After may ask for longer, up to the deadline)
    deadline: float = 300.0  # seconds from the first request after which no retry starts

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.base_delay < 0 or self.max_delay < 0 or self.deadline < 0:
            raise ValueError(f"bad retry policy {self}")

    def backoff(self, attempt: int, *, rng: random.Random | None = None) -> float:
        """Full jitter: uniform in [0, min(max_delay, base_delay * 2**attempt)]."""
        top = min(self.max_delay, self.base_delay * (2 ** min(attempt, 30)))
        return (rng or random).uniform(0.0, top)

    def wait(self, attempt: int, retry_after: float | None, started: float) -> float | None:
        """Seconds to wait before attempt `attempt + 1`, or None when the attempts or the deadline are spent."""
        if attempt + 1 >= self.attempts:
            return None
        delay = retry_after if retry_after is not None else self.backoff(attempt)
        if time.monotonic() + delay - started > self.deadline:
            return None
        return delay


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds a `Retry-After` header asks to wait (delta-seconds or an HTTP date), None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
