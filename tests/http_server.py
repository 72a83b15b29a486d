"""A read-only HTTP file server on 127.0.0.1 (standard library) with Range support and scripted faults,
for the remote-dataset tests: 503/429 + Retry-After, bodies cut short, stalls (before the headers or the body),
wrong bytes, 403/404.

    with FileServer(folder) as server:           # port 0: the OS picks a free port
        server.faults.append(Fault("train-000000.tar", status=503, retry_after=1, times=2))
        url = server.url                         # http://127.0.0.1:PORT/
        server.requests                          # every (method, path, range header) served, in order
        server.rewrite = fn                      # fn(method, path, range, answer) -> the Answer sent instead
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Fault:
    """What to do to the next `times` GET/HEAD requests whose path ends with `path`."""

    path: str
    status: int | None = None  # answer this status instead (e.g. 503, 429, 403, 404)
    retry_after: float | None = None  # with status: the Retry-After header (seconds)
    cut: int | None = None  # send only this many body bytes, then close the connection
    stall: float | None = None  # sleep this long before sending the body
    header_stall: float | None = None  # sleep this long before sending anything (the status line and headers)
    corrupt: bool = False  # flip the bits of the body (same length)
    length: str | None = None  # send this Content-Length header (a forged one) and close after the body
    drip: tuple[int, float] | None = None  # send the body (n bytes, then a pause of s seconds) at a time
    times: int = 1
    method: str = "GET"


@dataclass
class Answer:
    """What the server sends for one request: the status line, the headers in order (a forged or repeated one
    included), the body, and how it is sent."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    stall: float = 0.0  # seconds of silence before the body
    header_stall: float = 0.0  # seconds of silence before the status line: a server that accepted and hangs
    cut: int | None = None  # send only this many body bytes, then close the connection
    close: bool = False  # close the connection after the body (the client cannot know where it ends)
    drip: tuple[int, float] | None = None  # (n, s): n bytes of the body at a time, s seconds apart

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


# rewrite(method, path, range header, answer) -> the answer sent: a test's or the fuzzer's hostile server
Rewrite = Callable[[str, str, "str | None", Answer], Answer]


def _empty(status: int, *headers: tuple[str, str]) -> Answer:
    return Answer(status, [*headers, ("Content-Length", "0")])


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet tests
        pass

    def _fault(self) -> Fault | None:
        with self.server.lock:
            for fault in self.server.faults:
                if fault.times > 0 and fault.method == self.command and self.path.endswith(fault.path):
                    fault.times -= 1
                    return fault
        return None

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._serve(body=True)

    def do_PUT(self) -> None:  # noqa: N802 - an upload: its body is read and dropped, the server stays read-only
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.requests.append((self.command, self.path, None))
        self._send(_faulty(_empty(405), self._fault()), body=False)

    def _serve(self, *, body: bool) -> None:
        requested = self.headers.get("Range")
        with self.server.lock:
            self.server.requests.append((self.command, self.path, requested))
        if self.server.authorization is not None and self.headers.get("Authorization") != self.server.authorization:
            self._send(_empty(401), body=body)  # a gated repository without the token it wants
            return
        answer = _faulty(self._file(requested), self._fault())
        if self.server.rewrite is not None:
            answer = self.server.rewrite(self.command, self.path, requested, answer)
        self._send(answer, body=body)

    def _file(self, requested: str | None) -> Answer:
        """The honest answer: the file's bytes, or the range of them asked for."""
        path = (self.server.root / self.path.split("?", 1)[0].lstrip("/")).resolve()
        if self.server.root not in path.parents or not path.is_file():
            return _empty(404)
        stat = path.stat()
        size = stat.st_size
        start, end, status = 0, size, 200
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", requested or "")
        if match:
            if match.group(1):
                start = int(match.group(1))
                end = min(size, int(match.group(2)) + 1) if match.group(2) else size
            else:
                start, end = max(0, size - int(match.group(2))), size
            if start >= size:
                return _empty(416, ("Content-Range", f"bytes */{size}"))
            status = 206
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(end - start)
        headers = [("Content-Range", f"bytes {start}-{end - 1}/{size}")] if status == 206 else []
        headers += [("Content-Length", str(end - start)), ("Accept-Ranges", "bytes"),
                    ("Last-Modified", self.date_time_string(stat.st_mtime)), ("ETag", f'"{size}-{stat.st_mtime_ns}"')]
        return Answer(status, headers, data)

    def _send(self, answer: Answer, *, body: bool) -> None:
        if answer.header_stall:
            time.sleep(answer.header_stall)
        self.send_response(answer.status)
        for key, value in answer.headers:
            self.send_header(key, value.encode().decode("latin-1"))  # a header of any text goes out as its UTF-8
        self.end_headers()
        if not body:
            self.close_connection = answer.close
            return
        if answer.stall:
            time.sleep(answer.stall)
        data = answer.body if answer.cut is None else answer.body[:answer.cut]
        step, pause = answer.drip or (len(data), 0.0)
        for at in range(0, len(data), max(step, 1)):
            if at and pause:
                time.sleep(pause)
            self.wfile.write(data[at:at + step])
            self.wfile.flush()
        if answer.close or answer.cut is not None:
            self.close_connection = True


def _faulty(answer: Answer, fault: Fault | None) -> Answer:
    """The answer a scripted fault makes of the honest one."""
    if fault is None:
        return answer
    if fault.status is not None:
        retry = [("Retry-After", str(fault.retry_after))] if fault.retry_after is not None else []
        return replace(_empty(fault.status, *retry), header_stall=fault.header_stall or 0.0)
    answer.header_stall = fault.header_stall or 0.0
    if answer.status >= 300:
        return answer
    if fault.length is not None:
        answer.headers = [(k, fault.length if k == "Content-Length" else v) for k, v in answer.headers]
        answer.close = True
    answer.stall = fault.stall or 0.0
    answer.cut = fault.cut
    answer.drip = fault.drip
    if fault.corrupt:
        answer.body = bytes(b ^ 0xFF for b in answer.body)
    return answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    root: Path
    faults: list[Fault]
    rewrite: Rewrite | None
    requests: list[tuple[str, str, str | None]]
    lock: threading.Lock
    authorization: str | None  # the Authorization header a read needs (None: none)

    def handle_error(self, request: object, client_address: object) -> None:
        """A client hanging up mid-body (a download cut short on purpose, a loader closed) is expected in these
        tests: not printed. Any other error of a request still is."""
        if isinstance(sys.exc_info()[1], ConnectionError):  # BrokenPipeError, ConnectionResetError
            return
        super().handle_error(request, client_address)


class FileServer:
    """Serve `root` read-only on 127.0.0.1 in a background thread; stops on exit of the `with` block."""

    def __init__(self, root: Path | str) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.root = Path(root).resolve()
        self._server.faults = []
        self._server.rewrite = None
        self._server.requests = []
        self._server.lock = threading.Lock()
        self._server.authorization = None
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-http", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    @property
    def faults(self) -> list[Fault]:
        return self._server.faults

    def require_authorization(self, value: str | None) -> None:
        """Answer 401 to every read without `Authorization: value` (None: serve everyone)."""
        self._server.authorization = value

    @property
    def rewrite(self) -> Rewrite | None:
        return self._server.rewrite

    @rewrite.setter
    def rewrite(self, fn: Rewrite | None) -> None:
        self._server.rewrite = fn

    @property
    def requests(self) -> list[tuple[str, str, str | None]]:
        return self._server.requests

    def count(self, method: str, suffix: str = "") -> int:
        """How many `method` requests were served for paths ending with `suffix`."""
        return sum(1 for m, path, _ in self.requests if m == method and path.endswith(suffix))

    def gets(self, suffix: str = "") -> int:
        """How many GET requests were served for paths ending with `suffix`."""
        return self.count("GET", suffix)

    def __enter__(self) -> FileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


if __name__ == "__main__":  # manual use: python tests/http_server.py FOLDER
    with FileServer(sys.argv[1] if len(sys.argv) > 1 else os.getcwd()) as s:
        print(s.url, flush=True)
        threading.Event().wait()
