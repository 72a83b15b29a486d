"""Dataset locations: a local path or a URL (`s3://`, `gs://`, `az://`, `https://`, `http://`)."""

from __future__ import annotations

import posixpath
import re
import urllib.parse
from pathlib import Path

REMOTE_SCHEMES = ("s3", "s3a", "gs", "az", "azure", "abfs", "abfss", "http", "https")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")


def scheme_of(location: object) -> str | None:
    """The URL scheme of `location` (lower case), or None for a local path."""
    if isinstance(location, Path) or not isinstance(location, str):
        return None
    m = _SCHEME.match(location)
    return m.group(1).lower() if m else None


def is_url(location: object) -> bool:
    """Whether `location` names remote storage (a local path or `file://` is not)."""
    scheme = scheme_of(location)
    if scheme is None or scheme == "file":
        return False
    if scheme not in REMOTE_SCHEMES:
        raise ValueError(f"unsupported URL scheme {scheme!r} in {location!r}; fastdata reads "
                         f"{', '.join(s + '://' for s in REMOTE_SCHEMES)} and local paths")
    return True


def all_urls(items: list[object]) -> bool | None:
    """True when every item names remote storage, False when none does, None when they mix (the shards of one
    dataset lie in one place: each caller refuses that in its own words)."""
    remote = [is_url(item) for item in items]
    if any(remote) and not all(remote):
        return None
    return bool(remote) and all(remote)


def folder_url(url: str) -> str:
    """`url` as a folder: with exactly one trailing slash."""
    return url.rstrip("/") + "/"


def split(url: str) -> tuple[str, str]:
    """(folder URL, last name) of a file URL."""
    base, _, name = url.rstrip("/").rpartition("/")
    return folder_url(base), name


def folder_at(base: str, ref: str) -> str:
    """The folder URL `ref` names from the folder URL `base`: `ref` itself when it is a URL, else `ref` as a path
    relative to `base` (`../shards/`), on `base`'s bucket or host. `urllib.parse.urljoin` resolves relative
    references only for the schemes it knows: for s3://, gs:// and az:// it returned `../shards/` as it was."""
    if _SCHEME.match(ref):
        return folder_url(ref)
    parts = urllib.parse.urlsplit(base)
    path = posixpath.normpath(posixpath.join(parts.path or "/", ref))
    return folder_url(urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", "")))
