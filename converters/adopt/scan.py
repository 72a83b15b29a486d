"""Scan one WebDataset tar made by another tool: its samples as `wds2idx` groups them, what each
holds, and every member or sample that cannot be used, with the reason.

One sequential pass reads the whole file (its sha256 comes from the same bytes); only image headers
and label members are parsed, nothing is extracted to disk and no member name becomes a path.
Grouping follows `wds2idx` exactly (regular files only, key = name up to the first dot after the last
slash, consecutive members with one key form a sample, hidden names skipped), so the index of a clean
tar is byte for byte the one `wds2idx` writes; unusable samples are left out of it and recorded.
"""

from __future__ import annotations

import hashlib
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from PIL import UnidentifiedImageError

from converters.walk import display
from fastdata.atomic import read_json, write_json_atomic
from fastdata.images.pixels import decode_problem, open_image, orientation_of
from fastdata.label_members import (
    JSON_LABEL_FIELDS,
    MAX_JSON_BYTES,
    MAX_LABEL_BYTES,
    field_label,
    field_texts,
    json_record,
    label_text,
)
from fastdata.pairs.members import MAX_CAPTION_BYTES, caption_lines
from fastdata.wds_index import DECOMPRESS, Member, compression, split_name

IMAGE_EXTS = ("jpg", "jpeg", "png", "webp", "bmp", "tif", "tiff")  # compared in lower case
LABEL_EXTS = ("cls", "class", "label")
JSON_EXT = "json"  # a sample's metadata; its label, cls or class field (or --label-field) labels a sample without
# a label member
HEADER_BYTES = 1 << 16  # image bytes read for the header (all of it when --decode)
TEXT_MEMBER = "txt"  # a sample's caption in img2dataset / OpenCLIP shards
SCAN_VERSION = 7  # saved scans of another version are scanned again (2: captions checked, 3: names not UTF-8,
# 4: --decode decodes strictly, as convert and verify --decode do, 5: EXIF orientation read, 6: a label is its text,
# and members are images and labels by their last extension, 7: labels in a json member's field)
SPARSE = ("stored as a GNU sparse file: its bytes are not one span of the tar (the holes are left out), and DALI "
          "and fastdata read a member as the one span its header gives; re-create the tar without --sparse")
NOT_UTF8 = "the name is not UTF-8 (shown with \\xNN; a sample's key is text in the index and the loaders)"


class _Hashing:
    """A read-only file wrapper that hashes and counts every byte tarfile reads through it."""

    def __init__(self, f: BinaryIO) -> None:
        self._f, self.sha, self.pos = f, hashlib.sha256(), 0

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self.sha.update(data)
        self.pos += len(data)
        return data

    def drain(self) -> None:
        while self.read(1 << 20):
            pass


@dataclass
class SampleScan:
    """One sample: its members in tar order, what its image is, its label's text (None without one: an index or a
    class name, as the dataset's labels turn out to be, `assemble`) and where that came from."""

    members: list[Member]
    image: str | None = None  # extension of the image member
    image_format: str = ""  # e.g. "jpeg", "jpeg-progressive", "png"
    label: str | list[str] | None = None  # --multi-label: the text of each class its json member lists
    problem: str | None = None
    caption: str | None = None  # why its caption member is unusable: a problem once the dataset is image_text
    orientation: int = 1  # the EXIF orientation its image's header records (2..8: the stored pixels are not upright)
    label_member: str | None = None  # the extension of the member its label was read from
    label_field: str | None = None  # that member is json: the field holding the label
    unlabeled: str | None = None  # why its json member gave no label: a problem once the dataset is labeled

    @property
    def key(self) -> str:
        return split_name(self.members[0].name)[0]

    def to_dict(self) -> dict[str, Any]:
        return {"members": [[m.ext, m.offset, m.size, m.name] for m in self.members], "image": self.image,
                "format": self.image_format, "label": self.label, "problem": self.problem, "caption": self.caption,
                "orientation": self.orientation, "label_member": self.label_member, "label_field": self.label_field,
                "unlabeled": self.unlabeled}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SampleScan:
        return cls([Member(*m) for m in d["members"]], d["image"], d["format"], d["label"], d["problem"],
                   d["caption"], d["orientation"], d["label_member"], d["label_field"], d["unlabeled"])


@dataclass
class TarScan:
    """Everything `fastdata index` needs from one tar, kept as a JSON record so a rerun resumes."""

    name: str
    bytes: int = 0
    sha256: str = ""
    samples: list[SampleScan] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # member- and file-level findings (reasons)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "bytes": self.bytes, "sha256": self.sha256,
                "samples": [s.to_dict() for s in self.samples], "problems": self.problems}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TarScan:
        return cls(d["name"], d["bytes"], d["sha256"], [SampleScan.from_dict(s) for s in d["samples"]],
                   list(d["problems"]))


def scan_stamp(identity: list[Any], options: Any) -> list[Any]:
    """What a saved scan must match to be reused: the tar's `identity` (its size, and its mtime when local), the
    options a scan depends on, and SCAN_VERSION."""
    return [*identity, options.max_pixels, options.decode, options.label_field, SCAN_VERSION,
            *(["multi_label"] if options.multi_label else [])]


def saved_scan(path: Path, stamp: list[Any]) -> TarScan | None:
    """The scan saved at `path` under `stamp` (`save_scan`), else None."""
    record = read_json(path)
    return TarScan.from_dict(record["scan"]) if isinstance(record, dict) and record.get("stamp") == stamp else None


def save_scan(path: Path, stamp: list[Any], scan: TarScan) -> None:
    write_json_atomic(path, {"stamp": stamp, "scan": scan.to_dict()})


def unsafe_name(name: str) -> str | None:
    """Why a member name cannot be used (index lines are space-separated; nothing may name a path outside)."""
    if name.startswith("/") or name.startswith("\\"):
        return "absolute path"
    if ".." in name.replace("\\", "/").split("/"):
        return "'..' in the path"
    if any(ch.isspace() or ord(ch) < 32 or ch == "\x7f" for ch in name):
        return "whitespace or a control character in the name (the index format separates fields by spaces)"
    return None


def _image_format(data: bytes, *, max_pixels: int, decode: bool) -> tuple[str, str | None, int]:
    """(format, problem, EXIF orientation) of an image member from its first bytes (all of them with decode=True)."""
    orientation = 1
    try:
        with open_image(data) as im:
            width, height = im.size
            orientation = orientation_of(im)
            fmt = (im.format or "unknown").lower()
            if fmt == "jpeg":
                if im.info.get("progressive") or im.info.get("progression"):
                    fmt = "jpeg-progressive"
                elif im.mode == "CMYK":
                    fmt = "jpeg-cmyk"
            if width * height > max_pixels:
                return fmt, (f"decompression bomb: {width}x{height} = {width * height} pixels is over the limit "
                             f"of {max_pixels} (--max-pixels)"), orientation
            if decode:  # strictly, as `fastdata convert` and `verify --decode` do: Pillow loads cut scan data
                problem = decode_problem(data)
                if problem is not None:
                    return fmt, f"not a readable image: {problem}", orientation
    except UnidentifiedImageError:  # its message holds the address of a BytesIO: not for a manifest
        return "", "not a readable image: no known image format signature", 1
    except Exception as exc:  # noqa: BLE001 - any failure to read the image is the finding
        return "", f"not a readable image: {type(exc).__name__}: {exc}", 1
    return fmt, None, orientation


def last_ext(ext: str) -> str:
    """What a member's extension ends with, in lower case: a key written with its file's extension
    (`n01440764_10026.JPEG`) makes webdataset, DALI and wds2idx see the extensions `JPEG.jpg` and `JPEG.cls`."""
    return ext.lower().rsplit(".", 1)[-1]


def _wanted_bytes(ext: str, size: int, decode: bool) -> int:
    """How much of a member the scan reads: an image's header (all of it to decode), a label, a caption, a json
    member that may hold a label, nothing else."""
    if last_ext(ext) in IMAGE_EXTS:
        return size if decode else min(size, HEADER_BYTES)
    if ext == TEXT_MEMBER:
        return min(size, MAX_CAPTION_BYTES)
    if last_ext(ext) == JSON_EXT:
        return min(size, MAX_JSON_BYTES + 1)
    return min(size, MAX_LABEL_BYTES + 1) if last_ext(ext) in LABEL_EXTS else 0


def _caption(sample: SampleScan, data: dict[str, bytes]) -> str | None:
    """Why the sample's caption member cannot be read as the loader reads it (None: usable, or no caption)."""
    member = next((m for m in sample.members if m.ext == TEXT_MEMBER), None)
    if member is None:
        return None
    if member.size > MAX_CAPTION_BYTES:
        return f"its caption member is {member.size} bytes, more than a caption has ({MAX_CAPTION_BYTES})"
    return caption_lines(data[TEXT_MEMBER])[1]


MULTI_LABEL_FIELDS = ("labels", "label")  # --multi-label: a json member's fields that list a sample's classes


def _label(sample: SampleScan, data: dict[str, bytes], exts: list[str], label_field: str | None,
           multi: bool) -> None:
    """Read the sample's label: its label member's text, else (or with `label_field`, only) the label field of its
    json member: `label_field`, else the first of JSON_LABEL_FIELDS it has. A member that holds no usable label
    leaves the reason in `problem` (a label member) or `unlabeled` (a json member: it may hold none). `multi`
    (--multi-label): the list of classes in its json member's `label_field`, else its labels or label field."""
    if multi:
        _classes(sample, data, exts, label_field)
        return
    label_ext = None if label_field is not None else next((e for e in exts if last_ext(e) in LABEL_EXTS), None)
    if label_ext is not None:
        sample.label, sample.problem = label_text(data[label_ext])
        sample.label_member = label_ext
        return
    _from_json(sample, data, exts, label_field, JSON_LABEL_FIELDS, _single_label, "label")


def _single_label(record: dict, field: str) -> tuple[str | None, str | None]:
    """(the label text of `field`, None) or (None, why there is none)."""
    text, why = field_label(record, field)
    return (None, why) if text is None else label_text(text.encode("utf-8", "surrogatepass"))


def _classes(sample: SampleScan, data: dict[str, bytes], exts: list[str], label_field: str | None) -> None:
    """--multi-label: the text of each class the sample's json member lists (`field_texts`)."""
    _from_json(sample, data, exts, label_field, MULTI_LABEL_FIELDS, field_texts, "labels")


def _from_json(sample: SampleScan, data: dict[str, bytes], exts: list[str], label_field: str | None,
               fields: tuple[str, ...], read: Callable[[dict, str], tuple[Any, str | None]], what: str) -> None:
    """The sample's label as `read` takes it from its json member's `label_field`, else the first of `fields` it
    has; why there is none in `unlabeled` (a json member may hold no label)."""
    json_ext = next((e for e in exts if last_ext(e) == JSON_EXT), None)
    if json_ext is None:
        return
    record, why = json_record(data[json_ext])
    field = label_field or next((f for f in fields if f in (record or ())), None)
    if record is not None and field is None:
        why = f"its json member has none of the fields {', '.join(fields)}"
    elif record is not None:
        sample.label, why = read(record, field)
        sample.label_member, sample.label_field = json_ext, field
    sample.unlabeled = None if why is None else f"{why} (read for its {what})"


def _finish(sample: SampleScan, data: dict[str, bytes], *, max_pixels: int, decode: bool,
            label_field: str | None = None, multi_label: bool = False) -> SampleScan:
    if sample.problem is not None:  # a bad member name or a sparse member: nothing of it was read
        return sample
    exts = [m.ext for m in sample.members]
    twice = sorted({e for e in exts if exts.count(e) > 1})
    if twice:
        sample.problem = f"member extension(s) {twice} appear twice in one sample"
        return sample
    image = next((e for e in exts if last_ext(e) in IMAGE_EXTS), None)
    if image is None:
        sample.problem = f"no image member (has {exts}; an image is one of {', '.join(IMAGE_EXTS)})"
        return sample
    sample.image = image
    sample.image_format, sample.problem, sample.orientation = _image_format(data[image], max_pixels=max_pixels,
                                                                            decode=decode)
    if sample.problem is None:
        _label(sample, data, exts, label_field, multi_label)
    sample.caption = _caption(sample, data)
    return sample


def scan_tar(path: Path, *, max_pixels: int, decode: bool = False, label_field: str | None = None,
             multi_label: bool = False) -> TarScan:
    """The samples and findings of the tar at `path` (see the module docstring); `label_field`: the field of a
    json member that holds each sample's label (default: a label member, else a json member's label field);
    `multi_label`: each sample's json member lists its classes (`_classes`)."""
    scan = TarScan(name=path.name)
    with open(path, "rb") as raw:
        packed = compression(raw.read(6))
        raw.seek(0)
        if packed is not None:
            scan.problems.append(f"compressed ({packed}) tar: {DECOMPRESS}, then index again")
            return _hashed(scan, raw)
        reader = _Hashing(raw)
        current: SampleScan | None = None
        data: dict[str, bytes] = {}
        seen: set[str] = set()
        end = None  # where the archive ends for tarfile, when it ends without an error
        try:
            with tarfile.open(fileobj=reader, mode="r|") as tar:  # type: ignore[call-overload]
                for m in tar:
                    if m.isdir():
                        continue
                    name = display(m.name)  # tarfile decodes bytes that are not UTF-8 to lone surrogates: \xNN
                    if not m.isreg():
                        scan.problems.append(f"member {name!r} is not a regular file ({_type(m)}): not read")
                        continue
                    key, ext = split_name(name)
                    base = key.rsplit("/", 1)[-1]
                    if not base:  # wds2idx and WebDataset skip hidden names: recorded, not silently
                        scan.problems.append(f"member {name!r} has a hidden name (starts with '.'): skipped, "
                                             "as WebDataset and DALI skip it")
                        continue
                    member = Member(ext, m.offset_data, m.size, name)
                    if current is None or current.key != key:
                        if current is not None:
                            scan.samples.append(_finish(current, data, max_pixels=max_pixels, decode=decode,
                                                       label_field=label_field, multi_label=multi_label))
                        current, data = SampleScan([]), {}
                    current.members.append(member)
                    why = (NOT_UTF8 if name != m.name else unsafe_name(name)) or (
                        None if ext else "no extension after the key") or (SPARSE if m.issparse() else None)
                    if why and current.problem is None:
                        current.problem = f"member {name!r}: {why}"
                    wanted = _wanted_bytes(ext, m.size, decode)
                    if not why:  # an empty member is b"" (an empty label or image is a finding, not a KeyError)
                        f = tar.extractfile(m) if wanted else None
                        data[ext] = f.read(wanted) if f else b""
                if current is not None:
                    scan.samples.append(_finish(current, data, max_pixels=max_pixels, decode=decode,
                                                label_field=label_field, multi_label=multi_label))
                end = tar.offset
        except (tarfile.TarError, EOFError, OSError) as exc:
            where = "no tar header at the start" if not scan.samples and current is None else f"after byte {reader.pos}"
            scan.problems.append(f"damaged or truncated tar ({where}): {exc}; samples past that point are not indexed")
            if current is not None and current not in scan.samples:
                current.problem = current.problem or "cut off by the damaged end of the tar"
                scan.samples.append(current)
        reader.drain()
        scan.bytes, scan.sha256 = reader.pos, reader.sha.hexdigest()
    after = None if end is None else _data_after(path, end)
    if after is not None:
        scan.problems.append(f"damaged tar: tar readers (tarfile, WebDataset) end the archive at byte {end}, where "
                             f"no tar header is, and data follows (from byte {after}): a damaged header, or data "
                             "appended; samples past that point are not indexed")
    _mark_split_samples(scan.samples)
    for sample in scan.samples:
        if sample.problem is None and any(m.end > scan.bytes for m in sample.members):
            sample.problem = "a member ends past the end of the file (truncated tar)"
        if sample.problem is None:
            if sample.key in seen:
                sample.problem = f"key {sample.key!r} appears twice in this tar"
            seen.add(sample.key)
    return scan


def _mark_split_samples(samples: list[SampleScan]) -> None:
    """Reject, with the reason and the fix, every part of a sample whose members lie in several places of the tar
    (a key seen in runs of different members: `tar -cf` of a folder in directory order puts `a.jpg` and `a.cls`
    apart). Each part alone would be reported as missing its label or its image, which hides the cause. A key
    whose runs hold the same members is a duplicated sample, reported below as such."""
    runs: dict[str, list[SampleScan]] = {}
    for sample in samples:
        runs.setdefault(sample.key, []).append(sample)
    for parts in runs.values():
        members = [frozenset(m.ext for m in p.members) for p in parts]
        if len(set(members)) > 1:
            for part in parts:
                part.problem = (f"its members ({', '.join(sorted(frozenset().union(*members)))}) lie in {len(parts)} "
                                "places of the tar, not next to each other: WebDataset and DALI read a sample's "
                                "files only where they follow one another; write the tar with its files sorted by "
                                "name (tar --sort=name)")


def _data_after(path: Path, end: int) -> int | None:
    """The offset of the first byte that is not zero from `end` on (an archive's end is zero blocks to the end of
    the file), else None."""
    with open(path, "rb") as f:
        f.seek(end)
        pos = end
        while block := f.read(1 << 20):
            stripped = block.lstrip(b"\0")
            if stripped:
                return pos + len(block) - len(stripped)
            pos += len(block)
    return None


def _hashed(scan: TarScan, raw: BinaryIO) -> TarScan:
    reader = _Hashing(raw)
    reader.drain()
    scan.bytes, scan.sha256 = reader.pos, reader.sha.hexdigest()
    return scan


def _type(m: tarfile.TarInfo) -> str:
    return ("symbolic link" if m.issym() else "hard link" if m.islnk() else "FIFO" if m.isfifo()
            else "device" if m.isdev() else "special entry")  # tarfile's isdev() holds FIFOs too
