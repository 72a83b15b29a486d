"""The text of a small list file a dataset ships (VOC's `ImageSets/Main/*.txt`, FGVC-Aircraft's variant lists):
refused past a size no such list reaches, or when it is not UTF-8, naming the file."""

from __future__ import annotations

from pathlib import Path

from fastdata.errors import ConvertError


def list_text(path: Path, limit: int, what: str) -> str:
    """The UTF-8 text of `path`; ConvertError past `limit` bytes (more than `what` holds) or for one unreadable."""
    size = path.stat().st_size
    if size > limit:
        raise ConvertError(f"{path}: {size} bytes, more than {what} holds")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConvertError(f"cannot read {path}: {exc}") from exc


def first_line(path: Path) -> str:
    """The first line of `path` (its first 4 KB at most) as text, without a UTF-8 byte order mark or surrounding
    blanks: what a dataset's own file shows of itself, read to tell whether a source is that dataset."""
    with open(path, "rb") as f:
        return f.readline(4096).decode("utf-8", "replace").lstrip("\ufeff").strip()
