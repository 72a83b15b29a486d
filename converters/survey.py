"""What a conversion takes from its source: the survey (discovery, refused when it finds nothing), the fingerprint
that a resume and every part check, and the work items as converted (pseudonymised, each split shuffled)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from converters.kind import Discovery, Kind
from converters.packed import packed_source_problem
from converters.plan import shuffle_split
from converters.sample import Rejection, WorkItem
from converters.secret_options import public_options
from converters.walk import unlistable
from fastdata.errors import ConvertError

if TYPE_CHECKING:
    from converters.engine import ConvertConfig


def fingerprint(kind: Kind, fmt: str, config: ConvertConfig, options: Any, discovery: Discovery) -> str:
    ident = {
        "kind": kind.name,
        "format": fmt,
        "seed": config.seed,
        "shard_size": None if config.samples_per_shard else config.shard_size,
        "samples_per_shard": config.samples_per_shard,
        "options": public_options(options),
        "source": discovery.identity,
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()


def _why_none(rejected: list[Rejection]) -> str:
    """What the error of a source with nothing to convert says of its rejections: how many, and the three most
    common reasons, grouped by their words before the first colon as `fastdata info` groups them, each shown whole
    as its first file has it (a reason, as the manifest records it: never a file's path)."""
    if not rejected:
        return ""
    counts = Counter(r.reason.split(":")[0] for r in rejected)
    first = {}
    for r in rejected:
        first.setdefault(r.reason.split(":")[0], r.reason)
    shown = "; ".join(f"{n} x {first[why][:160]}" for why, n in counts.most_common(3))
    return f" ({len(rejected)} file(s) rejected: {shown})"


def local_source(src: Path | str) -> Path:
    """`src` as the local path a conversion reads; ConvertError for a URL, which a Path would have mangled into a
    missing folder ('source s3:/bucket/raw does not exist')."""
    from fastdata.sources import local_path
    from fastdata.storage.url import is_url

    if is_url(src):
        raise ConvertError(f"fastdata convert reads a local source, not {src}: copy it to a local disk first (`aws s3 "
                           "sync`, `gcloud storage cp -r`, `azcopy copy`, `wget -r`) and convert that folder; the "
                           "shards may go to a URL DST. WebDataset shards already there are adopted where they lie: "
                           "`fastdata index 'URL/shards-{000000..000099}.tar'`")
    path = src if isinstance(src, Path) else Path(local_path(src))  # file:///data/raw names /data/raw
    problem = packed_source_problem(path)  # a download not unpacked: "source x.zip is not a directory" before
    if problem is not None:
        raise ConvertError(problem)
    problem = unlistable(path)
    if problem is not None:
        raise ConvertError(f"source {path} cannot be read: {problem}")
    return path


def survey(kind: Kind, src: Path, *, options: Any, config: ConvertConfig) -> Discovery:
    """What a conversion of `src` would take and reject (`fastdata convert --dry-run`, and the first step of
    `convert`); ConvertError when it would take nothing."""
    if not src.exists():
        raise ConvertError(f"source {src} does not exist")
    discovery = kind.discover(src, options=options, follow_symlinks=config.follow_symlinks)
    if not any(discovery.splits.values()):
        raise ConvertError(f"source {src} holds no {kind.name} input to convert" + _why_none(discovery.rejected))
    return discovery


def prepared(kind: Kind, discovery: Discovery, options: Any,
              config: ConvertConfig) -> tuple[Discovery, dict[str, str], dict[str, list[WorkItem]]]:
    """The discovery as converted (pseudonymised where the kind names sources by pseudonym), the pseudonyms' source
    paths, and each split shuffled."""
    paths: dict[str, str] = {}
    if hasattr(kind, "pseudonymize"):  # optional: a kind whose source paths may identify people
        discovery, paths = kind.pseudonymize(discovery, options)
    shuffled = {s: shuffle_split(items, seed=config.seed, split=s) for s, items in discovery.splits.items() if items}
    return discovery, paths, shuffled
