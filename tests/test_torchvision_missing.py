"""torchvision is not a dependency of fastdata (each torch release has its own torchvision release): what needs it
says so when it is missing or made for another torch, and what does not need it works without it.

A torch 2.13.0 CPU environment with fastdata's extras and no torchvision (the install a user gets without the
set-up script) ran `device_decode=True` into a ModuleNotFoundError in the loader's thread and `fastdata doctor`
into a traceback; both are here with torchvision made to fail to import, both ways it fails in the field."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
import torch
from helpers import convert_images, make_image_tree

import fastdata
from fastdata.cli import main
from fastdata.errors import MissingDependencyError, require_torchvision, torchvision_state
from fastdata.perf.models import build_model

FAILURES = {
    "missing": (ModuleNotFoundError("No module named 'torchvision'", name="torchvision"),
                "torchvision is not installed"),
    "another torch": (RuntimeError("operator torchvision::nms does not exist"),
                      "torchvision does not import (RuntimeError: operator torchvision::nms does not exist)"),
}


@pytest.fixture(params=sorted(FAILURES))
def no_torchvision(request, monkeypatch: pytest.MonkeyPatch) -> str:
    """torchvision fails to import (every module of it), as it does where it is missing or made for another torch;
    the value is what fastdata must say of it."""
    error, said = FAILURES[request.param]
    real = importlib.import_module

    def import_module(name: str, package: str | None = None):
        if name.split(".")[0] == "torchvision":
            raise error
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", import_module)
    return said


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("no-tv")
    src = make_image_tree(root / "src", classes=2, per_class=4, size=(48, 40))
    convert_images(src, root / "ds", samples_per_shard=4)
    return root / "ds"


def _images(dataset: Path, **kw):
    return fastdata.loader(dataset, split="train", backend="kornia", device="cpu", batch_size=4, image_size=32,
                           num_threads=1, **kw)


def test_torchvision_state_is_none_where_it_imports() -> None:
    pytest.importorskip("torchvision.io")
    assert torchvision_state("torchvision.io") is None
    assert require_torchvision("torchvision.io", "x").decode_jpeg is not None


def test_device_decode_is_refused_when_the_loader_is_made(dataset: Path, no_torchvision: str) -> None:
    with pytest.raises(MissingDependencyError) as caught:
        _images(dataset, device_decode=True)
    assert str(caught.value) == (
        f"device_decode=True (torchvision.io.decode_jpeg) needs torchvision, and {no_torchvision}; install the "
        f"torchvision release made for your torch {torch.__version__} (fastdata pins none: each torch release has "
        "its own)")
    assert isinstance(caught.value, ImportError)  # an `except ImportError` around the call still catches it


def test_a_loader_that_does_not_decode_on_the_device_needs_no_torchvision(dataset: Path, no_torchvision: str) -> None:
    with _images(dataset) as ld:
        images, labels = next(iter(ld))
    assert images.shape == (4, 3, 32, 32) and labels.shape == (4,)


def test_a_torchvision_model_by_name_says_what_is_wrong(no_torchvision: str) -> None:
    with pytest.raises(MissingDependencyError, match=r"^--model 'resnet18' \(a torchvision model\) needs torchvision, "
                       rf"and {re.escape(no_torchvision)}; install"):
        build_model("resnet18", num_classes=3)
    assert isinstance(build_model("tiny-cnn", num_classes=3), torch.nn.Module)  # what does not need it still builds


DOCTOR = ["--batch-size", "4", "--image-size", "32", "--backend", "kornia", "--device", "cpu", "--steps", "2",
          "--warmup", "1", "--num-threads", "1", "--no-profiler"]


def test_doctor_without_a_model_times_the_tiny_cnn_and_says_why(dataset: Path, no_torchvision: str, capsys) -> None:
    assert main(["doctor", str(dataset), *DOCTOR]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head == (f"fastdata doctor {dataset}: model tiny-cnn (0.0M parameters, random weights); tiny-cnn, not "
                    f"resnet18, because {no_torchvision}: install the torchvision release made for your torch, or "
                    "pass --model module:callable")
    assert main(["doctor", str(dataset), *DOCTOR, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["model"], data["model_fallback"]) == ("tiny-cnn", no_torchvision)


def test_doctor_with_a_torchvision_model_is_one_line_of_error(dataset: Path, no_torchvision: str, capsys) -> None:
    assert main(["doctor", str(dataset), *DOCTOR, "--model", "resnet18"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fastdata doctor: error: --model 'resnet18' (a torchvision model) needs torchvision, and "
                          f"{no_torchvision}; install") and err.count("\n") == 1


def test_doctor_names_no_fallback_where_torchvision_imports(dataset: Path, capsys) -> None:
    pytest.importorskip("torchvision.models")
    assert main(["doctor", str(dataset), *DOCTOR, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["model"], data["model_fallback"]) == ("resnet18", None)
