"""The doctor's measurement and verdict logic, with controlled delays instead of a real loader."""

from __future__ import annotations

import itertools
import time

import pytest
import torch

from fastdata.perf.doctor import INPUT_BOUND_ABOVE, Diagnosis, StepTimes, profiler_share, run_steps, verdict
from fastdata.perf.models import TINY, build_model, default_model


def _batches(delay: float):
    labels = torch.tensor([0, 1, -100])  # the last row is eval padding: not a real image
    while True:
        time.sleep(delay)
        yield torch.zeros(3, 3, 8, 8), labels


def _step(delay: float):
    return lambda x, y: time.sleep(delay)


def test_run_steps_measures_waiting_for_a_slow_loader():
    st = run_steps(_step(0.0), _batches(0.06), steps=3, warmup=1)
    assert len(st.wait_s) == len(st.step_s) == 3
    assert st.images == 6  # padding rows (label -100) are not counted
    assert all(w >= 0.06 for w in st.wait_s)  # sleep() never returns early
    assert st.wait_fraction > 0.5


def test_run_steps_sees_no_wait_for_resident_data():
    st = run_steps(_step(0.05), itertools.repeat((torch.zeros(2, 1), torch.tensor([0, 1]))), steps=3, warmup=0)
    assert all(s >= 0.05 for s in st.step_s)
    assert st.wait_fraction < 0.1


def test_run_steps_reports_an_exhausted_loader():
    with pytest.raises(ValueError, match="ran out of batches after 1"):
        run_steps(_step(0.0), iter([(torch.zeros(1), torch.zeros(1))]), steps=2, warmup=0)
    with pytest.raises(ValueError, match="steps must be"):
        run_steps(_step(0.0), _batches(0.0), steps=0, warmup=0)


def test_profiler_share_matches_the_dataloader_range():
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        run_steps(_step(0.01), _batches(0.06), steps=3, warmup=0)
    share = profiler_share(prof)
    assert share is not None and share > 0.5


def _diag(wait: float, compute: float, resident: float, n: int = 4) -> Diagnosis:
    fed = StepTimes(wait_s=(wait,) * n, step_s=(wait + compute,) * n, images=32 * n)
    res = StepTimes(wait_s=(0.0,) * n, step_s=(resident,) * n, images=32 * n)
    return Diagnosis(fed=fed, resident=res, profiler_wait_fraction=None)


KW = dict(batch_size=32, device="cuda", backend="kornia", num_threads=4, prefetch=2)


def test_verdict_fed_when_waiting_is_negligible():
    v = verdict(_diag(0.001, 0.1, 0.1), **KW)
    assert v.level == "fed" and "keeps up" in v.summary
    assert any("torch.compile" in a for a in v.advice)
    assert not any("fewer loader threads" in a for a in v.advice)


def test_verdict_flags_cpu_contention_when_fed_steps_are_slower_without_waiting():
    v = verdict(_diag(0.001, 0.15, 0.1), **KW)
    assert v.level == "contended" and "1.51x as long" in v.summary
    assert any("num_threads=2" in a for a in v.advice)
    cpu = verdict(_diag(0.001, 0.15, 0.1), **{**KW, "device": "cpu"})
    assert any("CPU-only machine" in a for a in cpu.advice)


def test_verdict_partly_and_fully_input_bound_with_advice():
    partly = verdict(_diag(0.02, 0.08, 0.08), **KW)
    assert partly.level == "partly input-bound" and "20%" in partly.summary
    full = verdict(_diag(0.3, 0.1, 0.1), **KW)
    assert full.level == "input-bound" and "75%" in full.summary
    assert any("fastdata bench DATASET --batch-size 32 --backend kornia" in a for a in full.advice)
    assert any("backend='dali'" in a for a in full.advice)  # kornia on a GPU machine: suggest GPU decode
    cpu = verdict(_diag(0.3, 0.1, 0.1), **{**KW, "device": "cpu", "backend": "dali"})
    assert any("share the same CPU cores" in a for a in cpu.advice)


def test_verdict_suggests_deeper_prefetch_for_bursty_waits():
    fed = StepTimes(wait_s=(0.001, 0.001, 0.001, 0.5), step_s=(0.1, 0.1, 0.1, 0.6), images=128)
    res = StepTimes(wait_s=(0.0,) * 4, step_s=(0.1,) * 4, images=128)
    v = verdict(Diagnosis(fed, res, None), **KW)
    assert v.level == "input-bound" and any("prefetch=4" in a for a in v.advice)


def test_models_by_name_callable_and_errors(tmp_path, monkeypatch):
    assert default_model("cpu") == "resnet18" and default_model("cuda") == "resnet50"
    tiny = build_model(TINY, num_classes=5)
    assert tiny(torch.zeros(2, 3, 32, 32)).shape == (2, 5)
    (tmp_path / "my_models.py").write_text(
        "import torch\n"
        "def make(num_classes):\n    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(num_classes))\n"
        "def no_args():\n    return torch.nn.Identity()\n"
        "def not_a_module():\n    return 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert build_model("my_models:make", num_classes=3)(torch.zeros(2, 3, 4, 4)).shape == (2, 3)
    assert isinstance(build_model("my_models:no_args", num_classes=3), torch.nn.Identity)
    with pytest.raises(TypeError, match="expected a torch.nn.Module"):
        build_model("my_models:not_a_module", num_classes=3)
    with pytest.raises(ValueError, match="no attribute"):
        build_model("my_models:missing", num_classes=3)
    with pytest.raises(ValueError, match="cannot import module"):
        build_model("no_such_module_xyz:f", num_classes=3)
    with pytest.raises(ValueError, match="not a torchvision classification model"):
        build_model("resnet5000", num_classes=3)
    assert build_model("resnet18", num_classes=4).fc.out_features == 4


class _SlowLoader:
    """A loader stand-in: `batches` batches of 4 tiny images, each after `delay` seconds."""

    def __init__(self, delay: float, batches: int = 20) -> None:
        self.delay, self.batches, self.epochs = delay, batches, []

    def set_epoch(self, e: int) -> None:
        self.epochs.append(e)

    def __iter__(self):
        for i in range(self.batches):
            time.sleep(self.delay)
            yield torch.rand(4, 3, 16, 16), torch.tensor([0, 1, 2, i % 3])


class _SlowModel(torch.nn.Module):
    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay, self.net = delay, build_model(TINY, num_classes=3)

    def forward(self, x):
        time.sleep(self.delay)
        return self.net(x)


KW_CPU = dict(batch_size=4, device="cpu", backend="kornia", num_threads=2, prefetch=2)


def test_diagnose_a_slow_loader_is_input_bound():
    from fastdata.perf.doctor import diagnose

    # On a busy machine (the other test process, the profiler) this tiny model's step has taken 0.23 s, so the
    # loader's delay is set far above that: the step would have to take 0.9 s before the share fell under the
    # input-bound line. Each wait is at least the delay, whatever the load.
    d = diagnose(_SlowLoader(0.4), _SlowModel(0.0), device="cpu", steps=3, warmup=1, profile=True)
    assert min(d.fed.wait_s) >= 0.4 and d.fed.wait_fraction > INPUT_BOUND_ABOVE
    assert d.profiler_wait_fraction is not None
    assert d.resident.wait_fraction < d.fed.wait_fraction and d.slowdown > 1.0
    assert verdict(d, **KW_CPU).level == "input-bound"


def test_diagnose_a_slow_model_is_fed():
    from fastdata.perf.doctor import diagnose

    # Only what machine load cannot change is asserted on measured times: an instant loader is never waited
    # for, and both phases run the model's 0.25 s step. Which verdict follows from which numbers is tested
    # on fixed numbers above (fed/contended depends on the fed/resident ratio, which a busy machine moves).
    d = diagnose(_SlowLoader(0.0), _SlowModel(0.25), device="cpu", steps=3, warmup=1, profile=False)
    assert d.fed.wait_fraction < 0.1 and d.profiler_wait_fraction is None
    assert d.fed.median_step_s >= 0.25 and d.resident.median_step_s >= 0.25
    assert verdict(d, **KW_CPU).level in ("fed", "contended")
