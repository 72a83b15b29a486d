"""The doctor's models (`fastdata/perf/models.py`): the tiny CNN's layers, the same initial weights every run, a
user's `module:callable` found as Python would find it, and every refusal in full."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

from fastdata.perf.models import TINY, build_model, default_model, tiny_cnn

pytest.importorskip("torchvision")

MODULE = """import torch
VALUE = 3
def make(num_classes):
    return torch.nn.Linear(2, num_classes)
class Factory:
    @staticmethod
    def make():
        return torch.nn.Identity()
def hidden():
    return torch.nn.Tanh()
hidden.__signature__ = "not a signature"  # inspect.signature raises TypeError on it
def not_a_module():
    return 3
"""


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "fd_user_models.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    monkeypatch.delitem(sys.modules, "fd_user_models", raising=False)
    return tmp_path


def test_the_tiny_cnn_is_three_strided_conv_blocks_and_a_linear_head() -> None:
    model = tiny_cnn(5)
    blocks = list(model)[:3]
    for block, (cin, cout) in zip(blocks, ((3, 16), (16, 32), (32, 64))):
        conv, norm, relu = block
        assert (conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, conv.bias) == \
            (cin, cout, (3, 3), (2, 2), (1, 1), None)
        assert isinstance(norm, torch.nn.BatchNorm2d) and norm.num_features == cout
        assert isinstance(relu, torch.nn.ReLU) and relu.inplace
    assert [type(m).__name__ for m in list(model)[3:]] == ["AdaptiveAvgPool2d", "Flatten", "Linear"]
    assert (model[-1].in_features, model[-1].out_features) == (64, 5)
    assert list(model[:3](torch.zeros(1, 3, 32, 32)).shape) == [1, 64, 4, 4]  # halved three times


def test_every_build_starts_from_the_same_weights() -> None:
    torch.manual_seed(0)
    want = tiny_cnn(1).state_dict()
    for _ in range(2):
        torch.manual_seed(123)  # whatever the caller's generator holds
        got = build_model(TINY, num_classes=1).state_dict()
        assert all(torch.equal(got[k], want[k]) for k in want)
    with pytest.raises(ValueError, match=r"^num_classes must be >= 1, got 0$"):
        build_model(TINY, num_classes=0)


def test_a_user_callable_is_imported_from_the_working_directory(user_module: Path) -> None:
    assert build_model("fd_user_models:make", num_classes=4).out_features == 4
    assert sys.path[-1] == str(user_module)  # added once, like `python -m` would have it
    assert isinstance(build_model("fd_user_models:Factory.make", num_classes=4), torch.nn.Identity)
    assert isinstance(build_model("fd_user_models:hidden", num_classes=4), torch.nn.Tanh)  # no signature: no args
    build_model("fd_user_models:make", num_classes=2)
    assert sys.path.count(str(user_module)) == 1


def test_the_working_directory_is_not_added_when_python_already_looks_there(user_module: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    before = list(sys.path)
    assert build_model("fd_user_models:make", num_classes=3).out_features == 3
    assert sys.path == before


@pytest.mark.parametrize(("spec", "error", "message"), [
    (":make", ValueError, "--model ':make': a custom model is given as 'module:callable'"),
    ("fd_user_models:", ValueError, "--model 'fd_user_models:': a custom model is given as 'module:callable'"),
    ("fd_user_models:make:x", ValueError, "--model 'fd_user_models:make:x': module 'fd_user_models' has no "
                                          "attribute 'make:x'"),
    ("fd_no_such_module:make", ValueError, "--model 'fd_no_such_module:make': cannot import module "
                                            "'fd_no_such_module' (No module named 'fd_no_such_module'); is it on "
                                            "PYTHONPATH?"),
    ("fd_user_models:VALUE", TypeError, "--model 'fd_user_models:VALUE': 'VALUE' is not callable"),
    ("fd_user_models:not_a_module", TypeError, "--model 'fd_user_models:not_a_module' returned int, expected a "
                                               "torch.nn.Module"),
])
def test_a_user_callable_that_cannot_be_used_is_refused_in_full(user_module: Path, spec: str, error: type,
                                                                 message: str) -> None:
    with pytest.raises(error) as err:
        build_model(spec, num_classes=2)
    assert str(err.value) == message


def test_a_name_that_is_no_classification_model_lists_the_usual_ones() -> None:
    import torchvision.models as tvm

    usual = [n for n in tvm.list_models(module=tvm) if n.startswith(("resnet", "efficientnet_b", "vit_b", "mobilenet"))]
    for name in ("resnet5000", "fasterrcnn_resnet50_fpn"):  # a detection model is not a classifier
        with pytest.raises(ValueError) as err:
            build_model(name, num_classes=2)
        assert str(err.value) == (f"--model {name!r} is not a torchvision classification model; try one of "
                                  f"{', '.join(usual)}, 'tiny-cnn', or your own 'module:callable'")
    assert {"resnet18", "efficientnet_b0", "vit_b_16", "mobilenet_v3_small"} <= set(usual)


def test_the_default_model_is_resnet18_on_the_cpu_and_resnet50_elsewhere() -> None:
    assert [default_model(d) for d in ("cpu", "cuda", "cuda:1")] == ["resnet18", "resnet50", "resnet50"]


def test_a_torchvision_model_gets_the_datasets_class_count() -> None:
    model = build_model("resnet18", num_classes=7)
    assert model.fc.out_features == 7
    assert list(model.eval()(torch.zeros(1, 3, 32, 32)).shape) == [1, 7]
