"""`fastdata convert SRC DST`: raw data -> shards + manifest. `fastdata convert --merge DST` after parts."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from fastdata.cli.format import human_bytes, joined_names, parse_size, printable, reason_summary
from fastdata.cli.progress import progress
from fastdata.cpus import usable_cpus
from fastdata.label_members import label_classes

HOLDS_LIMIT = 1000  # files of a source no kind recognises that its error describes


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from converters import KINDS, get_kind

    p = sub.add_parser("convert", help="pack a raw dataset into shards",
                       description="Pack a raw dataset (image folders, text, DICOM) into shards + manifest.json.",
                       conflict_handler="resolve")
    p.add_argument("src", nargs="?", help="source folder")
    p.add_argument("dst", nargs="?", help="destination folder (created; must be empty or a resumable run), or a URL "
                                        "(s3://, gs://, az://): shards are staged locally and uploaded")
    p.add_argument("--merge", metavar="DST", help="assemble the manifest of a --num-parts conversion")
    p.add_argument("--kind", default="auto", choices=["auto", *KINDS], help="kind of source (default: detect)")
    p.add_argument("--format", choices=["wds", "arrow"], help="shard format (default: the kind's own)")
    p.add_argument("--shard-size", type=parse_size, default="256MB", help="target shard size (default 256MB)")
    p.add_argument("--samples-per-shard", type=int, help="fixed number of samples per shard instead")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed (default 0)")
    p.add_argument("-j", "--jobs", type=int, default=usable_cpus(),
                   help="worker processes (default: the CPUs this process may use)")
    p.add_argument("--strict", action="store_true", help="exit non-zero if any input was rejected")
    p.add_argument("--dry-run", action="store_true",
                   help="say what would be converted (layout, splits, classes, rejections) and write nothing; DST "
                        "may be left out")
    p.add_argument("--num-parts", type=int, default=1, help="split the work into K parts (job arrays)")
    p.add_argument("--part", type=int, default=0, help="which part this job converts (0..K-1)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) or progress lines (in a log, one a minute)")
    p.add_argument("--no-follow-symlinks", action="store_true",
                   help="reject symbolic links in SRC instead of following them (for trees from someone else)")
    p.add_argument("--private-report", metavar="FILE",
                   help="dicom, nifti: where the source paths behind the pseudonyms go (default: "
                        "DST.private-sources.jsonl beside DST; never inside it)")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local: this machine's worker processes (default); ray: one Ray task per shard on a Ray "
                        "cluster (pip install 'fastdata[ray]'; docs/cluster.md)")
    p.add_argument("--address", help="ray: the cluster to join ('auto', 'ray://host:10001'); default: start a local "
                                     "Ray instance with --jobs CPUs")
    p.add_argument("--retries", type=int, default=3,
                   help="ray: attempts after the first for a shard whose worker died or hit an OSError (default 3)")
    p.add_argument("--task-cpus", type=float, default=1.0, help="ray: CPUs each shard task requests (default 1)")
    p.add_argument("--task-memory", type=parse_size, help="ray: memory each shard task requests (default: the "
                                                          "kind's, 2GB for dicom and nifti, none otherwise)")
    p.add_argument("--staging", metavar="DIR", help="remote DST: local folder for shards before upload "
                                                    "(default: under the user cache folder)")
    for name in KINDS:
        group = p.add_argument_group(f"{name} options")
        get_kind(name).add_arguments(group)
    return p


def _detect(src: Path, args: argparse.Namespace | None = None) -> str:
    from converters import KINDS, get_kind
    from converters.images.array_kinds import what_file
    from converters.images.tfrecords import looks_like_tfrecord
    from converters.packed import packed_folder_advice
    from converters.walk import first_files
    from fastdata.errors import ConvertError

    if not src.exists():
        raise ConvertError(f"source {src} does not exist")
    if args is not None and (getattr(args, "captions", None) or getattr(args, "caption_field", None)):
        return "image_text"
    hidden = _unreadable(src) if src.is_dir() else None
    if hidden is not None:  # (told from the rest, CheXpert without its train/ was text: "--tokenizer is required")
        raise ConvertError(f"cannot tell what kind of data {src} holds: {hidden}; mend that, or name the kind with "
                           f"--kind ({', '.join(KINDS)}) to convert what can be read (what cannot is rejected)")
    if args is not None and getattr(args, "tokenizer", None):  # a tokenizer says text is meant, whatever stray
        return "image_text" if get_kind("image_text").detect(src) else "text"  # images: unless they have captions
    what = what_file(src) if src.is_file() else None  # (a table of pixels is a CSV file, which text would take)
    for name in KINDS:
        if what is None and get_kind(name).detect(src):
            return name
    if src.is_file() and (what or looks_like_tfrecord(src)):
        raise ConvertError(f"{src} is {what or 'a TFRecord file'}: images are converted from a folder, so convert the "
                           f"folder that holds it (fastdata convert {src.parent} DST), or move it into a folder of its "
                           "own")
    files = [src] if src.is_file() else list(first_files(src, HOLDS_LIMIT))
    advice = packed_folder_advice(src, files) if src.is_dir() else None
    if advice is not None:
        raise ConvertError(f"cannot tell what kind of data {src} holds ({_holds(files)}): {advice}")
    raise ConvertError(f"cannot tell what kind of data {src} holds ({_holds(files)}); pass --kind ({', '.join(KINDS)})")


def _shortened(path: str, limit: int = 80) -> str:
    """`path` in at most `limit` characters: its start and end around '...' (a chain of folders too deep to read
    was thousands of characters in the error)."""
    return path if len(path) <= limit else f"{path[:limit // 2 - 2]}...{path[-(limit - limit // 2 - 1):]}"


def _unreadable(src: Path) -> str | None:
    """The folders among the first HOLDS_LIMIT paths of `src` that cannot be read, and why (`train/ cannot be read:
    Permission denied (...)`): a kind told from the rest may be the wrong one. None for none."""
    from converters.walk import first_unreadable, mend

    found = first_unreadable(src, HOLDS_LIMIT)
    if not found:
        return None
    shown = [f"{_shortened(printable(p.relative_to(src).as_posix()))}/" for p, _ in found[:3]]
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return f"{', '.join(shown)}{more} cannot be read: {found[0][1]}{mend(found[0][1])}"



def _holds(files: list[Path]) -> str:
    """What `files` (a source file, or the first HOLDS_LIMIT files of a folder) are, by their extensions, most common
    first (`120 .nii.gz, 2 .csv`): what the error shows of a source no kind recognises."""
    if not files:
        return "no file"
    counts = Counter(_extension(p) for p in files)
    shown = ", ".join(f"{n} {suffix}" for suffix, n in counts.most_common(4))
    return (f"{shown} of its {'first ' if len(files) == HOLDS_LIMIT else ''}{len(files)} files" if len(counts) > 4
            else shown)


def _summary(result) -> None:
    if result.manifest is None:
        print(f"converted {len(result.converted)} shard(s), skipped {len(result.skipped)} already done; "
              f"run `fastdata convert --merge {result.dst}` when every part has finished")
        return
    m = result.manifest
    done = f"converted {len(result.converted)} shard(s)" + (
        f", skipped {len(result.skipped)} already done" if result.skipped else "") + (
        f", {result.retries} task retries" if result.retries else "")
    print(f"{done} -> {result.dst}")
    for name, s in sorted(m.splits.items()):
        print(f"  {name:8s} {s.samples:9d} samples  {len(s.shards):5d} shards  {human_bytes(s.bytes)}")
    if m.rejected:
        print(f"  rejected {len(m.rejected)} input(s) (listed in manifest.json; `fastdata info {result.dst}`):")
        for line in reason_summary(list(m.rejected)):
            print(f"    {line}")
    if result.private_report is not None:
        print(f"  source paths of the pseudonyms: {result.private_report} (private: do not share it)")


def _survey_summary(src: Path, kind: str, found) -> None:
    """What `--dry-run` prints: the layout, the inputs per split, the classes and how many inputs the smallest and
    the largest has, and the rejections grouped as after a conversion."""
    print(f"dry run, nothing written. {printable(src)}: kind {kind}, layout {found.layout}")
    for name, items in sorted(found.splits.items()):
        print(f"  {name:8s} {len(items):9d} inputs")
    if found.classes:
        shown = printable(joined_names(found.classes[:10]))
        more = f" and {len(found.classes) - 10} more" if len(found.classes) > 10 else ""
        print(f"  classes ({len(found.classes)}): {shown}{more}")
        counts = Counter(c if it.label is not None else None for items in found.splits.values() for it in items
                         for c in label_classes(it.label) or (None,))  # each class of a --multi-label image
        per = sorted((counts[i], c) for i, c in enumerate(found.classes))
        if set(counts) != {None}:  # nifti: the classes are the labels of masks, not of inputs
            print(f"  inputs per class: {per[0][0]} ({printable(per[0][1])}) to {per[-1][0]} "
                  f"({printable(per[-1][1])})")
    if found.rejected:
        print(f"  rejected {len(found.rejected)} input(s):")
        for line in reason_summary([{"reason": r.reason} for r in found.rejected]):
            print(f"    {line}")


class _Reads:
    """A namespace that records the names read from it (`getattr(args, "captions", None)` included)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._args, self.names = args, set()

    def __getattr__(self, name: str) -> object:
        self.names.add(name)
        return getattr(self._args, name)


def foreign_options(args: argparse.Namespace, kind: str) -> list[tuple[str, str]]:
    """(flag, the kinds that read it) of each kind option given (not at its default) that kind `kind` does not read:
    `--multi-label` on a text corpus, `--label-pattern` with `--tokenizer`. A kind reads what its `options_from_args`
    reads (image_text reads the image options, nifti dicom's): found by running it on the defaults. Before, such an
    option was silently ignored."""
    from converters import KINDS, get_kind

    convert = add_parser(argparse.ArgumentParser().add_subparsers())
    defaults = vars(convert.parse_args([]))
    flags = {a.dest: a.option_strings[0] for a in convert._actions if a.option_strings}
    readers: dict[str, list[str]] = {}
    for name in KINDS:
        reads = _Reads(argparse.Namespace(**defaults))
        try:
            get_kind(name).options_from_args(reads)
        except (ValueError, TypeError):  # a default its options refuse (text's missing --tokenizer): read already
            pass
        for dest in reads.names:
            readers.setdefault(dest, []).append(name)
    return [(flags[dest], ", ".join(owners)) for dest, owners in readers.items()
            if kind not in owners and dest in flags and getattr(args, dest, defaults.get(dest)) != defaults.get(dest)]


def run(args: argparse.Namespace) -> int:
    from converters import get_kind
    from converters.assemble import merge
    from converters.destination import destination
    from converters.engine import ConvertConfig, convert, survey
    from converters.survey import local_source

    if args.merge:
        if args.src or args.dst:
            raise ValueError("--merge DST takes no SRC/DST arguments")
        manifest = merge(args.merge)
        print(f"merged {args.merge}: {manifest.num_samples} samples in "
              f"{sum(len(s.shards) for s in manifest.splits.values())} shards")
        return 1 if (args.strict and manifest.rejected) else 0
    if not args.src or not (args.dst or args.dry_run):
        raise ValueError("usage: fastdata convert SRC DST [options]  or  fastdata convert --merge DST")
    src = local_source(args.src)
    kind = get_kind(_detect(src, args) if args.kind == "auto" else args.kind)
    foreign = foreign_options(args, kind.name)
    if foreign:
        raise ValueError(f"{', '.join(f'{flag} ({owners})' for flag, owners in foreign)}: not an option of kind "
                         f"{kind.name}, which {printable(src)} holds (--kind {kind.name}); it would be ignored. "
                         "Leave it out, or name the kind with --kind")
    options = kind.options_from_args(args)
    config = ConvertConfig(format=args.format, seed=args.seed, shard_size=args.shard_size,
                           samples_per_shard=args.samples_per_shard, jobs=args.jobs,
                           num_parts=args.num_parts, part=args.part, follow_symlinks=not args.no_follow_symlinks,
                           private_report=args.private_report, executor=args.executor, address=args.address,
                           retries=args.retries, task_cpus=args.task_cpus, task_memory=args.task_memory)
    if args.dry_run:
        config.validate(kind)
        found = survey(kind, src, options=options, config=config)
        _survey_summary(src, kind.name, found)
        return 1 if (args.strict and found.rejected) else 0
    dest = destination(args.dst, staging=args.staging)
    made = []  # the conversion makes its progress once it knows the total; closed here, ended or failed

    def factory(total: int):
        made.append(progress(total, getattr(kind, "unit", "sample"), "fastdata convert", enabled=True, scale=True))
        return made[-1]

    try:
        result = convert(kind, src, dest, options=options, config=config,
                         progress_factory=None if args.no_progress else factory)
    finally:
        for shown in made:
            shown.close()
    _summary(result)
    if args.strict and result.rejected:
        print(f"--strict: {len(result.rejected)} input(s) were rejected", file=sys.stderr)
        return 1
    return 0


def _extension(path: Path) -> str:
    """`.jpg`, or `.nii.gz` for a compressed file; `no extension`."""
    suffixes = [x.lower() for x in path.suffixes]
    if len(suffixes) > 1 and suffixes[-1] in (".gz", ".zst", ".bz2", ".xz"):
        return "".join(suffixes[-2:])
    return suffixes[-1] if suffixes else "no extension"
