"""`gc_paused`: the collector is held off while a shard's index is parsed and its labels are read, and comes back
as it was, however pauses nest, overlap across threads or end in an exception."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest
from conftest_adopt import shardwriter_shards

import fastdata.images.reader as reader_module
from converters.adopt import AdoptOptions, adopt
from fastdata.dataset import open_dataset
from fastdata.gc_paused import gc_paused


@pytest.fixture(autouse=True)
def collector_on():
    gc.enable()
    yield
    gc.enable()


def test_pauses_nest_and_the_collector_returns_with_the_last():
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_off_before_stays_off_and_an_exception_ends_the_pause():
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()
    gc.enable()
    with pytest.raises(KeyError), gc_paused():
        raise KeyError("x")
    assert gc.isenabled()


def test_pauses_of_two_threads_overlap_and_the_collector_returns_when_both_end():
    first_in, first_may_end, first_out = (threading.Event() for _ in range(3))
    seen = {}

    def first():
        with gc_paused():
            first_in.set()
            first_may_end.wait(5)
        first_out.set()

    t = threading.Thread(target=first)
    t.start()
    first_in.wait(5)
    with gc_paused():
        first_may_end.set()
        first_out.wait(5)
        seen["after the first ended"] = gc.isenabled()
    t.join(5)
    assert seen == {"after the first ended": False} and gc.isenabled()


def test_a_shards_index_is_parsed_and_its_labels_read_with_the_collector_paused(tmp_path: Path, monkeypatch):
    shardwriter_shards(tmp_path / "s", count=4, per_shard=4)
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    states = []
    parse, label = reader_module.parse_index, reader_module.LabelRule.parse

    def parse_index(*a, **k):
        states.append(("parse", gc.isenabled()))
        yield from parse(*a, **k)

    def parse_label(*a, **k):
        states.append(("label", gc.isenabled()))
        return label(*a, **k)

    monkeypatch.setattr(reader_module, "parse_index", parse_index)
    monkeypatch.setattr(reader_module.LabelRule, "parse", parse_label)
    reader = reader_module.SplitReader(open_dataset(tmp_path / "s"))
    try:
        assert reader.labels().tolist() == [0, 1, 2, 0]
    finally:
        reader.close()
    assert states == [("parse", False)] + [("label", False)] * 4 and gc.isenabled()
