"""What every loader state is checked for first, whatever its kind: a dict, of the form this loader reads, saved
with the same mixture (mixing.py) on the same data (data_digest.py). Each kind then checks its own fields.

A state outlives the process that saved it: it is read back by the next run, perhaps under another release of
fastdata. Each kind of loader writes the version of its state's form in the field `version`, and refuses a state
of another form with a message that says which, before it reads any other field. The version changes only when
the form does (fields renamed, retyped or given another meaning); a release that merely adds a checked field
keeps it (as `data_digest` did).

Image states have carried the field from their first form on, and a state without it is of no form this loader
reads. Text and volume states gained it at version 1, the form they already had, so one without it is read as
version 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastdata.data_digest import KEY as DIGEST
from fastdata.data_digest import check_data_digest
from fastdata.mixing import check_mixture_state

VERSION = "version"


def shared_fields(version: int, *, epoch: int, lineage: Sequence[Sequence[int]], mixture: dict[str, Any] | None,
                  data: str | None) -> dict[str, Any]:
    """The fields every loader state holds, as plain data: its form's version, the epoch, where that epoch was
    interrupted on other world sizes (planning/elastic.py), the mixture's description and the data digest."""
    return {VERSION: version, "epoch": epoch, "elastic": [list(s) for s in lineage], "mixture": mixture, DIGEST: data}


def check_state_version(state: dict[str, Any], version: int, *, unversioned: int | None = None) -> None:
    """ValueError unless `state` is of form `version`; a state without the field is of form `unversioned`."""
    saved = state.get(VERSION, unversioned)
    if type(saved) is int and saved == version:
        return
    if type(saved) is int and saved > version:
        hint = "it was saved by a newer fastdata; resume with that release or a later one"
    else:
        hint = "pass what Loader.state_dict() of this fastdata returned"
    raise ValueError(f"state_dict has version {saved!r}, this loader reads version {version}; {hint}")


def check_shared(state: Any, version: int, *, unversioned: int | None = None, mixture: dict[str, Any] | None,
                 data: str | None) -> None:
    """TypeError or ValueError unless `state` is a dict of form `version`, saved with `mixture` (a mixture's
    description, or None) on `data` (a data digest, or None)."""
    if not isinstance(state, dict):
        raise TypeError(f"state_dict must be a dict, got {type(state).__name__}")
    check_state_version(state, version, unversioned=unversioned)
    check_mixture_state(state.get("mixture"), mixture)
    check_data_digest(state, data)
