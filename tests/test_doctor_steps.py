"""The doctor's measurement, exactly: the profiler share from the profiler's events, the training step it times
(SGD, lr 0.01, momentum 0.9, uint8 scaled to [0, 1], unlabeled rows trained towards class 0), and how many steps
and batches `diagnose` takes in each phase."""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from fastdata.perf.doctor import diagnose, make_step, profiler_share, run_steps
from fastdata.perf.models import TINY, build_model


@dataclass
class _Event:
    name: str
    cpu_time_total: float


@dataclass
class _DeviceEvent(_Event):
    device_type: str = field(default="DeviceType.CPU")


class _Profile:
    def __init__(self, events: list[_Event]) -> None:
        self._events = events

    def events(self) -> list[_Event]:
        return self._events


def test_profiler_share_counts_cpu_ranges_of_the_wait_and_the_step_only() -> None:
    events = [_DeviceEvent("DataLoader", 3.0), _DeviceEvent("train_step", 7.0),
              _DeviceEvent("DataLoader", 50.0, "DeviceType.CUDA"),  # the GPU copy of the range: not counted
              _DeviceEvent("aten::mm", 20.0),  # inside the step, counted through the step's range
              _Event("DataLoader", 1.0)]  # no device type: a CPU event
    assert profiler_share(_Profile(events)) == pytest.approx(4.0 / 11.0, rel=1e-12)
    assert profiler_share(_Profile([_DeviceEvent("load", 1.0), _DeviceEvent("train_step", 3.0)]),
                          label="load") == pytest.approx(0.25, rel=1e-12)
    assert profiler_share(_Profile([_DeviceEvent("DataLoader", 0.25), _DeviceEvent("train_step", 0.25)])) == 0.5
    assert profiler_share(_Profile([])) is None and profiler_share(_Profile([_DeviceEvent("x", 1.0)])) is None


def test_run_steps_marks_the_ranges_profiler_share_reads() -> None:
    batches = iter([(torch.zeros(2, 3), torch.tensor([0, 1]))] * 2)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        run_steps(lambda x, y: None, batches, steps=2, warmup=0)
    names = [e.name for e in prof.events()]
    assert names.count("DataLoader") == 2 and names.count("train_step") == 2


def test_the_timed_step_of_multi_hot_rows_is_bce_without_the_padding_rows() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 3))
    reference = copy.deepcopy(model)
    images = torch.randint(0, 256, (3, 3, 2, 2), dtype=torch.uint8)
    labels = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [-100.0] * 3])  # the last row pads an eval batch
    make_step(model)(images, labels)
    opt = torch.optim.SGD(reference.parameters(), lr=0.01, momentum=0.9)
    torch.nn.functional.binary_cross_entropy_with_logits(reference(images.float() / 255.0)[:2], labels[:2]).backward()
    opt.step()
    for got, want in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-7)


def test_the_timed_step_is_sgd_on_images_scaled_to_one_with_unlabeled_rows_as_class_0() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 3))
    reference = copy.deepcopy(model)
    images = torch.randint(0, 256, (4, 3, 2, 2), dtype=torch.uint8)
    labels = torch.tensor([0, -1, 2, -100])  # -1: unlabeled, -100: eval padding (ignored)
    step = make_step(model)
    opt = torch.optim.SGD(reference.parameters(), lr=0.01, momentum=0.9)
    for _ in range(3):  # momentum shows from the second step on
        step(images, labels)
        loss = torch.nn.functional.cross_entropy(reference(images.float() / 255.0), torch.tensor([0, 0, 2, -100]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    for got, want in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-7)
    scaled, plain = copy.deepcopy(reference), copy.deepcopy(reference)  # float images are used as they are
    make_step(scaled)(images.float(), labels)
    torch.optim.SGD(plain.parameters(), lr=0.01).zero_grad()
    torch.nn.functional.cross_entropy(plain(images.float()), torch.tensor([0, 0, 2, -100])).backward()
    with torch.no_grad():
        for q in plain.parameters():
            q -= 0.01 * q.grad  # the first step of SGD with momentum is a plain one
    for got, want in zip(scaled.parameters(), plain.parameters()):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6)


class _Loader:
    def __init__(self) -> None:
        self.drawn = 0

    def __iter__(self):
        while True:
            self.drawn += 1
            yield torch.rand(2, 3, 8, 8), torch.tensor([0, 1])


class _Counting(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net, self.calls = build_model(TINY, num_classes=3), 0

    def forward(self, x):
        self.calls += 1
        return self.net(x)


def test_diagnose_by_default_times_ten_steps_after_two_in_each_phase_profiled_in_channels_last() -> None:
    loader, model = _Loader(), _Counting()
    d = diagnose(loader, model, device="cpu")
    assert len(d.fed.step_s) == len(d.resident.step_s) == 10
    assert loader.drawn == 2 + 10 + 1  # warm-up, timed, and the batch the resident phase repeats
    assert model.calls == 2 + 10 + 2 + 10
    assert d.profiler_wait_fraction is not None
    conv = next(m for m in model.modules() if isinstance(m, torch.nn.Conv2d))
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)


def test_diagnose_without_warm_up_still_warms_the_resident_phase_once(tmp_path: Path, caplog) -> None:
    loader, model = _Loader(), _Counting()
    trace = tmp_path / "trace.json"
    with caplog.at_level(logging.INFO, logger="fastdata.perf.doctor"):
        d = diagnose(loader, model, device="cpu", steps=2, warmup=0, trace=str(trace), channels_last=False)
    assert (loader.drawn, model.calls, len(d.fed.step_s), len(d.resident.step_s)) == (3, 2 + 1 + 2, 2, 2)
    assert trace.stat().st_size > 0
    assert [r.getMessage() for r in caplog.records] == [f"wrote profiler trace {trace}"]
    conv = next(m for m in model.modules() if isinstance(m, torch.nn.Conv2d))
    assert not conv.weight.is_contiguous(memory_format=torch.channels_last)
    loader, model = _Loader(), _Counting()
    d = diagnose(loader, model, device="cpu", steps=1, warmup=0, profile=False)
    assert d.profiler_wait_fraction is None
    assert (loader.drawn, model.calls, len(d.fed.step_s), len(d.resident.step_s)) == (2, 0 + 1 + 1 + 1, 1, 1)


def test_a_loader_that_runs_out_is_refused_in_full() -> None:
    with pytest.raises(ValueError) as err:
        run_steps(lambda x, y: None, iter([(torch.zeros(1), torch.zeros(1))] * 2), steps=2, warmup=1)
    assert str(err.value) == ("the loader ran out of batches after 2 step(s); use fewer --steps or a larger dataset")
    assert err.value.__suppress_context__
