"""`fastdata index SRC [DST]`: adopt WebDataset shards made by another tool (webdataset's ShardWriter,
img2dataset, an earlier pipeline) without rewriting them.

1. Every tar is scanned once (`scan.py`, `-j` processes); each scan is saved in `DST/.partial/scans/`
   so an interrupted run resumes.
2. The dataset is image_text (image-caption pairs, as img2dataset writes them) when any usable sample has a
   `txt` member; then the samples without one are rejected and label members are not read as classes.
   Otherwise it is labeled when any usable sample has a label: a label member (`cls`, `class`, `label`), else a
   `label`, `cls` or `class` field of its `json` member (with `label_field`, that field of the json member only);
   then the samples without one are rejected. Label members hold class indices, classes "0".."max" unless `classes`
   names them; or class names (when none is an integer, or with `label_names`), classes in name order unless
   `classes` gives the order (`_label_space`).
3. Each tar's DALI index is written beside the manifest (byte for byte `wds2idx`'s for a clean tar), then
   the manifest, last and atomically. The tars are never written: `DST` may sit beside read-only shards.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from converters.adopt.remote import adopt_remote, is_remote
from converters.adopt.scan import (
    TEXT_MEMBER,
    TarScan,
    save_scan,
    saved_scan,
    scan_stamp,
    scan_tar,
)
from converters.images.id_names import class_names
from converters.pool import check_local_jobs, run_ordered
from converters.sample import Rejection, WorkItem
from converters.tree import split_of_folder, splits_named
from fastdata import __version__
from fastdata.atomic import write_bytes_atomic
from fastdata.dataset import shard_folder
from fastdata.errors import ConvertError
from fastdata.images.options import DEFAULT_MAX_PIXELS
from fastdata.images.pixels import EXIF_ORIENTED
from fastdata.label_members import NAME_ENCODING
from fastdata.manifest import (
    MANIFEST_NAME,
    Manifest,
    ShardInfo,
    SplitInfo,
    check_split_name,
    read_manifest,
    write_manifest,
)
from fastdata.numerals import parse_int
from fastdata.sources import Spec, expand, split_joined
from fastdata.storage.url import is_url
from fastdata.wds_index import DECOMPRESS, compressed_tar, decompress_advice, format_index

log = logging.getLogger(__name__)

ORIENTED_WARNING = ("%d image(s) carry an EXIF orientation other than upright (phone photos taken sideways): the "
                    "loaders turn them upright on the host, as `fastdata convert` and DALI's decoders do "
                    "(docs/adopting.md)")

PARTIAL = ".partial"
PACKED = f"a compressed tar: {DECOMPRESS}, then index the .tar"


@dataclass(frozen=True)
class AdoptOptions:
    split: str | None = None  # None: from the file name prefix (train-/val-/test-), else "train"
    classes: tuple[str, ...] | None = None  # names of labels 0..K-1
    label_names: bool = False  # label members hold class names, digits included (default: when none is an integer)
    label_field: str | None = None  # the field of each sample's json member that holds its label (default: a label
    # member, else a json member's label, cls or class field)
    multi_label: bool = False  # each sample's json member lists its classes (label_field, else labels or label)
    max_pixels: int = DEFAULT_MAX_PIXELS
    decode: bool = False  # fully decode every image (slower) instead of reading its header
    jobs: int = 1
    staging: str | None = None  # remote shards: the local folder they are downloaded into (default: the user cache)

    def __post_init__(self) -> None:
        if self.split is not None:
            check_split_name(self.split)
        if self.classes is not None:  # stripped; blank, control characters or one name twice: ConvertError
            if isinstance(self.classes, str) or not all(isinstance(c, str) for c in self.classes):
                raise ValueError(f"classes must be a sequence of names (strings), got {self.classes!r}")
            named = [(f"classes[{i}]", c) for i, c in enumerate(self.classes)]
            object.__setattr__(self, "classes", class_names(named))
        if self.label_field is not None and (not isinstance(self.label_field, str) or not self.label_field):
            raise ValueError(f"label_field must be the name of a json field, got {self.label_field!r}")
        if self.max_pixels < 1 or self.jobs < 1:
            raise ValueError(f"--max-pixels and -j must be >= 1, got {self.max_pixels} and {self.jobs}")
        check_local_jobs(self.jobs)


@dataclass(frozen=True)
class AdoptResult:
    dst: Path | str  # the folder, or the URL of an object store folder
    manifest: Manifest
    rejected: list[dict[str, str]]


def find_tars(spec: Spec) -> tuple[Path, list[Path], list[Rejection]]:
    """(the folder holding the tars, the tars in name order, non-tar files named explicitly)."""
    paths = expand(spec)
    if len(paths) == 1 and paths[0].is_dir():
        folder = paths[0]
        names = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
        tars = [p for p in names if p.suffix == ".tar"]
        packed = [p for p in names if compressed_tar(p.name)]
        if not tars:
            if packed:
                raise ConvertError(f"{folder} holds no .tar file: {decompress_advice([p.name for p in packed])}, "
                                   "then index the .tar files")
            raise ConvertError(f"{folder} holds no .tar file; " + _split_folders_advice(folder, names))
        return folder, tars, [Rejection("", p.name, PACKED) for p in packed]
    folders = {shard_folder(p) for p in paths}
    if any(p.is_dir() for p in paths) or len(folders) != 1:
        raise ConvertError("the shards to index must be files in one folder (the manifest records one shard folder)")
    rejected = [Rejection("", p.name, PACKED if compressed_tar(p.name) else "not a .tar file")
                for p in paths if p.suffix != ".tar"]
    return paths[0].parent, sorted(p for p in paths if p.suffix == ".tar"), rejected


def _split_folders_advice(folder: Path, names: list[Path]) -> str:
    """What to pass for a folder without tars: each subfolder of shards on its own (a Hugging Face WebDataset
    repository keeps `train/` and `validation/` apart; a manifest lists shards of one folder), else the shards."""
    held = {p.name: n for p in names if p.is_dir() and (n := sum(1 for q in p.glob("*.tar")))}
    if not held:
        return "pass the folder of the shards, a glob, a brace pattern or a list of tars"
    shown = ", ".join(f"{name}/ ({n} tar{'s' if n > 1 else ''})" for name, n in list(held.items())[:4])
    shown += ", ..." if len(held) > 4 else ""
    first = next(iter(held))
    split = split_of_folder(first) or "train"
    return (f"its subfolders hold tars: {shown}; a manifest lists the shards of one folder, so index each of them, "
            f"e.g. `fastdata index {folder / first} --split {split}`, and load that folder")


def tar_count(spec: Spec) -> int:
    """How many tars `spec` names (local or remote): the total of a progress bar."""
    from converters.adopt.remote import remote_tars

    spec = split_joined(spec)
    return len(remote_tars(spec)[1]) if is_remote(spec) else len(find_tars(spec)[1])


def split_of(name: str, options: AdoptOptions) -> str:
    """The split of the shard named `name`: `options.split`, else the split its name names (timm's
    `imagenet1k-validation-0000.tar` beside `imagenet1k-train-0000.tar`), else train. ConvertError for a name that
    names two."""
    if options.split is not None:
        return options.split
    named = splits_named(name)
    if len(named) > 1:
        raise ConvertError(f"the shard name {name!r} names the splits {', '.join(sorted(named))}: index the shards of "
                           "each split with --split SPLIT and a pattern that names only them")
    return next(iter(named), "train")


def _scan_path(dst: Path, name: str) -> Path:
    return dst / PARTIAL / "scans" / f"{name}.json"


class _Scanner:
    """Picklable per-tar work for the process pool: reuse a saved scan of an unchanged file, else scan."""

    def __init__(self, dst: Path, options: AdoptOptions) -> None:
        self.dst, self.options = dst, options

    def __call__(self, item: WorkItem) -> Any:
        path = Path(item.source)
        st = path.stat()
        saved = _scan_path(self.dst, path.name)
        stamp = scan_stamp([st.st_size, st.st_mtime_ns], self.options)
        scan = saved_scan(saved, stamp)
        if scan is None:
            scan = scan_tar(path, max_pixels=self.options.max_pixels, decode=self.options.decode,
                            label_field=self.options.label_field, multi_label=self.options.multi_label)
            save_scan(saved, stamp, scan)
        return scan


def check_destination(dst: Path) -> None:
    """Refuse a DST that holds something else than an earlier adoption of these shards."""
    if dst.exists() and not dst.is_dir():
        raise ConvertError(f"destination {dst} exists and is not a folder")
    if (dst / MANIFEST_NAME).exists():
        manifest = read_manifest(dst)
        if "adopted" not in manifest.extra:
            raise ConvertError(f"{dst} already holds a dataset written by `fastdata convert`; index into another "
                               "folder (fastdata index SRC DST)")


def adopt(spec: Spec, dst: Path | str | None = None, *, options: AdoptOptions = AdoptOptions(),
          progress: Callable[[int], None] | None = None) -> AdoptResult:
    """Index the shards `spec` names into `dst` (default: the shards' own folder); see the module docstring. Shards
    named by URL are downloaded to be scanned, and indexed into an object store folder or a local one (`remote.py`)."""
    spec = split_joined(spec)
    remote = is_remote(spec)
    if not remote and dst is not None and is_url(str(dst)):
        raise ConvertError(f"local shards are indexed into a local folder, not {dst}: index them beside the "
                           "shards, then upload the folder (tars, indexes and manifest) together")
    if remote:
        where, manifest = adopt_remote(spec, dst, options=options, progress=progress)
        return AdoptResult(where, manifest, list(manifest.rejected))
    folder, tars, rejected = find_tars(spec)
    dst = Path(dst) if dst is not None else folder
    check_destination(dst)
    (dst / PARTIAL / "scans").mkdir(parents=True, exist_ok=True)
    items = [WorkItem(split=split_of(p.name, options), rel=p.name, source=str(p)) for p in tars]
    scans: list[tuple[WorkItem, TarScan]] = []
    for item, result in zip(items, run_ordered(_Scanner(dst, options), items, jobs=options.jobs)):
        if isinstance(result, Rejection):  # an unexpected failure reading the file: recorded, the run goes on
            rejected.append(Rejection(item.split, item.rel, result.reason))
        else:
            scans.append((item, result))
        if progress:
            progress(1)
    shard_root = None if folder.resolve() == dst.resolve() else os.path.relpath(folder.resolve(), dst.resolve())
    manifest = assemble(scans, rejected, options, write_index=lambda name, data: write_index_file(dst / name, data),
                        where=str(folder), shard_root=shard_root)
    write_manifest(dst, manifest)
    for p in (dst / PARTIAL / "scans").glob("*.json"):
        p.unlink()
    for d in (dst / PARTIAL / "scans", dst / PARTIAL):
        try:
            d.rmdir()
        except OSError:
            pass
    return AdoptResult(dst, manifest, list(manifest.rejected))


def assemble(scans: list[tuple[WorkItem, TarScan]], rejected: list[Rejection], options: AdoptOptions, *,
             write_index: Callable[[str, bytes], None], where: str, shard_root: str | None) -> Manifest:
    """The manifest of the scanned tars, each usable tar's index handed to `write_index(name, bytes)` on the way;
    `where` names the shards' folder in errors, `shard_root` is the manifest's (None: the shards lie beside it)."""
    for item, scan in scans:
        rejected.extend(Rejection(item.split, scan.name, why) for why in scan.problems)
    good = [s for _, scan in scans for s in scan.samples if s.problem is None]
    captioned = any(_has_caption(s) for s in good)  # img2dataset's jpg + txt (+ json): an image_text dataset
    labeled = not captioned and any(s.label is not None for s in good)
    multi = labeled and options.multi_label
    if options.label_field is not None and not labeled and not captioned:
        why = next((s.unlabeled for s in good if s.unlabeled), "no sample has a json member")
        raise ConvertError(f"--label-field {options.label_field}: no sample's json member holds a label in that "
                           f"field ({why})")
    if options.multi_label and not multi:
        why = "captions make them pairs" if captioned else next((s.unlabeled for s in good if s.unlabeled),
                                                                "no sample has a json member")
        raise ConvertError(f"--multi-label: no sample's json member lists its classes ({why})")
    classes, index_of, names = _label_space({t for s in good for t in _texts(s.label)} if labeled else set(),
                                            options)
    if multi and not classes:
        raise ConvertError("--multi-label: every sample's json member lists no class (every list is empty), so there "
                           "is no class to learn; --classes FILE names the classes, or index without --multi-label")
    label_member, label_field = _label_source(good) if labeled else (None, None)
    image_members = sorted({s.image for s in good if s.image}, key=lambda e: (e.lower() != "jpg", e))
    splits: dict[str, list[ShardInfo]] = {}
    counts: dict[str, list[int]] = {}
    stats: dict[str, dict[str, Any]] = {}
    member_exts: set[str] = set()
    for item, scan in scans:
        keep = []
        for s in scan.samples:
            if s.problem is None and labeled and s.label is None:
                s.problem = s.unlabeled or "no label member while the rest of the dataset is labeled"
            bad = next((t for t in _texts(s.label) if t not in index_of), None) if s.problem is None and labeled \
                else None
            if bad is not None:
                s.problem = (f"label {bad!r} is not among the classes --classes names" if names else
                             f"label {bad.encode()[:40]!r} is not an integer (index with --label-names if the "
                             "labels are class names)")
            if s.problem is None and captioned and not _has_caption(s):
                s.problem = f"no caption member ({TEXT_MEMBER}) while the rest of the dataset has captions"
            if s.problem is None and captioned:
                s.problem = s.caption
            if s.problem is not None:
                rejected.append(Rejection(item.split, f"{scan.name}:{s.key}", s.problem))
                continue
            keep.append(s)
            member_exts.update(m.ext for m in s.members)
            split_counts = counts.setdefault(item.split, [0] * len(classes))
            for t in _texts(s.label) if labeled else ():  # a captioned dataset's label members are not its classes
                split_counts[index_of[t]] += 1  # each class of a multi-label sample
            formats = stats.setdefault(item.split, {}).setdefault("image_formats", {})
            formats[s.image_format] = formats.get(s.image_format, 0) + 1
            if s.orientation != 1:
                stats[item.split][EXIF_ORIENTED] = stats[item.split].get(EXIF_ORIENTED, 0) + 1
        if not keep:
            rejected.append(Rejection(item.split, scan.name, "no usable sample: the shard is left out"))
            continue
        index = format_index([s.members for s in keep])
        index_name = Path(scan.name).with_suffix(".idx").name
        write_index(index_name, index)
        splits.setdefault(item.split, []).append(ShardInfo(
            name=scan.name, samples=len(keep), bytes=scan.bytes, sha256=scan.sha256, index=index_name,
            index_sha256=hashlib.sha256(index).hexdigest()))
    oriented = sum(stats.get(name, {}).get(EXIF_ORIENTED, 0) for name in splits)
    if oriented:
        log.warning(ORIENTED_WARNING, oriented)
    if not splits:
        shown = "; ".join(r.reason for r in rejected[:3])
        raise ConvertError(f"no usable sample in {len(scans)} tar(s) under {where} ({shown})")
    fingerprint = hashlib.sha256(json.dumps({"shards": {k: [s.to_dict() for s in v] for k, v in splits.items()},
                                             "classes": classes}, sort_keys=True).encode()).hexdigest()
    extra: dict[str, Any] = {"text_member": TEXT_MEMBER} if captioned else {}
    if labeled and names:
        extra["label_encoding"] = NAME_ENCODING
    if label_field is not None:
        extra["label_field"] = label_field
    if multi:
        extra["multi_label"] = True
    return Manifest(
        kind="image_text" if captioned else "images", shard_format="wds", classes=tuple(classes) if labeled else (),
        splits={name: SplitInfo(name=name, shards=tuple(infos), class_counts=tuple(counts.get(name, ())),
                                stats=stats.get(name, {})) for name, infos in splits.items()},
        preprocessing={"source": "adopted WebDataset shards (not re-encoded)", "max_pixels": options.max_pixels,
                       "decoded_at_index": options.decode},
        rejected=tuple(sorted((r.to_dict() for r in rejected), key=lambda r: (r["split"], r["source"]))),
        extra={"adopted": {"tool": "fastdata index", "shards": len(scans)}, "image_members": image_members,
               "label_member": label_member, "members": sorted(member_exts),
               "layout": "adopted", **extra},
        fingerprint=fingerprint, tool_version=__version__, shard_root=shard_root)


def _label_space(texts: set[str], options: AdoptOptions) -> tuple[tuple[str, ...], dict[str, int], bool]:
    """(the classes, each label text's class index, whether label members hold names) of the label members' texts.
    Indices unless `options.label_names` or none is an integer; a text that is not one is then a sample's problem.
    Names: the classes are `options.classes` in its order (a name it lacks is a sample's problem), else the names
    sorted, as torchvision's ImageFolder sorts its folders."""
    numbers = {t: n for t in texts if (n := parse_int(t, signed=True)) is not None}
    if options.label_names or (texts and not numbers):
        classes = options.classes if options.classes is not None else class_names(
            [(f"label member {t!r}", t) for t in sorted(texts)])
        return classes, {name: i for i, name in enumerate(classes)}, True
    low = min(numbers.values(), default=0)
    if low < 0:
        raise ConvertError(f"the shards hold negative labels (down to {low}); labels are class indices >= 0")
    num_classes = max(numbers.values(), default=-1) + 1
    classes = options.classes if options.classes is not None else tuple(str(i) for i in range(num_classes))
    if len(classes) < num_classes:
        raise ConvertError(f"--classes names {len(classes)} classes, the shards hold labels up to {num_classes - 1}")
    return classes, numbers, False


def _texts(label: str | list[str] | None) -> list[str]:
    """The label texts of a sample: none, its one label, or each class a multi-label sample lists."""
    return [] if label is None else list(label) if isinstance(label, list) else [label]


def _has_caption(sample: Any) -> bool:
    return any(m.ext == TEXT_MEMBER for m in sample.members)


def _label_source(samples: Sequence[Any]) -> tuple[str | None, str | None]:
    """(the member extension, the json field or None) every labeled sample's label was read from; ConvertError when
    the samples use several."""
    found = {(s.label_member, s.label_field) for s in samples if s.label_member is not None}
    if len(found) > 1:
        shown = ", ".join(ext if field is None else f"{ext} field {field!r}" for ext, field in sorted(found,
                                                                                                      key=str))
        advice = ("; --label-field FIELD reads every label from that field of the json members"
                  if any(field is not None for _, field in found) else "")
        raise ConvertError(f"the shards hold their labels in several places ({shown}); one dataset uses one{advice}")
    return next(iter(found), (None, None))


def write_index_file(path: Path, data: bytes) -> None:
    """Write an index unless an equal one is there; never replace a different file made by someone else."""
    if path.exists():
        if path.read_bytes() == data:
            return
        if not _ours(path):
            raise ConvertError(f"{path} exists and differs from the index of its tar; pass a separate DST folder "
                               f"(fastdata index SRC DST) or remove {path.name}")
    write_bytes_atomic(path, data)


def _ours(path: Path) -> bool:
    """Whether an existing .idx was written by an earlier `fastdata index` into this folder (its manifest lists it)."""
    try:
        manifest = read_manifest(path.parent)
    except Exception:  # noqa: BLE001 - no readable manifest: not ours
        return False
    return "adopted" in manifest.extra and any(sh.index == path.name for s in manifest.splits.values()
                                               for sh in s.shards)
