"""What every loader state is checked for first, whatever its kind: a dict, saved by a loader of the same kind of
dataset, of the form this loader reads, with the same mixture (mixing.py) on the same data (data_digest.py). Each
kind then checks its own fields.

A state names the kind of dataset its loader read (`kind`: the manifest's, "images", "image_text", "text" or
"dicom"), so that the state of another loader of the same checkpoint, passed by mistake, is refused as such, not
as a state of another form or other data. States saved before the field existed have none and are not checked.

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
KIND = "kind"


def kind_of(view: Any) -> str | None:
    """The kind of dataset a loader over `view` (a DatasetView or a MixedView) reads; None without a view."""
    return None if view is None else view.manifest.kind


def shared_fields(version: int, *, kind: str | None, epoch: int, lineage: Sequence[Sequence[int]],
                  mixture: dict[str, Any] | None, data: str | None) -> dict[str, Any]:
    """The fields every loader state holds, as plain data: its form's version, the kind of dataset, the epoch,
    where that epoch was interrupted on other world sizes (planning/elastic.py), the mixture's description and the
    data digest."""
    return {VERSION: version, KIND: kind, "epoch": epoch, "elastic": [list(s) for s in lineage], "mixture": mixture,
            DIGEST: data}


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


def check_kind(state: dict[str, Any], kind: str | None) -> None:
    """ValueError when `state` was saved by a loader of another kind of dataset than `kind`."""
    saved = state.get(KIND)
    if saved is not None and kind is not None and saved != kind:
        raise ValueError(f"state_dict was saved by a loader of {saved!r} datasets, this loader reads {kind!r} "
                         "datasets; load each loader's own state_dict (a checkpoint holds one per loader)")


def check_shared(state: Any, version: int, *, kind: str | None, unversioned: int | None = None,
                 mixture: dict[str, Any] | None, data: str | None) -> None:
    """TypeError or ValueError unless `state` is a dict saved by a loader of `kind` datasets, of form `version`,
    with `mixture` (a mixture's description, or None) on `data` (a data digest, or None)."""
    if not isinstance(state, dict):
        raise TypeError(f"state_dict must be a dict, got {type(state).__name__}")
    check_kind(state, kind)
    check_state_version(state, version, unversioned=unversioned)
    check_mixture_state(state.get("mixture"), mixture)
    check_data_digest(state, data)
