"""The private report of a conversion whose kind names its sources by pseudonym (DICOM): the source paths behind
the pseudonyms, one JSON line each, written beside the destination (never inside it), mode 0600."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from converters.destination import Destination, LocalDestination
from converters.kind import Discovery
from converters.outputs import REPORT_NOTE, REPORT_SUFFIX
from converters.sample import WorkItem
from fastdata.atomic import write_bytes_atomic
from fastdata.errors import ConvertError

log = logging.getLogger(__name__)


def report_path(dest: Destination, private_report: Path | str | None) -> Path:
    """Where the pseudonyms' source paths go: --private-report, else beside a local DST (never inside it),
    else in the working folder for a remote one."""
    if private_report is not None:
        path = Path(private_report).absolute()
        if isinstance(dest, LocalDestination) and dest.work.absolute() in path.parents:
            raise ConvertError(f"--private-report {path} is inside the destination {dest.label}: the paths it holds "
                               "must not travel with the dataset")
        return path
    if isinstance(dest, LocalDestination):
        return dest.work.parent / f"{dest.work.name}{REPORT_SUFFIX}"
    return Path.cwd() / f"{dest.label.rstrip('/').rsplit('/', 1)[-1]}{REPORT_SUFFIX}"


def write_report(path: Path, dest: Destination, src: Path, shuffled: dict[str, list[WorkItem]],
                  discovery: Discovery, paths: dict[str, str]) -> None:
    """One JSON line per pseudonym: split, sample key (converted inputs) or reason (rejected at discovery),
    pseudonym and source path; then the files inside the inputs (their pseudonyms appear in reasons)."""
    lines = [{"source": str(src.resolve()), "destination": dest.label,
              "note": REPORT_NOTE}]
    for split, items in sorted(shuffled.items()):
        for it in items:
            lines.append({"split": split, "key": it.key, "name": it.rel, "path": paths.get(it.rel, it.rel)})
    for r in discovery.rejected:
        lines.append({"split": r.split, "name": r.source, "path": paths.get(r.source, r.source), "reason": r.reason})
    written = {line.get("name") for line in lines}
    lines.extend({"name": name, "path": path} for name, path in paths.items() if name not in written)  # files
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode())
    os.chmod(path, 0o600)
    log.info("the source paths behind the pseudonyms are in %s (private: do not share it)", path)
