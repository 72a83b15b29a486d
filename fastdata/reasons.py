"""How rejection reasons are grouped in a summary (`fastdata convert`, `info`, `index`, and the error of a conversion
that kept nothing): by their first words. A reason of the dicom or nifti kind starts with the file it is about
(`file-3bdb...: mask value 4, ...`, or a path with --keep-phi); grouped by that, every file was a group of one. And
how a list of names is shown in one message (`shown_names`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

_FILE = re.compile(r"^(?:file-[0-9a-f]{20}|series-[0-9a-f]{32}|[^\s:]*[/.][^\s:]*)(?: frame \d+)?: (?=\S)")


def reason_group(reason: str) -> str:
    """The words a summary groups `reason` by: up to its first colon, after the file it may start with."""
    return _FILE.sub("", reason, count=1).split(":")[0]


def shown_names(names: Sequence[str], limit: int = 3) -> str:
    """The first `limit` of `names`, and how many more: `a, b, c and 4 more`."""
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
