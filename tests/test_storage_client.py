"""The remote client against real servers on 127.0.0.1: reads, ranged resumes, every fault of the retry
policy (503/429 with Retry-After, bodies cut short, stalls, wrong bytes, 403, 404), S3 uploads, and a clear
error instead of a hang in a process forked after a request."""

from __future__ import annotations

import gzip
import hashlib
import multiprocessing as mp
import os
import re
import socket
import threading
import time
from pathlib import Path

import pytest
from http_server import Answer, Fault, FileServer

import fastdata.exiting as exiting
import fastdata.storage.inflight as inflight
from fastdata.errors import StorageError
from fastdata.storage.client import ChecksumError, RemoteStore
from fastdata.storage.retry import RetryPolicy, parse_retry_after

pytest.importorskip("obstore")
DATA = bytes(range(256)) * 4000  # 1,024,000 bytes


@pytest.fixture
def served(tmp_path: Path):
    (tmp_path / "blob.bin").write_bytes(DATA)
    (tmp_path / "small.json").write_text('{"a": 1}')
    with FileServer(tmp_path) as server:
        yield server


def store(server: FileServer, **options) -> RemoteStore:
    return RemoteStore(server.url, {"read_timeout": 1.0, "connect_timeout": 1.0, **options})


def test_read_size_and_download(served, tmp_path: Path):
    s = store(served)
    assert s.read("small.json") == b'{"a": 1}' and s.size("blob.bin") == len(DATA) and s.size("nope") is None
    s.download("blob.bin", tmp_path / "out", size=len(DATA), sha256=hashlib.sha256(DATA).hexdigest())
    assert (tmp_path / "out").read_bytes() == DATA


@pytest.mark.parametrize("status", [503, 429])
def test_retry_after_is_honoured(served, tmp_path: Path, status: int):
    served.faults.append(Fault("blob.bin", status=status, retry_after=1.2, times=1))
    started = time.monotonic()
    store(served).download("blob.bin", tmp_path / "out", size=len(DATA))
    assert time.monotonic() - started >= 1.2  # waited what the server asked, not a 0.1 s backoff
    assert (tmp_path / "out").read_bytes() == DATA and served.gets("blob.bin") == 2


def test_a_body_cut_short_is_resumed_from_where_it_stopped(served, tmp_path: Path):
    served.faults.append(Fault("blob.bin", cut=300_000, times=2))
    store(served).download("blob.bin", tmp_path / "out", size=len(DATA), sha256=hashlib.sha256(DATA).hexdigest())
    assert (tmp_path / "out").read_bytes() == DATA
    ranges = [r for m, p, r in served.requests if m == "GET" and p.endswith("blob.bin")]
    starts = [int(r.removeprefix("bytes=").rstrip("-")) for r in ranges[1:]]
    assert ranges[0] is None and len(starts) == 2  # two resumes, each from (about) where the body stopped
    assert 300_000 - 2**16 <= starts[0] <= 300_000 and starts[0] + 300_000 - 2**16 <= starts[1] <= starts[0] + 300_000


def test_a_stall_hits_the_read_timeout_and_is_retried(served, tmp_path: Path):
    served.faults.append(Fault("blob.bin", stall=3.0, times=1))
    started = time.monotonic()
    store(served, read_timeout=0.5).download("blob.bin", tmp_path / "out", size=len(DATA))
    assert time.monotonic() - started < 2.5 and (tmp_path / "out").read_bytes() == DATA


def _refused_within(seconds: float, request, hung: str) -> tuple[StorageError, float]:
    """The StorageError `request()` raises, and the seconds it took; a failure saying `hung` (not a hang) when it
    has not ended after `seconds`."""
    outcome: list[StorageError] = []
    worker = threading.Thread(target=lambda: outcome.append(pytest.raises(StorageError, request).value), daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), hung
    return outcome[0], time.monotonic() - started


@pytest.mark.parametrize("method", ["GET", "HEAD", "metadata"])
def test_a_server_silent_before_its_headers_hits_the_read_timeout_and_is_retried(served, tmp_path: Path,
                                                                                 method: str):
    """A server that accepts the request and never answers is not a body the watcher sees: urllib3's read timeout
    alone ends the wait for the status line, and the request is tried again."""
    name = "small.json" if method == "metadata" else "blob.bin"
    served.faults.append(Fault(name, header_stall=5.0, method="HEAD" if method == "HEAD" else "GET"))
    s = store(served, read_timeout=0.5, connect_timeout=30.0)
    started = time.monotonic()
    if method == "GET":
        s.download(name, tmp_path / "out", size=len(DATA))
        assert (tmp_path / "out").read_bytes() == DATA
    elif method == "HEAD":
        assert s.size(name) == len(DATA)
    else:
        assert s.read(name) == b'{"a": 1}'
    assert 0.5 <= time.monotonic() - started < 3.0  # the read timeout, then a second request; not the 5 s stall
    assert [m for m, p, _ in served.requests if p.endswith(name)] == [method if method == "HEAD" else "GET"] * 2


def test_a_server_always_silent_before_its_headers_gives_up_within_the_policy(served):
    """Each wait for the status line is one attempt of fastdata's policy: urllib3 itself retries no read (with
    its own retries it would wait on such a server for ever)."""
    served.faults.append(Fault("small.json", header_stall=5.0, times=100))
    s = store(served, read_timeout=0.3, attempts=2)
    error, took = _refused_within(10.0, lambda: s.read("small.json"), "the read was retried past the policy")
    assert 0.6 <= took < 3.0 and served.gets("small.json") == 2
    assert re.search(r"gave up on .*small.json \(GET\) after 2 attempt\(s\).*ReadTimeoutError", str(error))


def test_a_server_that_never_accepts_hits_the_connect_timeout(tmp_path: Path):
    """A listening socket whose backlog is full (a server too busy to accept) leaves a connect hanging: the connect
    timeout ends each attempt, the read timeout does not stand in for it, and urllib3 tries no connect again."""
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        held: list[socket.socket] = []
        try:
            while True:  # fill the backlog: the first connection that does not complete shows it is full
                held.append(socket.socket())
                held[-1].settimeout(0.2)
                try:
                    held[-1].connect(listener.getsockname())
                except TimeoutError:
                    break
                assert len(held) < 16, "the backlog never filled"
            url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
            s = RemoteStore(url, {"connect_timeout": 0.5, "read_timeout": 30.0, "attempts": 2})
            # without a connect timeout the kernel's own gives up after minutes: fail, not hang
            error, took = _refused_within(10.0, lambda: s.read("small.json"), "the connect did not time out")
            assert 1.0 <= took < 1.8  # two connects and a backoff of at most 0.2 s: urllib3 tries no connect again
            assert re.search(r"gave up on .*small.json \(GET\) after 2 attempt\(s\).*ConnectTimeoutError",
                             str(error))
        finally:
            for sock in held:
                sock.close()


def test_a_dripping_body_is_cut_short_and_resumed(served, tmp_path: Path):
    """A server that sends a few bytes now and then is never silent for a whole read timeout: the read went on at
    its pace (this body took 10 s; a shard, days). Now a body must deliver its next 64 KiB within the read timeout."""
    data = DATA[:8000]
    (tmp_path / "drip.bin").write_bytes(data)
    served.faults.append(Fault("drip.bin", drip=(40, 0.05), times=1))
    started = time.monotonic()
    store(served).download("drip.bin", tmp_path / "out", size=len(data), sha256=hashlib.sha256(data).hexdigest())
    assert time.monotonic() - started < 4.0 and (tmp_path / "out").read_bytes() == data
    ranges = [r for m, p, r in served.requests if m == "GET" and p.endswith("drip.bin")]
    assert len(ranges) == 2 and ranges[0] is None  # cut once, then resumed (from where the drip had got to)


def test_a_dripping_body_of_unknown_length_ends_quietly_when_cut_and_is_resumed(served, tmp_path: Path, caplog):
    """Without a usable Content-Length the body ends when its socket closes: cut by the watcher, the read ends
    without an error, short of the size, and is resumed from there."""
    data = DATA[:8000]
    (tmp_path / "drip.bin").write_bytes(data)
    served.faults.append(Fault("drip.bin", drip=(40, 0.05), length="unknown", times=1))
    caplog.set_level("INFO", logger="fastdata.storage.client")
    store(served).download("drip.bin", tmp_path / "out", size=len(data), sha256=hashlib.sha256(data).hexdigest())
    assert (tmp_path / "out").read_bytes() == data
    ranges = [r for m, p, r in served.requests if m == "GET" and p.endswith("drip.bin")]
    assert len(ranges) == 2 and ranges[0] is None and ranges[1] != "bytes=0-"
    retried = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retried) == 1 and re.search(r"less than 64 KiB in 1 s \(a stalled or dripping server\) after "
                                           rf"{ranges[1][6:-1]} bytes$", retried[0])


def test_a_server_that_always_drips_gives_up_saying_why(served):
    served.faults.append(Fault("small.json", drip=(1, 0.2), times=10))
    started = time.monotonic()
    with pytest.raises(StorageError, match=r"small\.json.*after 2 attempt.*less than 64 KiB in 1 s \(a stalled or "
                                           r"dripping server\) after \d bytes$"):
        store(served, attempts=2).read("small.json")
    assert time.monotonic() - started < 4.0


def test_one_connection_pool_serves_every_request_of_a_process_and_a_new_process_starts_afresh(served, monkeypatch):
    """The pool (and the presigned URLs) are kept across requests; an object that reaches another process (pickled,
    or forked) builds its own on first use there instead of sharing sockets with its parent."""
    import fastdata.storage.client as client

    s = store(served)
    assert s.read("small.json") == b'{"a": 1}'
    pool = s._http
    assert s.read("small.json") == b'{"a": 1}' and s._http is pool and s._store is None  # HTTP needs no obstore
    child = s._pid + 1
    monkeypatch.setattr(client.os, "getpid", lambda: child)  # the object as a child process sees it
    assert s.read("small.json") == b'{"a": 1}' and s._http is not pool and s._pid == child
    renewed = s._http
    assert s.read("small.json") == b'{"a": 1}' and s._http is renewed


def test_a_body_left_unread_does_not_spoil_the_next_request_on_its_connection(served, tmp_path: Path):
    """A read refused on its announced size, and a resume answered from the wrong offset, leave a body unread. The
    connection went back to the pool, and the next request on it read that body as its own answer and failed once;
    now it takes one GET. The body comes late (a stall), so the pool cannot see it waiting when it hands the
    connection out."""
    s = store(served, attempts=3)
    served.faults.append(Fault("blob.bin", stall=0.3))
    with pytest.raises(StorageError, match="over the 1000 a metadata file may have"):
        s.read("blob.bin", limit=1000)
    assert s.read("small.json") == b'{"a": 1}' and served.gets("small.json") == 1

    def late_and_elsewhere(answer: Answer) -> Answer:
        start = int(answer.header("Content-Range").split()[1].split("-")[0])
        headers = [(k, v) for k, v in answer.headers if k != "Content-Range"]
        headers.append(("Content-Range", f"bytes {start + 7}-{len(DATA) - 1 + 7}/{len(DATA)}"))
        return Answer(206, headers, answer.body, stall=0.3)

    _cut_then(served, late_and_elsewhere)
    asked = len(served.requests)
    s.download("blob.bin", tmp_path / "out", size=len(DATA), sha256=hashlib.sha256(DATA).hexdigest())
    ranges = [r for m, p, r in served.requests[asked:] if m == "GET"]
    assert len(ranges) == 3 and ranges[0] is None and ranges[1].startswith("bytes=") and ranges[2] is None
    assert (tmp_path / "out").read_bytes() == DATA  # cut, resumed from elsewhere, started over: once each


def test_a_metadata_read_is_held_to_its_limit_and_a_body_cut_short_names_the_error(served):
    s = store(served, attempts=2)
    assert s.read("blob.bin", limit=len(DATA)) == DATA  # exactly at the limit
    with pytest.raises(StorageError) as err:  # refused on its announced size, before the body
        s.read("blob.bin", limit=len(DATA) - 1)
    assert str(err.value) == (f"{served.url}blob.bin is {len(DATA)} bytes, over the {len(DATA) - 1} a metadata file "
                              "may have")
    served.faults.append(Fault("small.json", length="unknown", times=1))  # no usable length: read to the end
    assert s.read("small.json") == b'{"a": 1}' and served.gets("small.json") == 1
    served.faults.append(Fault("blob.bin", length="unknown", times=1))  # nor a size to refuse it by: while read
    with pytest.raises(StorageError) as err:
        s.read("blob.bin", limit=1000)
    assert str(err.value) == f"{served.url}blob.bin: more than 1000 bytes"
    served.faults.append(Fault("small.json", cut=3, times=2))
    with pytest.raises(StorageError, match=r"^gave up on .*small\.json \(GET\) after 2 attempt\(s\) in [\d.]+ s; last "
                                           r"error: ProtocolError while reading the body: .*IncompleteRead"):
        s.read("small.json")


def test_a_slow_body_that_keeps_moving_is_not_cut(served, tmp_path: Path):
    data = DATA[:4 * 2**16]
    (tmp_path / "slow.bin").write_bytes(data)
    served.faults.append(Fault("slow.bin", drip=(2**16, 0.4), times=1))  # 64 KiB every 0.4 s, under the 1 s timeout
    store(served).download("slow.bin", tmp_path / "out", size=len(data))
    assert (tmp_path / "out").read_bytes() == data and served.gets("slow.bin") == 1


def test_the_body_watcher_ends_when_nothing_is_read(served):
    store(served).read("small.json")
    deadline = time.monotonic() + 2.0
    while inflight._watcher and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not inflight._watcher and not inflight._watched
    assert not [t for t in threading.enumerate() if t.name == "fastdata-body-watch"]


def test_wrong_bytes_are_a_checksum_error_naming_the_url(served, tmp_path: Path):
    served.faults.append(Fault("blob.bin", corrupt=True, times=1))
    with pytest.raises(ChecksumError, match=r"blob\.bin.*sha256"):
        store(served).download("blob.bin", tmp_path / "out", size=len(DATA), sha256=hashlib.sha256(DATA).hexdigest())


DENIED = ("access to {url} was denied (HTTP {status}): a gated or private repository needs a token: set HF_TOKEN "
          "(Hugging Face, sent to huggingface.co only) or pass storage_options={{'headers': {{'Authorization': "
          "'Bearer ...'}}}}")  # an HTTP(S) folder: no AWS variable would help (it said to check them)


@pytest.mark.parametrize("status,message", [
    (401, DENIED), (403, DENIED),
    (404, "{url} does not exist (HTTP 404): check the bucket, the path and the endpoint (AWS_ENDPOINT_URL); a "
          "dataset folder holds manifest.json"),
    (400, "{url} answered HTTP 400")])
def test_401_403_404_and_400_fail_at_once_with_what_to_check(served, status: int, message: str):
    served.faults.append(Fault("small.json", status=status, times=5))
    with pytest.raises(StorageError) as err:
        store(served).read("small.json")
    assert str(err.value) == message.format(url=served.url + "small.json", status=status)
    assert err.value.status == status  # what callers decide on (a missing file is a 404), not the wording
    assert served.gets("small.json") == 1


def test_an_object_shorter_than_the_manifest_says_is_named_after_the_range_past_its_end(served, tmp_path: Path):
    """The whole object arrives, short of the recorded size; the resumed request for the rest is answered 416."""
    with pytest.raises(StorageError) as err:
        store(served).download("blob.bin", tmp_path / "out", size=len(DATA) + 1000)
    assert str(err.value) == (f"{served.url}blob.bin has {len(DATA)} bytes, the manifest says {len(DATA) + 1000}: "
                              "the remote file differs from the dataset's manifest")
    assert served.gets("blob.bin") == 2  # the whole body, then the range from its end
    with pytest.raises(StorageError) as err:  # longer: named by the dataset URL, as every other error
        store(served).download("blob.bin", tmp_path / "out", size=len(DATA) - 1000)
    assert str(err.value) == f"{served.url}blob.bin: more bytes than the {len(DATA) - 1000} the manifest records"


def test_an_http_dataset_is_read_only(served):
    with pytest.raises(StorageError) as err:
        store(served).delete("small.json")
    assert str(err.value) == f"{served.url} is read-only (HTTP)"
    assert served._server.requests == []  # refused before any request


def test_a_server_that_keeps_failing_gives_up_within_the_policy(served):
    served.faults.append(Fault("small.json", status=503, times=100))
    started = time.monotonic()
    with pytest.raises(StorageError, match="gave up.*3 attempt"):
        store(served, attempts=3).read("small.json")
    assert served.gets("small.json") == 3 and time.monotonic() - started < 5


def test_the_deadline_in_storage_options_ends_the_retries(served):
    """No retry starts past the deadline: the second 503 asks for a wait that would end beyond it."""
    served.faults.append(Fault("small.json", status=503, retry_after=0.4, times=100))
    started = time.monotonic()
    with pytest.raises(StorageError, match=r"gave up.*after 2 attempt\(s\)"):
        store(served, attempts=10, deadline=0.6).read("small.json")
    assert served.gets("small.json") == 2 and time.monotonic() - started < 2.0


def test_a_size_that_differs_from_the_manifest_is_an_error(served, tmp_path: Path):
    with pytest.raises(StorageError, match="manifest says"):
        store(served).download("blob.bin", tmp_path / "out", size=len(DATA) + 10)
    with pytest.raises(StorageError, match="more bytes"):
        store(served).download("blob.bin", tmp_path / "out", size=len(DATA) - 10)


@pytest.mark.parametrize("fault", ["body-stalled", "retry-after"])
@pytest.mark.parametrize("how", ["exit", "abandon"])
def test_an_exit_or_abandon_ends_a_download_at_once(served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    fault: str, how: str):
    """What the interpreter's exit hook does (fastdata/exiting.py), and `abandon()` (a closed dataset): a body
    being read is cut short, a wait before a retry ends, and nothing is retried."""
    monkeypatch.setattr(exiting, "EXITING", threading.Event())
    served.faults.append(Fault("blob.bin", stall=30.0) if fault == "body-stalled"
                         else Fault("blob.bin", status=503, retry_after=30))
    s = store(served, read_timeout=60.0)

    def stop_soon() -> None:
        time.sleep(0.5)
        if how == "exit":
            exiting.EXITING.set()
            inflight._abandon_all()
        else:
            s.abandon()

    started = time.monotonic()
    threading.Thread(target=stop_soon).start()
    why = "the process is exiting" if how == "exit" else "the dataset was closed"
    with pytest.raises(StorageError, match=f"blob.bin abandoned: {why}"):
        s.download("blob.bin", tmp_path / "out", size=len(DATA))
    assert time.monotonic() - started < 2.5
    assert len(served.requests) == 1  # not retried


def _redirecting(served: FileServer, location) -> None:
    """Every request answered with a 302 to `location(path)`; the copies at `?moved` honestly."""
    def rewrite(method: str, path: str, requested: str | None, answer: Answer) -> Answer:
        if "?moved" in path:
            return answer
        return Answer(302, [("Location", location(path)), ("Content-Length", "0")])

    served.rewrite = rewrite


def test_redirects_are_followed_to_the_same_bytes(served, tmp_path: Path):
    """A dataset behind a CDN or a hub's `resolve` URL answers 302 to where the bytes are (absolute or relative):
    they used to be an error ('answered HTTP 302')."""
    _redirecting(served, lambda path: f"{served.url.rstrip('/')}{path}?moved" if "blob" in path else
                 f"{path.rsplit('/', 1)[-1]}?moved")
    s = store(served)
    assert s.read("small.json") == b'{"a": 1}' and s.size("blob.bin") == len(DATA)
    s.download("blob.bin", tmp_path / "out", size=len(DATA), sha256=hashlib.sha256(DATA).hexdigest())
    assert (tmp_path / "out").read_bytes() == DATA
    assert [p for m, p, _ in served.requests if m == "GET"] == ["/small.json", "/small.json?moved", "/blob.bin",
                                                                 "/blob.bin?moved"]


@pytest.mark.parametrize("where,message", [("loop", "redirected more than 10 times"),
                                           ("ftp", "cannot be fetched over HTTP.*ftp")])
def test_a_redirect_loop_or_to_another_scheme_fails_at_once(served, where: str, message: str):
    _redirecting(served, lambda path: path if where == "loop" else f"ftp://127.0.0.1{path}")
    with pytest.raises(StorageError, match=message):
        store(served).read("small.json")
    assert served.gets("small.json") == (11 if where == "loop" else 1)  # one request, its redirects; no retry


def _cut_then(served: FileServer, ranged) -> None:
    """The first answer for blob.bin cut after 300,000 bytes; every answer to a Range request made by `ranged`."""
    cut = [True]

    def rewrite(method: str, path: str, requested: str | None, answer: Answer) -> Answer:
        if requested is None and cut[0] and path.endswith("blob.bin"):
            cut[0] = False
            return Answer(answer.status, answer.headers, answer.body, cut=300_000)
        return ranged(answer) if requested is not None else answer

    served.rewrite = rewrite


@pytest.mark.parametrize("how", ["whole as 200", "wrong offset", "no Content-Range"])
def test_a_range_answered_from_elsewhere_starts_the_download_over(served, tmp_path: Path, how: str):
    """A resume whose range the server ignored (200, the whole file) or answered from another offset (a broken
    proxy): the bytes are not spliced in where they do not belong; the download starts over and is whole.
    A wrong offset used to be found only by the checksum, after the whole download, and was then an error."""
    def ranged(answer: Answer) -> Answer:
        if how == "whole as 200":
            return Answer(200, [("Content-Length", str(len(DATA)))], DATA)
        start = int(answer.header("Content-Range").split()[1].split("-")[0])
        headers = [(k, v) for k, v in answer.headers if k != "Content-Range"]
        if how == "wrong offset":
            headers.append(("Content-Range", f"bytes {start + 7}-{len(DATA) - 1 + 7}/{len(DATA)}"))
        return Answer(206, headers, answer.body)

    _cut_then(served, ranged)
    store(served).download("blob.bin", tmp_path / "out", size=len(DATA), sha256=hashlib.sha256(DATA).hexdigest())
    assert (tmp_path / "out").read_bytes() == DATA
    ranges = [r for m, p, r in served.requests if m == "GET"]
    assert ranges[0] is None and ranges[1].startswith("bytes=")
    assert ranges[2:] == ([] if how == "whole as 200" else [None])  # started over: the whole file asked for


def test_a_body_compressed_unasked_is_read_whole(served):
    """A server that gzips a manifest although the client asked for identity: its Content-Length counts the
    compressed bytes; the read compares it with the bytes on the wire (it retried, then gave up: 'cut short')."""
    def rewrite(method: str, path: str, requested: str | None, answer: Answer) -> Answer:
        body = gzip.compress(answer.body, mtime=0)
        return Answer(200, [("Content-Length", str(len(body))), ("Content-Encoding", "gzip")], body)

    served.rewrite = rewrite
    assert store(served).read("small.json") == b'{"a": 1}' and served.gets("small.json") == 1


def test_retry_after_forms_and_the_backoff_bounds():
    assert parse_retry_after("3") == 3.0 and parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == pytest.approx(10.0)
    policy = RetryPolicy(attempts=4, base_delay=0.5, max_delay=2.0, deadline=100)
    import random

    rng = random.Random(0)
    assert all(0 <= policy.backoff(k, rng=rng) <= min(2.0, 0.5 * 2 ** k) for k in range(8))
    assert policy.wait(3, None, time.monotonic()) is None  # the 4th attempt was the last
    assert policy.wait(0, 50.0, time.monotonic() - 60) is None  # past the deadline


def test_s3_upload_read_and_download(s3: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import fastdata.storage.writes as writes

    monkeypatch.setattr(writes, "MULTIPART_ABOVE", 100_000)  # the 1 MB file goes up in parts
    (tmp_path / "up.bin").write_bytes(DATA)
    remote = RemoteStore(f"{s3}/datasets/one/")
    remote.upload("up.bin", tmp_path / "up.bin")
    remote.upload("manifest.json", b'{"x": 2}')
    assert remote.size("up.bin") == len(DATA) and remote.read("manifest.json") == b'{"x": 2}'
    remote.download("up.bin", tmp_path / "back", size=len(DATA), sha256=hashlib.sha256(DATA).hexdigest())
    assert (tmp_path / "back").read_bytes() == DATA
    with pytest.raises(StorageError, match="does not exist"):
        remote.read("missing.json")


def test_s3_credentials_and_endpoint_from_storage_options_and_one_client(s3: str, s3_endpoint: str,
                                                                         monkeypatch: pytest.MonkeyPatch):
    """obstore's configuration keys in storage_options reach the store: with no AWS variable set, the endpoint and
    the keys given there are the ones used. The store is built once per process, as the connection pool is."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name)
    remote = RemoteStore(f"{s3}/given/", {"endpoint": s3_endpoint, "aws_access_key_id": "testing",
                                         "aws_secret_access_key": "testing", "region": "us-east-1"})
    remote.upload("manifest.json", b'{"x": 3}')
    client = remote._store
    assert remote.read("manifest.json") == b'{"x": 3}' and remote.size("manifest.json") == 8
    assert remote._store is client is not None


def _child_reads(url: str, queue) -> None:
    try:
        RemoteStore(url).read("manifest.json")
        queue.put("read")
    except StorageError as exc:
        queue.put(f"error: {exc}")


def test_a_process_forked_after_a_request_gets_an_error_not_a_hang(s3: str):
    remote = RemoteStore(f"{s3}/f/")
    remote.upload("manifest.json", b"{}")
    assert remote.read("manifest.json") == b"{}"
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child_reads, args=(f"{s3}/f/", queue))
    child.start()
    child.join(timeout=30)
    assert not child.is_alive(), "the forked child hung"
    message = queue.get(timeout=5)
    assert os.getpid() != child.pid
    from fastdata.storage import forks

    assert message == (
        f"error: cannot reach {s3}/f/ from process {child.pid}: it was forked from process "
        f"{forks._state['used_in']} after that one had used remote storage, and obstore's runtime does not survive "
        "fork (the request would hang). Read remote datasets with fastdata.loader in the main process (it downloads "
        "in its own thread and needs no DataLoader workers), or start worker processes with "
        "multiprocessing.set_start_method('spawn') / 'forkserver'.")


def _child_ends_its_reads() -> None:
    inflight._abandon_all()  # what its exit hook does


def test_a_child_forked_while_the_body_lock_is_held_still_exits():
    """The body watcher takes the lock ten times a second while a download runs: a child forked at that moment
    inherited it held, by a thread that does not exist in the child, and its exit hook waited on it forever."""
    ctx = mp.get_context("fork")
    with inflight._lock:
        child = ctx.Process(target=_child_ends_its_reads)
        child.start()
    child.join(timeout=20)
    hung = child.is_alive()
    if hung:
        child.kill()
    assert not hung and child.exitcode == 0


def test_a_403_from_a_presigned_url_signs_it_again_once(s3: str, served, monkeypatch: pytest.MonkeyPatch):
    """A presigned URL may have expired: the first 403 of a request signs a fresh one and retries it at once; a
    403 of the fresh one is the answer."""
    remote = RemoteStore(f"{s3}/signed/")
    remote.upload("manifest.json", b'{"y": 1}')
    signed = RemoteStore.object_url
    asked: list[tuple[str, bool]] = []
    denied_again = [False]

    def stale_first(self, name: str, *, method: str = "GET", fresh: bool = False) -> str:
        asked.append((method, fresh))
        if not fresh or denied_again[0]:
            return served.url + "denied"  # a server that answers 403, as S3 does for an expired signature
        return signed(self, name, method=method, fresh=fresh)

    for method in ("GET", "HEAD"):
        served.faults.append(Fault("denied", status=403, times=100, method=method))
    monkeypatch.setattr(RemoteStore, "object_url", stale_first)
    assert remote.read("manifest.json") == b'{"y": 1}' and remote.size("manifest.json") == 8
    assert asked == [("GET", False), ("GET", True), ("HEAD", False), ("HEAD", True)]
    denied_again[0] = True
    asked.clear()
    with pytest.raises(StorageError, match=r"was denied \(HTTP 403\)"):
        remote.size("manifest.json")
    assert asked == [("HEAD", False), ("HEAD", True)]


def test_uploads_go_in_parts_above_the_threshold_only(s3: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import obstore

    import fastdata.storage.writes as writes

    monkeypatch.setattr(writes, "MULTIPART_ABOVE", 1000)
    put, parts = obstore.put, []

    def spy(store, path, source, **kw):
        parts.append((path, kw["use_multipart"]))
        return put(store, path, source, **kw)

    monkeypatch.setattr(obstore, "put", spy)
    remote = RemoteStore(f"{s3}/parts/")
    remote.upload("at.bin", b"a" * 1000)
    remote.upload("above.bin", b"b" * 1001)
    (tmp_path / "file.bin").write_bytes(b"c" * 5000)
    remote.upload("file.bin", tmp_path / "file.bin")
    assert parts == [("at.bin", False), ("above.bin", True), ("file.bin", True)]
    assert remote.size("above.bin") == 1001 and remote.size("file.bin") == 5000


def test_an_upload_that_fails_or_comes_out_short_is_an_error(s3: str, served, monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(StorageError) as err:
        RemoteStore(f"{s3}-no-such-bucket/x/").upload("a.json", b"{}")
    cause = type(err.value.__cause__).__name__  # obstore's error, named
    assert re.fullmatch(rf"cannot upload a\.json to {re.escape(s3)}-no-such-bucket/x/: {cause}: .+; check the "
                        r"credentials and that they may write there", str(err.value)) and cause != "NoneType"
    assert "\n" in str(err.value.__cause__)  # obstore's debug dump: chained, not in the one-line message
    remote = RemoteStore(f"{s3}/short/")
    monkeypatch.setattr(RemoteStore, "size", lambda self, name: 1)
    with pytest.raises(StorageError) as short:
        remote.upload("b.json", b"{}")
    assert str(short.value) == f"after uploading b.json to {s3}/short/ the object has 1 bytes, not 2"
    with pytest.raises(StorageError) as http:
        store(served).upload("c.json", b"{}")
    assert str(http.value) == (f"{served.url} is read-only (HTTP): write datasets to s3://, gs:// or az://, or to a "
                               "local folder")


def test_a_head_answer_without_a_readable_length_or_that_keeps_failing_is_named(served):
    served.faults.append(Fault("small.json", length="8 bytes", method="HEAD"))
    with pytest.raises(StorageError) as err:
        store(served).size("small.json")
    assert str(err.value) == (f"{served.url}small.json: the server sent no Content-Length (a number of at most 18 "
                              "digits) for a HEAD request")
    served.faults.append(Fault("small.json", status=503, times=10, method="HEAD"))
    with pytest.raises(StorageError) as gave_up:
        store(served, attempts=2).size("small.json")
    assert str(gave_up.value).startswith(f"gave up on {served.url}small.json (HEAD) after 2 attempt(s)")


def test_obstore_gives_up_an_upload_after_three_retries_and_at_the_deadline(served):
    """Uploads go through obstore, which retries by itself: 3 times (its default is 10), and not past the deadline.
    The S3 endpoint here answers every PUT 503."""
    served.faults.append(Fault("a.json", status=503, times=100, method="PUT"))
    options = {"endpoint": served.url.rstrip("/"), "aws_access_key_id": "k", "aws_secret_access_key": "s",
               "region": "us-east-1"}

    with pytest.raises(StorageError, match="^cannot upload a.json to s3://bkt/ds/: "):
        RemoteStore("s3://bkt/ds/", options).upload("a.json", b"{}")
    assert served.count("PUT", "a.json") == 4
    served.requests.clear()
    with pytest.raises(StorageError, match="^cannot upload a.json"):  # obstore's first back-off is about 0.1 s
        RemoteStore("s3://bkt/ds/", {**options, "deadline": 0.05}).upload("a.json", b"{}")
    assert 1 <= served.count("PUT", "a.json") < 4


def test_a_failed_tls_handshake_is_tried_once_per_attempt():
    """An https:// dataset whose server does not speak TLS. urllib3 counts a failed handshake as neither a connect
    nor a read error but as an `other` one, and must retry none of them itself: each of the policy's attempts opens
    exactly one connection."""
    accepted: list[socket.socket] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # the listener is closed: the test is over
                return
            accepted.append(conn)
            with conn:
                conn.recv(4096)  # the ClientHello, answered in plain HTTP
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=answer, daemon=True).start()
    try:
        s = RemoteStore(f"https://127.0.0.1:{listener.getsockname()[1]}/ds/",
                        {"attempts": 2, "connect_timeout": 5.0, "read_timeout": 5.0})
        error, _ = _refused_within(20.0, lambda: s.read("manifest.json"), "urllib3 kept retrying the handshake")
    finally:
        listener.close()
    assert "after 2 attempt(s)" in str(error) and "SSLError" in str(error)
    assert len(accepted) == 2


def test_a_request_that_cannot_be_signed_says_so_in_one_line_and_names_the_credentials(monkeypatch):
    """Without credentials obstore fails with its error and a debug dump of many lines, which buried the hint
    to check the credentials; the message keeps the first line, the dump stays in the chained exception."""
    import obstore

    def refuse(*_args, **_kwargs):
        raise RuntimeError("Generic S3 error: no credentials\n\nDebug source:\nGeneric {\n    store: \"S3\",\n}")

    monkeypatch.setattr(obstore, "sign", refuse)
    store = RemoteStore("s3://bucket/ds/", {"aws_region": "us-east-1", "aws_skip_signature": False})
    with pytest.raises(StorageError) as info:
        store.read("manifest.json")
    assert str(info.value) == ("cannot sign a GET request for s3://bucket/ds/manifest.json: Generic S3 error: no "
                               "credentials; check the credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or "
                               "storage_options)")
    assert "Debug source" in str(info.value.__cause__)
