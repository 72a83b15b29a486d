"""How rejection reasons are grouped in a summary (`fastdata convert`, `info`, `index`, and the error of a conversion
that kept nothing): by their first words. A reason of the dicom or nifti kind starts with the file it is about
(`file-3bdb...: mask value 4, ...`, or a path with --keep-phi); grouped by that, every file was a group of one."""

from __future__ import annotations

import re

_FILE = re.compile(r"^(?:file-[0-9a-f]{20}|series-[0-9a-f]{32}|[^\s:]*[/.][^\s:]*)(?: frame \d+)?: (?=\S)")


def reason_group(reason: str) -> str:
    """The words a summary groups `reason` by: up to its first colon, after the file it may start with."""
    return _FILE.sub("", reason, count=1).split(":")[0]
