"""Re-read a converted dataset and report every mismatch with its manifest (used by `fastdata verify`)."""

from __future__ import annotations

import io
import logging
import tarfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from fastdata.atomic import sha256_bytes, sha256_file
from fastdata.manifest import Manifest, ShardInfo, read_manifest

log = logging.getLogger(__name__)


def _tar_samples(path: Path) -> Iterator[tuple[str, dict[str, bytes]]]:
    """Group a tar's regular members by key (text before the first dot), in order."""
    key, members = None, {}
    with tarfile.open(path, mode="r:") as tar:
        for m in tar:
            if not m.isfile():
                continue
            k, _, ext = m.name.partition(".")
            if k != key and key is not None:
                yield key, members
                members = {}
            key = k
            f = tar.extractfile(m)
            members[ext] = f.read() if f else b""
    if key is not None:
        yield key, members


def _check_wds(root: Path, shard: ShardInfo, manifest: Manifest, labels: Counter, decode: bool) -> list[str]:
    problems = []
    path = root / shard.name
    if shard.index:
        idx = root / shard.index
        if not idx.exists():
            return [f"{idx}: index file missing"]
        if sha256_bytes(idx.read_bytes()) != shard.index_sha256:
            problems.append(f"{idx}: sha256 differs from the manifest")
    expected = set(manifest.extra.get("members", ()))
    n = 0
    try:
        for key, members in _tar_samples(path):
            n += 1
            if expected and set(members) != expected:
                problems.append(f"{path}: sample {key} has members {sorted(members)}, expected {sorted(expected)}")
            if "cls" in members:
                try:
                    label = int(members["cls"])
                except ValueError:
                    problems.append(f"{path}: sample {key} has a non-integer label {members['cls'][:20]!r}")
                    continue
                if not 0 <= label < len(manifest.classes):
                    problems.append(f"{path}: sample {key} label {label} outside 0..{len(manifest.classes) - 1}")
                labels[label] += 1
            if decode and "jpg" in members:
                problems.extend(_decode_problems(path, key, members["jpg"]))
    except (tarfile.TarError, OSError, EOFError) as exc:
        return problems + [f"{path}: unreadable tar: {exc}"]
    if n != shard.samples:
        problems.append(f"{path}: {n} samples, the manifest says {shard.samples}")
    return problems


def _decode_problems(path: Path, key: str, data: bytes) -> list[str]:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            if im.format != "JPEG" or im.mode != "RGB" or im.info.get("progressive"):
                return [f"{path}: sample {key} is {im.format} {im.mode}, expected baseline RGB JPEG"]
    except Exception as exc:  # noqa: BLE001 - any decode failure is a finding
        return [f"{path}: sample {key} does not decode: {exc}"]
    return []


def _check_arrow(root: Path, shard: ShardInfo, manifest: Manifest, labels: Counter, decode: bool) -> list[str]:
    import pyarrow as pa

    path = root / shard.name
    try:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_stream(source).read_all()
    except (pa.ArrowInvalid, OSError) as exc:
        return [f"{path}: unreadable Arrow stream: {exc}"]
    problems = []
    if table.num_rows != shard.samples:
        problems.append(f"{path}: {table.num_rows} rows, the manifest says {shard.samples}")
    if "label" in table.column_names and manifest.classes:
        for label in table.column("label").to_pylist():
            if label is not None:
                labels[label] += 1
    if decode and "image" in table.column_names:
        keys = table.column("key").to_pylist()
        for key, image in zip(keys, table.column("image").to_pylist()):
            problems.extend(_decode_problems(path, key, image["bytes"]))
    return problems


def verify_dataset(root: Path | str, *, decode: bool = False) -> list[str]:
    """Every mismatch between the files under `root` and its manifest, as readable lines ([] if none)."""
    root = Path(root)
    manifest = read_manifest(root)
    problems: list[str] = []
    for split_name, split in sorted(manifest.splits.items()):
        labels: Counter = Counter()
        for shard in split.shards:
            path = root / shard.name
            if not path.exists():
                problems.append(f"{path}: missing")
                continue
            if path.stat().st_size != shard.bytes:
                problems.append(f"{path}: {path.stat().st_size} bytes, the manifest says {shard.bytes}")
            elif sha256_file(path) != shard.sha256:
                problems.append(f"{path}: sha256 differs from the manifest")
            check = _check_arrow if manifest.shard_format == "arrow" else _check_wds
            problems.extend(check(root, shard, manifest, labels, decode))
            log.info("checked %s", path)
        if split.class_counts and labels:
            found = [labels.get(i, 0) for i in range(len(manifest.classes))]
            if found != list(split.class_counts):
                problems.append(f"split {split_name}: class counts {found} differ from the manifest's "
                                f"{list(split.class_counts)}")
    return problems
