"""Progressive resizing (`image_size={first epoch: size}`, FFCV's low-resolution-first recipe): each epoch's batches
are those of a loader of that epoch's one size, on both backends; the position, the skipped count and a resume carry
across a change of size (fastdata/images/loader.py, options.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_images import collect, loader, make_datasets

from fastdata.images.options import ImageLoaderOptions, size_steps

SCHEDULE = {0: 16, 2: 24, 3: 32}


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_datasets(tmp_path_factory.mktemp("progressive"))["wds"]


def _same(a: tuple[list, list], b: tuple[list, list]) -> bool:
    return len(a[0]) == len(b[0]) > 0 and all(torch.equal(p, q) for p, q in zip(a[0] + a[1], b[0] + b[1]))


@pytest.mark.parametrize("backend", ["kornia", "dali"])  # DALI on its CPU operators here
def test_each_epoch_is_a_loader_of_its_size(ds, backend):
    kw = dict(backend=backend, seed=3, dtype="uint8")
    growing = loader(ds, image_size=SCHEDULE, **kw)
    assert growing.options.image_size == 16 and growing.options.image_sizes == ((0, 16), (2, 24), (3, 32))
    for epoch, size in [(0, 16), (1, 16), (2, 24), (3, 32), (4, 32), (1, 16)]:  # and back, as a rerun would
        growing.set_epoch(epoch)
        got = collect(growing)
        fixed = loader(ds, image_size=size, **kw)
        fixed.set_epoch(epoch)
        want = collect(fixed)
        fixed.close()
        assert growing.options.image_size == size and got[0][0].shape[-2:] == (size, size)
        if backend == "kornia":  # bitwise; DALI's CPU resize may differ by a grey level between its pipelines
            assert _same(got, want), (epoch, size)
        else:
            assert [y.tolist() for y in got[1]] == [y.tolist() for y in want[1]]
            assert all((p.int() - q.int()).abs().max() <= 1 for p, q in zip(got[0], want[0]))
    growing.close()


def test_a_resume_into_a_later_size_gives_the_rest_of_its_epoch(ds):
    first = loader(ds, image_size=SCHEDULE, seed=1)
    first.set_epoch(3)
    it = iter(first)
    next(it)
    state = first.state_dict()
    rest = collect(it)
    first.close()
    again = loader(ds, image_size=SCHEDULE, seed=1)  # built at epoch 0's size
    again.load_state_dict(state)
    assert again.options.image_size == 32
    assert _same(collect(again), rest)
    again.set_epoch(0)  # back to the first size, from the start of epoch 0
    assert again.options.image_size == 16 and again.state_dict()["batch"] == 0
    again.close()


def test_the_position_and_skipped_count_carry_across_a_change(ds):
    saved = loader(ds, image_size=16, seed=2).state_dict()
    growing = loader(ds, image_size=SCHEDULE, seed=2)
    growing.load_state_dict({**saved, "skipped": 5})  # epoch 0: the size stays, the backend too
    backend = growing.backend
    growing.set_epoch(1)
    assert growing.backend is backend
    growing.set_epoch(2)
    assert growing.backend is not backend and growing.skipped == 5
    state = growing.state_dict()
    assert (state["epoch"], state["batch"], state["skipped"]) == (2, 0, 5)
    growing.close()


def test_a_refused_state_or_epoch_changes_nothing(ds, monkeypatch):
    growing = loader(ds, image_size=SCHEDULE)
    backend = growing.backend
    state = growing.state_dict()
    close, closed = type(backend).close, []
    monkeypatch.setattr(type(backend), "close", lambda self: (closed.append(self), close(self)))
    close_reader, readers_closed = type(backend.reader).close, []
    monkeypatch.setattr(type(backend.reader), "close", lambda self: (readers_closed.append(self), close_reader(self)))
    with pytest.raises(ValueError, match="state_dict does not match this loader"):
        growing.load_state_dict({**state, "epoch": 3, "seed": 99})
    assert len(closed) == 1 and closed[0] is not backend  # the backend built for epoch 3's size, let go
    assert readers_closed == [] and len(collect(growing)[0]) == 3  # not the reader it shared with this one
    with pytest.raises(ValueError, match=r"epoch must be an integer in 0\.\.1000000, got 2\.5"):
        growing.set_epoch(2.5)
    assert growing.backend is backend and growing.options.image_size == 16
    with pytest.raises(ValueError, match=r"state_dict has version"):
        growing.load_state_dict({"epoch": 3})  # the backend's own reason
    assert growing.backend is backend
    growing.close()


def test_the_backend_of_a_size_left_behind_is_closed_when_the_next_pass_begins(ds, monkeypatch):
    growing = loader(ds, image_size={0: 16, 1: 24})
    old = growing.backend
    closed = []
    monkeypatch.setattr(type(old), "close", lambda self: closed.append(self))
    it = iter(growing)
    next(it)  # a pass open on epoch 0's backend
    growing.set_epoch(1)
    assert closed == [] and growing.backend is not old
    assert len(collect(it)[0]) > 0  # the open pass finishes on its own backend
    collect(growing)
    assert closed == [old]
    growing.close()
    assert closed == [old, growing.backend]
    again = loader(ds, image_size={0: 16, 1: 24})
    first = again.backend
    again.set_epoch(1)  # no pass began since: closing the loader closes both
    again.close()
    assert closed[2:] == [first, again.backend]


def test_the_warning_for_upsampled_images_comes_for_each_size_that_needs_it(tmp_path, caplog):
    from conftest_images import make_tree
    from helpers import convert_images

    convert_images(make_tree(tmp_path / "src"), tmp_path / "small", samples_per_shard=4, short_side=20)
    with caplog.at_level(logging.WARNING):
        growing = loader(tmp_path / "small", image_size={0: 16, 1: 24})
        assert "upsampled" not in caplog.text
        growing.set_epoch(1)
    assert caplog.text.count("image_size=24") == 1
    growing.close()


@pytest.mark.parametrize("schedule", [{}, {1: 16}, {0: 4}, {0: 16, -1: 24}, {0: True}, {"0": 16}, {0: 16.0},
                                      {0: 16, 2_000_000: 24}])
def test_a_schedule_that_is_not_one_is_refused(schedule):
    with pytest.raises(ValueError, match=r"image_size must be \{first epoch: size\} with epoch 0 among the epochs"):
        ImageLoaderOptions(image_size=schedule, backend="kornia")


def test_the_smallest_size_and_what_a_refusal_names():
    assert ImageLoaderOptions(image_size={0: 8}, backend="kornia").image_size == 8
    assert ImageLoaderOptions(image_size=8, backend="kornia").image_size == 8
    with pytest.raises(ValueError, match=r"^image_size=\{0: 16, 3: 7\} is not allowed; image_size must be "):
        ImageLoaderOptions(image_size={0: 16, 3: 7}, backend="kornia")
    with pytest.raises(ValueError, match=r"^image_size=7 is not allowed; image_size must be an integer in 8\.\.16384, "
                                         r"or \{first epoch: size\} with epoch 0$"):
        ImageLoaderOptions(image_size=7, backend="kornia")
    assert ImageLoaderOptions(image_size=16384, backend="kornia").image_size == 16384  # the largest
    for too_large in (16385, {0: 224, 5: 16385}):  # a batch of them could not be allocated
        with pytest.raises(ValueError, match=r"^image_size=.* is not allowed; image_size must be .*8\.\.16384"):
            ImageLoaderOptions(image_size=too_large, backend="kornia")
    steps = ImageLoaderOptions(image_sizes=((5, 24), (0, 16)), image_size=16, backend="kornia").image_sizes
    assert steps == ((0, 16), (5, 24))  # sorted however they come


def test_a_change_stops_what_the_old_backend_made_ahead_and_says_the_dataset_once(ds, monkeypatch):
    import fastdata.images.loader as loader_module

    said = []
    monkeypatch.setattr(loader_module, "say_if_turned", lambda view: said.append(view))
    growing = loader(ds, image_size={0: 16, 1: 24})
    old = growing.backend
    stops = []
    monkeypatch.setattr(type(old), "stop_ahead", lambda self, wait=True: stops.append((self, wait)))
    growing.set_epoch(1)
    assert [(b, w) for b, w in stops if b is old] == [(old, False)] and len(said) == 1  # said for the first only
    growing.close()


def test_numpy_epochs_and_sizes_count_and_image_sizes_is_no_option_name(ds):
    assert size_steps({np.int64(0): np.int32(16), np.int64(4): 24}) == ((0, 16), (4, 24))
    assert ImageLoaderOptions(image_size=16, backend="kornia").size_at(10**6) == 16
    with pytest.raises(TypeError, match="unknown image loader option"):
        loader(ds, image_sizes=((0, 16),))
    with pytest.raises(ValueError, match=r"image_size must be \{first epoch: size\} with epoch 0"):
        ImageLoaderOptions(image_sizes=((1, 16),), backend="kornia")  # the steps are checked however they come


def test_a_backend_left_behind_is_not_kept_alive_once_closed(ds):
    import gc
    import weakref

    growing = loader(ds, image_size={0: 16, 1: 24, 2: 32})
    first = weakref.ref(growing.backend)
    for epoch in range(3):
        growing.set_epoch(epoch)
        collect(growing)  # each pass closes the backends left behind before it
    gc.collect()
    assert first() is None  # neither the loader nor a finalizer of it holds epoch 0's backend
    growing.close()


def test_a_change_of_size_keeps_the_shards_in_memory(ds, monkeypatch):
    """The new size's backend reads through the old one's reader: the shards epoch 0 kept in memory (memory_cache)
    serve epoch 1 without a read call, and the reader is closed once, with the loader."""
    import os

    growing = loader(ds, image_size={0: 16, 1: 24})
    collect(growing)  # epoch 0 reads every shard into memory
    reader = growing.backend.reader
    growing.set_epoch(1)
    assert growing.backend.reader is reader
    calls = []
    pread = os.pread
    monkeypatch.setattr(os, "pread", lambda *a: (calls.append(a), pread(*a))[1])
    got = collect(growing)  # the old backend is closed as this pass begins: the reader stays open
    assert len(got[0]) == 3 and calls == []
    growing.set_epoch(2)
    assert len(collect(growing)[0]) == 3 and calls == []
    closes = []
    close = type(reader).close
    monkeypatch.setattr(type(reader), "close", lambda self: (closes.append(self), close(self)))
    growing.close()
    assert closes == [reader]


def test_a_remote_dataset_changes_size_without_closing_its_cache(ds, tmp_path):
    """Closing the backend of the size left behind must leave the remote view's fetcher and cache to the new one
    (it had shut them: the next pass failed with 'cannot schedule new futures after shutdown')."""
    pytest.importorskip("obstore")
    import shutil

    from http_server import FileServer

    shutil.copytree(ds, tmp_path / "www" / "ds")
    with FileServer(tmp_path / "www") as server:
        growing = loader(server.url + "ds/", image_size={0: 16, 1: 24}, seed=2, cache_dir=tmp_path / "cache")
        for epoch, size in [(0, 16), (1, 24), (2, 24)]:
            growing.set_epoch(epoch)
            got = collect(growing)
            fixed = loader(ds, image_size=size, seed=2)
            fixed.set_epoch(epoch)
            assert _same(got, collect(fixed)), epoch
            fixed.close()
        growing.close()
