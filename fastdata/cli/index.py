"""`fastdata index SRC [DST]`: adopt WebDataset shards written by another tool (index + manifest, tars untouched)."""

from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path

from fastdata.cli.format import human_bytes, reason_summary
from fastdata.cli.progress import progress
from fastdata.cpus import usable_cpus
from fastdata.sources import is_pattern


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "index", help="adopt existing WebDataset shards (write their DALI indexes and a manifest)",
        description="Adopt WebDataset .tar shards made by another tool: write each tar's DALI index (as wds2idx "
                    "does) and a manifest, so `fastdata.loader` reads them. The tars are never modified.")
    p.add_argument("paths", nargs="+", metavar="SRC [DST]",
                   help="the shards (a folder, a glob, a brace pattern such as 'shards-{000000..000099}.tar', or "
                        "tar files; on s3://, gs://, az:// or https://, a brace pattern or URLs), then optionally "
                        "DST: the folder for the indexes and manifest, local or an object store's (default: the "
                        "shards' folder; use DST when the shards are read-only)")
    p.add_argument("--split", help="split of every shard (default: the split a word of its name names, as "
                                   "train-/imagenet1k-validation-/..._test.tar, else train)")
    p.add_argument("--classes", metavar="FILE", help="class names of labels 0..K-1, one per line (with labels that "
                                                     "are names: the classes' order)")
    p.add_argument("--label-names", action="store_true",
                   help="label members hold class names, digits included (default: names when no label member "
                        "holds an integer); classes in sorted order unless --classes gives it")
    p.add_argument("--label-field", metavar="FIELD",
                   help="read each sample's label from FIELD of its json member (an integer or a class name; "
                        "default: a cls/class/label member, else a json member's label, cls or class field)")
    p.add_argument("--multi-label", action="store_true",
                   help="each sample's json member lists its classes ({\"labels\": [0, 3]} or class names; "
                        "--label-field names another field): batches carry multi-hot rows")
    p.add_argument("--max-pixels", type=int, default=None, help="reject images with more pixels than this")
    p.add_argument("--decode", action="store_true", help="fully decode every image (slower; default: headers)")
    p.add_argument("-j", "--jobs", type=int, default=usable_cpus(),
                   help="processes (default: the CPUs this process may use)")
    p.add_argument("--staging", metavar="DIR", help="remote shards: the local folder each tar is downloaded into "
                                                    "to be scanned, then deleted (default: under the user cache)")
    p.add_argument("--strict", action="store_true", help="exit non-zero if any sample or member was rejected")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) or progress lines (in a log, one a minute)")


def split_paths(paths: list[str]) -> tuple[list[str], str | None]:
    """(sources, DST): the last argument is DST when there are several and it is neither a tar nor a pattern (a
    folder with glob or brace characters in its name is a folder: one that exists, or a new one written with a
    trailing slash, `meta[1]/`)."""
    if len(paths) > 1:
        last = paths[-1]
        literal = not is_pattern(last) or Path(last).is_dir() or (last.endswith("/") and not glob.glob(last))
        if literal and not last.endswith(".tar") and not Path(last).is_file():
            return paths[:-1], last
    return paths, None


def run(args: argparse.Namespace) -> int:
    from converters.adopt import AdoptOptions, adopt, tar_count
    from converters.images.id_names import read_names
    from fastdata.images.options import DEFAULT_MAX_PIXELS
    from fastdata.manifest import MANIFEST_NAME

    sources, dst = split_paths(args.paths)
    classes = read_names(Path(args.classes)) if args.classes else None
    options = AdoptOptions(split=args.split, classes=classes, label_names=args.label_names,
                           label_field=args.label_field, multi_label=args.multi_label, decode=args.decode,
                           jobs=args.jobs, max_pixels=args.max_pixels or DEFAULT_MAX_PIXELS, staging=args.staging)
    spec = sources[0] if len(sources) == 1 else sources
    bar = progress(tar_count(spec), "shard", "fastdata index", enabled=not args.no_progress)
    try:
        result = adopt(spec, dst, options=options, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    m = result.manifest
    where = f"{result.dst}{MANIFEST_NAME}" if isinstance(result.dst, str) else result.dst / MANIFEST_NAME
    print(f"indexed {sum(len(s.shards) for s in m.splits.values())} shard(s) -> {where}"
          + (f" (shards in {m.shard_root})" if m.shard_root else ""))
    for name, s in sorted(m.splits.items()):
        print(f"  {name:8s} {s.samples:9d} samples  {len(s.shards):5d} shards  {human_bytes(s.bytes)}")
    what = (f"image-text pairs (captions in {m.text_member})" if m.text_member
            else f"labeled{_labels_held(m)}, {len(m.classes)} classes" if m.labeled
            else "unlabeled")
    print(f"  {what}; image members {', '.join(m.image_members)}")
    if m.rejected:
        print(f"  rejected {len(m.rejected)} sample(s) or member(s) (`fastdata info {result.dst} --rejected`):")
        for line in reason_summary(list(m.rejected)):
            print(f"    {line}")
    if args.strict and m.rejected:
        print(f"--strict: {len(m.rejected)} rejection(s)", file=sys.stderr)
        return 1
    return 0


def _labels_held(m) -> str:
    """How an adopted dataset's labels are held, when not as class indices in label members."""
    where = f" in json field {m.label_field!r}" if m.label_field else ""
    return where + (" by class name" if m.label_names else "") + (", several a sample" if m.multi_label else "")
