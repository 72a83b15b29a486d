"""Find the image-caption pairs of a source folder.

With a captions file (`--captions`), its rows name the images, relative to SRC; an image may have several
rows (COCO has five captions an image). Without one, Hugging Face ImageFolder metadata files (`metadata.jsonl`,
`.csv` or `.parquet`, at the top or in a split folder: diffusers' text-to-image layout) name the images relative to
their own folder; without those, an image with a same-stem `.txt` beside it (`x.jpg` + `x.txt`, the WebDataset
convention, one caption per non-blank line) is a pair. A path whose
first folder is `train`, `val` or `test` belongs to that split, any other to `--split`.

Nothing is dropped silently: an image without a caption, a caption without an image, an empty caption
and a row naming a path outside SRC are rejections with their reasons.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace
from pathlib import Path

from converters.image_text.captions import (
    NO_FIELDS,
    CaptionRow,
    Fields,
    names_files_and_captions,
    normalize_caption,
    read_captions,
    split_named,
)
from converters.images.labels_csv import EXTENSIONS
from converters.kind import Discovery
from converters.metadata_files import METADATA
from converters.sample import Rejection, WorkItem
from converters.spill import SpillRef
from converters.tree import split_of_folder, under_source
from converters.walk import Walk, display
from fastdata.errors import ConvertError

MAX_TXT_BYTES = 1 << 16  # a caption sidecar larger than this is not a caption


@dataclass(frozen=True)
class Captions:
    """The payload of a pair's work item: every caption of the image, in file order; the image's bytes in the spill
    file when it came from a table (tables.py; None: the work item's source is the image file)."""

    texts: tuple[str, ...]
    image: SpillRef | None = None


def _split_of(rel: str, default: str) -> str:
    """The split of a path under the source: its first folder's, when that is a split folder (tree.py)."""
    first = rel.split("/", 1)[0]
    return (split_of_folder(first) or default) if "/" in rel else default


def _clean_rel(path: str, src: Path) -> str | None:
    """`path` as a normalised relative POSIX path, or None when it would leave the source folder (an absolute path
    under `src` is taken relative to it: `under_source`)."""
    p = under_source(path.replace("\\", "/").strip(), src)
    if not p or p.startswith("/") or (len(p) > 1 and p[1] == ":"):
        return None
    norm = posixpath.normpath(p)
    if norm == "." or norm == ".." or norm.startswith("../"):
        return None
    return norm


class _Pairs:
    """What discovery gathers: captions per image (by relative path), the rejections, the source identity."""

    def __init__(self, src: Path, split: str, follow: bool) -> None:
        self.src, self.split = src, split
        self.walk = Walk(follow=follow)
        self.images: dict[str, Path] = {}  # rel -> path, every regular image file of the tree
        self.others: dict[str, Path] = {}  # rel -> path, every other regular file
        self.rejected: list[Rejection] = []
        self.row_split: dict[str, str] = {}  # rel -> the split its rows give (Karpathy's split files)
        for path, problem in self.walk.files(src, root=src):
            rel = display(path.relative_to(src).as_posix())
            if problem is not None:
                self.rejected.append(Rejection(_split_of(rel, split), rel, problem))
            elif path.suffix.lower() in EXTENSIONS:
                self.images[rel] = path
            else:
                self.others[rel] = path

    def reject(self, rel: str, reason: str) -> None:
        self.rejected.append(Rejection(_split_of(rel, self.split), rel, reason))


def _from_file(pairs: _Pairs, captions_file: Path, fields: Fields) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    rows = read_captions(captions_file, fields)
    if not rows:
        raise ConvertError(f"captions file {captions_file} holds no rows")
    for row in rows:
        _take_row(pairs, row, found, captions_file.name)
    for rel in pairs.images:
        if rel not in found:
            pairs.reject(rel, f"no caption: not named in {captions_file.name}")
    for rel in pairs.others:
        pairs.reject(rel, f"not an image ({', '.join(EXTENSIONS)})")
    return found


def _take_row(pairs: _Pairs, row: CaptionRow, found: dict[str, list[str]], name: str) -> None:
    rel = _clean_rel(row.path, pairs.src)
    if rel is None:
        shown = row.path or "(empty)"
        pairs.rejected.append(Rejection(pairs.split, f"{row.where}: {shown}",
                                        "path outside the source folder (empty, with '..', or absolute and not "
                                        "under it): refused"))
        return
    caption = normalize_caption(row.caption)
    if rel not in pairs.images:
        why = ("not an image" if rel in pairs.others else "no such image in the source")
        pairs.reject(f"{rel} ({row.where})", f"caption without an image: {why}")
        return
    if not caption:
        pairs.reject(f"{rel} ({row.where})", "empty caption")
        return
    if row.split is not None:
        s = split_named(row.split)
        if s is None:
            pairs.reject(f"{rel} ({row.where})", f"no split name: {row.split!r} (train, val, test, restval)")
            return
        if pairs.row_split.setdefault(rel, s) != s:
            pairs.reject(f"{rel} ({row.where})", f"in two splits: {pairs.row_split[rel]} before, {s} here")
            return
    found.setdefault(rel, []).append(caption)


def _read_sidecar(path: Path) -> tuple[list[str], str | None]:
    """(captions, problem) of a `.txt` sidecar: one caption per non-blank line."""
    try:
        size = path.stat().st_size
        if size > MAX_TXT_BYTES:
            return [], f"caption file of {size} bytes, over the {MAX_TXT_BYTES} bytes a caption file may have"
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        return [], f"unreadable caption file: {exc.strerror or exc}"
    except UnicodeDecodeError as exc:
        return [], f"caption file is not UTF-8 text: {exc}"
    return [c for c in (normalize_caption(line) for line in text.splitlines()) if c], None


def _from_sidecars(pairs: _Pairs) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    by_stem: dict[str, str] = {}
    for rel in pairs.images:
        stem = posixpath.splitext(rel)[0]
        if stem in by_stem:
            pairs.reject(rel, f"another image ({by_stem[stem]}) has the same stem: which one does "
                              f"{stem}.txt describe?")
            pairs.reject(by_stem[stem], f"another image ({rel}) has the same stem")
            found.pop(by_stem[stem], None)
            continue
        by_stem[stem] = rel
        txt = f"{stem}.txt"
        if txt not in pairs.others:
            pairs.reject(rel, f"no caption: no {posixpath.basename(txt)} beside it")
            continue
        captions, problem = _read_sidecar(pairs.others[txt])
        if problem is not None or not captions:
            pairs.reject(rel, problem or f"empty caption ({posixpath.basename(txt)} holds no text)")
            continue
        found[rel] = captions
    for rel in pairs.others:
        stem, ext = posixpath.splitext(rel)
        if ext.lower() != ".txt":
            pairs.reject(rel, f"not an image ({', '.join(EXTENSIONS)}) or a caption (.txt)")
        elif stem not in by_stem:
            pairs.reject(rel, "caption without an image (no image with the same stem)")
    return found


def metadata_files(rels: list[str]) -> list[str]:
    """The Hugging Face ImageFolder metadata files among the paths `rels` (`metadata.jsonl` at the top or in a split
    folder), shallowest first."""
    return sorted((r for r in rels if posixpath.basename(r) in METADATA), key=lambda r: (r.count("/"), r))


def _from_metadata(pairs: _Pairs, files: list[str], fields: Fields) -> dict[str, list[str]]:
    """Captions from Hugging Face ImageFolder metadata files: each row's `file_name` is relative to the folder of
    its metadata file."""
    found: dict[str, list[str]] = {}
    for rel in files:
        folder = posixpath.dirname(rel)
        for row in read_captions(pairs.others[rel], fields):
            path = row.path.replace("\\", "/").strip()
            named = posixpath.join(folder, path) if folder and path else path
            _take_row(pairs, replace(row, path=named), found, rel)
    for rel in pairs.images:
        if rel not in found:
            pairs.reject(rel, f"no caption: not named in a metadata file ({', '.join(files)})")
    for rel in pairs.others:
        if rel not in files:
            pairs.reject(rel, f"not an image ({', '.join(EXTENSIONS)}) or a metadata file ({', '.join(METADATA)})")
    return found


def discover_pairs(src: Path, /, *, captions: str | None, split: str, follow_symlinks: bool = True,
                   fields: Fields = NO_FIELDS) -> Discovery:
    """The pairs of `src` per split, in path order (see the module docstring). `fields`: the file and caption columns
    of the captions file or metadata by name (--image-field, --caption-field)."""
    if not src.is_dir():
        raise ConvertError(f"source {src} is not a directory")
    pairs = _Pairs(src, split, follow_symlinks)
    meta = [r for r in metadata_files(list(pairs.others))  # read when no --captions names the file; metadata of
            if names_files_and_captions(pairs.others[r], fields)]  # labels only (`file_name,label`): no captions
    if not captions and not meta and fields != NO_FIELDS:
        raise ValueError("--image-field and --caption-field name the columns of a captions file (--captions), of "
                         f"Hugging Face metadata or of Parquet or Arrow tables; {src} holds none with them")
    found = (_from_file(pairs, Path(captions), fields) if captions else _from_metadata(pairs, meta, fields) if meta
             else _from_sidecars(pairs))
    items: dict[str, list[WorkItem]] = {}
    identity: list[list[object]] = []
    for rel in sorted(found):
        s = pairs.row_split.get(rel) or _split_of(rel, split)
        texts = tuple(found[rel])
        items.setdefault(s, []).append(WorkItem(split=s, rel=rel, source=str(pairs.images[rel]),
                                                payload=Captions(texts)))
        identity.append([s, rel, _size(pairs.images[rel]), list(texts)])
    layout = "captions-file" if captions else "metadata" if meta else "sidecar-txt"
    return Discovery(items, (), pairs.rejected, layout, identity)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1
