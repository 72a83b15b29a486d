"""A subset of a volume split (`indices=`, fastdata/planning/subset.py): train and eval plans over those volumes
alone, with ranks and resume as over a whole split."""

from __future__ import annotations

import pytest
from conftest_dicom import resumed_after_one_batch, small_volumes, volumes_read

import fastdata

PATCH = (16, 16, 16)
FAST = {"num_workers": 2, "patch_size": PATCH, "augment": False}
PICKED = [4, 0, 3]


@pytest.fixture(scope="module")
def volumes(tmp_path_factory):
    """Five small CT volumes."""
    return small_volumes(tmp_path_factory.mktemp("volume-subset"))


def test_train_epochs_and_ranks_draw_from_the_pickedvolumes_read(volumes):
    for epoch in (0, 1):
        seen = []
        for rank in (0, 1):
            ld = fastdata.loader(volumes, batch_size=1, indices=PICKED, rank=rank, world_size=2, **FAST)
            ld.set_epoch(epoch)
            seen += volumes_read(ld)
        assert set(seen) == set(PICKED) and len(seen) == 4  # 3 volumes wrapped to a multiple of 2 ranks


def test_eval_windows_cover_the_picked_volumes_in_order(volumes):
    whole = fastdata.loader(volumes, batch_size=2, train=False, **FAST)
    part = fastdata.loader(volumes, batch_size=2, train=False, indices=PICKED, **FAST)
    everything, picked = volumes_read(whole), volumes_read(part)
    assert picked == [v for v in everything if v in PICKED] and sorted(set(picked)) == sorted(PICKED)


def test_a_resume_needs_the_same_subset(volumes):
    state, rest, got = resumed_after_one_batch(
        fastdata.loader(volumes, batch_size=1, indices=PICKED, seed=5, **FAST),
        fastdata.loader(volumes, batch_size=1, indices=sorted(PICKED), seed=5, **FAST))
    assert state["num_volumes"] == 3 and len(got) == len(rest) == 2
    assert all(bool((a == b).all()) for a, b in zip(got, rest))
    with pytest.raises(ValueError, match="cannot resume: the state was saved on other data"):
        fastdata.loader(volumes, batch_size=1, indices=[0, 1, 2], seed=5, **FAST).load_state_dict(state)


def test_an_index_past_the_split_is_refused(volumes):
    with pytest.raises(ValueError, match=r"^indices go up to 5, but the split has 5 samples \(indices 0\.\.4\)$"):
        fastdata.loader(volumes, indices=[1, 5], **FAST)
    with pytest.raises(ValueError, match=r"^indices=\[\] is not allowed"):
        fastdata.loader(volumes, indices=[], **FAST)
