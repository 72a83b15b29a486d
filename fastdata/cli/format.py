"""Small formatting helpers shared by the CLI subcommands."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from fastdata.reasons import reason_group

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "kib": 2**10, "mib": 2**20, "gib": 2**30}


def parse_size(text: str) -> int:
    """'256MB' -> 256000000, '1GiB' -> 1073741824, '5000' -> 5000."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"cannot read size {text!r}; use bytes or a unit: 500000, 64MB, 256MiB, 1GB")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def reason_summary(rejected: list[dict[str, str]], *, limit: int = 8) -> list[str]:
    """Group rejection reasons by their first words (fastdata/reasons.py), most common first."""
    counts = Counter(printable(reason_group(str(r.get("reason", "")))) for r in rejected)
    return [f"{n:6d}  {reason}" for reason, n in counts.most_common(limit)]


def joined_names(names: Sequence[str]) -> str:
    """Class names joined by commas, each quoted when one holds a comma (WordNet's "great white shark, white
    shark"), so that a reader tells where each ends."""
    quoted = any("," in name for name in names)
    return ", ".join(repr(name) if quoted else name for name in names)


def printable(text: object) -> str:
    """`text` safe for a terminal: control characters (escape sequences, newlines) shown escaped."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in s)
