"""What a user may name as shards: one file, a glob (`shards/train-*.tar`), a brace pattern
(`shards/train-{000000..000099}.tar`, as WebDataset writes them), or a list of these; expanded here,
once, into the files they name, in a stable order."""

from __future__ import annotations

import glob
import math
import os
import re
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastdata.errors import ManifestError
from fastdata.reasons import shown_names

_BRACE = re.compile(r"\{[^{}]*(\.\.|,)[^{}]*\}")
_INT_RANGE = re.compile(r"\{(-?\d+)\.\.(-?\d+)(?:\.\.-?(\d+))?\}")
_LIST = re.compile(r"\{([^{}]*,[^{}]*)\}")
MAX_NAMES = 1_000_000  # files one brace pattern may name (the largest public WebDataset sets have ~250k shards)

Spec = str | Path | Sequence[str | Path]


def is_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def is_brace(text: str) -> bool:
    return bool(_BRACE.search(text))


def is_pattern(text: str) -> bool:
    return is_glob(text) or is_brace(text)


def _number(text: str) -> int | None:
    """The integer a range bound or step writes; None past 18 significant digits (past any shard count) or 1,000
    characters of padding (int() refuses past 4,300 digits)."""
    if len(text) > 1000 or len(text.lstrip("-").lstrip("0")) > 18:
        return None
    return int(text)


def _range_size(start: str, end: str, step: str) -> int:
    """The names `{start..end..step}` stands for, as braceexpand counts them. Lengths alone misjudged a zero-padded
    step: `{0..999999999999..0000000000000000001}` (19 characters, a step of 1) was counted as one name a million,
    so braceexpand was left to build 10**12 of them."""
    first, last = _number(start), _number(end)
    if first is None or last is None:
        return MAX_NAMES + 1
    stride = _number(step) if step else 1
    if stride is None:  # a step past any range: its first name alone
        return 1
    return abs(last - first) // max(stride, 1) + 1


def _range_sizes(text: str) -> int:
    """The product of the sizes of the innermost brace groups of a pattern (a range's length, a list's items): the
    files it names, or more when groups nest as alternatives (`{a{0..9},b{0..9}}`); counted before braceexpand
    builds them."""
    sizes = [_range_size(*found) for found in _INT_RANGE.findall(text)]
    sizes += [group.count(",") + 1 for group in _LIST.findall(text)]
    return math.prod(sizes)


def brace_names(text: str) -> list[str]:
    """The names a brace pattern (local or a URL's) stands for; ManifestError past MAX_NAMES, counted first:
    braceexpand builds every range whole, and '{0..999999999}' is a typo."""
    from braceexpand import braceexpand

    if _range_sizes(text) > MAX_NAMES:
        raise ManifestError(f"the pattern {text!r} names more than {MAX_NAMES:,} files; check the range (a "
                            "digit too many?)")
    return list(braceexpand(text))


def _existing_folder(name: str, special: Callable[[str], bool]) -> int:
    """The length of `name`'s longest leading folder that exists and has `special` characters; 0 when none."""
    for cut in reversed([i for i, ch in enumerate(name) if ch == os.sep]):
        if special(name[:cut]) and os.path.isdir(name[:cut]):
            return cut
    return 0


def _folder_taken_literally(name: str) -> str:
    """`name` with its longest leading folder that exists and holds glob characters escaped
    (`runs/exp[1]/train-*.tar` -> `runs/exp[[]1]/train-*.tar`)."""
    cut = _existing_folder(name, is_glob)
    return glob.escape(name[:cut]) + name[cut:]


def _brace_names(text: str) -> list[str]:
    """brace_names, with a leading folder that exists read literally (`run{a,b}/train-{0..9}.tar`)."""
    cut = _existing_folder(text, lambda folder: "{" in folder or "}" in folder)
    return brace_names(re.sub(r"([{}\\])", r"\\\1", text[:cut]) + text[cut:])


def expand_pattern(text: str) -> list[Path]:
    """The files a glob and/or brace pattern names; ManifestError when it names none or a missing file. A pattern
    that is the name of an existing path (`run{a,b}/`, `exp[1]/`) names that path, and so does a leading folder."""
    if os.path.lexists(text):
        return [Path(text)]
    names = _brace_names(text) if is_brace(text) else [text]
    found: list[Path] = []
    missing = []
    for name in names:
        if is_glob(name):
            found.extend(Path(p) for p in sorted(glob.glob(_folder_taken_literally(name))))
        elif Path(name).exists():
            found.append(Path(name))
        else:
            missing.append(name)
    if missing:
        shown = shown_names(missing)
        raise ManifestError(f"the pattern {text!r} names {len(missing)} file(s) that do not exist ({shown}); "
                            "check the range and the folder")
    if not found:
        raise ManifestError(f"the pattern {text!r} matches no file; check the path and the pattern")
    return list(dict.fromkeys(found))


def local_path(text: str) -> str:
    """A `file://` URL's path (as WebDataset and fsspec take them), else `text` itself."""
    if text[:7].lower() != "file://":
        return text
    parts = urllib.parse.urlsplit(text)
    if parts.netloc not in ("", "localhost"):
        raise ManifestError(f"{text!r} names a file on host {parts.netloc!r}; a file:// URL names a path on this "
                            "machine (file:///path)")
    return urllib.request.url2pathname(parts.path)


def split_joined(spec: Any) -> Any:
    """`spec` as a list when it is a str joining sources with `::`, as WebDataset takes them
    (`'a-{000..009}.tar::b-{000..004}.tar'`); anything else, and a path that exists with `::` in its name, as it is."""
    if isinstance(spec, str) and "::" in spec and not os.path.lexists(spec):
        parts = re.split(r"::(?![^\[\]]*\])", spec)  # not inside brackets: an IPv6 host, http://[::1]:8000/
        if len(parts) > 1 and all(part.strip() for part in parts):
            return parts
    return spec


def plain(spec: Any) -> Any:
    """`spec` with each path-like object that is neither a str nor a Path (pytest's `tmpdir`, another library's
    path) as the Path it names, in a list or tuple too; anything else as it is (a path-like naming bytes stays, to be
    refused)."""
    if isinstance(spec, os.PathLike) and not isinstance(spec, Path):
        named = os.fspath(spec)
        return Path(named) if isinstance(named, str) else spec
    if isinstance(spec, list | tuple):
        return type(spec)(plain(item) for item in spec)
    return spec


def expand(spec: Spec) -> list[Path]:
    """Every file or folder `spec` names: a path stays itself, a pattern expands, a list concatenates."""
    if isinstance(spec, str) and spec.startswith("pipe:") and not os.path.lexists(spec):
        raise ManifestError(f"{spec[:120]!r}: WebDataset's pipe: sources stream a tar through a command, and fastdata "
                            "reads shards at random offsets: pass the URL the command reads (s3://, gs://, az://, "
                            "https://, with a brace pattern) or a local path")
    if isinstance(spec, str | Path):
        text = os.path.expanduser(local_path(str(spec)))  # a quoted '~/shards/{0..9}.tar' reaches us unexpanded
        return expand_pattern(text) if is_pattern(text) else [Path(text)]
    if not isinstance(spec, Sequence) or isinstance(spec, bytes | bytearray) or not spec:
        raise TypeError(f"a source is a path, a pattern or a non-empty list of them, got {spec!r}")
    out: list[Path] = []
    for item in spec:
        if not isinstance(item, str | Path):
            raise TypeError(f"a source list holds paths or patterns, got {type(item).__name__}: {item!r}")
        out.extend(expand(item))
    return list(dict.fromkeys(out))
