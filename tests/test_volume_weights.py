"""Weighted sampling of volumes (`sample_weights=`, fastdata/planning/weights.py): each train epoch draws as many
volumes as the split holds, by weight, each drawn volume giving its patches, with ranks and resume as over a whole
split."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest_dicom import resumed_after_one_batch, small_volumes, volumes_read

import fastdata
from fastdata.planning.weights import Weighting

PATCH = (16, 16, 16)
FAST = {"num_workers": 2, "patch_size": PATCH, "augment": False}
WEIGHTS = [0.0, 0.0, 1.0, 0.0, 3.0]


@pytest.fixture(scope="module")
def volumes(tmp_path_factory):
    """Five small CT volumes."""
    return small_volumes(tmp_path_factory.mktemp("volume-weights"))


def test_train_epochs_draw_the_weighted_volumes_across_ranks(volumes):
    import numpy as np

    for epoch in (0, 1, 2):
        seen = []
        for rank in (0, 1):
            ld = fastdata.loader(volumes, batch_size=1, sample_weights=WEIGHTS, seed=1, rank=rank, world_size=2, **FAST)
            ld.set_epoch(epoch)
            seen += volumes_read(ld)
        counts = Weighting(np.array(WEIGHTS), len(WEIGHTS)).draws(seed=1, epoch=epoch)
        drawn = Counter({v: int(c) for v, c in enumerate(counts) if c})
        assert set(seen) <= {2, 4} and len(seen) == 6  # 5 drawn, wrapped to a multiple of 2 ranks
        assert all(Counter(seen)[v] >= c for v, c in drawn.items())


def test_the_repeats_of_a_volume_give_their_own_patches(volumes):
    ld = fastdata.loader(volumes, batch_size=1, sample_weights=[0, 0, 0, 0, 1], seed=0, **FAST)
    streams, patches = [], []
    for x, _ in ld:
        streams += [p.stream for p in ld.last_patches]
        patches.append(x.clone())
    assert len(streams) == len(set(streams)) == 5  # each repeat seeds its own random start
    assert len({t.numpy().tobytes() for t in patches}) > 1


def test_a_resume_needs_the_same_weights(volumes):
    state, rest, got = resumed_after_one_batch(
        fastdata.loader(volumes, batch_size=1, sample_weights=WEIGHTS, seed=5, **FAST),
        fastdata.loader(volumes, batch_size=1, sample_weights=tuple(WEIGHTS), seed=5, **FAST))
    assert len(got) == len(rest) == 4 and all(bool((a == b).all()) for a, b in zip(got, rest))
    with pytest.raises(ValueError, match="cannot resume: the state was saved on other data"):
        fastdata.loader(volumes, batch_size=1, sample_weights=[1, 1, 1, 1, 1], seed=5, **FAST).load_state_dict(state)


@pytest.mark.parametrize("options, message", [
    ({"sample_weights": "balanced"}, "volumes carry masks, not a class each"),
    ({"sample_weights": WEIGHTS, "train": False}, "training epochs"),
    ({"sample_weights": [1, 2]}, "holds 2 weights, but the split has 5 samples"),
])
def test_weights_it_cannot_draw_with_are_refused(volumes, options, message):
    with pytest.raises(ValueError, match=message):
        fastdata.loader(volumes, **{**FAST, **options})


def test_samples_per_epoch_sets_the_draws_of_an_epoch(volumes):
    ld = fastdata.loader(volumes, batch_size=1, sample_weights=WEIGHTS, samples_per_epoch=9, **FAST)
    seen = volumes_read(ld)
    assert len(seen) == 9 and set(seen) <= {2, 4} and ld.state_dict()["num_volumes"] == 9
