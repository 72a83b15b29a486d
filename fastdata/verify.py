"""Re-read a dataset against its manifest and report every mismatch (used by `fastdata verify`).

Tar shards are checked through their index, the way the loaders read them: the shard and the index
hash to the manifest's sha256, every index entry names a regular member of the tar at that offset
with that size, every sample has its image (and label) member, labels are class indices, and with
`decode=True` every image decodes strictly (a warning of the decoder is a failure). Volume shards get the
volume loader's checks of every sample, and with `decode=True` every volume and mask is read and checked against
its json (fastdata/volumes/sample_check.py). No member is read whose claimed size exceeds the file, and nothing
outside the dataset is opened.
"""

from __future__ import annotations

import io
import logging
import os
import tarfile
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastdata.atomic import sha256_bytes, sha256_file
from fastdata.dataset import RemoteOptions, ShardRef, open_dataset, regular_file_size, shard_root
from fastdata.errors import ShardError
from fastdata.label_members import field_classes, json_record, label_value
from fastdata.manifest import Manifest, SplitInfo, read_manifest
from fastdata.pairs.members import MAX_CAPTION_BYTES, caption_ids, caption_lines, ids_rule
from fastdata.shard_columns import COLUMN_CHECKS, image_bytes_field, numbered, value_problems
from fastdata.storage.url import is_url
from fastdata.text.tokenizer import outside_vocabulary
from fastdata.wds_index import parse_index, split_name

log = logging.getLogger(__name__)

IMAGE_KINDS = ("images", "image_text")  # kinds whose samples hold an image (and a label when labeled)
VOLUME_KINDS = ("dicom", "nifti")  # kinds whose samples hold a volume (npy + json, and a mask's label.npy)
MASK_MEMBER = "label.npy"  # a volume kind writes it for the volumes that have a mask only
IMAGE_MAX_BYTES = 512 * 2**20  # an image member larger than this is reported, not read


def _members(path: Path) -> dict[int, tuple[str, int]]:
    """offset of data -> (name, size) of every regular member of the tar (headers only) up to any damage (`fastdata
    index` indexes the samples before a damaged end, and so does the index checked against this); a GNU sparse
    member is left out: its bytes are not the one span its header gives (what the index and the loaders read)."""
    out: dict[int, tuple[str, int]] = {}
    with tarfile.open(path, mode="r:") as tar:
        try:
            for m in tar:
                if m.isreg() and not m.issparse():
                    out[m.offset_data] = (m.name, m.size)
        except (tarfile.TarError, EOFError):  # a damaged end: an index entry past it is named as missing
            log.debug("%s: tar headers unreadable after %d members", path, len(out))
    return out


def _read(fd: int, offset: int, size: int) -> bytes:
    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise ShardError(f"short read: {len(data)} of {size} bytes at offset {offset}")
    return data


def _check_wds(ref: ShardRef, manifest: Manifest, labels: Counter, decode: bool) -> list[str]:
    shard, path = ref.info, ref.path
    if not shard.index or ref.index_path is None:
        return [f"{path}: the manifest names no index file for this shard"]
    idx = ref.index_path
    try:
        regular_file_size(idx, "index")
        text = idx.read_bytes()
        samples = parse_index(text.decode("utf-8"), where=str(idx))
    except (ShardError, UnicodeDecodeError, OSError) as exc:
        return [f"{idx}: {exc}"]
    problems = [] if sha256_bytes(text) == shard.index_sha256 else [f"{idx}: sha256 differs from the manifest"]
    if len(samples) != shard.samples:
        problems.append(f"{idx}: {len(samples)} samples, the manifest says {shard.samples}")
    try:
        table = _members(path)
    except (tarfile.TarError, OSError, EOFError) as exc:
        return problems + [f"{path}: unreadable tar: {exc}"]
    converted = "adopted" not in manifest.extra
    expected = set(manifest.extra.get("members") or ()) if converted else set()
    optional = {MASK_MEMBER} if manifest.kind in VOLUME_KINDS else set()
    label_member = manifest.label_member
    fd = os.open(path, os.O_RDONLY)
    try:
        for sample in samples:
            key = split_name(sample[0].name)[0]
            members = {m.ext: m for m in sample}
            wrong = [m.name for m in sample if table.get(m.offset) != (m.name, m.size)]
            if wrong:
                problems.append(f"{path}: sample {key}: the index names {wrong} where the tar holds no such member")
                continue
            if expected and not expected - optional <= set(members) <= expected:
                problems.append(f"{path}: sample {key} has members {sorted(members)}, expected {sorted(expected)}")
            if manifest.kind not in IMAGE_KINDS:
                continue
            image = next((members[e] for e in manifest.image_members if e in members), None)
            if image is None:
                problems.append(f"{path}: sample {key} has no image member ({'/'.join(manifest.image_members)})")
                continue
            if label_member is not None:
                problems.extend(_check_label(fd, path, key, members.get(label_member), manifest, labels))
            if manifest.kind == "image_text":
                problems.extend(_check_pair(fd, path, key, members, manifest))
            if decode:
                problems.extend(_decode_problems(fd, path, key, image.offset, image.size, strict_jpeg=converted))
    finally:
        os.close(fd)
    if manifest.kind in VOLUME_KINDS and not problems:  # the volume loader's checks, and with decode the arrays
        from fastdata.volumes.sample_check import volume_problems

        problems.extend(volume_problems(path, manifest.classes, decode=decode))
    return problems


def _check_pair(fd: int, path: Path, key: str, members: dict, manifest: Manifest) -> list[str]:
    """A pair's caption member and, converted with a tokenizer, its ids, read by the loader's rule (members.py)."""
    text, ids = members.get(manifest.text_member), members.get(manifest.ids_member)
    if text is None or (manifest.ids_member is not None and ids is None):
        return [f"{path}: sample {key} has no {manifest.text_member if text is None else manifest.ids_member} member"]
    if text.size > MAX_CAPTION_BYTES or (ids is not None and ids.size > IMAGE_MAX_BYTES):
        return [f"{path}: sample {key}: a text member of {max(text.size, ids.size if ids else 0)} bytes, not read"]
    lines, problem = caption_lines(_read(fd, text.offset, text.size))
    if problem is None and ids is not None:
        fill, vocab = ids_rule(manifest)
        problem = caption_ids(_read(fd, ids.offset, ids.size), len(lines), fill=fill, vocab_size=vocab)[1]
    return [] if problem is None else [f"{path}: sample {key}: {problem}"]


def _check_classes(fd: int, path: Path, key: str, member, manifest: Manifest, labels: Counter) -> list[str]:
    """A --multi-label sample's classes: a list of distinct class indices in its json member, each counted."""
    record, problem = json_record(_read(fd, member.offset, member.size))
    found, problem = (None, problem) if record is None else field_classes(record, manifest.label_field or "",
                                                                          manifest.label_names)
    if found is None:
        return [f"{path}: sample {key} has no class labels: {problem}"]
    outside = [c for c in found if not 0 <= c < len(manifest.classes)]
    if outside:
        return [f"{path}: sample {key} labels {outside} outside 0..{len(manifest.classes) - 1}"]
    labels.update(found)
    return []


def _check_label(fd: int, path: Path, key: str, member, manifest: Manifest, labels: Counter) -> list[str]:
    if member is None:
        return [f"{path}: sample {key} has no {manifest.label_member} member"]
    rule = manifest.label_rule
    if member.size > rule.max_bytes:
        return [f"{path}: sample {key} label member is {member.size} bytes; a label holds at most {rule.max_bytes}"]
    if rule.multi:
        return _check_classes(fd, path, key, member, manifest, labels)
    raw, problem = rule.text(_read(fd, member.offset, member.size))
    if raw is None:
        return [f"{path}: sample {key} has no class label: {problem}"]
    raw = raw.strip()
    label = label_value(raw, rule.names)
    if label is None:
        what = ("a label that is not among the manifest's classes" if rule.names is not None
                else "a non-integer label")
        return [f"{path}: sample {key} has {what} {raw[:40]!r}"]
    if not 0 <= label < len(manifest.classes):
        return [f"{path}: sample {key} label {label} outside 0..{len(manifest.classes) - 1}"]
    labels[label] += 1
    return []


def decode_strictly(data: bytes) -> tuple[str | None, str, str, bool]:
    """Decode `data` fully, a decoder warning counting as an error (libjpeg-turbo's strict mode for JPEGs:
    data cut out of a scan or a header larger than its data fail). Returns (problem, format, mode, progressive)."""
    from PIL import Image

    from fastdata.images.pixels import decode_problem

    problem = decode_problem(data)
    if problem is not None:
        return problem, "", "", False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with Image.open(io.BytesIO(data)) as im:
                im.load()
                return None, str(im.format), im.mode, bool(im.info.get("progressive") or im.info.get("progression"))
    except Exception as exc:  # noqa: BLE001 - any decode failure or warning is a finding
        return f"{type(exc).__name__}: {exc}", "", "", False


def _decode_problems(fd: int, path: Path, key: str, offset: int, size: int, *, strict_jpeg: bool) -> list[str]:
    if size > IMAGE_MAX_BYTES:
        return [f"{path}: sample {key} image member is {size} bytes, over {IMAGE_MAX_BYTES}: not decoded"]
    problem, fmt, mode, progressive = decode_strictly(_read(fd, offset, size))
    if problem is not None:
        return [f"{path}: sample {key} does not decode: {problem}"]
    if strict_jpeg and (fmt != "JPEG" or mode != "RGB" or progressive):
        return [f"{path}: sample {key} is {fmt} {mode}{' progressive' if progressive else ''}, "
                "expected baseline RGB JPEG"]
    return []


def _arrow_values(table, path: Path, manifest: Manifest) -> list[str]:
    """Nulls, labels outside the classes and, in token shards, ids outside the tokenizer's vocabulary (which the
    loader checks batch by batch as it reads), record batch by record batch."""
    vocab = manifest.vocab_size if manifest.kind == "text" else None
    problems = []
    for first_row, batch in numbered(table.to_batches()):
        found = value_problems(batch, classes=len(manifest.classes), first_row=first_row)
        problems.extend(f"{path}: {p}" for p in found)
        bad = outside_vocabulary(batch.column("input_ids").flatten().to_numpy(), vocab) if vocab and not found \
            else None
        if bad is not None:
            problems.append(f"{path}: token id {bad} in the record batch from row {first_row} lies outside the "
                            f"tokenizer's vocabulary (0..{vocab - 1})")
    return problems


def _check_arrow(ref: ShardRef, manifest: Manifest, labels: Counter, decode: bool) -> list[str]:
    import pyarrow as pa

    shard, path = ref.info, ref.path
    try:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_stream(source).read_all()
        table.validate(full=True)
    except Exception as exc:  # noqa: BLE001 - a forged stream fails in many ways: ArrowInvalid, pyarrow's
        # unsupported-feature error for a forged type, UnicodeDecodeError for a field name, OSError; each is a finding
        return [f"{path}: unreadable Arrow stream: {type(exc).__name__}: {exc}"]
    problems = []
    if table.num_rows != shard.samples:
        problems.append(f"{path}: {table.num_rows} rows, the manifest says {shard.samples}")
    check = COLUMN_CHECKS.get(manifest.kind)
    if check is not None:
        try:
            multi = {"multi": True} if manifest.multi_label else {}
            check(table.schema, path, labelled=bool(manifest.classes), **multi)
        except ShardError as exc:
            return problems + [str(exc)]  # the columns are not there to read further
        problems.extend(_arrow_values(table, path, manifest))
    if "label" in table.column_names and manifest.classes:
        labels.update(label for label in table.column("label").to_pylist() if label is not None)
    if "labels" in table.column_names and manifest.multi_label:  # each class of each image
        labels.update(c for row in table.column("labels").to_pylist() for c in row or () if c is not None)
    if decode and "image" in table.column_names:
        keys = table.column("key").to_pylist()
        images = table.column("image")
        field = image_bytes_field(images.type)  # None: not the struct an image column is (named above for images)
        # only that field is read: turning whole structs into dicts decodes every field's name, and a forged one
        # that is not UTF-8 raised UnicodeDecodeError (fuzz seed 8675309)
        column = images.flatten()[field].to_pylist() if field is not None else []
        for key, data in zip(keys, column):
            if data is None:  # named above (column image.bytes)
                continue
            problem, fmt, mode, progressive = decode_strictly(data)
            if problem is not None:
                problems.append(f"{path}: sample {key} does not decode: {problem}")
            elif fmt != "JPEG" or mode != "RGB" or progressive:
                problems.append(f"{path}: sample {key} is {fmt} {mode}, expected baseline RGB JPEG")
    return problems


CHECKS = {"wds": _check_wds, "arrow": _check_arrow}


def _check_shard(ref: ShardRef, manifest: Manifest, labels: Counter, decode: bool) -> list[str]:
    """Every problem of one local shard file (presence, type, size, sha256, then its format's checks)."""
    path, shard = ref.path, ref.info
    if not path.exists():
        return [f"{path}: missing"]
    try:
        size = regular_file_size(path, "shard")
    except ShardError as exc:
        return [f"{path}: {exc}"]
    if size != shard.bytes:
        return [f"{path}: {size} bytes, the manifest says {shard.bytes}"]
    problems = [] if sha256_file(path) == shard.sha256 else [f"{path}: sha256 differs from the manifest"]
    return problems + CHECKS[manifest.shard_format](ref, manifest, labels, decode)


def _class_counts(split_name: str, split: SplitInfo, manifest: Manifest, labels: Counter) -> list[str]:
    if split.class_counts and labels:
        found = [labels.get(i, 0) for i in range(len(manifest.classes))]
        if found != list(split.class_counts):
            return [f"split {split_name}: class counts {found} differ from the manifest's {list(split.class_counts)}"]
    return []


def verify_dataset(root: Path | str, *, decode: bool = False, remote: RemoteOptions | None = None,
                   progress: Callable[[int], None] | None = None) -> list[str]:
    """Every mismatch between the files of the dataset at `root` (a folder or a URL) and its manifest;
    `progress(1)` after each shard checked."""
    options = remote or RemoteOptions()
    if is_url(str(root)):
        from fastdata.storage.open import open_remote

        return _verify_remote(str(root), lambda split: open_remote(str(root), split=split, options=options),
                              decode=decode, progress=progress)
    root = Path(root)
    manifest = read_manifest(root)
    if is_url(manifest.shard_root):  # indexes here, shards on remote storage (`fastdata index URL DST`)
        from fastdata.storage.url import folder_url

        return _verify_remote(folder_url(str(manifest.shard_root)),
                              lambda split: open_dataset(root, split=split, remote=options), decode=decode,
                              progress=progress)
    problems: list[str] = []
    where = shard_root(root, manifest)
    for name, split in sorted(manifest.splits.items()):
        labels: Counter = Counter()
        for shard in split.shards:
            ref = ShardRef.of(manifest, shard, where / shard.name, root / shard.index if shard.index else None)
            problems.extend(_check_shard(ref, manifest, labels, decode))
            log.info("checked %s", ref.path)
            if progress:
                progress(1)
        problems.extend(_class_counts(name, split, manifest, labels))
    return problems


def _verify_remote(url: str, open_split: Callable[[str | None], Any], *, decode: bool,
                   progress: Callable[[int], None] | None) -> list[str]:
    """Each shard is downloaded into the node cache (its size and sha256 checked on the way), checked like a
    local one, and given back to the cache, so the check needs one shard of disk at a time. `open_split(name)`
    opens a split's view (None: the default split); problems name shards as `url` + their name."""
    from fastdata.errors import StorageError

    problems: list[str] = []
    first = open_split(None)
    manifest = first.manifest
    first.close()
    for name, split in sorted(manifest.splits.items()):
        view = open_split(name)
        labels: Counter = Counter()
        try:
            for ref in view.shards:
                try:
                    local = view.local(ref)
                except StorageError as exc:
                    problems.append(f"{url}{ref.info.name}: {exc}")
                    continue
                problems.extend(p.replace(str(local.path), url + ref.info.name)
                                for p in _check_shard(local, manifest, labels, decode))
                view.release(ref)
                log.info("checked %s%s", url, ref.info.name)
                if progress:
                    progress(1)
        finally:
            view.close()
        problems.extend(_class_counts(name, split, manifest, labels))
    return problems
