"""Counting and timing batches (`fastdata/perf/throughput.py`) on made-up batches: what counts as an image, which
batch is the first, when the clock starts and stops, and every refusal in full."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from fastdata.perf import throughput
from fastdata.perf.throughput import batch_images, epochs, real_images, time_batches


def test_an_image_count_comes_from_the_leading_dimension_or_the_length() -> None:
    assert batch_images(SimpleNamespace(shape=(5, 3))) == 5  # shaped, without a length
    assert batch_images((np.zeros((4, 2)), "labels")) == 4 and batch_images([1, 2, 3]) == 3


def test_real_images_leave_padding_rows_out() -> None:
    images = torch.zeros(4, 3)
    assert real_images((images, torch.tensor([0, -100, -1, 2]))) == 3  # unlabeled (-1) rows are images
    multi_hot = torch.tensor([[0.0, 1.0, 1.0], [0.0, 0.0, 0.0], [-100.0] * 3, [-100.0] * 3])
    assert real_images((images, multi_hot)) == 2  # multi-hot rows: padding is -100 throughout; no class is a row
    assert real_images((images, torch.full((4, 10), -100))) == 0
    assert real_images((images, torch.tensor([0, -100, 1, 2]), "extra")) == 4  # not an (images, labels) pair


def test_an_epoch_without_a_batch_is_an_error_in_full() -> None:
    with pytest.raises(ValueError) as err:
        next(epochs([]))
    assert str(err.value) == ("the loader yielded no batch in a whole epoch; is the dataset smaller than one batch "
                              "(train drops the last partial batch)?")


def test_the_first_batch_is_timed_and_counted_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([1.0, 3.0, 4.0, 8.0])  # before make(), then as each batch arrives
    monkeypatch.setattr(throughput.time, "perf_counter", lambda: next(clock))
    seen = []
    t = time_batches(lambda: [torch.zeros(2), torch.zeros(5), torch.zeros(7)], on_batch=seen.append)
    assert [len(b) for b in seen] == [2, 5, 7]
    assert t == throughput.Throughput(images=14, batches=3, seconds=7.0, first_batch_s=2.0, first_batch_images=2)
    assert t.steady_images_per_s == 12 / 5


class _Closable:
    """An iterator with a `close` (as a loader's is), which nothing but an explicit call closes."""

    def __init__(self) -> None:
        self.closed = 0

    def __iter__(self):
        return self

    def __next__(self):
        return torch.zeros(3)

    def close(self) -> None:
        self.closed += 1


def test_one_batch_may_be_asked_for_and_a_stopped_iterator_is_closed() -> None:
    it = _Closable()
    t = time_batches(lambda: it, max_batches=1)
    assert (t.batches, t.images, it.closed) == (1, 3, 1)


@pytest.mark.parametrize(("kw", "message"), [
    ({"max_batches": 0}, "max_batches must be >= 1 or None, got 0"),
    ({"warmup_batches": -1}, "warmup_batches must be >= 0, got -1"),
])
def test_limits_are_refused_in_full(kw: dict, message: str) -> None:
    with pytest.raises(ValueError) as err:
        time_batches(lambda: [torch.zeros(1)], **kw)
    assert str(err.value) == message
    with pytest.raises(ValueError) as err:
        time_batches(list)
    assert str(err.value) == "the iterable yielded no batch to time"
