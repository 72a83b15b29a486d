"""`fastdata verify DST`: re-read every shard; non-zero exit on any mismatch."""

from __future__ import annotations

import argparse

from fastdata.cli.format import printable
from fastdata.cli.progress import progress


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="re-read every shard and check it against the manifest")
    p.add_argument("dataset", help="dataset folder, or its URL (s3://, gs://, az://, https://)")
    p.add_argument("--decode", action="store_true",
                   help="also decode every image, and read every volume and mask in full")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) or progress lines (in a log, one a minute)")


def run(args: argparse.Namespace) -> int:
    from fastdata.manifest_at import read_any_manifest
    from fastdata.verify import verify_dataset

    manifest = read_any_manifest(args.dataset)
    shards = sum(len(s.shards) for s in manifest.splits.values())
    bar = progress(shards, "shard", "fastdata verify", enabled=not args.no_progress)
    try:
        problems = verify_dataset(args.dataset, decode=args.decode, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    for line in problems:
        print(printable(line))  # member names and keys come from the shards: no escape sequence reaches the terminal
    if problems:
        print(f"FAILED: {len(problems)} problem(s) in {args.dataset}")
        return 1
    print(f"OK: {shards} shard(s), {manifest.num_samples} samples match {args.dataset}/manifest.json")
    return 0
