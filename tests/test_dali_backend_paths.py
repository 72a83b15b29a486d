"""The DALI backend's less travelled paths: a graph that fails while a batch is fed, while its output is taken or
while a run is abandoned; the seed of DALI's own random operators; the draws fed to a hook's `random`; the
message when DALI is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nvidia.dali")

from conftest_dali import backend, close_backends, key_of, make_dataset, manifest_keys  # noqa: E402, F401  (close_backends: autouse)

from fastdata.errors import MissingDependencyError, ShardError  # noqa: E402
from fastdata.images.dali_backend import _Submitted  # noqa: E402
from fastdata.images.dali_graph import random_draws  # noqa: E402


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("dali_paths"))


class FailingPipe:
    """A stand-in for a built DALI pipeline that raises `error` from `fail_in` ("feed_input" or "outputs")."""

    def __init__(self, fail_in: str, error: str) -> None:
        self.fail_in, self.error, self.taken = fail_in, error, 0

    def feed_input(self, name, arrays) -> None:
        if self.fail_in == "feed_input":
            raise RuntimeError(self.error)

    def schedule_run(self) -> None:
        pass

    def outputs(self):
        self.taken += 1
        if self.fail_in == "outputs":
            raise RuntimeError(self.error)
        return ()


def prepared(b, count: int):
    return [b._load(i, None) for i in range(count)]


def with_pipe(ds: Path, fail_in: str, error: str = "", count: int = 2):
    """An eval backend whose pipeline is a FailingPipe, and `count` prepared samples."""
    b = backend(ds, train=False)
    b._pipe = FailingPipe(fail_in, error)
    return b, b._pipe, prepared(b, count)


def test_a_graph_failing_while_fed_names_the_batch_and_is_not_reused(ds: Path) -> None:
    b, _, batch = with_pipe(ds, "feed_input", "first line\n  second   line " + "x" * 1000, count=3)
    with pytest.raises(ShardError) as err:
        b._submit(batch, None, (0, 0))
    shard = str(batch[0].raw.shard)
    assert str(err.value) == (f"DALI failed on a batch of 3 samples from [{shard!r}]: "
                              + ("first line second line " + "x" * 1000)[:600])
    assert b._pipe is None  # the next batch builds a new pipeline
    b.close()


def test_a_graph_failing_on_its_output_names_the_batch_and_is_not_reused(ds: Path) -> None:
    b, pipe, batch = with_pipe(ds, "outputs", "nvjpeg said\tno")
    with pytest.raises(ShardError, match=r"DALI failed on a batch of 2 samples from \[.*\]: nvjpeg said no$"):
        b._collect(_Submitted(batch, batch, pipe))
    assert b._pipe is None
    b.close()


def test_abandoning_takes_every_scheduled_output_after_a_padding_batch(ds: Path) -> None:
    b, pipe, batch = with_pipe(ds, "nothing")
    b._abandon([_Submitted([None, None], [], None), None, _Submitted(batch, batch, pipe),
                _Submitted(batch, batch, pipe)])
    assert pipe.taken == 2 and b._pipe is pipe
    stale = FailingPipe("nothing", "")  # a pipeline dropped after a failure: its runs are not taken
    b._abandon([_Submitted(batch, batch, stale)])
    assert stale.taken == 0
    b.close()


def test_a_failure_while_abandoning_drops_the_pipeline(ds: Path) -> None:
    b, pipe, batch = with_pipe(ds, "outputs", "gone")
    b._abandon([_Submitted(batch, batch, pipe)])
    assert pipe.taken == 1 and b._pipe is None
    b.close()


def uniform_image(images):
    """A dali_augment hook that replaces each image by one grey level drawn by DALI's own random operator."""
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types

    return images * 0 + fn.cast(fn.random.uniform(range=[0.0, 250.0]), dtype=types.UINT8)


def grey_levels(b) -> list[int]:
    """The grey level of every real row of an epoch (eval padding rows left out), in order."""
    levels = []
    for images, labels in b:
        for image in images[labels >= 0]:
            assert (image == image.flatten()[0]).all()
            levels.append(int(image.flatten()[0]))
    b.close()
    return levels


def test_dalis_own_random_operators_repeat_with_the_seed_and_differ_per_rank(ds: Path) -> None:
    kw = dict(train=False, dtype="uint8", dali_augment=uniform_image)
    first = grey_levels(backend(ds, seed=1, **kw))
    assert len(set(first)) > 3  # one draw per sample
    assert grey_levels(backend(ds, seed=1, **kw)) == first
    assert grey_levels(backend(ds, seed=2, **kw)) != first
    # each rank's pipeline draws its own stream (the first 12 rows: three full batches on every rank)
    rank0, rank1 = (grey_levels(backend(ds, seed=1, rank=r, world_size=2, **kw))[:12] for r in (0, 1))
    assert rank0 != rank1 and rank0 != first[:12]


def test_a_hooks_random_holds_the_draws_of_each_sample_and_epoch(ds: Path) -> None:
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types

    def first_draw(images, random):
        return images * 0 + fn.cast(random[0] * 250.0, dtype=types.UINT8)

    index = {key: i for i, (key, _) in enumerate(manifest_keys(ds))}
    b = backend(ds, train=True, seed=7, dtype="uint8", dali_augment=first_draw)
    for epoch in (0, 1):
        b.set_epoch(epoch)
        for images, labels in b:
            samples = np.array([index[key_of(k)] for k in b.last_keys])
            want = random_draws(7, epoch, samples)[:, 0] * np.float32(250.0)
            got = images[labels >= 0].flatten(1)
            assert (got == got[:, :1]).all()
            assert np.abs(got[:, 0].numpy() - want).max() <= 0.5  # DALI's cast rounds to the nearest level
    b.close()


def test_without_dali_the_backend_says_which_extra_to_install(ds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nvidia.dali", None)  # `import nvidia.dali` raises ImportError
    with pytest.raises(MissingDependencyError, match=r"install it with: pip install 'fastdata\[dali\]'"):
        backend(ds)


def test_a_batch_on_cuda_carries_the_event_of_its_stream(ds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On CUDA the DALI backend's batch is copied into torch's memory on the producer thread's stream, and the hook
    stage and the consumer read it on streams of their own: `_collect` hands them an event recorded on that stream
    after the copy (tests/test_gpu.py provokes the race on a device). On the CPU there is none."""
    import torch

    b, _, _ = with_pipe(ds, "nothing")
    assert b._ready() is None
    ready = object()
    monkeypatch.setattr(b, "_ready", lambda: ready)
    images, labels, event = b._collect(_Submitted([None, None], [], None))  # an eval batch of padding rows
    assert event is ready and labels.tolist() == [-100, -100] and not images.any()
    recorded = []

    class Event:
        def record(self, stream) -> None:
            recorded.append(stream)

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device: ("stream of", device))
    b._device = torch.device("cuda", 1)
    event = type(b)._ready(b)
    assert isinstance(event, Event) and recorded == [("stream of", torch.device("cuda", 1))]
    assert isinstance(type(b)._ready(b, "side"), Event) and recorded[-1] == "side"  # the kornia backend's own stream
    b._device = torch.device("cpu")
    b.close()
