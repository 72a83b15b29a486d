"""The doctor's verdict, word for word, on each side of its thresholds (wait share 10% and 30%, fed/resident
step ratio 1.15) and for each device and backend, from step times chosen to hit the thresholds exactly."""

from __future__ import annotations

import pytest

from fastdata.perf.doctor import CONTENTION, FED_BELOW, INPUT_BOUND_ABOVE, Diagnosis, StepTimes, verdict

KW = dict(batch_size=32, device="cuda", backend="kornia", num_threads=5, prefetch=3)
CONTENDED = ("The step rarely waits for data (0% of step time), but fed steps take 1.15x as long as steps on a "
             "batch already on the device (28 vs 32 images/s): the loader's work takes CPU time that the training "
             "step needs.")
FED = ("The loader keeps up: 0% of step time waits for data and fed steps run as fast as steps on a batch already "
       "on the device. Faster data loading will not speed this training up; the model step is the bottleneck.")
BOUND = ("{level}: {share} of step time waits for data. With the data already on the device the step runs at "
         "32 images/s; fed by the loader it gets {fed} images/s ({need}).")
BENCH = ("Run `fastdata bench DATASET --batch-size 32 --backend {backend}` to find the best num_threads/prefetch "
         "(now num_threads=5, prefetch=3).")
SMALLER = ("Store smaller images: convert with a --short-side close to the training size (decode cost grows with "
           "stored pixels).")
UINT8 = "Ask the loader for dtype='uint8' or 'bfloat16' if the model can take it (fewer bytes moved)."
DALI = "Use backend='dali': JPEG decode and augmentation on the GPU take the load off the CPU."
CORES = ("Decoding and the model share the same CPU cores here; on a machine with a GPU use device='cuda' with "
         "backend='dali' (GPU JPEG decode and augmentation).")
KORNIA = ("On the CPU the kornia backend was faster than DALI's CPU operators (docs/loading.md, 'Which backend'): "
          "compare with --backend kornia.")


def _diag(wait: float, compute: float, resident: float = 1.0, images: int = 32) -> Diagnosis:
    """Four fed steps of `wait` + `compute` seconds and four resident ones of `resident`, 32 images each (fed:
    `images`). Sums of four such binary fractions are exact, so the shares land on the thresholds exactly."""
    fed = StepTimes(wait_s=(wait,) * 4, step_s=(wait + compute,) * 4, images=4 * images)
    return Diagnosis(fed=fed, resident=StepTimes(wait_s=(0.0,) * 4, step_s=(resident,) * 4, images=128),
                     profiler_wait_fraction=None)


def test_the_thresholds_are_what_the_docs_say() -> None:
    assert (FED_BELOW, INPUT_BOUND_ABOVE, CONTENTION) == (0.10, 0.30, 1.15)


@pytest.mark.parametrize(("device", "threads", "fewer", "second"), [
    ("cuda", 5, 2, "Move more of the input work to the GPU: backend='dali' (GPU decode), dtype='uint8' with "
                   "normalisation in the model."),
    ("cpu", 1, 1, "On a CPU-only machine decoding and training share the cores; a GPU (device='cuda', "
                  "backend='dali') moves decode and augmentation off them."),
])
def test_contended_from_a_ratio_of_exactly_1_15(device: str, threads: int, fewer: int, second: str) -> None:
    v = verdict(_diag(0.0, 1.15), **{**KW, "device": device, "num_threads": threads})
    assert v.level == "contended" and v.summary == CONTENDED
    assert v.advice == (f"Try fewer loader threads (num_threads={fewer}, now {threads}) and compare with "
                        "`fastdata doctor` again.", second)


def test_fed_below_the_ratio() -> None:
    v = verdict(_diag(0.0, 1.125), **KW)
    assert (v.level, v.summary) == ("fed", FED)
    assert v.advice == ("Speed up the step itself: mixed precision (bfloat16), channels_last, torch.compile, or a "
                        "larger batch per device.",)


@pytest.mark.parametrize(("wait", "compute", "level", "share"), [(0.125, 1.125, "Partly input-bound", "10%"),
                                                                  (0.375, 0.875, "Input-bound", "30%")])
def test_a_wait_share_of_exactly_10_and_30_percent(wait: float, compute: float, level: str, share: str) -> None:
    v = verdict(_diag(wait, compute), **KW)
    assert v.level == level.lower()
    assert v.summary == BOUND.format(level=level, share=share, fed=26, need="the loader would need to be 1.2x faster")
    assert v.advice == (BENCH.format(backend="kornia"), DALI, SMALLER, UINT8)  # waits even: no burst


def test_input_bound_advice_on_the_dali_backend_and_on_the_cpu() -> None:
    assert verdict(_diag(0.375, 0.875), **{**KW, "backend": "dali"}).advice == (BENCH.format(backend="dali"),
                                                                                 SMALLER, UINT8)
    cpu = verdict(_diag(0.375, 0.875), **{**KW, "device": "cpu", "backend": "dali"})
    assert cpu.advice == (BENCH.format(backend="dali"), CORES, KORNIA, SMALLER, UINT8)
    cpu = verdict(_diag(0.375, 0.875), **{**KW, "device": "cpu", "backend": "kornia"})
    assert cpu.advice == (BENCH.format(backend="kornia"), CORES, SMALLER, UINT8)


def test_no_image_fed_is_said_in_words_not_as_an_infinite_speed_up() -> None:
    v = verdict(_diag(0.5, 0.5, images=0), **KW)
    assert v.summary == BOUND.format(level="Input-bound", share="50%", fed=0,
                                     need="no image reached the step while it was timed")


@pytest.mark.parametrize(("waits", "bursty"), [((0.25, 0.25, 0.25, 1.0), False), ((0.25, 0.25, 0.25, 1.01), True),
                                               ((0.0, 0.0, 0.0, 0.0004), False), ((0.0, 0.0, 0.0, 0.00041), True)])
def test_a_wait_over_four_times_the_median_is_a_burst(waits: tuple[float, ...], bursty: bool) -> None:
    """The median counts as at least 0.1 ms: waits of a few microseconds are not bursts."""
    fed = StepTimes(wait_s=waits, step_s=tuple(w + 0.0001 for w in waits), images=128)
    v = verdict(Diagnosis(fed, StepTimes((0.0,) * 4, (0.1,) * 4, 128), None), **KW)
    assert v.level == "input-bound"
    assert ("Waits come in bursts: a deeper queue (prefetch=6) absorbs them." in v.advice) is bursty
