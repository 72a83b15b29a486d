"""The one piece of fastdata that talks to remote storage: `RemoteStore(url)` for a dataset folder URL.

- Credentials, region and endpoint come from the standard environment variables (`AWS_*`,
  `GOOGLE_*`, `AZURE_*`, read by obstore) or the `storage_options` dict (obstore's config keys, plus
  `connect_timeout`, `read_timeout`, `attempts` and `deadline` for fastdata's requests).
- obstore (Rust, releases the GIL) holds the credentials: it signs requests, lists nothing, and uploads
  (`writes.py`: multipart for large files, checksummed by S3). Object bodies are fetched from presigned URLs (plain
  HTTPS for `http(s)://` datasets) by urllib3, which follows up to 10 redirects (a CDN, a hub's `resolve`
  URL) and retries nothing itself, so that every answer's status and headers are seen:
  `retry.py` honours `Retry-After`, a body cut short is resumed from where it stopped, a body that does not
  deliver its next 64 KiB within the read timeout (a stall, or a server dripping bytes) is cut short and
  resumed (`bodies.py`), and 403/404 fail at once with the URL and what to check (`answers.py`).
- A download in flight when the process exits or when its dataset is closed (`abandon()`) is cut short
  at once (its socket shut down, its partial file removed by the cache), not waited for: `inflight.py`.
- Clients are created lazily, in the process that uses them; a process forked after its parent used them gets a
  clear `StorageError` instead of a request that hangs (`forks.py`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
import urllib.parse
from datetime import timedelta
from pathlib import Path
from typing import Any, BinaryIO

from fastdata.errors import StorageError, require
from fastdata.numerals import parse_int
from fastdata.storage.answers import Retryable, failure, first_line, range_start, release
from fastdata.storage.bodies import stream_body, too_slow
from fastdata.storage.forks import guard
from fastdata.storage.inflight import InFlight
from fastdata.storage.retry import RETRY_STATUS, RetryPolicy, parse_retry_after
from fastdata.storage.url import folder_url, scheme_of
from fastdata.storage.writes import StoreWrites

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0  # seconds
READ_TIMEOUT = 60.0  # seconds for the next CHUNK of a body (or its rest) before the read is cut short and retried
SIGN_FOR = timedelta(hours=1)
RESIGN_AFTER = 45 * 60.0  # seconds: presigned URLs are renewed well before they expire
MAX_REDIRECTS = 10  # redirects followed per request (a dataset behind a CDN or a hub's `resolve` URL)
_OWN_KEYS = ("connect_timeout", "read_timeout", "attempts", "deadline", "headers")
HF_HOSTS = ("huggingface.co", "hf.co")  # $HF_TOKEN goes to these hosts only, as huggingface_hub sends it

MAX_ATTEMPTS = 1000
MAX_SECONDS = 7 * 24 * 3600.0  # a week: longer is a slip (10**30 s overflowed the timedelta obstore's options take)


def _seconds(own: dict[str, Any], key: str, default: float) -> float:
    """storage_options[key]: a finite number of seconds > 0, at most a week."""
    value = own.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_SECONDS:
        raise ValueError(f"storage_options[{key!r}]={value!r} is not allowed; it must be a number of seconds > 0 "
                         f"and at most {MAX_SECONDS:g} (a week)")
    return float(value)


class ChecksumError(StorageError):
    """The downloaded bytes hash differently from the manifest's record."""


def _http_headers(given: Any, url: str) -> dict[str, str]:
    """The headers every request to the HTTP(S) folder `url` carries: `storage_options['headers']`, and for a Hugging
    Face repository (gated or private) `Authorization: Bearer $HF_TOKEN` unless given."""
    if given is not None and (not isinstance(given, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and k and "\r" not in k + v and "\n" not in k + v and ":" not in k
            for k, v in given.items())):
        raise ValueError("storage_options['headers'] is not allowed; it must be a dict of header names to values, "
                         "strings without line breaks (e.g. {'Authorization': 'Bearer ...'})")
    headers = dict(given or {})
    host = urllib.parse.urlsplit(url).hostname or ""  # lower case, as urllib gives it
    token = os.environ.get("HF_TOKEN")
    if token and not any(k.lower() == "authorization" for k in headers) and \
            any(host == h or host.endswith("." + h) for h in HF_HOSTS):
        headers["Authorization"] = f"Bearer {token}"
    return headers


class RemoteStore(StoreWrites):
    """Read (and, for object stores, write) the files of one dataset folder at `url`."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = folder_url(url)
        self.scheme = scheme_of(url) or ""
        options = dict(storage_options or {})
        own = {k: options.pop(k) for k in _OWN_KEYS if k in options}
        self.connect_timeout = _seconds(own, "connect_timeout", CONNECT_TIMEOUT)
        self.read_timeout = _seconds(own, "read_timeout", READ_TIMEOUT)
        attempts = own.get("attempts", RetryPolicy.attempts)
        if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= MAX_ATTEMPTS:
            raise ValueError(f"storage_options['attempts']={attempts!r} is not allowed; it must be an integer from 1 "
                             f"to {MAX_ATTEMPTS} (requests per operation, the first included)")
        self.policy = RetryPolicy(attempts=attempts, deadline=_seconds(own, "deadline", RetryPolicy.deadline))
        self.headers = _http_headers(own.get("headers"), self.url) if self.http_only else {}
        self._obstore_options = options
        self._lock = threading.Lock()
        self._store: Any = None
        self._http: Any = None
        self._signed: dict[tuple[str, str], tuple[str, float]] = {}
        self._pid = os.getpid()
        self._inflight = InFlight()  # the bodies it reads, cut short by an exit or `abandon()`

    def abandon(self) -> None:
        """Its dataset was closed: reads in flight end now (their sockets shut), and nothing is retried or sent."""
        self._inflight.abandon()

    def __repr__(self) -> str:
        return f"RemoteStore({self.url!r})"

    @property
    def http_only(self) -> bool:
        return self.scheme in ("http", "https")

    # ------------------------------------------------------------------ clients (lazy, per process)
    def _clients(self) -> tuple[Any, Any]:
        guard(self.url)
        with self._lock:
            if self._pid != os.getpid():  # an object pickled or forked into another process: start afresh
                self._store, self._http, self._signed, self._pid = None, None, {}, os.getpid()
            if self._http is None:
                urllib3 = require("urllib3", "remote")
                timeout = urllib3.Timeout(connect=self.connect_timeout, read=self.read_timeout)
                # urllib3 follows redirects and nothing else: every failure comes back at once, to retry.py
                follow = urllib3.Retry(total=None, connect=0, read=0, status=0, other=0, redirect=MAX_REDIRECTS,
                                       raise_on_redirect=False, raise_on_status=False)
                self._http = urllib3.PoolManager(num_pools=4, maxsize=16, timeout=timeout, retries=follow)
            if self._store is None and not self.http_only:
                store = require("obstore.store", "remote")
                self._store = store.from_url(self.url, client_options=self._client_options(),
                                             retry_config={"max_retries": 3, "retry_timeout": timedelta(
                                                 seconds=self.policy.deadline)}, **self._obstore_options)
            return self._store, self._http

    def _client_options(self) -> dict[str, Any]:
        endpoint = str(self._obstore_options.get("endpoint") or os.environ.get("AWS_ENDPOINT_URL")
                       or os.environ.get("AWS_ENDPOINT") or "")
        options: dict[str, Any] = {"connect_timeout": timedelta(seconds=self.connect_timeout),
                                   "timeout": timedelta(seconds=max(self.read_timeout, 300.0))}
        if endpoint.startswith("http://"):  # an endpoint the user set to plain HTTP (a local S3-compatible store)
            options["allow_http"] = True
        return options

    def object_url(self, name: str, *, method: str = "GET", fresh: bool = False) -> str:
        """The URL a GET/HEAD of `name` goes to: presigned for object stores (renewed before it expires)."""
        if self.http_only:
            self._clients()
            return self.url + urllib.parse.quote(name)
        store, _ = self._clients()
        key = (method, name)
        cached = self._signed.get(key)
        if cached is not None and not fresh and time.monotonic() - cached[1] < RESIGN_AFTER:
            return cached[0]
        import obstore

        try:
            signed = obstore.sign(store, method, self._path(name), SIGN_FOR)
        except Exception as exc:  # noqa: BLE001 - obstore's errors become one clear message
            raise StorageError(f"cannot sign a {method} request for {self.url}{name}: {first_line(exc)}; check the "
                               "credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or storage_options)") from exc
        self._signed[key] = (signed, time.monotonic())
        return signed

    def _path(self, name: str) -> str:
        return name  # the store is scoped to the dataset folder (its URL path is the prefix)

    # ------------------------------------------------------------------ requests with retries
    def _retry(self, name: str, what: str, attempt_fn):
        """Run `attempt_fn(attempt)` until it returns, retrying Retryable failures per the policy."""
        started = time.monotonic()
        attempt = 0
        while True:
            self._inflight.stop_if_abandoned(f"{what} {self.url}{name}")  # also a read cut short by either: not retried
            try:
                return attempt_fn(attempt)
            except Retryable as exc:
                wait = self.policy.wait(attempt, exc.retry_after, started)
                if wait is None:
                    raise StorageError(f"gave up on {self.url}{name} ({what}) after {attempt + 1} attempt(s) in "
                                       f"{time.monotonic() - started:.1f} s; last error: {exc}") from None
                log.info("retrying %s%s (%s) in %.2f s after: %s", self.url, name, what, wait, exc)
                self._inflight.pause(wait)
                attempt += 1

    def _send(self, method: str, name: str, headers: dict[str, str], *, resigned: list[bool]) -> Any:
        """One request; returns an open response with a 2xx status, or raises Retryable / StorageError."""
        _, http = self._clients()
        urllib3 = require("urllib3", "remote")
        url = self.object_url(name, method=method, fresh=resigned[0])
        if self.headers:  # an HTTP(S) store's own (a token): urllib3 drops Authorization on a redirect elsewhere
            headers = {**self.headers, **headers}
        try:
            response = http.request(method, url, headers=headers, preload_content=False, redirect=True)
        except urllib3.exceptions.LocationValueError as exc:  # a redirect to a URL urllib3 cannot request
            raise StorageError(f"{self.url}{name} cannot be fetched over HTTP(S) (redirected to another scheme, or "
                               f"a malformed URL): {exc}") from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
                exc = exc.reason  # a connection error after a redirect: the error itself, not urllib3's wrapper
            raise Retryable(f"{type(exc).__name__}: {exc}") from None
        status = response.status
        if 200 <= status < 300:
            return response
        if 300 <= status < 400 and response.get_redirect_location():
            response.drain_conn()
            response.release_conn()
            raise StorageError(f"{self.url}{name} was redirected more than {MAX_REDIRECTS} times (HTTP {status}, "
                               "last to the same place or in a loop): check the URL")
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        response.drain_conn()
        response.release_conn()
        if status in RETRY_STATUS:
            raise Retryable(f"HTTP {status}", retry_after)
        if status == 403 and not self.http_only and not resigned[0]:
            resigned[0] = True  # a presigned URL may have expired: sign once more before giving up
            raise Retryable("HTTP 403 (signing again)", 0.0)
        if self.http_only and status in (401, 403):
            raise StorageError(f"access to {self.url}{name} was denied (HTTP {status}): a gated or private repository "
                               "needs a token: set HF_TOKEN (Hugging Face, sent to huggingface.co only) or pass "
                               "storage_options={'headers': {'Authorization': 'Bearer ...'}}"
                               + (" (the one sent was refused)" if self.headers else ""), status=status)
        raise failure(self.url + name, status)

    # ------------------------------------------------------------------ reads
    def size(self, name: str) -> int | None:
        """The size of `name` in bytes, or None when it does not exist."""
        resigned = [False]

        def attempt(_: int) -> int | None:
            try:
                response = self._send("HEAD", name, {}, resigned=resigned)
            except StorageError as exc:
                if exc.status == 404:
                    return None
                raise
            response.release_conn()
            length = parse_int(response.headers.get("Content-Length") or "")
            if length is None:
                raise StorageError(f"{self.url}{name}: the server sent no Content-Length (a number of at most 18 "
                                   "digits) for a HEAD request")
            return length

        return self._retry(name, "HEAD", attempt)

    def read(self, name: str, *, limit: int = 256 * 2**20) -> bytes:
        """The whole of a small file (a manifest, an index, a record); StorageError beyond `limit` bytes."""
        resigned = [False]

        def attempt(_: int) -> bytes:
            response = self._send("GET", name, {}, resigned=resigned)
            try:
                length = parse_int(response.headers.get("Content-Length") or "")
                if length is not None and length > limit:
                    raise StorageError(f"{self.url}{name} is {length} bytes, over the {limit} a metadata file "
                                       "may have")
                data = self._body(response, limit, name)
                wire = response.tell()  # bytes as sent: a body the server compressed unasked is longer decoded
            finally:
                release(response)
            if length is not None and wire != length:
                raise Retryable(f"body cut short: {wire} of {length} bytes")
            return data

        return self._retry(name, "GET", attempt)

    def _body(self, response: Any, limit: int, name: str) -> bytes:
        out = bytearray()

        def take(chunk: bytes) -> None:
            out.extend(chunk)
            if len(out) > limit:
                raise StorageError(f"{self.url}{name}: more than {limit} bytes")

        def failed(exc: BaseException) -> Retryable:
            return Retryable(f"{type(exc).__name__} while reading the body: {exc}")

        if stream_body(response, self._inflight, self.read_timeout, take, failed, lambda: len(out)):
            raise too_slow(self.read_timeout, len(out))
        return bytes(out)

    def download(self, name: str, dest: Path, *, size: int, sha256: str | None = None) -> None:
        """Write `name` into `dest` (created or truncated), resuming a body cut short from where it stopped;
        the size must be `size` and, when given, the sha256 `sha256` (StorageError otherwise)."""
        resigned = [False]
        with open(dest, "wb") as f:
            state = {"have": 0, "hash": hashlib.sha256()}

            def attempt(_: int) -> None:
                have = state["have"]
                headers = {"Range": f"bytes={have}-"} if have else {}
                try:
                    response = self._send("GET", name, headers, resigned=resigned)
                except StorageError as exc:
                    if have and exc.status == 416:  # asked past the end: the object is shorter than recorded
                        raise StorageError(f"{self.url}{name} has {have} bytes, the manifest says {size}: the remote "
                                           "file differs from the dataset's manifest") from None
                    raise
                try:
                    if have and (response.status == 200 or range_start(response) != have):
                        f.seek(0)  # the range ignored (200) or answered from elsewhere: start over
                        f.truncate()
                        state["have"], state["hash"] = 0, hashlib.sha256()
                        if response.status != 200:  # bytes that would be spliced in at the wrong place
                            found = (response.headers.get("Content-Range") or "")[:80]  # the server's text
                            raise Retryable(f"asked for the bytes from {have} on, answered Content-Range "
                                             f"{found!r}; starting over")
                    self._stream_into(response, f, state, size, name)
                finally:
                    release(response)
                if state["have"] < size:
                    raise Retryable(f"body cut short: {state['have']} of {size} bytes")

            self._retry(name, "GET", attempt)
            if state["have"] != size:
                raise StorageError(f"{self.url}{name} has {state['have']} bytes, the manifest says {size}: the "
                                   "remote file differs from the dataset's manifest")
        got = state["hash"].hexdigest()
        if sha256 is not None and got != sha256:
            raise ChecksumError(f"{self.url}{name}: the downloaded bytes have sha256 {got[:16]}..., the manifest says "
                                f"{sha256[:16]}...")

    def _stream_into(self, response: Any, f: BinaryIO, state: dict[str, Any], size: int, name: str) -> None:
        def take(chunk: bytes) -> None:
            if state["have"] + len(chunk) > size:
                raise StorageError(f"{self.url}{name}: more bytes than the {size} the manifest records")
            f.write(chunk)
            state["hash"].update(chunk)
            state["have"] += len(chunk)

        def failed(exc: BaseException) -> Retryable:
            f.flush()
            return Retryable(f"{type(exc).__name__} after {state['have']} bytes: {exc}")

        cut = stream_body(response, self._inflight, self.read_timeout, take, failed, lambda: state["have"])
        if cut and state["have"] < size:  # its socket shut, the body may have ended quietly
            raise too_slow(self.read_timeout, state["have"])
