"""The image loader's memory of tar shards (`memory_cache`, fastdata/images/shard_memory.py): samples read once
come from memory afterwards, batches are bitwise those read from the files, the loader's budget bounds what is
kept, and a shard damaged on disk still gives an error, never a signal or a wrong sample."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest_images import collect, loader, make_datasets
from conftest_mixing import IMAGE_KW, image_datasets

from fastdata.dataset import open_dataset
from fastdata.errors import ShardError
from fastdata.images import shard_memory
from fastdata.images.reader import SplitReader
from fastdata.images.shard_memory import MemoryBudget


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_datasets(tmp_path_factory.mktemp("memory"))


@pytest.fixture
def wds(pristine, tmp_path) -> Path:
    """A private copy of the tar dataset that a test may damage."""
    return Path(shutil.copytree(pristine["wds"], tmp_path / "wds"))


def _shard_bytes(ds: Path, split: str) -> list[int]:
    return [ref.path.stat().st_size for ref in open_dataset(ds, split=split).shards]


class _Reads:
    """Counts the system calls that read sample bytes from a shard file."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        for name in ("pread", "preadv"):
            real = getattr(os, name)
            monkeypatch.setattr(os, name, self._counting(real))

    def _counting(self, real):
        def call(*args):
            self.count += 1
            return real(*args)

        return call


@pytest.mark.parametrize("backend", ["kornia", "dali"])
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_batches_from_memory_are_those_read_from_the_files(pristine, backend, train):
    kw = dict(split="train", train=train, backend=backend, seed=3, overlap_epochs=False)
    plain, kept = loader(pristine["wds"], memory_cache=0, **kw), loader(pristine["wds"], **kw)
    for epoch in range(3):
        plain.set_epoch(epoch)
        kept.set_epoch(epoch)
        a, b = collect(plain), collect(kept)
        assert a[0] and len(a[0]) == len(b[0])
        assert all(x.equal(y) for x, y in zip(a[0] + a[1], b[0] + b[1]))


def test_a_sample_read_once_is_never_read_from_its_file_again(pristine, monkeypatch):
    ld = loader(pristine["wds"], split="train", train=False, overlap_epochs=False)  # eval: every sample each epoch
    reads = _Reads(monkeypatch)
    first = collect(ld)
    assert reads.count == ld.num_samples  # one read a sample
    again = collect(ld)
    assert reads.count == ld.num_samples
    assert all(x.equal(y) for x, y in zip(first[0], again[0]))


def test_without_a_memory_cache_every_epoch_reads_the_files(pristine, monkeypatch):
    ld = loader(pristine["wds"], split="train", train=False, overlap_epochs=False, memory_cache=0)
    reads = _Reads(monkeypatch)
    collect(ld)
    collect(ld)
    assert reads.count == 2 * ld.num_samples


def test_the_budget_bounds_which_shards_are_kept(pristine):
    view = open_dataset(pristine["wds"], split="train")
    sizes = _shard_bytes(pristine["wds"], "train")
    assert len(sizes) >= 3
    budget = MemoryBudget(sizes[0] + sizes[1] + min(sizes[2:]) - 1)  # room for two shards, not a third
    reader = SplitReader(view, budget)
    for index in range(len(reader)):
        reader.read(index)
    kept = [reader._shard(s).in_memory for s in range(len(sizes))]
    assert kept[:2] == [True, True] and not any(kept[2:])
    assert budget.left == budget.limit - sizes[0] - sizes[1]
    reader.forget(0)  # a shard given back returns its memory to the budget
    assert budget.left == budget.limit - sizes[1]
    reader.close()
    assert budget.left == budget.limit


def test_memory_is_counted_once_across_a_mixture(tmp_path):
    import fastdata

    ds = image_datasets(tmp_path)
    sizes = [sum(_shard_bytes(ds[k], "train")) for k in ("a", "b")]
    limit = sum(sizes) - 1  # not room for both datasets: one budget for the mixture, not one each
    ld = fastdata.loader([ds["a"], ds["b"]], **IMAGE_KW, weights=[1, 1], memory_cache=limit)
    collect(ld)
    readers = ld.backend._reader._readers
    assert readers[0]._budget is readers[1]._budget
    assert 0 <= readers[0]._budget.left < limit
    kept = [r._shard(s).in_memory for r in readers for s in range(len(r.starts))]
    assert any(kept) and not all(kept)


def test_a_shard_truncated_after_open_is_an_error_and_its_sample_is_not_kept(wds):
    reader = SplitReader(open_dataset(wds, split="train"), MemoryBudget(2**30))
    shard = reader._shard(0)
    assert shard.in_memory
    os.truncate(shard.path, 1024)  # in place, after the index was checked against the file's size
    for _ in range(2):  # the failed read left nothing behind that a second read would take for the sample
        with pytest.raises(ShardError, match="train-000000.tar is truncated at sample"):
            reader.read(1)
    assert not any(shard._memory.filled)


def test_a_shard_truncated_after_its_samples_were_kept_serves_the_bytes_it_read(wds):
    ld = loader(wds, split="train", train=False, overlap_epochs=False)
    first = collect(ld)
    for tar in wds.glob("train-*.tar"):
        os.truncate(tar, 1024)  # no SIGBUS, unlike a memory map of the file
    again = collect(ld)
    assert all(x.equal(y) for x, y in zip(first[0], again[0]))
    with pytest.raises(ShardError, match="truncated"):
        collect(loader(wds, split="train", train=False))


def test_a_sample_with_a_bad_label_stays_unread(wds):
    reader = SplitReader(open_dataset(wds, split="train"), MemoryBudget(2**30))
    shard = reader._shard(0)
    offset, length = (int(v) for v in shard._spans_arr[0][2:4])  # the label member's span
    with open(shard.path, "r+b") as f:
        f.seek(offset)
        f.write(b"x" * length)
    for _ in range(2):
        with pytest.raises(ShardError, match="bad class label"):
            reader.read(0)
    assert shard._memory.filled[0] == 0


def test_filling_a_span_reports_a_short_read(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(bytes(range(100)))
    memory = shard_memory.ShardMemory(200, 2)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert memory.fill(fd, 10, 60) and bytes(memory.view[10:60]) == bytes(range(10, 60))
        assert not memory.fill(fd, 90, 120)
    finally:
        os.close(fd)


@pytest.mark.parametrize("value", [-1, True, 1.5, "lots", "-3MB"])
def test_memory_cache_must_be_bytes(pristine, value):
    with pytest.raises(ValueError, match="memory_cache"):
        loader(pristine["wds"], memory_cache=value)


def test_memory_cache_takes_a_size(pristine):
    assert loader(pristine["wds"], memory_cache="3MB").options.memory_cache == 3_000_000
    assert loader(pristine["wds"], memory_cache=0).options.memory_cache == 0


def test_a_budget_gives_back_no_more_than_it_had():
    budget = MemoryBudget(10)
    assert budget.take(6) and not budget.take(5) and budget.take(4)
    budget.give(100)
    assert budget.left == 10
    with pytest.raises(ValueError):
        MemoryBudget(-1)
