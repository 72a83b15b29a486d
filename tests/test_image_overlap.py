"""Epoch overlap (fastdata/images/overlap.py): at an epoch's end the producer goes on with the epoch it expects
next. What it made ahead is used only when the next epoch begins exactly there, and let go otherwise; the
batches are those of a loader that never overlaps; its threads end when the loader is let go of."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import torch
from conftest_images import collect, loader, make_datasets
from helpers import wait_until

from fastdata.images import prefetch as prefetch_module
from fastdata.images.overlap import EPOCH_END, follow_on, next_step
from fastdata.images.prefetch import prefetch
from fastdata.images.resume import ResumePoint

BACKENDS = ["kornia", "dali"]  # DALI runs on its CPU operators here


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_datasets(tmp_path_factory.mktemp("overlap"))


def _run(ld, epochs: list[int | None]) -> list[tuple[list, list]]:
    """The batches of each epoch in turn; `None`: iterate again without set_epoch."""
    out = []
    for epoch in epochs:
        if epoch is not None:
            ld.set_epoch(epoch)
        out.append(collect(ld))
    return out


def _same(a: list[tuple[list, list]], b: list[tuple[list, list]]) -> bool:
    return len(a) == len(b) and all(
        len(x[0]) == len(y[0]) > 0 and all(torch.equal(p, q) for p, q in zip(x[0] + x[1], y[0] + y[1]))
        for x, y in zip(a, b))


def _ours(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t not in before and t.name.startswith("fastdata")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("train", "split", "epochs"), [
    # epoch 1 expected, epoch 0 again (no set_epoch); then the step, the same again, a jump, the step again
    (True, "train", [0, None, 1, 2, 2, None, 5, 6]),
    (False, "val", [None, None, 3, 4, None]),  # eval: the same epoch again, then set_epoch steps; padded batches
])
def test_batches_are_those_of_a_loader_that_never_overlaps(ds, backend, train, split, epochs):
    kw = dict(split=split, train=train, backend=backend, seed=5)
    overlapped = _run(loader(ds["wds"], **kw), epochs)
    plain = _run(loader(ds["wds"], overlap_epochs=False, **kw), epochs)
    assert _same(overlapped, plain)
    assert _same(overlapped[:1], overlapped[1:2])  # the same epoch twice
    assert not train or not _same(overlapped[:1], overlapped[2:3])  # epoch 1 is another epoch


class _Loads:
    """Counts every sample load of a backend, by (index, its row of draws): that pair names a sample of one
    epoch, so a pair loaded twice is an epoch decoded twice."""

    def __init__(self, backend) -> None:
        self.seen: Counter = Counter()
        real, lock = backend._load, threading.Lock()

        def load(index, row, dest):
            with lock:
                self.seen[(index, None if row is None else tuple(row))] += 1
            return real(index, row, dest)

        backend._load = load

    @property
    def total(self) -> int:
        return sum(self.seen.values())


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_expected_epoch_is_made_ahead_and_taken_over_not_made_again(ds, backend):
    ld = loader(ds["wds"], split="train", train=True, backend=backend, seed=5)  # 12 samples: 3 batches of 4
    loads = _Loads(ld.backend)
    ld.set_epoch(0)
    collect(ld)
    assert ld.state_dict()["epoch"] == 0 and ld.state_dict()["batch"] == 3  # what the user received, only
    assert ld.backend._overlap.ahead.start == ResumePoint(epoch=1, batch=0, cursor=0)
    wait_until(lambda: loads.total >= 24, "the producer goes on with the next epoch", poll=0.005)  # epoch 1 ahead
    ld.set_epoch(1)
    one = collect(ld)
    assert max(loads.seen.values()) == 1  # taken over: nothing of epoch 1 was decoded again
    fresh = loader(ds["wds"], split="train", train=True, backend=backend, seed=5, overlap_epochs=False)
    fresh.set_epoch(1)
    assert _same([one], [collect(fresh)])


def test_an_epoch_other_than_the_expected_one_lets_the_ahead_go_at_once(ds):
    before = set(threading.enumerate())
    ld = loader(ds["wds"], split="train", train=True, seed=5)
    loads = _Loads(ld.backend)
    collect(ld)
    wait_until(lambda: loads.total >= 24, "the producer goes on with the next epoch", poll=0.005)
    assert _ours(before) and ld.backend._overlap.ahead is not None
    ld.set_epoch(7)  # not the expected epoch 1: stopped and joined here, decode threads included
    assert ld.backend._overlap.ahead is None and not [t.name for t in _ours(before) if t.is_alive()]
    seven = collect(ld)
    fresh = loader(ds["wds"], split="train", train=True, seed=5, overlap_epochs=False)
    fresh.set_epoch(7)
    assert _same([seven], [collect(fresh)])


def test_a_loaded_state_lets_the_ahead_go_and_resumes_exactly(ds):
    kw = dict(split="train", train=True, seed=5)
    source = loader(ds["wds"], **kw)
    source.set_epoch(1)
    it = iter(source)
    next(it)
    state = source.state_dict()
    whole = loader(ds["wds"], overlap_epochs=False, **kw)
    whole.set_epoch(1)
    rest = collect(whole)

    ld = loader(ds["wds"], **kw)
    collect(ld)  # epoch 0; epoch 1 goes on ahead from its start
    assert ld.backend._overlap.ahead is not None
    ld.load_state_dict(state)  # epoch 1 after its first batch: not where the ahead began
    assert ld.backend._overlap.ahead is None
    got = collect(ld)
    assert len(got[0]) == len(rest[0]) - 1 and _same([got], [(rest[0][1:], rest[1][1:])])


def test_a_loader_let_go_of_leaves_no_thread_behind(ds):
    before = set(threading.enumerate())
    ld = loader(ds["wds"], split="train", train=True)
    collect(ld)
    ours = _ours(before)
    assert any(t.is_alive() for t in ours)  # the producer, gone on into epoch 1
    del ld
    gc.collect()
    for t in ours:
        t.join(timeout=10)  # told to stop by the loader's finalizer; a leaked thread never ends
    assert not [t.name for t in ours if t.is_alive()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loader_only_the_loop_held_leaves_no_thread_behind(ds, backend):
    """`for x, y in fastdata.loader(...)`, the README's idiom: nothing but the loop holds the loader. It used
    to die at `iter()`, before its producer went on into the next epoch, so every such loop left a producer
    and its decode pool running (and the batches made ahead held) until the process ended."""
    before = set(threading.enumerate())
    for _ in range(3):
        batches = 0
        for batch in loader(ds["wds"], split="train", train=True, backend=backend):
            batches += len(batch[1])
        del batch  # a batch may hold the loader's buffer pool
        assert batches > 0
    ours = _ours(before)
    for t in ours:
        t.join(timeout=10)
    assert not [t.name for t in ours if t.is_alive()]


@pytest.mark.parametrize("kw", [dict(overlap_epochs=False), dict(augment=lambda x: x)],
                         ids=["overlap_epochs=False", "with-a-hook"])
def test_no_overlap_when_turned_off_or_with_hooks(ds, kw):
    """Hooks may depend on what the training loop changes between epochs: nothing of theirs runs ahead."""
    before = set(threading.enumerate())
    ld = loader(ds["wds"], split="train", train=True, **kw)
    collect(ld)
    assert ld.backend._overlap.ahead is None
    for t in _ours(before):
        t.join(timeout=10)
    assert not [t.name for t in _ours(before) if t.is_alive()]


@pytest.mark.parametrize(("last", "epoch", "sets_epochs", "step"), [
    (None, 0, True, 1), (None, 0, False, 0),  # no step taken yet: set_epoch(e + 1) expected once it was called
    (3, 4, False, 1), (4, 4, True, 0),  # the user's last step, 0 or 1
    (2, 5, True, 1), (5, 2, False, 0),  # a jump, back or forward: the default
])
def test_the_expected_next_epoch_repeats_the_users_last_step(last, epoch, sets_epochs, step):
    assert next_step(last, epoch, sets_epochs=sets_epochs) == step


@pytest.mark.parametrize("train", [True, False])
def test_before_any_step_the_expected_epoch_follows_whether_set_epoch_is_called(ds, train):
    kw = dict(split="train", train=train, seed=5)
    never = loader(ds["wds"], **kw)
    collect(never)
    assert never.backend._overlap.ahead.start.epoch == 0  # read again, as a loader whose epoch is never set does
    setting = loader(ds["wds"], **kw)
    setting.set_epoch(0)
    collect(setting)
    assert setting.backend._overlap.ahead.start.epoch == 1


def test_the_next_epoch_starts_at_its_beginning_with_a_lineage_only_when_it_is_the_same_epoch():
    lineage = ((2, 10),)
    start = ResumePoint(epoch=3, batch=5, cursor=21, lineage=lineage)
    assert follow_on(start, 0) == ResumePoint(epoch=3, batch=0, cursor=0, lineage=lineage)
    assert follow_on(start, 1) == ResumePoint(epoch=4, batch=0, cursor=0, lineage=())


def test_overlap_epochs_must_be_a_bool(ds):
    with pytest.raises(ValueError, match="overlap_epochs"):
        loader(ds["wds"], overlap_epochs="yes")


def _endless(stop: threading.Event):
    n = 0
    while not stop.is_set():
        n += 1
        yield n


def test_a_producer_blocked_on_a_full_queue_is_stopped_and_joined_by_close():
    items = prefetch(_endless, depth=1, name="fastdata-test-prefetch")
    assert next(items) == 1
    items.close()
    assert not items._thread.is_alive()
    with pytest.raises(StopIteration):
        next(items)


def test_a_dropped_prefetch_stops_its_producer():
    items = prefetch(_endless, depth=1, name="fastdata-test-prefetch")
    thread = items._thread
    del items  # the thread holds only the queue and the event, so the object is collected and stops it
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_a_prefetch_collected_on_a_thread_inside_its_queue_does_not_deadlock():
    """A garbage collection can run a finalizer on a thread that holds the lock of the very queue the finalizer
    empties (a collection set off by an allocation inside that queue's put or get): the finalizer's drain waited
    for that lock for ever. It leaves the queue alone then; the producer, told to stop, stops at its next poll."""
    items = prefetch(_endless, depth=1, name="fastdata-test-prefetch")
    next(items)
    thread, q, done = items._thread, items._q, threading.Event()

    def collect_inside_the_queue() -> None:
        nonlocal items
        with q.mutex:
            items = None  # the last reference: __del__ runs here, this thread holding the queue's lock
            gc.collect()
        done.set()

    threading.Thread(target=collect_inside_the_queue, daemon=True).start()
    assert done.wait(10), "the finalizer waited for the queue lock its own thread holds"
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_every_producer_still_running_is_stopped_and_joined_at_interpreter_exit():
    items = prefetch(_endless, depth=2, name="fastdata-test-prefetch")
    next(items)
    assert items._thread in prefetch_module._live
    prefetch_module._stop_all()  # what atexit runs
    assert not items._thread.is_alive()


class _SlowToRelease:
    """A producer whose last reference goes with its thread's arguments, after the producer has returned:
    releasing it takes a while, as releasing a batch's tensors can."""

    def __init__(self) -> None:
        self.releasing, self.released = threading.Event(), threading.Event()

    def __call__(self, stop: threading.Event):
        return _endless(stop)

    def __del__(self) -> None:
        self.releasing.set()
        time.sleep(0.3)
        self.released.set()


def test_a_producer_still_releasing_its_objects_is_waited_for_at_interpreter_exit():
    """The abort this guards against: a daemon thread still freeing tensors while the interpreter finalises."""
    slow = _SlowToRelease()
    releasing, released = slow.releasing, slow.released
    items = prefetch(slow, depth=1, name="fastdata-test-prefetch")
    del slow  # now only the thread's arguments hold it
    next(items)
    items.cancel()  # told to stop, not joined (what the loader's finalizer does)
    assert releasing.wait(timeout=10)  # the thread has returned from the producer and is releasing it
    prefetch_module._stop_all()
    assert released.is_set() and not items._thread.is_alive()


def test_an_epoch_without_batches_does_not_go_on_into_the_next(ds, caplog):
    """A split smaller than a batch: nothing to produce ahead, and no warning for an epoch nobody asked for."""
    before = set(threading.enumerate())
    ld = loader(ds["wds"], split="val", train=True, batch_size=64, seed=5)  # 7 samples, drop_last
    with caplog.at_level("WARNING"):
        ld.set_epoch(0)
        assert collect(ld) == ([], [])
    assert ld.backend._overlap.ahead is None
    assert [m for m in caplog.messages if "yields no batch" in m] == [m for m in caplog.messages if "epoch 0 " in m]
    for t in _ours(before):
        t.join(timeout=10)
    assert not [t.name for t in _ours(before) if t.is_alive()]


_EXIT_ORDER = """
import sys, threading, time
sys.path.insert(0, {tests!r})
from conftest_images import loader
import fastdata.images.prefetch  # as in a user's program: fastdata first, DALI when the first DALI loader is made
from fastdata.images.dali_backend import DaliBackend
import nvidia.dali.pipeline as dali_pipeline

def probed(self, shutdown=dali_pipeline.Pipeline._shutdown, main=threading.main_thread(),
           current=threading.current_thread, enumerate=threading.enumerate):
    if current() is main:
        alive = sorted(t.name for t in enumerate() if t.name.startswith("fastdata-"))
        print("fastdata threads alive at DALI's shutdown:", alive, flush=True)
    shutdown(self)
dali_pipeline.Pipeline._shutdown = probed

slow = threading.Event()  # once set, a sample takes 0.5 s to load: the producer takes that long to wind down
def slow_load(self, *args, load=DaliBackend._load, sleep=time.sleep):
    if slow.is_set():
        sleep(0.5)
    return load(self, *args)
DaliBackend._load = slow_load

ld = loader({ds!r}, split="train", train=True, batch_size=2, prefetch=1, backend="dali")
it = iter(ld)
print("batches:", sum(1 for _ in zip(range(2), it)), flush=True)
slow.set()  # the producer is busy with the next batches while the program ends
"""


def test_producers_end_at_exit_before_dali_shuts_its_pipelines_down(ds, tmp_path):
    """DALI shuts every pipeline down in an `atexit` handler. A producer still running then (gone on into the next
    epoch, or still releasing its objects after its loader was dropped) can use or free a pipeline while DALI
    tears it down: the process aborted at exit ("terminate called without an active exception"). The producers
    are stopped and joined before every `atexit` handler."""
    script = tmp_path / "exit_order.py"
    script.write_text(_EXIT_ORDER.format(tests=str(Path(__file__).parent), ds=str(ds["wds"])))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "batches: 2" in done.stdout
    probes = [line for line in done.stdout.splitlines() if line.startswith("fastdata threads alive")]
    assert probes and probes[0].endswith(": []"), done.stdout  # the first: DALI's atexit handler


_HELD_AT_EXIT = """
import sys
sys.path.insert(0, {tests!r})
from conftest_images import loader
it = iter(loader({ds!r}, split="train", train=True, batch_size=2, backend={backend!r}))
print("batches:", sum(1 for _ in zip(range(3), it)), flush=True)
"""


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_an_iterator_held_by_the_main_module_at_exit_closes_quietly(ds, tmp_path, backend):
    """The iterator is closed while the interpreter tears the modules down (their globals already None): its
    close must not print "Exception ignored ... 'NoneType' object is not callable" into the user's log."""
    script = tmp_path / "held.py"
    script.write_text(_HELD_AT_EXIT.format(tests=str(Path(__file__).parent), ds=str(ds["wds"]), backend=backend))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "batches: 3" in done.stdout, done.stderr[-2000:]
    assert "Exception ignored" not in done.stderr, done.stderr[-2000:]


class _Batch:
    """An item that records on which thread it was freed."""

    def __init__(self, freed_on: list[str]) -> None:
        self.freed_on = freed_on

    def __del__(self) -> None:
        self.freed_on.append(threading.current_thread().name)


def test_an_item_put_after_the_consumer_left_is_freed_by_the_producer_before_it_ends():
    """The consumer told the producer to stop and emptied the queue just before the producer's put went through:
    that item is never taken. The producer must free it itself while it still counts as running, not leave it to
    be freed with the queue when its thread object dies at the thread's very end, where the exit hook cannot join
    it (a core dump of the docs walk caught the process aborting there: prefetch.py)."""
    freed_on: list[str] = []

    def produce(stop: threading.Event):
        yield _Batch(freed_on)  # put: the queue has room
        stop.set()  # the consumer leaves now, after the put: nothing will take that batch

    items = prefetch(produce, depth=2, name="fastdata-test-prefetch")
    items._thread.join(timeout=10)
    assert not items._thread.is_alive()
    assert items._q.empty()
    assert freed_on == ["fastdata-test-prefetch"]


_LEFTOVER_AT_EXIT = """
import threading, time
import numpy as np, torch
from fastdata.images.prefetch import prefetch

put = threading.Event()

def produce(stop):
    yield [torch.from_numpy(np.zeros(4)) for _ in range(200_000)]  # put; the consumer never takes it
    stop.set()  # the consumer left just after that put
    put.set()
    time.sleep(0.3)  # still winding down (a decode pool joined, a pipeline released) when its loader drops it

items = prefetch(produce, depth=2, name="fastdata-test-prefetch")
put.wait()
del items  # let go without a join, as a dropped loader's finalizer does
while any(t.name == "fastdata-test-prefetch" for t in threading.enumerate()):
    time.sleep(0.0005)
print("exiting", flush=True)  # the program ends as the thread's object dies, at the thread's very end
"""


def test_a_batch_left_in_the_queue_does_not_abort_the_exit(tmp_path):
    """What the core dump of the docs walk showed, made to happen every time: torch frees each numpy-backed tensor
    with the GIL released and takes it again in its deleter. A batch left in the queue of a producer that ends as
    the program exits was freed at the thread's very end, after the exit hook could see it, and retaking the GIL
    there while the interpreter finalised aborted the process ("terminate called without an active
    exception"; 3 runs in 3 before the fix)."""
    script = tmp_path / "leftover.py"
    script.write_text(_LEFTOVER_AT_EXIT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exiting" in done.stdout and "terminate" not in done.stderr


def test_the_epoch_end_marker_reads_as_its_name_in_a_queue_dump() -> None:
    assert repr(EPOCH_END) == "EPOCH_END" and repr((EPOCH_END, 3)) == "(EPOCH_END, 3)"
