"""What `fastdata doctor` prints, line by line, for a diagnosis of known step times (the measurement replaced by a
stand-in), in text and JSON; the loader and model it builds; and the profiler's chatter filtered from stderr."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree

from fastdata.cli import main
from fastdata.perf import doctor
from fastdata.perf.doctor import Diagnosis, StepTimes
from fastdata.perf.models import build_model

# four fed steps of 0.125 s (1/32 s of it waiting), four resident ones of 0.1 s; 4 images a step
FED = StepTimes(wait_s=(0.03125,) * 4, step_s=(0.125,) * 4, images=16)
RESIDENT = StepTimes(wait_s=(0.0,) * 4, step_s=(0.1,) * 4, images=16)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("doctor_report")
    convert_images(make_image_tree(root / "src", classes=3, per_class=2, size=(48, 40)), root / "ds",
                   samples_per_shard=4)
    return root / "ds"


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    seen = []

    def fake(loader, model, /, *, device, steps, warmup, profile, trace, channels_last):
        seen.append(dict(options=loader.options, model=model, device=device, steps=steps, warmup=warmup,
                         profile=profile, trace=trace, channels_last=channels_last))
        return Diagnosis(fed=FED, resident=RESIDENT, profiler_wait_fraction=0.1875 if profile else None)

    monkeypatch.setattr(doctor, "diagnose", fake)
    return seen


ARGS = ["--model", "tiny-cnn", "--batch-size", "4", "--image-size", "32", "--backend", "kornia", "--device", "cpu",
        "--num-threads", "1", "--prefetch", "3"]


def test_the_text_report_line_by_line(dataset: Path, asked, capsys) -> None:
    assert main(["doctor", str(dataset), *ARGS, "--steps", "4", "--warmup", "0", "--trace", "t.json"]) == 0
    params = sum(p.numel() for p in build_model("tiny-cnn", num_classes=3).parameters())
    assert capsys.readouterr().out.splitlines() == [
        f"fastdata doctor {dataset}: model tiny-cnn ({params / 1e6:.1f}M parameters, random weights)",
        "  loader: backend=kornia device=cpu batch_size=4 image_size=32 dtype=float32 num_threads=1 prefetch=3; "
        "4 steps per phase after 0 warm-up",
        "",
        "fed by the loader:        step    125.0 ms median,     32.0 images/s; waiting for data 31.2 ms/step = 25% "
        'of step time (profiler "DataLoader" share: 19%)',
        "batch already on device:  step    100.0 ms median,     40.0 images/s (fed steps take 1.25x as long)",
        "",
        "verdict: Partly input-bound: 25% of step time waits for data. With the data already on the device the step "
        "runs at 40 images/s; fed by the loader it gets 32 images/s (the loader would need to be 1.2x faster).",
        "what to change:",
        "  - Run `fastdata bench DATASET --batch-size 4 --backend kornia` to find the best num_threads/prefetch (now "
        "num_threads=1, prefetch=3).",
        "  - Decoding and the model share the same CPU cores here; on a machine with a GPU use device='cuda' with "
        "backend='dali' (GPU JPEG decode and augmentation).",
        "  - Store smaller images: convert with a --short-side close to the training size (decode cost grows with "
        "stored pixels).",
        "  - Ask the loader for dtype='uint8' or 'bfloat16' if the model can take it (fewer bytes moved).",
        "profiler trace: t.json (open in chrome://tracing or https://ui.perfetto.dev)",
    ]
    (call,) = asked
    assert (call["device"], call["steps"], call["warmup"], call["profile"], call["trace"], call["channels_last"]) \
        == ("cpu", 4, 0, True, "t.json", True)
    assert call["model"][-1].out_features == 3  # one output per class of the dataset
    o = call["options"]
    assert (o.batch_size, o.image_size, o.train, o.dtype, o.num_threads, o.prefetch) == (4, 32, True, "float32", 1, 3)


def test_on_cpu_the_defaults_are_a_small_model_at_a_small_size_and_say_why(dataset: Path, asked, capsys) -> None:
    assert main(["doctor", str(dataset), "--backend", "kornia", "--device", "cpu", "--no-profiler"]) == 0
    out = capsys.readouterr().out.splitlines()
    params = sum(p.numel() for p in build_model("resnet18", num_classes=3).parameters())
    assert out[0] == (f"fastdata doctor {dataset}: model resnet18 ({params / 1e6:.1f}M parameters, random weights); "
                      "a small model at a small size because this run is on CPU (pass --model/--image-size to "
                      "choose)")
    assert out[3].endswith("= 25% of step time")  # no profiler share without the profiler
    (call,) = asked
    assert (call["steps"], call["warmup"], call["profile"], call["trace"]) == (10, 2, False, None)
    assert (call["options"].batch_size, call["options"].image_size) == (32, 128)
    asked.clear()
    main(["doctor", str(dataset), "--backend", "kornia", "--device", "cpu", "--model", "tiny-cnn",
          "--image-size", "48", "--no-profiler", "--split", "train", "--dtype", "uint8"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("random weights)")  # both chosen: nothing to explain
    main(["doctor", str(dataset), "--backend", "kornia", "--device", "cpu", "--model", "tiny-cnn", "--no-profiler"])
    assert capsys.readouterr().out.splitlines()[0].endswith("(pass --model/--image-size to choose)")
    assert (asked[0]["options"].image_size, asked[0]["options"].dtype, asked[0]["options"].batch_size) == \
        (48, "uint8", 32)


def test_the_json_report(dataset: Path, asked, capsys) -> None:
    assert main(["doctor", str(dataset), *ARGS, "--json"]) == 0
    text = capsys.readouterr().out
    assert text.startswith('{\n "model": "tiny-cnn",\n "model_fallback": null,\n "options": {\n  "backend": "kornia",')
    data = json.loads(text)
    assert data["options"] == {"backend": "kornia", "device": "cpu", "batch_size": 4, "image_size": 32,
                               "dtype": "float32", "num_threads": 1, "prefetch": 3}
    assert data["fed"] == {"wait_s": [0.03125] * 4, "step_s": [0.125] * 4, "images": 16}
    assert data["resident"] == {"step_s": [0.1] * 4, "images": 16}
    assert (data["wait_fraction"], data["profiler_wait_fraction"], data["slowdown"], data["level"]) == \
        (0.25, 0.1875, 1.25, "partly input-bound")
    assert data["summary"].startswith("Partly input-bound: 25%") and len(data["advice"]) == 4


@pytest.mark.parametrize("bad", [["--steps", "0"], ["--warmup", "-1"], ["--steps", "100001"],
                                 ["--warmup", "100001"]])
def test_limits_are_refused_in_full(dataset: Path, asked, capsys, bad: list[str]) -> None:
    assert main(["doctor", str(dataset), *ARGS, *bad]) == 2
    assert capsys.readouterr().err.strip().endswith("--steps must be 1 to 100,000 and --warmup 0 to 100,000 (a "
                                                    "diagnosis, not a training run)")
    assert not asked


def test_the_limits_themselves_are_diagnosed(dataset: Path, asked) -> None:
    assert main(["doctor", str(dataset), *ARGS, "--steps", "100000", "--warmup", "100000"]) == 0
    assert [(a["steps"], a["warmup"]) for a in asked] == [(100000, 100000)]
    assert main(["doctor", str(dataset), *ARGS, "--steps", "1", "--warmup", "0", "--json"]) == 0


def test_the_profiler_chatter_is_dropped_from_stderr_and_the_rest_passed_on(capfd) -> None:
    from fastdata.cli.doctor import _profiler_noise_filtered

    with _profiler_noise_filtered():
        os.write(2, b"USDT: probe registered\nreal warning\ngpuGetDeviceCount failed: no device\nlast line\n")
    assert capfd.readouterr().err == "real warning\nlast line\n"


def test_a_dataset_of_one_class_gets_a_model_of_one_output(tmp_path: Path, asked, capsys) -> None:
    ds = convert_images(make_image_tree(tmp_path / "src", classes=1, per_class=4, size=(48, 40)), tmp_path / "ds",
                        samples_per_shard=4).dst
    assert main(["doctor", str(ds), *ARGS, "--no-profiler"]) == 0
    assert asked[0]["model"][-1].out_features == 1
