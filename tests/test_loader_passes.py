"""One pass at a time (fastdata/closing.py): a new `iter()` over a loader ends the pass still open, whose threads
stop at once and which raises if asked for another batch, instead of sharing the loader's position with the new
pass (text and volumes handed each pass part of the epoch, silently); a pass open when its loader is closed
raises too, where it went on delivering. Every kind of loader."""

from __future__ import annotations

import gc
import os
import threading

import pytest
from conftest_kinds import IMAGES, KINDS, kinds_data_fixture, make_loader  # noqa: F401  (the kinds_data fixture)
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)

import fastdata
from fastdata.closing import CLOSED, NEWER_PASS, Closable

# where a new pass begins after one batch of an earlier pass of the same epoch: image loaders read the epoch again
# (docs/loading.md), text and volume loaders go on from their position (docs/text.md, volumes.md)
AGAIN_FROM = {"images": 0, "image mixture": 0, "pairs": 0, "text": 1, "volumes": 1, "masked volumes": 1}
NEWER = "a newer pass over this loader began"


def _epoch(kind, kinds_data, fortunes_tokens, epoch: int = 0) -> tuple[list, object]:
    """Epoch `epoch` of a fresh loader of `kind`, as identities of its batches, and the identity."""
    whole, ident = make_loader(kind, kinds_data, fortunes_tokens)
    whole.set_epoch(epoch)
    with whole:  # closed after: no producer of it goes on into the next epoch during the test
        return [ident(b) for b in whole], ident


def _fastdata_threads(before: set[threading.Thread]) -> list[str]:
    """The fastdata threads running now that were not running `before` (other tests' loaders may still hold
    theirs: only this test's are compared)."""
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("fastdata-") and t not in before)


@pytest.mark.parametrize("kind", KINDS)
def test_a_new_pass_ends_the_open_one_and_reads_on_alone(kind, kinds_data, fortunes_tokens) -> None:
    epoch, ident = _epoch(kind, kinds_data, fortunes_tokens)
    before = set(threading.enumerate())
    loader, _ = make_loader(kind, kinds_data, fortunes_tokens)
    older = iter(loader)
    assert ident(next(older)) == epoch[0]
    newer = iter(loader)
    assert _fastdata_threads(before) == []  # the older pass's threads are stopped, and the newer one has not begun
    with pytest.raises(RuntimeError, match=NEWER):
        next(older)
    assert [ident(b) for b in newer] == epoch[AGAIN_FROM[kind]:]


@pytest.mark.parametrize("kind", KINDS)
def test_a_pass_left_unfinished_does_not_disturb_the_next(kind, kinds_data, fortunes_tokens) -> None:
    """A first batch read to see its shapes, and then the training loop: no error, and the loop reads what it would
    have read after that batch had it come from the loop itself."""
    epoch, ident = _epoch(kind, kinds_data, fortunes_tokens)
    loader, _ = make_loader(kind, kinds_data, fortunes_tokens)
    next(iter(loader))
    assert [ident(b) for b in loader] == epoch[AGAIN_FROM[kind]:]


@pytest.mark.parametrize("kind", KINDS)
def test_a_pass_open_when_its_loader_closes_raises(kind, kinds_data, fortunes_tokens) -> None:
    before = set(threading.enumerate())
    loader, _ = make_loader(kind, kinds_data, fortunes_tokens)
    batches = iter(loader)
    next(batches)
    loader.close()
    assert _fastdata_threads(before) == []
    with pytest.raises(RuntimeError, match="this loader was closed during this pass"):
        next(batches)


@pytest.mark.parametrize("kind", KINDS)
def test_a_loop_left_early_over_a_loader_only_it_holds_leaves_nothing_running(kind, kinds_data,
                                                                              fortunes_tokens) -> None:
    """`for batch in fastdata.loader(...): break`: the loader and its pass die with the loop, without waiting for
    the garbage collector (a loader that kept its pass alive would make a cycle that only the collector breaks)."""
    before = set(threading.enumerate())
    gc.disable()
    try:
        for _ in make_loader(kind, kinds_data, fortunes_tokens)[0]:
            break
        assert _fastdata_threads(before) == []
    finally:
        gc.enable()


@pytest.mark.parametrize("kind", KINDS)
def test_set_epoch_during_a_pass(kind, kinds_data, fortunes_tokens) -> None:
    """Image loaders finish the open pass in its epoch and read the new one next (as DistributedSampler's
    set_epoch does); text and volume loaders, whose pass goes on from the loader's own position, end the pass
    (it raises) instead of reading on from the new position, which had them deliver part of an epoch again and
    skip the next. Setting the same epoch changes nothing."""
    first, second = (_epoch(kind, kinds_data, fortunes_tokens, e)[0] for e in (0, 1))
    assert first != second
    loader, ident = make_loader(kind, kinds_data, fortunes_tokens)
    batches = iter(loader)
    got = [ident(next(batches))]
    loader.set_epoch(0)
    got.append(ident(next(batches)))
    loader.set_epoch(1)
    if AGAIN_FROM[kind] == 0:
        assert got + [ident(b) for b in batches] == first
    else:
        with pytest.raises(RuntimeError, match=r"^set_epoch\(\) or load_state_dict\(\) moved this loader"):
            next(batches)
        assert got == first[:2]
    assert [ident(b) for b in loader] == second


@pytest.mark.parametrize("kind", ["text", "volumes"])
def test_load_state_dict_during_a_pass_ends_it(kind, kinds_data, fortunes_tokens) -> None:
    first = _epoch(kind, kinds_data, fortunes_tokens)[0]
    loader, ident = make_loader(kind, kinds_data, fortunes_tokens)
    batches = iter(loader)
    next(batches)
    state = loader.state_dict()
    next(batches)
    with pytest.raises(ValueError):
        loader.load_state_dict({**state, "epoch": -1})
    assert ident(next(batches)) == first[2]  # a state refused leaves the pass as it was
    loader.load_state_dict(state)
    with pytest.raises(RuntimeError, match=r"^set_epoch\(\) or load_state_dict\(\) moved this loader"):
        next(batches)
    assert [ident(b) for b in loader] == first[1:]


class _Waiting(Closable):
    """A loader whose pass yields one batch, then waits until closed and fails as stopped threads do."""

    def __init__(self, ends_quietly: bool) -> None:
        self.released, self.waiting, self.ends_quietly = threading.Event(), threading.Event(), ends_quietly

    def _iterate(self):
        yield 0
        self.waiting.set()
        self.released.wait(10)
        if not self.ends_quietly:
            raise RuntimeError("prefetch thread ended without a result")

    def _release(self) -> None:
        self.released.set()


@pytest.mark.parametrize("ends_quietly", [False, True])
@pytest.mark.parametrize("end", ["close", "iter"])
def test_a_pass_waiting_for_a_batch_when_another_thread_ends_it_says_why(end, ends_quietly) -> None:
    """The pass's threads stop under it: it reports why the pass ended, never their failure, and never ends as if
    its epoch were complete."""
    loader = _Waiting(ends_quietly)
    outcome: list[BaseException | None] = []

    def consume() -> None:
        try:
            list(loader)
            outcome.append(None)
        except RuntimeError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=consume)
    reader.start()
    assert loader.waiting.wait(10)
    if end == "close":
        loader.close()
    else:
        iter(loader)
        loader.released.set()  # what the new pass's start stops in a real loader
    reader.join(10)
    assert not reader.is_alive() and isinstance(outcome[0], RuntimeError)
    assert str(outcome[0]) == (CLOSED if end == "close" else NEWER_PASS)


def _in_a_forked_child(loader, ident) -> tuple[str, object]:
    """Iterate `loader` in a child process forked from this one: ("ok", its batches' identities) or ("error", the
    message); ("hung", None) when the child gives no answer within 60 s. The child runs torch serially, as
    DataLoader's worker processes do: GNU OpenMP's threads, which torch's CPU kernels (the volume augmentation's
    matrix products) start in this process, do not survive a fork, and a parallel kernel in the child waits for them
    forever (docs/loading.md, "Processes")."""
    import multiprocessing as mp

    import torch

    def child(queue) -> None:
        torch.set_num_threads(1)
        try:
            queue.put(("ok", [ident(b) for b in loader]))
        except Exception as exc:  # noqa: BLE001 - the message goes back to the test
            queue.put(("error", str(exc)))

    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    process = ctx.Process(target=child, args=(queue,))
    process.start()
    try:
        return queue.get(timeout=60)
    except Exception:  # noqa: BLE001 - queue.Empty
        return "hung", None
    finally:
        process.join(5)
        if process.is_alive():
            process.kill()


@pytest.mark.parametrize("kind", KINDS)
def test_a_process_forked_after_the_first_pass_is_told_or_reads_whole(kind, kinds_data, fortunes_tokens) -> None:
    """An image loader's threads outlive its pass (decode pool, the producer of the next epoch): a process forked
    after its first pass has none of them and is told so, where DALI's graph waited forever for its threads. A text
    or volume loader starts its threads per pass and reads whole there; so does any loader forked before its first
    pass."""
    epoch, _ = _epoch(kind, kinds_data, fortunes_tokens)
    fresh, ident = make_loader(kind, kinds_data, fortunes_tokens)
    with fresh:
        assert _in_a_forked_child(fresh, ident) == ("ok", epoch)
    used, ident = make_loader(kind, kinds_data, fortunes_tokens)
    with used:
        assert [ident(b) for b in used] == epoch
        got = _in_a_forked_child(used, ident)
        if AGAIN_FROM[kind] == 0:  # the image loaders
            assert got[0] == "error" and got[1].startswith(f"this loader's threads run in process {os.getpid()}, "
                                                           "where its first pass began; process ")
            assert got[1].endswith(" was forked from it and has none of them (a fork copies no thread): make a "
                                   "loader in this process with fastdata.loader(...), or start the process with the "
                                   "'spawn' method, or fork before the loader's first pass")
        else:
            assert got[0] == "ok" and len(got[1]) == len(epoch)
        used.set_epoch(0)  # (text and volume loaders move on to the next epoch at an epoch's end)
        assert [ident(b) for b in used] == epoch  # the loader still reads whole where its threads are


def test_the_dali_backend_forked_after_its_first_pass_is_told(kinds_data) -> None:
    pytest.importorskip("nvidia.dali")
    loader = fastdata.loader(kinds_data["wds"], **{**IMAGES, "backend": "dali", "overlap_epochs": False})
    with loader:
        labels = [y.tolist() for _, y in loader]
        got = _in_a_forked_child(loader, lambda b: b[1].tolist())
        assert got[0] == "error" and "was forked from it and has none of them" in got[1]
        assert [y.tolist() for _, y in loader] == labels
