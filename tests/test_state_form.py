"""A loader state as a checkpoint holds it (fastdata/loader_state.py): every kind of loader writes plain data
that `torch.save` and `torch.load`'s default `weights_only=True` (and JSON) carry unchanged, and that resumes
the same batches from the file; each state names the version of its form, and a state of another form is
refused before any other field is read."""

from __future__ import annotations

import io
import json

import pytest
import torch
from conftest_kinds import IMAGES, kinds_data_fixture, make_loader  # noqa: F401  (the kinds_data fixture)
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)

import fastdata
from fastdata.loader_state import check_state_version, kind_of

VERSIONS = {"images": 2, "image mixture": 2, "pairs": 2, "text": 1, "volumes": 1, "masked volumes": 1}


def _through_torch(state: dict) -> dict:
    buffer = io.BytesIO()
    torch.save({"model": {}, "loader": state}, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)["loader"]  # torch's default since 2.6, spelled out


def _saved_after_one_batch(kind: str, kinds_data, fortunes_tokens) -> tuple[dict, list, object]:
    """A fresh loader's state after its first batch, the identities of the batches after it, and the identity."""
    loader, ident = make_loader(kind, kinds_data, fortunes_tokens)
    batches = iter(loader)
    next(batches)
    state = loader.state_dict()
    rest = [ident(b) for b in batches]
    assert rest, "the test needs batches after the saved one"
    return state, rest, ident


def _resumes(kind: str, state: dict, rest: list, ident, kinds_data, fortunes_tokens) -> None:
    fresh, _ = make_loader(kind, kinds_data, fortunes_tokens)
    fresh.load_state_dict(state)
    assert [ident(b) for b in fresh] == rest


@pytest.mark.parametrize("kind", list(VERSIONS))
def test_a_state_through_a_checkpoint_file_resumes_the_same_batches(kind, kinds_data, fortunes_tokens) -> None:
    state, rest, ident = _saved_after_one_batch(kind, kinds_data, fortunes_tokens)
    assert state["version"] == VERSIONS[kind]
    for saved in (_through_torch(state), json.loads(json.dumps(state))):
        assert saved == state
        _resumes(kind, saved, rest, ident, kinds_data, fortunes_tokens)


def _tupled(value):
    """Every list of a state made a tuple, as a checkpoint written through a config library or by hand holds them."""
    if isinstance(value, dict):
        return {k: _tupled(v) for k, v in value.items()}
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


@pytest.mark.parametrize("kind", list(VERSIONS))
def test_a_state_whose_lists_are_tuples_resumes_the_same_batches(kind, kinds_data, fortunes_tokens) -> None:
    state, rest, ident = _saved_after_one_batch(kind, kinds_data, fortunes_tokens)
    tupled = _tupled(state)
    assert isinstance(tupled["elastic"], tuple) and tupled != state  # every state holds lists (elastic, at least)
    _resumes(kind, tupled, rest, ident, kinds_data, fortunes_tokens)


@pytest.mark.parametrize("kind", list(VERSIONS))
def test_a_state_of_a_newer_form_is_refused_first(kind, kinds_data, fortunes_tokens) -> None:
    loader, _ = make_loader(kind, kinds_data, fortunes_tokens)
    state = loader.state_dict()
    newer = VERSIONS[kind] + 1
    with pytest.raises(ValueError) as info:
        loader.load_state_dict({"version": newer, "epoch": "read no further"})
    assert str(info.value) == (f"state_dict has version {newer}, this loader reads version {VERSIONS[kind]}; it "
                               "was saved by a newer fastdata; resume with that release or a later one")
    for other in (0, str(VERSIONS[kind]), float(VERSIONS[kind]), True, None):
        with pytest.raises(ValueError, match=f"^state_dict has version {other!r}, this loader reads version "
                                             f"{VERSIONS[kind]}; pass what Loader.state_dict"):
            loader.load_state_dict({**state, "version": other})


def _resumes_without(field: str, kind: str, kinds_data, fortunes_tokens) -> None:
    """A state saved after one batch, less `field` (what an earlier release wrote), resumes the rest exactly."""
    state, rest, ident = _saved_after_one_batch(kind, kinds_data, fortunes_tokens)
    _resumes(kind, {k: v for k, v in state.items() if k != field}, rest, ident, kinds_data, fortunes_tokens)


@pytest.mark.parametrize("kind", ["text", "volumes", "masked volumes"])
def test_a_text_or_volume_state_saved_before_the_field_existed_still_resumes(kind, kinds_data, fortunes_tokens) -> None:
    _resumes_without("version", kind, kinds_data, fortunes_tokens)


def test_an_image_state_without_a_version_is_of_no_form_it_reads(kinds_data) -> None:
    loader = fastdata.loader(kinds_data["wds"], **IMAGES)
    state = {k: v for k, v in loader.state_dict().items() if k != "version"}
    with pytest.raises(ValueError, match="^state_dict has version None, this loader reads version 2; pass what "):
        loader.load_state_dict(state)


def test_the_check_alone() -> None:
    check_state_version({"version": 3}, 3)
    check_state_version({}, 1, unversioned=1)
    with pytest.raises(ValueError, match="^state_dict has version None, this loader reads version 1; pass"):
        check_state_version({}, 1)
    with pytest.raises(ValueError, match="^state_dict has version 2, this loader reads version 1; it was saved by"):
        check_state_version({}, 1, unversioned=2)


KIND = {"images": "images", "image mixture": "images", "pairs": "image_text", "text": "text", "volumes": "dicom",
        "masked volumes": "nifti"}


@pytest.mark.parametrize("kind", list(VERSIONS))
def test_the_state_of_another_kind_of_loader_is_refused_as_such(kind, kinds_data, fortunes_tokens) -> None:
    """Loading the state of another loader of the same checkpoint (the text loader's into the image loader) is
    refused as what it is, where it was refused as a state of a newer fastdata or of other data."""
    loader, _ = make_loader(kind, kinds_data, fortunes_tokens)
    assert loader.state_dict()["kind"] == KIND[kind] and kind_of(None) is None  # None: a loader without a view
    for other in VERSIONS:
        if KIND[other] == KIND[kind]:
            continue
        state = make_loader(other, kinds_data, fortunes_tokens)[0].state_dict()
        with pytest.raises(ValueError) as info:
            loader.load_state_dict(state)
        assert str(info.value) == (f"state_dict was saved by a loader of {KIND[other]!r} datasets, this loader "
                                   f"reads {KIND[kind]!r} datasets; load each loader's own state_dict (a "
                                   "checkpoint holds one per loader)")


@pytest.mark.parametrize("kind", list(VERSIONS))
def test_a_state_saved_before_it_named_its_kind_still_resumes(kind, kinds_data, fortunes_tokens) -> None:
    _resumes_without("kind", kind, kinds_data, fortunes_tokens)
