"""`fastdata doctor`: one tiny end-to-end run on CPU with a tiny model (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree

from fastdata.cli import main


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("doctor")
    src = make_image_tree(root / "src", classes=3, per_class=4, size=(48, 40))
    convert_images(src, root / "ds", samples_per_shard=4)
    return root / "ds"


BASE = ["--model", "tiny-cnn", "--batch-size", "4", "--image-size", "32", "--backend", "kornia", "--device", "cpu",
        "--steps", "3", "--warmup", "1", "--num-threads", "1"]


def test_doctor_prints_measurements_verdict_and_advice(dataset, tmp_path, capsys):
    trace = tmp_path / "trace.json"
    rc = main(["doctor", str(dataset), *BASE, "--trace", str(trace)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "model tiny-cnn" in out and "fed by the loader:" in out and "batch already on device:" in out
    assert 'profiler "DataLoader" share' in out
    assert "verdict: " in out and "what to change:" in out
    assert trace.exists() and "DataLoader" in trace.read_text()


def test_doctor_json_and_small_default_model_on_cpu(dataset, capsys):
    rc = main(["doctor", str(dataset), *BASE, "--json", "--no-profiler"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert data["model"] == "tiny-cnn" and data["profiler_wait_fraction"] is None
    fed, resident = data["fed"], data["resident"]
    assert len(fed["step_s"]) == len(fed["wait_s"]) == len(resident["step_s"]) == 3
    assert fed["images"] == resident["images"] == 12  # 3 steps of 4 real images each
    assert all(0 < w <= s for w, s in zip(fed["wait_s"], fed["step_s"]))  # a wait is part of its step
    # the reported numbers are the ones the verdict was drawn from: recomputed from the JSON, they agree
    from fastdata.perf.doctor import Diagnosis, StepTimes, verdict

    d = Diagnosis(fed=StepTimes(tuple(fed["wait_s"]), tuple(fed["step_s"]), fed["images"]),
                  resident=StepTimes((0.0,) * 3, tuple(resident["step_s"]), resident["images"]),
                  profiler_wait_fraction=None)
    assert data["wait_fraction"] == pytest.approx(sum(fed["wait_s"]) / sum(fed["step_s"]))
    assert data["slowdown"] == pytest.approx(d.slowdown)
    again = verdict(d, batch_size=4, device="cpu", backend="kornia", num_threads=1, prefetch=2)
    assert (data["level"], data["summary"], data["advice"]) == (again.level, again.summary, list(again.advice))


def test_doctor_refuses_unknown_models(dataset, capsys):
    rc = main(["doctor", str(dataset), *BASE[2:], "--model", "resnet5000"])
    assert rc == 2 and "not a torchvision classification model" in capsys.readouterr().err
