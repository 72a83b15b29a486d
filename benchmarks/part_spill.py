"""A text conversion in parts against one run: each part's spill file and time, and the merged shards' bytes.

    python benchmarks/part_spill.py                      # 4 parts, the fortunes 40 times over (23 MB of JSON Lines)
    python benchmarks/part_spill.py --parts 8 --copies 10

The corpus is the real fortunes text (tests/data/text/fortunes) written --copies times over as one JSON Lines file,
each copy's documents numbered so that no two are equal. It is converted once whole and once in --parts parts
(each part in turn, in this process, as a Slurm array would run them one per task) with the real BERT tokenizer;
the spill files' sizes are taken when discovery flushes them (converters/spill.py). Prints one line per run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from converters import get_kind  # noqa: E402
from converters.assemble import merge  # noqa: E402
from converters.engine import ConvertConfig, convert  # noqa: E402
from converters.spill import Spill  # noqa: E402
from converters.text import TextOptions  # noqa: E402
from fastdata.manifest import read_manifest  # noqa: E402

FORTUNES = ROOT / "tests" / "data" / "text" / "fortunes"
TOKENIZER = ROOT / "tests" / "data" / "tokenizers" / "bert-base-uncased.json"


def corpus(path: Path, copies: int) -> int:
    """Write the JSON Lines corpus; its number of documents."""
    docs = []
    for f in sorted(FORTUNES.iterdir()):
        docs += [d.strip() for d in f.read_text(encoding="utf-8", errors="replace").split("%") if d.strip()]
    with path.open("w", encoding="utf-8") as out:
        for i in range(copies):
            for d in docs:
                out.write(json.dumps({"text": f"{i} {d}"}) + "\n")
    return copies * len(docs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--copies", type=int, default=40)
    ap.add_argument("--shard-size", type=int, default=8_000_000)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    sizes: list[int] = []
    flush = Spill.flush

    def recording(self: Spill) -> None:
        flush(self)
        sizes.append(self.size)

    Spill.flush = recording  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="fastdata-part-spill-") as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        n = corpus(root / "src" / "corpus.jsonl", args.copies)
        print(f"corpus: {(root / 'src' / 'corpus.jsonl').stat().st_size / 1e6:.1f} MB of JSON Lines, {n} documents")
        options = TextOptions(tokenizer=str(TOKENIZER))

        def run(dst: str, label: str, **config: int) -> None:
            sizes.clear()
            t = time.perf_counter()
            convert(get_kind("text"), root / "src", root / dst, options=options,
                    config=ConvertConfig(jobs=args.jobs, shard_size=args.shard_size, **config))
            spilled = ", ".join(f"{s / 1e6:.2f}" for s in sizes)
            print(f"{label}: {time.perf_counter() - t:.1f} s, spill files of discovery: {spilled} MB")

        run("whole", "one run")
        for part in range(args.parts):
            run("parts", f"part {part} of {args.parts}", num_parts=args.parts, part=part)
        whole = read_manifest(root / "whole")
        merged = merge(root / "parts")
        same = all([s.sha256 for s in merged.split(name).shards] == [s.sha256 for s in whole.split(name).shards]
                   for name in whole.splits)
        print(f"merged shards are one run's bytes: {same} ({len(whole.split('train').shards)} shards)")
        shutil.rmtree(root / "parts")


if __name__ == "__main__":
    main()
