"""What fastdata wrote inside a source folder, which no discovery reads as input: a dataset (a DST inside its own
source, `fastdata convert photos/ photos/shards/`, this run's or an earlier one's) and a private report
(`DST.private-sources.jsonl`, written beside such a DST). Read as input, a dataset's folder became a class without
samples and its files rejected inputs (or, for text, tables of input); a report became a rejected input.

Only regular files are opened, and only those named as fastdata names them: a dataset's manifest.json (format
"fastdata") and a report's first line (its note)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from converters.state import LOCK_PREFIX, PARTIAL, PLAN
from converters.walk import display
from fastdata.json_text import BadJSON, parse_json
from fastdata.manifest import MANIFEST_NAME

log = logging.getLogger(__name__)

REPORT_SUFFIX = ".private-sources.jsonl"
REPORT_NOTE = "PRIVATE: maps pseudonyms to source paths; keep it with the source data, never with the dataset"
MAX_MANIFEST_BYTES = 1 << 30  # a manifest.json larger than this is no dataset fastdata wrote (not parsed)
_FIRST_LINE = 1 << 16  # a report's first line (source, destination, note) is far shorter

_named: set[str] = set()  # what a warning named already (a discovery lists a folder more than once)


def may_be_output(entry: os.DirEntry) -> bool:
    """Whether a folder's entry is worth `written_by_fastdata`: a folder, or a file named as a report is."""
    try:
        return entry.name.endswith(REPORT_SUFFIX) or entry.is_dir()
    except OSError:  # a folder that cannot be told: the walk reports it
        return False


def written_by_fastdata(path: Path) -> bool:
    """Whether `path` is a dataset folder or a private report fastdata wrote (a warning names it once)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    if stat.S_ISDIR(mode):
        found = _is_dataset(path)
    else:
        found = stat.S_ISREG(mode) and path.name.endswith(REPORT_SUFFIX) and _is_report(path)
    if found and str(path) not in _named:
        _named.add(str(path))
        what = "a dataset" if stat.S_ISDIR(mode) else "the private report of a conversion"
        log.warning("not reading %s: %s fastdata wrote, not source data", display(path), what)
    return found


def _is_dataset(folder: Path) -> bool:
    """A conversion's state (`.partial/` with its plan or a run's lock: a run under way or killed), or a manifest.json
    of format "fastdata"."""
    state = folder / PARTIAL
    if (state / PLAN).is_file() or any(state.glob(f"{LOCK_PREFIX}*")):
        return True
    data = _json(folder / MANIFEST_NAME)
    return isinstance(data, dict) and data.get("format") == "fastdata"


def _is_report(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            data = parse_json(f.readline(_FIRST_LINE))
    except (OSError, BadJSON):
        return False
    return isinstance(data, dict) and data.get("note") == REPORT_NOTE


def _json(path: Path) -> object:
    """The JSON in regular file `path`, or None (not a regular file, larger than MAX_MANIFEST_BYTES, unreadable)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_MANIFEST_BYTES:
            return None
        return parse_json(path.read_bytes())
    except (OSError, BadJSON):
        return None
