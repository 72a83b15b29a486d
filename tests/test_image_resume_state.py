"""The image loader's state_dict form read back on its own (fastdata/images/resume.py): the fields it saves and
each refusal of a state that cannot resume this loader, word for word (test_forged_state_and_options.py feeds
forged states through the loaders themselves)."""

from __future__ import annotations

import re

import pytest

from fastdata.images.options import ImageLoaderOptions
from fastdata.images.order import epoch_plans
from fastdata.images.resume import ResumePoint, check_state, make_state

N = 20


def _opts(**kw) -> ImageLoaderOptions:
    return ImageLoaderOptions(**{"batch_size": 4, "image_size": 32, "device": "cpu", "backend": "kornia", **kw})


def _state(**changes) -> dict:
    state = make_state(ResumePoint(1, 2, 8), _opts(), num_samples=N, skipped=1)
    state.update(changes)
    return state


def _refused(state, error=ValueError, **kw) -> str:
    with pytest.raises(error) as info:
        check_state(state, _opts(**kw), num_samples=N)
    return str(info.value)


def test_the_saved_fields() -> None:
    assert _state() == {"version": 2, "kind": None, "epoch": 1, "batch": 2, "cursor": 8, "skipped": 1, "elastic": [],
                        "mixture": None, "data_digest": None, "seed": 0, "rank": 0, "world_size": 1, "batch_size": 4,
                        "train": True, "num_samples": N, "shuffle_window": 16384, "drop_last": True}
    saved = make_state(ResumePoint(1, 2, 8), _opts(), num_samples=N, skipped=1, data="d1", kind="images")
    assert (saved["data_digest"], saved["kind"]) == ("d1", "images")
    assert check_state(saved, _opts(), num_samples=N, data="d1", kind="images") == ResumePoint(1, 2, 8)
    with pytest.raises(ValueError, match="saved on other data"):
        check_state(saved, _opts(), num_samples=N, data="d2", kind="images")
    with pytest.raises(ValueError, match="^state_dict was saved by a loader of 'images' datasets, this loader reads "
                                         "'image_text' datasets"):
        check_state(saved, _opts(), num_samples=N, data="d1", kind="image_text")
    assert make_state(ResumePoint(0, 0, 0), _opts(drop_last=False), num_samples=N, skipped=0)["drop_last"] is False
    assert check_state(_state(), _opts(), num_samples=N) == ResumePoint(1, 2, 8)


def test_what_is_not_a_state() -> None:
    assert _refused([1], TypeError) == "state_dict must be a dict, got list"
    assert _refused(_state(version=1)) == ("state_dict has version 1, this loader reads version 2; pass what "
                                           "Loader.state_dict() of this fastdata returned")
    state = _state()
    del state["cursor"], state["seed"]
    assert _refused(state) == "state_dict lacks ['cursor', 'seed']; pass what Loader.state_dict() returned"


def test_a_state_of_another_loader_names_each_difference() -> None:
    assert _refused(_state(), seed=3, batch_size=8) == (
        "state_dict does not match this loader (seed: saved 0, now 3, batch_size: saved 4, now 8); build the "
        "loader with the same dataset, seed, batch_size, train, drop_last and shuffle_window")
    assert "train: saved 1, now True" in _refused(_state(train=1))  # equal, but not the same type


@pytest.mark.parametrize("key", ["skipped", "rank", "epoch", "batch", "cursor"])
@pytest.mark.parametrize("value", [-1, 1.5, True, "3"])
def test_counts_are_integers_from_zero(key: str, value) -> None:
    message = _refused(_state(**{key: value}))
    assert message == f"state_dict field {key!r} must be an integer >= 0, got {value!r}"


def test_an_epoch_past_the_last_one_a_run_may_reach() -> None:
    assert check_state(_state(epoch=10**6), _opts(), num_samples=N).epoch == 10**6
    assert _refused(_state(epoch=10**6 + 1)) == "state_dict field 'epoch' must be at most 1000000, got 1000001"


def test_the_rank_lies_within_the_saved_world() -> None:
    assert _refused(_state(rank=2, world_size=2)) == "state_dict has rank 2 of world_size 2"
    saved = _state(rank=1, world_size=2, cursor=9)  # a sample was skipped on rank 1
    assert check_state(saved, _opts(rank=1, world_size=2), num_samples=N) == ResumePoint(1, 2, 9)
    assert check_state(saved, _opts(rank=0, world_size=2), num_samples=N) == ResumePoint(1, 2, 8)  # batch * size
    assert _refused(_state(world_size=0)) == f"state_dict field 'world_size' must be an integer in 1..{1 << 17}, got 0"


def test_every_rank_plan_checks_its_arguments() -> None:
    assert len(epoch_plans(8, train=True, batch_size=2, keep_last=False, seed=0, epoch=0, world_size=1)) == 1
    with pytest.raises(ValueError, match=re.escape("window=0")):
        epoch_plans(8, train=True, batch_size=2, keep_last=False, seed=0, epoch=0, world_size=2, window=0)
