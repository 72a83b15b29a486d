"""Where `set_epoch` and `load_state_dict` leave the image loader: a state of another epoch is dropped by
`set_epoch`, `state_dict()` names the start of a newly set epoch, and a state's cursor may lie anywhere up to
the end of its epoch (with its replacements) and not one sample further."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest_images import loader, make_datasets


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_datasets(tmp_path_factory.mktemp("state_bounds"))["wds"]


def _labels(ld) -> list[int]:
    return torch.cat([y for _, y in ld]).tolist()


def _state_after_one_batch(ds: Path, epoch: int) -> dict:
    ld = loader(ds, split="train", seed=2)
    ld.set_epoch(epoch)
    it = iter(ld)
    next(it)
    state = ld.state_dict()
    it.close()
    ld.close()
    return state


def test_setting_another_epoch_drops_a_loaded_state_and_starts_that_epoch(ds: Path) -> None:
    state = _state_after_one_batch(ds, 1)
    assert (state["epoch"], state["batch"]) == (1, 1) and state["cursor"] > 0
    fresh = loader(ds, split="train", seed=2)
    fresh.set_epoch(2)
    want = _labels(fresh)
    ld = loader(ds, split="train", seed=2)
    ld.load_state_dict(state)
    ld.set_epoch(2)
    assert {k: ld.state_dict()[k] for k in ("epoch", "batch", "cursor")} == {"epoch": 2, "batch": 0, "cursor": 0}
    assert _labels(ld) == want


def test_setting_the_epoch_of_a_loaded_state_keeps_it(ds: Path) -> None:
    state = _state_after_one_batch(ds, 1)
    ld = loader(ds, split="train", seed=2)
    ld.load_state_dict(state)
    ld.set_epoch(1)
    assert ld.state_dict() == state


def test_a_cursor_up_to_the_end_of_the_epoch_loads_and_one_past_it_is_refused(ds: Path) -> None:
    ld = loader(ds, split="train", seed=2)
    plan = ld._backend.plan(0)
    end = plan.num_batches * plan.batch_size + len(plan.sequence)  # every slot refilled once at most
    state = {**ld.state_dict(), "batch": plan.num_batches}
    ld.load_state_dict({**state, "cursor": end})
    assert ld.state_dict()["cursor"] == end
    with pytest.raises(ValueError) as err:
        ld.load_state_dict({**state, "cursor": end + 1})
    assert str(err.value) == f"state_dict cursor {end + 1} is past the end of epoch 0"
