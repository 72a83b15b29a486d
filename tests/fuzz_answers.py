"""Seeded hostile HTTP answers for the `remote` fuzz target (tests/mutation_fuzz.py): what a broken proxy, a
misconfigured CDN or a hostile server sends instead of the honest answer of tests/http_server.py.

`hostile(rng, base_url, whole)` draws one rewrite for a case, `rewrite(method, path, range, answer) -> answer`,
applied to the requests for one file of the dataset (the first `times` of them). Statuses that mean nothing here,
redirects (to the same file elsewhere, in a loop, to a closed port, to another scheme), forged
Content-Length / Content-Range / Retry-After headers, bodies cut, stretched, flipped, stalled or dripped, a range
ignored or answered from the wrong offset, bodies declared chunked or gzip that are neither (or are).

Every draw is a pure function of a `random.Random`, so (seed, case) reproduces it exactly."""

from __future__ import annotations

import gzip
import random
import threading
from collections.abc import Callable
from dataclasses import replace

from fuzz_mutators import flip_bits
from http_server import Answer

ODD_STATUS = (200, 201, 202, 203, 204, 205, 206, 226, 300, 304, 400, 401, 405, 406, 407, 409, 410, 411, 412,
              413, 414, 415, 416, 417, 418, 421, 422, 425, 426, 428, 431, 451, 501, 505, 511)
ODD_NUMBERS = ("-1", "0", "1", "", " ", "abc", "1e3", "0x10", "١٢", "99999999999999999999999", "18446744073709551616",
               "nan", "inf", "+5", "5 5", "٣")


def _set(headers: list[tuple[str, str]], name: str, value: str | None) -> list[tuple[str, str]]:
    """The headers with `name` replaced by `value` (removed when None), in place of the first one."""
    out, done = [], False
    for k, v in headers:
        if k.lower() != name.lower():
            out.append((k, v))
        elif not done and value is not None:
            out.append((k, value))
            done = True
    if not done and value is not None:
        out.append((name, value))
    return out


def _chunked(data: bytes, sizes: Callable[[int], str]) -> bytes:
    """`data` in chunked transfer coding, each chunk's size line written by `sizes(length)`."""
    pieces = [data[i:i + 4096] for i in range(0, len(data), 4096)]
    return b"".join(sizes(len(p)).encode() + b"\r\n" + p + b"\r\n" for p in pieces) + b"0\r\n\r\n"


def _status(rng: random.Random) -> tuple[Callable[[Answer], Answer], str]:
    code = rng.choice(ODD_STATUS)
    keep_body = rng.random() < 0.5
    return (lambda a: replace(a, status=code) if keep_body else Answer(code, [("Content-Length", "0")]),
            f"status {code}{' with the body' if keep_body else ''}")


def _retry_after(rng: random.Random) -> tuple[Callable[[Answer], Answer], str]:
    code = rng.choice((429, 503, 500, 408))
    value = rng.choice(ODD_NUMBERS + ("Wed, 21 Oct 2015 07:28:10 GMT", "Fri, 31 Dec 9999 23:59:59 GMT",
                                      "Sun, 06 Nov 1994 08:49:37 XYZ", "1.5", "0.01"))
    return lambda a: Answer(code, [("Retry-After", value), ("Content-Length", "0")]), f"{code} Retry-After {value!r}"


def _redirect(rng: random.Random, base: str) -> tuple[Callable[[Answer, str, str | None], Answer], str]:
    code = rng.choice((301, 302, 303, 307, 308))
    where = rng.choice(("moved", "loop", "closed port", "other scheme", "none", "relative", "empty"))

    def to(a: Answer, path: str, _requested: str | None) -> Answer:
        location = {"moved": f"{base.rstrip('/')}{path}?moved", "loop": f"{base.rstrip('/')}{path}",
                    "closed port": f"http://127.0.0.1:9{path}", "other scheme": f"ftp://127.0.0.1{path}",
                    "relative": f"{path.rsplit('/', 1)[-1]}?moved", "empty": "", "none": None}[where]
        headers = [("Content-Length", "0")] + ([("Location", location)] if location is not None else [])
        return Answer(code, headers)

    return to, f"redirect {code} ({where})"


def _length(rng: random.Random) -> tuple[Callable[[Answer], Answer], str]:
    how = rng.choice(("shorter", "longer", "odd", "twice", "none"))
    delta = rng.randint(1, 5000)

    def forge(a: Answer) -> Answer:
        n = len(a.body)
        if how == "twice":
            return replace(a, headers=a.headers + [("Content-Length", str(n + delta))], close=True)
        value = {"shorter": str(max(0, n - delta)), "longer": str(n + delta), "none": None}.get(how, odd)
        return replace(a, headers=_set(a.headers, "Content-Length", value), close=True)

    odd = rng.choice(ODD_NUMBERS)
    return forge, f"Content-Length {how}{f' {odd!r}' if how == 'odd' else f' by {delta}'}"


def _cut_first(at: float) -> Callable[[Answer, str | None], Answer]:
    """The first answer to a request without a Range cut short at fraction `at` of its body (once: a transient
    fault), so that the client asks for the rest with one: what the range forgeries below need to be reached."""
    done = [False]

    def cut(a: Answer, requested: str | None) -> Answer:
        if done[0] or requested is not None or a.status != 200:
            return a
        done[0] = True
        return replace(a, cut=int(len(a.body) * at))

    return cut


def _content_range(rng: random.Random) -> tuple[Callable[[Answer, str, str | None], Answer], str]:
    how = rng.choice(("offset", "total", "garbage", "none", "on a whole answer"))
    cut_first = _cut_first(rng.random())
    delta = rng.choice((-4096, -1, 1, 512, 10**6))
    junk = rng.choice(("bytes */5", "bytes 0-0/0", "items 0-1/2", "bytes 5-1/9", "bytes", "bytes -1-3/4", "٣"))

    def forge(a: Answer, _path: str, requested: str | None) -> Answer:
        found = a.header("Content-Range")
        if how == "on a whole answer":
            return replace(a, status=206, headers=_set(a.headers, "Content-Range", f"bytes 0-{len(a.body) - 1}/"
                                                                                   f"{len(a.body)}"))
        if found is None:
            return cut_first(a, requested)
        first, rest = found.removeprefix("bytes ").split("-", 1)
        last, total = rest.split("/")
        value = {"offset": f"bytes {int(first) + delta}-{int(last) + delta}/{total}",
                 "total": f"bytes {first}-{last}/{int(total) + delta}", "garbage": junk, "none": None}[how]
        return replace(a, headers=_set(a.headers, "Content-Range", value))

    return forge, f"Content-Range {how} ({delta if how in ('offset', 'total') else junk})"


def _range_answer(rng: random.Random, whole: Callable[[str], bytes]) -> tuple[Callable[[Answer, str, str | None],
                                                                                       Answer], str]:
    """A range request answered from the wrong place: the whole file (200 or 206), or bytes from another offset
    with an honest-looking Content-Range for the offset asked."""
    how = rng.choice(("whole as 200", "whole as 206", "wrong offset"))
    shift = rng.choice((-100, -1, 1, 7, 4096))
    cut_first = _cut_first(rng.random())

    def answer(a: Answer, path: str, requested: str | None) -> Answer:
        if a.status != 206:
            return cut_first(a, requested)
        data = whole(path)
        if how == "whole as 200":
            return Answer(200, [("Content-Length", str(len(data)))], data)
        if how == "whole as 206":
            return replace(a, body=data, headers=_set(a.headers, "Content-Length", str(len(data))))
        start = len(data) - len(a.body)
        moved = data[max(0, start + shift):][:len(a.body)]
        return replace(a, body=moved, headers=_set(a.headers, "Content-Length", str(len(moved))))

    return answer, f"range answered {how}{f' ({shift})' if how == 'wrong offset' else ''}"


def _body(rng: random.Random) -> tuple[Callable[[Answer], Answer], str]:
    how = rng.choice(("cut", "flipped", "appended", "empty", "stalled", "stalled long", "dripped", "chunked raw",
                      "chunked bad sizes", "chunked", "gzip", "gzip claimed", "deflate claimed"))
    at = rng.random()
    seed = rng.randrange(1 << 30)
    extra = bytes(rng.randrange(256) for _ in range(rng.choice((1, 10, 5000))))

    def change(a: Answer) -> Answer:
        n = len(a.body)
        if how == "cut":
            return replace(a, cut=int(n * at))
        if how == "flipped" and n:
            return replace(a, body=flip_bits(random.Random(seed), a.body)[0])
        if how == "appended":
            return replace(a, body=a.body + extra, headers=_set(a.headers, "Content-Length", str(n + len(extra))))
        if how == "empty":
            return replace(a, body=b"", headers=_set(a.headers, "Content-Length", "0"))
        if how.startswith("stalled"):
            return replace(a, stall=0.2 + at * (1.5 if how == "stalled long" else 0.2))
        if how == "dripped":  # never silent for a read timeout, too slow to end: 1-64 bytes every 0.05 s
            return replace(a, drip=(1 + int(at * 63), 0.05))
        if how.startswith("chunked"):
            body = a.body if how == "chunked raw" else _chunked(
                a.body, (lambda k: f"{k:x}") if how == "chunked" else (lambda k: f"{k + 3:x}" if at < 0.5 else "zz"))
            return replace(a, body=body, headers=_set(a.headers, "Content-Length", None) + [
                ("Transfer-Encoding", "chunked")], close=True)
        if how == "gzip":
            body = gzip.compress(a.body, mtime=0)
            return replace(a, body=body, headers=_set(a.headers, "Content-Length", str(len(body))) + [
                ("Content-Encoding", "gzip")])
        if how in ("gzip claimed", "deflate claimed"):
            return replace(a, headers=a.headers + [("Content-Encoding", how.split()[0])])
        return a

    return change, f"body {how}"


LAWFUL = ("(moved)", "(relative)", "body chunked,", "whole as 200")  # what an honest server may do: must work


def hostile(rng: random.Random, base: str, whole: Callable[[str], bytes]) -> tuple[Callable, str, bool, bool]:
    """One case's rewrite of the requests for one file: (rewrite, what it does, whether it changes the bytes the
    client may take for the file's: a body flipped or gzip-claimed, where only a recorded checksum can tell,
    and whether it is lawful HTTP that a client must follow to the same bytes: a redirect to a copy, a
    chunked body, a range answered with the whole file)."""
    kind = rng.choice(("status", "retry-after", "redirect", "length", "content-range", "range", "body", "body"))
    times = rng.choice((1, 1, 2, 3, 10**9))
    if kind == "redirect":
        change, what = _redirect(rng, base)
    elif kind == "range":
        change, what = _range_answer(rng, whole)
    elif kind == "content-range":
        change, what = _content_range(rng)
    else:
        plain, what = {"status": _status, "retry-after": _retry_after, "length": _length, "body": _body}[kind](rng)
        change = (lambda p: lambda a, _path, _requested: p(a))(plain)
    lock = threading.Lock()
    left = [times]

    def rewrite(method: str, path: str, requested: str | None, answer: Answer) -> Answer:
        if "?moved" in path:
            return answer  # the honest copy a redirect pointed to
        with lock:
            if left[0] <= 0:
                return answer
            left[0] -= 1
        return change(answer, path.split("?", 1)[0], requested)

    changes_bytes = any(w in what for w in ("flipped", "claimed", "appended", "wrong offset", "Content-Range"))
    what = f"{what}, {'always' if times > 100 else f'{times} time(s)'}"
    return rewrite, what, changes_bytes, any(w in what for w in LAWFUL)
