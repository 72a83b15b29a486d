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
    assert len(data["fed"]["step_s"]) == 3 and len(data["resident"]["step_s"]) == 3
    assert 0.0 <= data["wait_fraction"] <= 1.0
    assert data["level"] in ("fed", "contended", "partly input-bound", "input-bound")


def test_doctor_refuses_unknown_models(dataset, capsys):
    rc = main(["doctor", str(dataset), *BASE[2:], "--model", "resnet5000"])
    assert rc == 2 and "not a torchvision classification model" in capsys.readouterr().err
