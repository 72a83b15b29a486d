"""Draw the charts of the benchmark scripts from their JSON results (a separate step from measuring).

    python benchmarks/plot.py bench-out/images/images_per_sec.json out.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def save_figure(fig: Any, out: Path) -> Path:
    """Lay out `fig`, write it to `out` as PNG (parents created) and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def plot_images_per_sec(summary: list[dict[str, Any]], out: Path, *, title: str = "") -> Path:
    """Horizontal bars: median images/s per candidate, min-max whiskers, one panel per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = list(dict.fromkeys(e["variant"] for e in summary))
    fig, axes = plt.subplots(len(variants), 1, figsize=(11, 1.0 + 0.55 * 6 * len(variants)), squeeze=False)
    for ax, variant in zip(axes[:, 0], variants):
        entries = [e for e in summary if e["variant"] == variant and "images_per_s" in e][::-1]
        labels = [f"({e['candidate']}) {e['label']}" for e in entries]
        med = [e["images_per_s"]["median"] for e in entries]
        lo = [m - e["images_per_s"]["min"] for m, e in zip(med, entries)]
        hi = [e["images_per_s"]["max"] - m for m, e in zip(med, entries)]
        colors = ["#999999" if e["ceiling"] else "#1f77b4" if e["candidate"] in ("d", "e") else "#ff7f0e"
                  for e in entries]
        ax.barh(labels, med, xerr=[lo, hi], color=colors, capsize=3)
        for y, (m, e) in enumerate(zip(med, entries)):
            ratio = f"  {m:.0f}/s" + (f" ({e['vs_a']:.1f}x a)" if "vs_a" in e and e["candidate"] != "a" else "")
            ax.text(e["images_per_s"]["max"], y, ratio, va="center", fontsize=8)
        ax.set_title(f"{variant}" + (f" - {title}" if title else ""), fontsize=10)
        ax.set_xlabel("images per second (median, min-max)")
        # room right of the longest bar for its label: the value and its ratio to (a)
        ax.set_xlim(0, max([e["images_per_s"]["max"] for e in entries] + [1]) * 1.45)
    return save_figure(fig, out)


def plot_convert_speed(summary: list[dict[str, Any]], out: Path, *, title: str = "") -> Path:
    """Horizontal bars of conversion images/s (median, min-max)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries = summary[::-1]
    med = [e["images_per_s"]["median"] for e in entries]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.5 * len(entries)))
    ax.barh([e["label"] for e in entries], med,
            xerr=[[m - e["images_per_s"]["min"] for m, e in zip(med, entries)],
                  [e["images_per_s"]["max"] - m for m, e in zip(med, entries)]], capsize=3, color="#1f77b4")
    for y, (m, e) in enumerate(zip(med, entries)):
        ax.text(e["images_per_s"]["max"], y, f"  {m:.0f}/s", va="center", fontsize=8)
    ax.set_xlabel("images converted per second (median, min-max)")
    ax.set_title(title, fontsize=10)
    ax.set_xlim(0, max([e["images_per_s"]["max"] for e in entries] + [1]) * 1.3)
    return save_figure(fig, out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", type=Path, help="JSON written by images_per_sec.py or convert_speed.py")
    p.add_argument("out", type=Path, help="PNG to write")
    args = p.parse_args(argv)
    data = json.loads(args.results.read_text())
    env = data.get("environment", {})
    title = f"{env.get('cpu', '')} ({env.get('cores', '?')} cores)"
    kind = data.get("benchmark", "images_per_sec")
    draw = plot_convert_speed if kind == "convert_speed" else plot_images_per_sec
    draw(data["summary"], args.out, title=title)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
