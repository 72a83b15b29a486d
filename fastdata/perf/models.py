"""Models for `fastdata doctor`: a torchvision model by name, a user's `module:callable`, or a tiny CNN."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Any

from fastdata.errors import require_torchvision, torchvision_state

TINY = "tiny-cnn"
CPU_DEFAULT = "resnet18"
CUDA_DEFAULT = "resnet50"


def tiny_cnn(num_classes: int) -> Any:
    """Three conv blocks and a linear head: a few milliseconds per step, for CPU checks and tests."""
    from torch import nn

    def block(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True))

    return nn.Sequential(block(3, 16), block(16, 32), block(32, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(64, num_classes))


def default_model(device: str) -> str:
    return CPU_DEFAULT if device == "cpu" else CUDA_DEFAULT


def default_unavailable() -> str | None:
    """Why the default torchvision models cannot be built here (torchvision missing, or made for another torch),
    or None when they can (`errors.torchvision_state`)."""
    return torchvision_state("torchvision.models")


def _from_callable(spec: str, num_classes: int) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--model {spec!r}: a custom model is given as 'module:callable'")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())  # like `python -m`: modules in the working directory import
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--model {spec!r}: cannot import module {module_name!r} ({exc}); is it on PYTHONPATH?") \
            from exc
    fn = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise ValueError(f"--model {spec!r}: module {module_name!r} has no attribute {attr!r}")
    if not callable(fn):
        raise TypeError(f"--model {spec!r}: {attr!r} is not callable")
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    return fn(num_classes=num_classes) if "num_classes" in params else fn()


def build_model(name: str, /, *, num_classes: int) -> Any:
    """An `nn.Module` with randomly initialised weights (nothing is downloaded)."""
    import torch
    from torch import nn

    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    torch.manual_seed(0)  # the same initial weights every run
    if name == TINY:
        model = tiny_cnn(num_classes)
    elif ":" in name:
        model = _from_callable(name, num_classes)
    else:
        tvm = require_torchvision("torchvision.models", f"--model {name!r} (a torchvision model)")
        available = tvm.list_models(module=tvm)
        if name not in available:
            shown = ", ".join(n for n in available if n.startswith(("resnet", "efficientnet_b", "vit_b", "mobilenet")))
            raise ValueError(f"--model {name!r} is not a torchvision classification model; try one of {shown}, "
                             f"{TINY!r}, or your own 'module:callable'")
        model = tvm.get_model(name, weights=None, num_classes=num_classes)
    if not isinstance(model, nn.Module):
        raise TypeError(f"--model {name!r} returned {type(model).__name__}, expected a torch.nn.Module")
    return model
