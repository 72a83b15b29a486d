"""A read-only HTTP file server on 127.0.0.1 (standard library) with Range support and scripted faults,
for the remote-dataset tests: 503/429 + Retry-After, bodies cut short, stalls, wrong bytes, 403/404.

    with FileServer(folder) as server:           # port 0: the OS picks a free port
        server.faults.append(Fault("train-000000.tar", status=503, retry_after=1, times=2))
        url = server.url                         # http://127.0.0.1:PORT/
        server.requests                          # every (method, path, range header) served, in order
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from dataclasses import dataclass
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
    corrupt: bool = False  # flip the bits of the body (same length)
    length: str | None = None  # send this Content-Length header (a forged one) and close after the body
    times: int = 1
    method: str = "GET"


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

    def _serve(self, *, body: bool) -> None:
        with self.server.lock:
            self.server.requests.append((self.command, self.path, self.headers.get("Range")))
        fault = self._fault()
        if fault is not None and fault.status is not None:
            self.send_response(fault.status)
            if fault.retry_after is not None:
                self.send_header("Retry-After", str(fault.retry_after))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path = (self.server.root / self.path.split("?", 1)[0].lstrip("/")).resolve()
        if self.server.root not in path.parents or not path.is_file():
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = path.stat().st_size
        start, end = 0, size
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range") or "")
        if match:
            if match.group(1):
                start = int(match.group(1))
                end = min(size, int(match.group(2)) + 1) if match.group(2) else size
            else:
                start, end = max(0, size - int(match.group(2))), size
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(end - start) if fault is None or fault.length is None else fault.length)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Last-Modified", self.date_time_string(path.stat().st_mtime))
        self.send_header("ETag", f'"{size}-{path.stat().st_mtime_ns}"')
        self.end_headers()
        if not body:
            self.close_connection = fault is not None and fault.length is not None
            return
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(end - start)
        if fault is not None and fault.stall:
            time.sleep(fault.stall)
        if fault is not None and fault.corrupt:
            data = bytes(b ^ 0xFF for b in data)
        if fault is not None and fault.length is not None:
            self.close_connection = True  # the client cannot know where the body ends
        if fault is not None and fault.cut is not None:
            self.wfile.write(data[:fault.cut])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    root: Path
    faults: list[Fault]
    requests: list[tuple[str, str, str | None]]
    lock: threading.Lock

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
        self._server.requests = []
        self._server.lock = threading.Lock()
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-http", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    @property
    def faults(self) -> list[Fault]:
        return self._server.faults

    @property
    def requests(self) -> list[tuple[str, str, str | None]]:
        return self._server.requests

    def gets(self, suffix: str = "") -> int:
        """How many GET requests were served for paths ending with `suffix`."""
        return sum(1 for method, path, _ in self.requests if method == "GET" and path.endswith(suffix))

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
