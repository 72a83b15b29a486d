"""The kornia backend's decode threads write each image straight into its row of the batch (`rows.py`): the
mapping of positions to rows, the `out=` paths of the decode functions, and batches with skipped samples
(which move rows, across blocks) holding exactly the images of a run without any."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_images import corrupt_sample, loader, make_datasets

from fastdata.images.decode import hflip_hwc, resize_crop_eval, resize_hwc
from fastdata.images.rows import BatchRows, Row


def test_positions_map_to_rows_of_blocks_and_blocks_before_a_batch_are_let_go():
    taken = []

    def take():
        taken.append(np.zeros((3, 2, 2, 3), np.uint8))
        return taken[-1]

    rows = BatchRows(take, batch=3, start=5)
    places = [rows(p) for p in range(5, 12)]
    assert [(r.block, r.row) for r in places] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0)]
    assert len(taken) == len(rows) == 3 and all(places[i].buffer is taken[i // 3] for i in range(7))
    places[4].array[:] = 7
    assert (taken[1][1] == 7).all() and (taken[1][0] == 0).all() and (taken[0] == 0).all()
    batch = rows.batch(places[4], 2)  # a batch whose first sample sits in block 1 (after a skipped sample)
    assert batch.shape == (2, 2, 2, 3) and np.shares_memory(batch, taken[1]) and (batch[1] == 7).all()
    assert len(rows) == 2 and rows(12).buffer is taken[2]  # block 0 let go; block 2 kept
    assert rows.batch(rows(11), 1).base is taken[2] and len(rows) == 1


def test_writing_into_a_row_gives_the_same_pixels():
    image = np.random.default_rng(3).integers(0, 256, (90, 70, 3), dtype=np.uint8)
    out = np.zeros((5, 32, 32, 3), np.uint8)
    want = resize_hwc(image, 32, 32)
    got = resize_hwc(image, 32, 32, out=out[2])
    assert torch.equal(got, want) and np.shares_memory(got.numpy(), out) and np.array_equal(out[2], want.numpy())
    crop = image[10:42, 5:37]  # strided, already the output size: copied
    assert torch.equal(resize_hwc(crop, 32, 32, out=out[1]), torch.from_numpy(crop.copy()))
    assert np.array_equal(out[1], crop)
    flipped = hflip_hwc(want, out=out[3])
    assert torch.equal(flipped, want.flip(1)) and np.shares_memory(flipped.numpy(), out)
    view = resize_crop_eval(image, resize_short=36, size=32)
    assert torch.equal(resize_crop_eval(image, resize_short=36, size=32, out=out[4]), view)
    assert np.array_equal(out[4], view.numpy()) and not out[0].any()  # nothing else written


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_datasets(tmp_path_factory.mktemp("rows"))["wds"]


def by_index(ld, epoch=0):
    ld.set_epoch(epoch)
    out: dict[int, list[torch.Tensor]] = {}
    for x, _ in ld:
        for row, image in zip(ld.backend.last_rows, x.clone()):
            out.setdefault(row, []).append(image)
    return out


@pytest.fixture
def assembler_reads(monkeypatch) -> list[str]:
    """Names of the threads that read a written row back (`Row.array`) other than the decode threads."""
    names: list[str] = []
    original = Row.array.fget

    def array(self):
        if "prefetch" in threading.current_thread().name:
            names.append(threading.current_thread().name)
        return original(self)

    monkeypatch.setattr(Row, "array", property(array))
    return names


@pytest.mark.parametrize("train", [True, False])
def test_the_batch_is_the_buffer_the_decode_threads_wrote(pristine, assembler_reads, train):
    ld = loader(pristine, split="train", train=train, batch_size=5, dtype="uint8", channels_last=True)
    batches = [x for x, _ in ld]
    assert sum(len(x) for x in batches) == (10 if train else 15) and assembler_reads == []  # no row copied
    hosts = ld.backend._hosts._arrays
    assert all(any(np.shares_memory(x.permute(0, 2, 3, 1).numpy(), h) for h in hosts) for x in batches)


@pytest.mark.parametrize("batch_size", [3, 5])
def test_skipped_samples_move_rows_and_every_image_stays_its_own(pristine, tmp_path, assembler_reads, batch_size):
    want = by_index(loader(pristine, split="train", batch_size=4, dtype="uint8", seed=4))
    ds = Path(shutil.copytree(pristine, tmp_path / "wds"))
    corrupt_sample(ds, "train-000000.tar", 1)
    corrupt_sample(ds, "train-000001.tar", 2)
    ld = loader(ds, split="train", batch_size=batch_size, dtype="uint8", seed=4, on_error="skip")
    got = by_index(ld)
    assert ld.skipped == 2 and len(got) == 10 and assembler_reads  # rows moved, also from the next block
    assert all(torch.equal(image, want[i][0]) for i, images in got.items() for image in images)


def test_eval_padding_rows_of_skipped_samples_are_zero_and_the_rest_unchanged(pristine, tmp_path):
    want = by_index(loader(pristine, split="val", train=False, batch_size=3, dtype="uint8"))
    ds = Path(shutil.copytree(pristine, tmp_path / "wds"))
    corrupt_sample(ds, "val-000000.tar", 1)
    ld = loader(ds, split="val", train=False, batch_size=3, dtype="uint8", on_error="skip")
    batches = [(x.clone(), y.clone(), list(ld.backend.last_rows)) for x, y in ld]
    pads = [x[i] for x, y, _ in batches for i in range(len(y)) if y[i] == -100]
    assert ld.skipped == 1 and len(pads) == 3 and all(not p.any() for p in pads)  # the skipped one + 2 at the end
    real = [(r, image) for x, y, rows in batches for r, image in zip(rows, x[y >= 0])]
    assert len(real) == 6 and all(torch.equal(image, want[r][0]) for r, image in real)


def test_a_row_from_a_later_block_is_copied_even_at_its_own_row_number(pristine):
    """A batch in block 0 whose first sample is row 2 (two samples skipped before it) and whose next samples sit
    in blocks 1 and 2: each lands in its batch row, also the one that already has that row number in block 1."""
    backend = loader(pristine, split="train", batch_size=3, dtype="uint8", channels_last=True).backend
    rows = backend._rows(0)
    places = [rows(p) for p in range(9)]
    for p, place in enumerate(places):
        place.array[:] = p
    x, y, _ = backend._submit([(places[p], 1, None, None) for p in (2, 4, 8)], None, (0, 0))
    assert x[:, 0, 0, 0].tolist() == [2, 4, 8] and y.tolist() == [1, 1, 1]
    assert np.shares_memory(x.permute(0, 2, 3, 1).numpy(), places[0].buffer)  # assembled in block 0
