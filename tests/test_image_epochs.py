"""Behaviours a careless edit could break unnoticed (issue 17, "tests that let bugs through"), pinned on
both image backends: per-sample augmentation is redrawn every epoch, rank blocks move between epochs,
train-mode ranks are disjoint, a state from another world size is refused, labels out of range are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest_images import jpg_entry, loader, make_datasets

from fastdata.errors import ShardError

BACKENDS = ["kornia", "dali"]  # DALI runs on its CPU operators here


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_datasets(tmp_path_factory.mktemp("epochs"))


def _by_key(ld, epoch: int) -> dict[str, torch.Tensor]:
    """{shard:key: image} of one epoch (batches of one, so last_keys names each row)."""
    ld.set_epoch(epoch)
    out = {}
    for x, _ in ld:
        (key,) = ld.backend.last_keys
        out[key] = x[0].clone()
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_sample_gets_a_new_crop_every_epoch(ds, backend):
    kw = dict(split="train", train=True, batch_size=1, backend=backend, dtype="uint8", seed=3)
    e0, e1 = _by_key(loader(ds["wds"], **kw), 0), _by_key(loader(ds["wds"], **kw), 1)
    again = _by_key(loader(ds["wds"], **kw), 0)
    assert sorted(e0) == sorted(e1) and len(e0) == 12
    assert all(torch.equal(e0[k], again[k]) for k in e0)  # a pure function of (seed, epoch, sample)
    changed = sum(not torch.equal(e0[k], e1[k]) for k in e0)
    assert changed == len(e0), f"only {changed} of {len(e0)} samples were augmented differently in epoch 1"


@pytest.mark.parametrize("backend", BACKENDS)
def test_train_ranks_are_disjoint_and_their_blocks_move_between_epochs(ds, backend):
    world = 2
    per_epoch = []
    for epoch in (0, 1, 2):
        ranks = []
        for rank in range(world):
            ld = loader(ds["wds"], split="train", train=True, batch_size=1, backend=backend, rank=rank,
                        world_size=world)
            ranks.append(set(_by_key(ld, epoch)))
        assert len(ranks[0]) == len(ranks[1]) == 6 and not ranks[0] & ranks[1]  # train mode: disjoint halves
        per_epoch.append(ranks[0])
    assert len({frozenset(s) for s in per_epoch}) > 1, "rank 0 read the same samples in every epoch"


def test_a_state_from_another_world_size_resumes_elastically_and_another_rank_in_lockstep(ds):
    state = {**loader(ds["wds"], split="train", rank=0, world_size=2).state_dict(), "batch": 1, "cursor": 4}
    three = loader(ds["wds"], split="train", rank=0, world_size=3)
    three.load_state_dict(state)  # elastic (tests/test_elastic.py checks what it delivers)
    assert three.state_dict()["elastic"] == [[2, 1]] and three.state_dict()["batch"] == 0
    other = loader(ds["wds"], split="train", rank=1, world_size=2)
    other.load_state_dict(state)
    assert other.state_dict()["batch"] == 1 and other.state_dict()["elastic"] == []
    with pytest.raises(ValueError, match="seed"):
        loader(ds["wds"], split="train", rank=0, world_size=2, seed=9).load_state_dict(state)


def _set_label(ds: Path, shard: str, line: int, label: bytes) -> None:
    """Overwrite the .cls member of sample `line` in place (same length, so the shard size still matches)."""
    fields = (ds / shard).with_suffix(".idx").read_text().splitlines()[1 + line].split()
    i = fields.index("cls")
    offset, size = int(fields[i + 1]), int(fields[i + 2])
    assert size == len(label)
    data = bytearray((ds / shard).read_bytes())
    data[offset:offset + size] = label
    (ds / shard).write_bytes(bytes(data))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("label", [b"3", b"9"])  # the manifest lists 3 classes: 3 == num_classes is already out
def test_a_label_out_of_range_is_refused(tmp_path, backend, label):
    ds = make_datasets(tmp_path)["wds"]
    _set_label(ds, "train-000000.tar", 0, label)
    _, _, key = jpg_entry(ds, "train-000000.tar", 0)
    with pytest.raises(ShardError, match=f"{key}.*has label {label.decode()}, the manifest lists 3 classes"):
        for _ in loader(ds, split="train", train=True, backend=backend):
            pass


@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_on_a_rank_of_several_is_exact(ds, backend):
    kw = dict(split="train", train=True, batch_size=2, backend=backend, rank=1, world_size=2, dtype="uint8", seed=4)
    full = loader(ds["wds"], **kw)
    full.set_epoch(1)
    want = [x.clone() for x, _ in full]
    part = loader(ds["wds"], **kw)
    part.set_epoch(1)
    it = iter(part)
    next(it)
    state = part.state_dict()
    it.close()
    assert (state["rank"], state["world_size"], state["batch"]) == (1, 2, 1)
    resumed = loader(ds["wds"], **kw)
    resumed.load_state_dict(state)
    resumed.set_epoch(1)
    got = [x.clone() for x, _ in resumed]
    assert len(got) == len(want) - 1 and all(torch.equal(a, b) for a, b in zip(got, want[1:]))


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_a_training_epoch_read_again_without_set_epoch_is_a_warning_once(ds, backend, caplog):
    """The DistributedSampler trap: without set_epoch every epoch repeats the first's order, crops and flips.
    Said once a loader, after a whole training pass is read again; not for evaluation, a partial pass or a loop
    that sets the epoch."""
    pytest.importorskip("nvidia.dali" if backend == "dali" else "kornia")
    said = "epoch 0 is read again after a whole pass, in the same order with the same crops and flips"

    def warnings(ld, passes: int, *, set_epoch: bool = False, first: int | None = None) -> list[str]:
        caplog.clear()
        with caplog.at_level("WARNING", logger="fastdata.images.planned"):
            if first is not None:
                it = iter(ld)
                for _ in range(first):
                    next(it)
            for epoch in range(passes):
                if set_epoch:
                    ld.set_epoch(epoch)
                for _ in ld:
                    pass
        return [r.getMessage() for r in caplog.records if r.name == "fastdata.images.planned"]

    kw = dict(split="train", backend=backend, batch_size=4)
    assert [m[:len(said)] for m in warnings(loader(ds["wds"], **kw), 3)] == [said]
    assert warnings(loader(ds["wds"], **kw), 3, set_epoch=True) == []
    assert warnings(loader(ds["wds"], **kw, train=False), 3) == []
    assert warnings(loader(ds["wds"], **kw), 1, first=1) == []  # a first batch to see the shapes, then the loop
