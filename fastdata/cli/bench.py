"""`fastdata bench DATASET`: how fast can the loader go on this machine, and with which settings?"""

from __future__ import annotations

import argparse
import json
import shlex

from fastdata.cpus import usable_cpus

MAX_BATCHES = 100_000  # batches one setting may time (or warm up with)


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 1,2,4, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected integers >= 1 like 1,2,4, got {text!r}")
    return values


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure loader throughput and search threads/prefetch",
                       description="Loader-only throughput of fastdata.loader(DATASET, ...) on this machine, "
                                   "plus a small search over num_threads and prefetch that prints the best "
                                   "settings and the exact arguments to use.")
    p.add_argument("dataset", help="converted dataset directory (or a shard glob)")
    p.add_argument("--batch-size", type=int, default=256, help="images per batch (default 256)")
    p.add_argument("--backend", choices=["dali", "kornia"],
                   help="default: dali on a CUDA device when installed, else kornia (the faster one there)")
    p.add_argument("--split", help="split to read (default: train, or the only split)")
    p.add_argument("--eval", action="store_true", help="eval transforms (resize + centre crop) instead of train")
    p.add_argument("--image-size", type=int, default=224, help="output height and width (default 224)")
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16", "uint8"], default="float32",
                   help="output dtype (default float32)")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when available)")
    p.add_argument("--no-channels-last", action="store_true", help="NCHW contiguous instead of channels_last")
    p.add_argument("--threads", type=_int_list, help="num_threads value(s) to try, e.g. 1,2,4 "
                   "(default: a quarter, half, all and twice the cores)")
    p.add_argument("--prefetch", type=_int_list, help="prefetch depth(s) to try (default 1,2,4)")
    p.add_argument("--batches", type=int, default=10, help="timed batches per setting (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="untimed batches first (default 2)")
    p.add_argument("--no-search", action="store_true", help="measure only the given settings")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--identity-hooks", action="store_true",
                   help="also measure the best settings with identity augment and batch_transform hooks, "
                        "alternating with none, and print what running hooks costs by itself")


def options_from_args(args: argparse.Namespace) -> dict:
    """The loader options the user asked for (single --threads/--prefetch values are fixed settings)."""
    opts = {"batch_size": args.batch_size, "train": not args.eval, "image_size": args.image_size,
            "dtype": args.dtype, "channels_last": not args.no_channels_last}
    for name, value in (("backend", args.backend), ("split", args.split), ("device", args.device)):
        if value is not None:
            opts[name] = value
    if args.threads and len(args.threads) == 1:
        opts["num_threads"] = args.threads[0]
    if args.prefetch and len(args.prefetch) == 1:
        opts["prefetch"] = args.prefetch[0]
    return opts


def _row(m) -> str:
    o, tp, u = m.options, m.throughput, m.usage
    cpu = f"{u.cpu_percent:5.0f}%" if u else "     -"
    rss = f"{u.peak_rss / 2**20:7.0f}" if u else "      -"
    return (f"{o.get('num_threads', '-')!s:>7} {o.get('prefetch', '-')!s:>8} {tp.images_per_s:10.1f} "
            f"{tp.seconds:8.2f} {cpu} {rss}")


def run(args: argparse.Namespace) -> int:
    from fastdata.images.loader import build_options
    from fastdata.perf.loader_bench import bench, loader_call

    if not 1 <= args.batches <= MAX_BATCHES or not 0 <= args.warmup <= MAX_BATCHES:
        raise ValueError(f"--batches must be 1 to {MAX_BATCHES:,} and --warmup 0 to {MAX_BATCHES:,} (a measurement, "
                         "not a training run)")
    opts = options_from_args(args)
    if not opts["train"] and "split" not in opts:  # eval speed of the default split: named, so no loader warns of it
        from fastdata.dataset import open_dataset

        opts["split"] = open_dataset(args.dataset, check_files=False).split
    resolved = build_options(**{k: v for k, v in opts.items() if k != "split"})
    opts.setdefault("backend", resolved.backend)
    opts.setdefault("device", resolved.device)
    opts.setdefault("num_threads", resolved.num_threads)
    opts.setdefault("prefetch", resolved.prefetch)
    search = not args.no_search and not (args.threads and len(args.threads) == 1
                                         and args.prefetch and len(args.prefetch) == 1)
    if not args.json:
        print(f"fastdata bench {args.dataset}: backend={opts['backend']} device={opts['device']} "
              f"batch_size={args.batch_size} {'eval' if args.eval else 'train'} {args.image_size}px {args.dtype}; "
              f"{args.batches} timed batches per setting after {args.warmup} warm-up, {usable_cpus()} usable CPUs")
    report = bench(args.dataset, options=opts, search=search, threads=args.threads, prefetches=args.prefetch,
                   batches=args.batches, warmup=args.warmup)
    best_opts = dict(opts)
    if report.search is not None:
        best_opts.update(num_threads=report.search.best.num_threads, prefetch=report.search.best.prefetch)
    best = max(report.measurements, key=lambda m: m.images_per_s if m.options == best_opts else -1.0)
    if args.json:
        print(json.dumps({
            "dataset": args.dataset, "options": opts, "best": best_opts,
            "measurements": [{"options": m.options, "images_per_s": m.images_per_s, "seconds": m.throughput.seconds,
                              "cpu_percent": m.usage.cpu_percent if m.usage else None,
                              "peak_rss": m.usage.peak_rss if m.usage else None} for m in report.measurements],
        }, indent=1))
        return 0
    print(f"{'threads':>7} {'prefetch':>8} {'images/s':>10} {'seconds':>8} {'CPU':>6} {'RSS MiB':>7}")
    for i, m in enumerate(report.measurements):
        print(_row(m) + ("   (as given)" if i == 0 else ""))
    base = report.baseline.images_per_s
    print(f"\nbest: num_threads={best_opts['num_threads']} prefetch={best_opts['prefetch']}: "
          f"{best.images_per_s:.1f} images/s ({best.images_per_s / base:.2f}x the settings as given)"
          if base > 0 else "")
    print("use it in Python:\n  " + loader_call(args.dataset, {k: v for k, v in best_opts.items()
                                                               if k not in ("device",)}))
    cli = ["fastdata", "bench", args.dataset, "--batch-size", str(args.batch_size), "--backend", opts["backend"],
           "--threads", str(best_opts["num_threads"]), "--prefetch", str(best_opts["prefetch"])]
    print("re-check it:\n  " + shlex.join(cli) + (" --eval" if args.eval else ""))
    print("(loader alone: a training step that also needs the CPU gets less; `fastdata doctor` measures that)")
    if args.identity_hooks:
        _hooks_cost(args, best_opts)
    return 0


def _unchanged(x):
    return x


def _unchanged_pair(x, y):
    return x, y


def _hooks_cost(args: argparse.Namespace, opts: dict, reps: int = 4) -> tuple[float, float]:
    """Median images/s of the settings without hooks and with identity hooks, measured alternately; which goes
    first changes every repetition (the one measured right after another loader meets its threads winding
    down: always putting the hooks second made them look up to 10% slower)."""
    import statistics

    from fastdata.perf.loader_bench import measure

    hooked = {**opts, "augment": _unchanged, "batch_transform": _unchanged_pair}
    runs: dict[str, list[float]] = {"none": [], "identity": []}
    pair = [("none", opts), ("identity", hooked)]
    warmup = hooks_warmup(args.warmup, int(opts.get("prefetch", 2)))
    for rep in range(reps):
        for name, o in pair if rep % 2 == 0 else pair[::-1]:
            m = measure(args.dataset, options=o, batches=args.batches, warmup=warmup)
            runs[name].append(m.images_per_s)
    plain, with_hooks = statistics.median(runs["none"]), statistics.median(runs["identity"])
    print(f"identity hooks: {with_hooks:.1f} images/s vs {plain:.1f} without ({with_hooks / plain:.3f}x; medians of "
          f"{reps} alternating runs, {warmup} warm-up batches each)" if plain > 0
          else "identity hooks: no images measured")
    if opts.get("backend") == "dali" and str(opts.get("device", "cpu")).startswith("cpu"):
        print("(DALI on CPU: with an augment hook the graph hands over [0, 1] images and normalisation runs after "
              "the hook, one more pass over each float batch; see docs/augment.md)")
    return plain, with_hooks


def hooks_warmup(warmup: int, prefetch: int) -> int:
    """Warm-up batches for the hooks comparison: enough to fill the hook stage's queue as well as the producer's
    (2 x (prefetch + 1) batches in flight), so that the timed window starts from a full pipeline in both runs."""
    return max(warmup, 2 * (prefetch + 1))
