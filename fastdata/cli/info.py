"""`fastdata info DST`: what a converted dataset holds and how it was made."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from fastdata.cli.format import human_bytes, joined_names, printable, reason_summary
from fastdata.data_digest import digest_of
from fastdata.numerals import parse_int
from fastdata.storage.url import is_url

if TYPE_CHECKING:
    from fastdata.manifest import Manifest


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="describe a converted dataset")
    p.add_argument("dataset", help="dataset folder, or its URL (s3://, gs://, az://, https://)")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    p.add_argument("--rejected", action="store_true", help="list every rejected input with its reason")


def _order(label: str) -> tuple[int, str]:
    """Sort histogram buckets like "1-8", "9-16", "513+" numerically, anything else by name."""
    head = parse_int(label.split("-")[0].rstrip("+"))
    return (0, label) if head is None else (head, label)


def _stat(key: str, value: object) -> str:
    """A split stat as `info` shows it: a volume dataset's foreground histogram (thousands of values) as the
    numbers zscore='foreground' takes from it."""
    if key == "foreground_values" and isinstance(value, dict) and value:
        from fastdata.volumes.intensity import summary

        try:
            return summary(value)
        except (TypeError, ValueError):
            return f"{len(value)} values (not a histogram of whole numbers)"
    return _render(value)


def _render(value: object) -> str:
    if isinstance(value, dict):
        return "  ".join(f"{k}: {value[k]}" for k in sorted(value, key=_order))
    return str(value)


def run(args: argparse.Namespace) -> int:
    from fastdata.manifest_at import read_any_manifest

    m = read_any_manifest(args.dataset)
    if args.json:
        print(json.dumps(m.to_dict(), indent=1))  # JSON escapes every control character
        return 0
    for line in _lines(args, m):
        print(printable(line))  # class names, stats, reasons: text from whoever wrote the manifest
    return 0


def _lines(args: argparse.Namespace, m: Manifest) -> Iterator[str]:
    yield (f"{args.dataset}: {m.kind} dataset, {m.shard_format} shards, format v{m.format_version}, "
           f"written by fastdata {m.tool_version}")
    if m.shard_root is not None:
        if is_url(m.shard_root):  # a remote index of shards on another store
            yield f"shards in: {m.shard_root}"
        else:
            yield f"shards in: {m.shard_root} (relative to {args.dataset})"
    yield f"{'split':10s} {'samples':>9s} {'shards':>7s} {'bytes':>11s}"
    for name, s in sorted(m.splits.items()):
        yield f"{name:10s} {s.samples:9d} {len(s.shards):7d} {human_bytes(s.bytes):>11s}"
        yield f"{'':10s} data_digest: {digest_of([s.shards])} (what a loader state saved on the whole split names)"
        for key, value in sorted(s.stats.items()):
            yield f"{'':10s} {key}: {_stat(key, value)}"
        yield from _imbalance(m.classes, s.class_counts, multi=m.multi_label)
    if m.classes:
        shown = joined_names(m.classes[:10]) + (", ..." if len(m.classes) > 10 else "")
        yield f"classes ({len(m.classes)}): {shown}"
    yield "preprocessing: " + ", ".join(f"{k}={v}" for k, v in sorted(m.preprocessing.items()))
    for key, value in sorted(m.extra.items()):
        if key not in ("members",):
            text = json.dumps(value) if isinstance(value, dict | list) else str(value)
            yield f"{key}: {text[:200]}"
    yield f"rejected inputs: {len(m.rejected)}"
    if args.rejected:
        for r in m.rejected:
            yield f"  [{r.get('split', '')}] {r.get('source', '')}: {r.get('reason', '')}"
    else:
        for line in reason_summary(list(m.rejected)):
            yield f"  {line}"


def _imbalance(classes: tuple[str, ...], counts: tuple[int, ...], multi: bool = False) -> Iterator[str]:
    """A line on a split whose largest class holds twice its smallest or more, naming the option that draws them
    alike (docs/loading.md, "Weighted sampling"), or with several classes an image (`multi`), which it refuses,
    what weighs them. None where no sample has a class: a volume dataset's classes are its masks' values, which no
    sample is labelled with."""
    if not counts or len(counts) != len(classes) or not any(counts):
        return
    hi = max(range(len(counts)), key=lambda c: (counts[c], -c))
    lo = min(range(len(counts)), key=lambda c: (counts[c], c))
    if counts[hi] >= 2 * counts[lo]:
        ratio = f"{counts[hi] / counts[lo]:.1f}x" if counts[lo] else "a class without samples"
        remedy = ("BCEWithLogitsLoss's pos_weight from fastdata.sample_labels weighs them" if multi else
                  "sample_weights='balanced' draws them alike")
        yield (f"{'':10s} classes: largest {classes[hi]} ({counts[hi]}), smallest {classes[lo]} ({counts[lo]}), "
               f"{ratio}; {remedy}")
