"""Token batches side by side: padding waste and tokens/s of what users run today against fastdata.

    python benchmarks/sequences.py                          # real fortunes text, real BERT tokenizer
    python benchmarks/sequences.py --reps 2 --epochs 1      # a short run

The corpus (tests/data/text/fortunes, one class per file, records split by `%` lines) is
converted once with the text kind; every candidate then iterates the same token ids:
  (a) random batches of --batch-size padded to the longest with torch.nn.utils.rnn.pad_sequence
      (DataLoader over in-memory tensors, shuffle=True);
  (b) Hugging Face `datasets` (Dataset.from_file on the same Arrow shards) + transformers'
      LengthGroupedSampler (what `group_by_length=True` uses) + DataCollatorWithPadding;
  (c) fastdata.loader(bucketing="length", max_tokens=--max-tokens);
  (d) fastdata.loader(bucketing="pack", block_size=--block-size, max_tokens=--max-tokens).
Waste = padded slots that hold no real token / all slots. tokens/s = real tokens per second of a
full epoch (collation included, loader construction excluded), median over interleaved repetitions
after one warm-up epoch each. All use pad_to_multiple_of=--pad-multiple (default 1).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from benchmarks.common import (  # noqa: E402
    DOCS,
    environment,
    environment_markdown,
    interleaved,
    publish,
    summarize,
    versions,
    write_json,
)
from benchmarks.plot import save_figure  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "tests" / "data"  # bundled in the repository
LABELS = {"a": "pad_sequence, random batches", "b": "HF datasets + group_by_length + DataCollatorWithPadding",
          "c": "fastdata bucketing='length'", "d": "fastdata bucketing='pack'"}
SWEEP = (512, 1024, 2048, 4096, 8192)  # max_tokens values whose length-bucketing waste is also reported
HEAVY = {"documents": 50_000, "min": 11, "max": 62_621, "max_tokens": 65_536}  # the heavy-tailed comparison


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--text", type=Path, default=SAMPLES / "text" / "fortunes", help="folder of fortunes-style files")
    p.add_argument("--tokenizer", type=Path, default=SAMPLES / "tokenizers" / "bert-base-uncased.json")
    p.add_argument("--out", type=Path, default=Path("bench-out"), help="results folder (JSON, PNG, work files)")
    p.add_argument("--batch-size", type=int, default=16, help="sequences per batch for (a) and (b)")
    p.add_argument("--max-tokens", type=int, default=1024, help="token budget per batch for (c) and (d)")
    p.add_argument("--block-size", type=int, default=512, help="packed row length for (d)")
    p.add_argument("--pad-multiple", type=int, default=1, help="pad_to_multiple_of for every candidate")
    p.add_argument("--reps", type=int, default=5, help="timed repetitions per candidate (interleaved)")
    p.add_argument("--epochs", type=int, default=3, help="epochs per timed repetition")
    p.add_argument("--docs", type=Path, default=DOCS, help="markdown file whose sequences section is rewritten")
    p.add_argument("--no-docs", action="store_true", help="do not touch the markdown file")
    return p.parse_args(argv)


def prepare(args: argparse.Namespace, work: Path) -> tuple[Path, float]:
    """Copy the corpus into class folders and convert it once; returns (tokens dir, seconds)."""
    from converters import get_kind
    from converters.engine import ConvertConfig, convert
    from converters.text import TextOptions

    src, dst = work / "src", work / "tokens"
    for d in (src, dst):
        shutil.rmtree(d, ignore_errors=True)
    for f in sorted(p for p in args.text.iterdir() if p.is_file()):
        (src / f.name).mkdir(parents=True)
        shutil.copyfile(f, src / f.name / f"{f.name}.txt")
    start = time.perf_counter()
    convert(get_kind("text"), src, dst, options=TextOptions(tokenizer=str(args.tokenizer), separator="%"),
            config=ConvertConfig(jobs=os.cpu_count() or 1))
    return dst, time.perf_counter() - start


def candidates(args: argparse.Namespace, tokens: Path) -> dict[str, Callable[[int], Iterable[dict]]]:
    """name -> make(epoch) returning one epoch's batches (dicts with input_ids and attention_mask)."""
    import datasets
    import torch
    from torch.nn.utils.rnn import pad_sequence
    from transformers import DataCollatorWithPadding, PreTrainedTokenizerFast
    from transformers.trainer_pt_utils import LengthGroupedSampler

    import fastdata

    datasets.disable_progress_bars()
    shards = sorted(str(p) for p in tokens.glob("*.arrow"))
    hf = datasets.concatenate_datasets([datasets.Dataset.from_file(p) for p in shards])
    lengths = hf["length"][:]
    hf = hf.select_columns(["input_ids", "label"])
    tensors = [(torch.tensor(ids, dtype=torch.int64), label) for ids, label in zip(hf["input_ids"][:], hf["label"][:])]
    multiple = args.pad_multiple if args.pad_multiple > 1 else None
    tok = PreTrainedTokenizerFast(tokenizer_file=str(args.tokenizer), pad_token="[PAD]")
    collator = DataCollatorWithPadding(tok, padding="longest", pad_to_multiple_of=multiple)

    def pad_collate(batch: list) -> dict[str, Any]:
        ids = pad_sequence([b[0] for b in batch], batch_first=True, padding_value=tok.pad_token_id)
        if multiple and ids.shape[1] % multiple:
            ids = torch.nn.functional.pad(ids, (0, multiple - ids.shape[1] % multiple), value=tok.pad_token_id)
        n = torch.tensor([len(b[0]) for b in batch])
        return {"input_ids": ids, "attention_mask": (torch.arange(ids.shape[1])[None] < n[:, None]).long(),
                "labels": torch.tensor([b[1] for b in batch])}

    def a(epoch: int):
        g = torch.Generator().manual_seed(epoch)
        return torch.utils.data.DataLoader(tensors, batch_size=args.batch_size, shuffle=True, generator=g,
                                           collate_fn=pad_collate)

    def b(epoch: int):
        sampler = LengthGroupedSampler(args.batch_size, lengths=lengths, generator=torch.Generator().manual_seed(epoch))
        return torch.utils.data.DataLoader(hf, batch_size=args.batch_size, sampler=sampler, collate_fn=collator)

    def fast(**kw: Any) -> Callable[[int], Iterable[dict]]:
        def make(epoch: int):
            loader = fastdata.loader(tokens, max_tokens=args.max_tokens, pad_to_multiple_of=args.pad_multiple, **kw)
            loader.set_epoch(epoch)
            return loader
        return make

    return {"a": a, "b": b, "c": fast(bucketing="length"), "d": fast(bucketing="pack", block_size=args.block_size)}


def run_epoch(batches: Iterable[dict]) -> dict[str, float]:
    real = slots = count = 0
    start = time.perf_counter()
    for batch in batches:
        real += int(batch["attention_mask"].sum())
        slots += batch["input_ids"].numel()
        count += 1
    return {"seconds": time.perf_counter() - start, "real_tokens": real, "slots": slots, "batches": count}


def measure(makers: dict[str, Callable[[int], Iterable[dict]]], *, reps: int, epochs: int) -> list[dict]:
    rows = []
    for name in makers:  # warm-up: imports, page cache, first-call overheads
        run_epoch(makers[name](10_000))
    for rep, name in interleaved(list(makers), reps):
        for e in range(epochs):
            loader = makers[name](rep * epochs + e)
            rows.append({"candidate": name, "rep": rep, "epoch": rep * epochs + e, **run_epoch(loader)})
            print(f"  rep {rep} ({name}) epoch {e}: {rows[-1]['real_tokens'] / rows[-1]['seconds']:,.0f} tokens/s")
    return rows


def summarize_rows(rows: list[dict]) -> list[dict]:
    out = []
    for name in LABELS:
        mine = [r for r in rows if r["candidate"] == name]
        if not mine:
            continue
        real, slots = sum(r["real_tokens"] for r in mine), sum(r["slots"] for r in mine)
        out.append({"candidate": name, "label": LABELS[name], "waste": 1 - real / slots,
                    "tokens_per_s": summarize([r["real_tokens"] / r["seconds"] for r in mine]),
                    "real_tokens_per_batch": real / sum(r["batches"] for r in mine)})
    by = {e["candidate"]: e for e in out}
    for e in out:
        if "a" in by and e["candidate"] != "a" and e["waste"] > 0:
            e["waste_vs_a"] = by["a"]["waste"] / e["waste"]
        if "b" in by:
            e["speed_vs_b"] = e["tokens_per_s"]["median"] / by["b"]["tokens_per_s"]["median"]
    return out


def waste_sweep(tokens: Path, args: argparse.Namespace) -> dict[int, float]:
    """Length-bucketing waste at several budgets (one epoch each, no timing)."""
    import fastdata

    out = {}
    for m in SWEEP:
        stats = run_epoch(fastdata.loader(tokens, max_tokens=m, pad_to_multiple_of=args.pad_multiple))
        out[m] = 1 - stats["real_tokens"] / stats["slots"]
    return out


def heavy_tailed_lengths(seed: int = 0) -> np.ndarray:
    """Synthetic document lengths with a long tail (log-normal, clipped to HEAVY's range): a stand-in for
    a web or encyclopedia corpus, where a few documents are thousands of times longer than most."""
    rng = np.random.default_rng(seed)
    return np.clip(np.exp(rng.normal(6.0, 1.4, HEAVY["documents"])), HEAVY["min"], HEAVY["max"]).astype(np.int64)


def partition_waste(lengths: np.ndarray, *, max_tokens: int, multiple: int) -> dict[str, float]:
    """One epoch's padding waste when each sorted window is cut greedily and when it is cut exactly
    (fastdata.text.partition), the same number of batches both ways, and the planning time of each."""
    from fastdata.text.options import SequenceLoaderOptions
    from fastdata.text.partition import exact_cut
    from fastdata.text.plan import cut, epoch_order, padded, sorted_windows

    opts = SequenceLoaderOptions(max_tokens=max_tokens, pad_to_multiple_of=multiple)
    order, _ = epoch_order(len(lengths), opts, epoch=0)
    out: dict[str, float] = {"documents": len(lengths), "tokens": int(lengths.sum())}
    for name, fn in (("greedy", cut), ("exact", exact_cut)):
        start, slots, batches = time.perf_counter(), 0, 0
        for window in sorted_windows(order, lengths, opts.window):
            for b in fn(window, lengths, max_tokens=max_tokens, batch_size=None, multiple=multiple):
                slots += len(b) * padded(int(lengths[b].max()), multiple)
                batches += 1
        out[f"{name}_waste"] = 1 - out["tokens"] / slots
        out[f"{name}_batches"] = batches
        out[f"{name}_plan_ms"] = 1000 * (time.perf_counter() - start)
    return out


def chart(summary: list[dict], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [f"({e['candidate']}) {e['label']}" for e in summary][::-1]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.9 + 0.6 * len(summary)), sharey=True)
    waste = [100 * e["waste"] for e in summary][::-1]
    left.barh(names, waste, color="#ff7f0e")
    for y, w in enumerate(waste):
        left.text(w, y, f" {w:.2f}%", va="center", fontsize=8)
    left.set_xlabel("padding waste, % of slots (lower is better)")
    left.set_xlim(0, max(waste + [1]) * 1.3)
    med = [e["tokens_per_s"]["median"] for e in summary][::-1]
    err = [[m - e["tokens_per_s"]["min"] for m, e in zip(med, summary[::-1])],
           [e["tokens_per_s"]["max"] - m for m, e in zip(med, summary[::-1])]]
    right.barh(names, [m / 1e6 for m in med], xerr=[[v / 1e6 for v in side] for side in err], capsize=3,
               color="#1f77b4")
    for y, (m, e) in enumerate(zip(med, summary[::-1])):
        right.text(e["tokens_per_s"]["max"] / 1e6, y, f"  {m / 1e6:.2f}M", va="center", fontsize=8)
    right.set_xlabel("million real tokens/s (median, min-max)")
    right.set_xlim(0, max(med + [1]) / 1e6 * 1.35)
    return save_figure(fig, out)


def partition_markdown(parts: dict[str, dict], multiple: int) -> list[str]:
    lines = ["", "Length bucketing cuts each sorted window exactly (`fastdata/text/partition.py`): the fewest padded "
             "slots among all cuts into as many batches as the greedy cut makes. Both plans of one epoch, "
             f"pad_to_multiple_of={multiple}:", "",
             "| corpus | documents | max_tokens | batches | greedy waste | exact waste | planning ms (greedy, exact) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, p in parts.items():
        lines.append(f"| {name} | {p['documents']:,} | {p['max_tokens']:,} | {p['exact_batches']:,} | "
                     f"{100 * p['greedy_waste']:.2f}% | {100 * p['exact_waste']:.2f}% | "
                     f"{p['greedy_plan_ms']:.0f}, {p['exact_plan_ms']:.0f} |")
    return lines


def markdown(summary: list[dict], sweep: dict[int, float], env: dict, config: dict, chart_rel: str,
             parts: dict[str, dict]) -> str:
    lines = ["## Token sequences: padding waste and tokens/s", "",
             f"Corpus: {config['documents']} fortunes ({config['tokens']:,} tokens, BERT uncased), "
             f"one epoch = every document once; (a)/(b) batch_size={config['batch_size']}, (c)/(d) "
             f"max_tokens={config['max_tokens']}, (d) block_size={config['block_size']}, pad_to_multiple_of="
             f"{config['pad_multiple']}; tokens/s is the median over {config['reps'] * config['epochs']} timed epochs "
             f"({config['reps']} interleaved repetitions x {config['epochs']}) after one warm-up epoch each. Waste "
             "counts padded slots over all slots of the epoch. Measured by `benchmarks/sequences.py`; rerun it to "
             "refresh this section.", "",
             "| candidate | waste | vs (a) | real tokens / batch | tokens/s (median) | min-max | vs (b) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for e in summary:
        t = e["tokens_per_s"]
        lines.append(f"| ({e['candidate']}) {e['label']} | {100 * e['waste']:.2f}% | "
                     + (f"{e['waste_vs_a']:.1f}x less" if "waste_vs_a" in e else "-")
                     + f" | {e['real_tokens_per_batch']:.0f} | {t['median']:,.0f} | {t['min']:,.0f}-{t['max']:,.0f} | "
                     + (f"{e['speed_vs_b']:.1f}x" if "speed_vs_b" in e else "-") + " |")
    lines += ["", "Length-bucketing waste by token budget (same corpus, pad_to_multiple_of="
              f"{config['pad_multiple']}): " + ", ".join(f"{m}: {100 * w:.2f}%" for m, w in sweep.items()),
              *partition_markdown(parts, config["pad_multiple"]), "",
              f"![padding waste and tokens/s]({chart_rel})", "", environment_markdown(env)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = args.out / "sequences"
    print(f"converting {args.text} with {args.tokenizer.name} ...")
    tokens, convert_s = prepare(args, work)
    makers = candidates(args, tokens)
    env = environment()
    env["versions"].update(versions(("tokenizers", "datasets", "transformers", "pyarrow")))
    rows = measure(makers, reps=args.reps, epochs=args.epochs)
    summary = summarize_rows(rows)
    sweep = waste_sweep(tokens, args)
    from fastdata.manifest import read_manifest

    stats = read_manifest(tokens).split("train").stats
    fortune_lengths = np.concatenate([pa.ipc.open_stream(pa.OSFile(str(p))).read_all().column("length").to_numpy()
                                      for p in sorted(tokens.glob("*.arrow"))])
    parts = {"fortunes (BERT)":
             {"max_tokens": args.max_tokens, **partition_waste(fortune_lengths, max_tokens=args.max_tokens,
                                                              multiple=args.pad_multiple)},
             f"synthetic heavy-tailed ({HEAVY['min']}-{HEAVY['max']:,} tokens, log-normal)":
             {"max_tokens": HEAVY["max_tokens"],
              **partition_waste(heavy_tailed_lengths(), max_tokens=HEAVY["max_tokens"], multiple=args.pad_multiple)}}
    config = {k: getattr(args, k) for k in ("batch_size", "max_tokens", "block_size", "pad_multiple", "reps", "epochs")}
    config.update(documents=stats["documents"], tokens=stats["tokens"], convert_seconds=convert_s)
    png = chart(summary, work / "sequences.png")
    write_json(work / "sequences.json", {"environment": env, "config": config, "rows": rows, "summary": summary,
                                         "waste_by_max_tokens": sweep, "partition": parts})
    for e in summary:
        print(f"({e['candidate']}) {e['label']:55s} waste {100 * e['waste']:6.2f}%  "
              f"{e['tokens_per_s']['median']:>12,.0f} tokens/s")
    for name, p in parts.items():
        print(f"{name:55s} waste greedy {100 * p['greedy_waste']:.2f}%  exact {100 * p['exact_waste']:.2f}%  "
              f"({p['exact_batches']} batches)")
    print(f"wrote {work / 'sequences.json'} and {png}")
    if not args.no_docs:
        shutil.copyfile(png, args.docs.parent / "sequences.png")
    publish(markdown(summary, sweep, env, config, "sequences.png", parts), docs=args.docs, name="sequences",
            write=not args.no_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
