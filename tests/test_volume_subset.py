"""A subset of a volume split (`indices=`, fastdata/planning/subset.py): train and eval plans over those volumes
alone, with ranks and resume as over a whole split."""

from __future__ import annotations

import pytest
from conftest_dicom import convert_dicom, small_phantom, write_phantom

import fastdata

PATCH = (16, 16, 16)
FAST = {"num_workers": 2, "patch_size": PATCH, "augment": False}
PICKED = [4, 0, 3]


@pytest.fixture(scope="module")
def volumes(tmp_path_factory):
    """Five small CT volumes."""
    root = tmp_path_factory.mktemp("volume-subset")
    for i in range(5):
        write_phantom(root / "src" / f"s{i}", small_phantom(i), seed=i)
    convert_dicom(root / "src", root / "out", samples_per_shard=2)
    return root / "out"


def _volumes(loader) -> list[int]:
    out = []
    for _ in loader:
        out.extend(p.volume for p in loader.last_patches if not p.duplicate)
    return out


def test_train_epochs_and_ranks_draw_from_the_picked_volumes(volumes):
    for epoch in (0, 1):
        seen = []
        for rank in (0, 1):
            ld = fastdata.loader(volumes, batch_size=1, indices=PICKED, rank=rank, world_size=2, **FAST)
            ld.set_epoch(epoch)
            seen += _volumes(ld)
        assert set(seen) == set(PICKED) and len(seen) == 4  # 3 volumes wrapped to a multiple of 2 ranks


def test_eval_windows_cover_the_picked_volumes_in_order(volumes):
    whole = fastdata.loader(volumes, batch_size=2, train=False, **FAST)
    part = fastdata.loader(volumes, batch_size=2, train=False, indices=PICKED, **FAST)
    everything, picked = _volumes(whole), _volumes(part)
    assert picked == [v for v in everything if v in PICKED] and sorted(set(picked)) == sorted(PICKED)


def test_a_resume_needs_the_same_subset(volumes):
    first = fastdata.loader(volumes, batch_size=1, indices=PICKED, seed=5, **FAST)
    it = iter(first)
    next(it)
    state = first.state_dict()
    rest = [x.clone() for x, _ in it]
    again = fastdata.loader(volumes, batch_size=1, indices=sorted(PICKED), seed=5, **FAST)
    again.load_state_dict(state)
    got = [x for x, _ in again]
    assert state["num_volumes"] == 3 and len(got) == len(rest) == 2
    assert all(bool((a == b).all()) for a, b in zip(got, rest))
    with pytest.raises(ValueError, match="cannot resume: the state was saved on other data"):
        fastdata.loader(volumes, batch_size=1, indices=[0, 1, 2], seed=5, **FAST).load_state_dict(state)


def test_an_index_past_the_split_is_refused(volumes):
    with pytest.raises(ValueError, match=r"^indices go up to 5, but the split has 5 samples \(indices 0\.\.4\)$"):
        fastdata.loader(volumes, indices=[1, 5], **FAST)
    with pytest.raises(ValueError, match=r"^indices=\[\] is not allowed"):
        fastdata.loader(volumes, indices=[], **FAST)
