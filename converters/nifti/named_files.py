"""imagesTr channel files named by their channel, `CASE__NAME`: HECKTOR 2022's `CHUM-001__CT.nii.gz` and
`CHUM-001__PT.nii.gz` beside `labelsTr/CHUM-001.nii.gz`, where nnU-Net numbers them (`CASE_0000`, discover.py).

A case's channels are picked as a case folder's are (`--channel CT`, `--channel CT,PT`, `--channel all` in the
order of their names); each scanner's grid is its own, so stacking them takes `--resample-channels`
(channel_grid.py)."""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass

from converters.nifti.case_folders import File, stem
from converters.nifti.channels import ALL, absent_reason, picked, several_reason

NAMED_FILE = re.compile(r"^(.+)__([A-Za-z][A-Za-z0-9+\-]{0,31})$")  # CHUM-001__CT: the case, then its channel


def named_cases(images: list[File], masks: set[str]) -> dict[str, dict[str, File]] | None:
    """{case: {channel name: file}} when every image is named CASE__NAME and the masks (if any) are named after
    the cases; else None."""
    cases: dict[str, dict[str, File]] = defaultdict(dict)
    for path, rel in images:
        match = NAMED_FILE.match(stem(os.path.basename(rel)))
        if match is None:
            return None
        cases[match.group(1)][match.group(2)] = (path, rel)
    if not cases or masks and not masks & set(cases):
        return None
    return dict(cases)


@dataclass(frozen=True)
class Choice:
    """What `--channel` takes of a case: one file (`files` of one), or files to stack, with their names."""

    channel: int | str | None  # what the case's json records
    files: tuple[File, ...]
    names: tuple[str, ...]

    @property
    def stacked(self) -> bool:
        return len(self.files) > 1


def choose(files: dict[str, File], channel: int | str | None) -> Choice | str:
    """The channels `channel` (--channel) takes of a case of named files, or why the case is rejected."""
    listed = ", ".join(sorted(files))
    if channel is None and len(files) == 1:
        ((name, file),) = files.items()
        return Choice(channel, (file,), (name,))
    if channel == ALL:  # in the order of their names (one file: that one)
        names = tuple(sorted(files))
        return Choice(ALL, tuple(files[n] for n in names), names)
    if channel is None:
        return several_reason(len(files), listed)
    if isinstance(channel, int):
        return f"the channels of this case are named ({listed}), not numbered: pick one with --channel NAME"
    names = picked(channel) or (channel,)
    absent = [n for n in names if n not in files]
    if absent:
        return absent_reason(absent, channel, listed)
    return Choice(channel, tuple(files[n] for n in names), names)
