"""Eval tensors of the DALI and kornia backends agree (same geometry as torchvision Resize + CenterCrop)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("nvidia.dali")
pytest.importorskip("kornia")

from helpers import convert_images, copy_photos, make_image_tree  # noqa: E402

from fastdata.images.loader import image_loader  # noqa: E402


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("agree")
    photos = copy_photos(root / "photos", classes=3, limit=8)
    # portrait and odd sizes: exercises the truncated long side and half-pixel centre-crop offsets
    odd = make_image_tree(root / "odd", classes=2, per_class=3, size=(45, 71))
    return {"photos": convert_images(photos, root / "photos_ds", short_side=96).dst,
            "odd": convert_images(odd, root / "odd_ds").dst}


def epoch(ds: Path, backend: str, **kw) -> tuple[torch.Tensor, torch.Tensor]:
    loader = image_loader(ds, backend=backend, batch_size=4, train=False, num_threads=2, device="cpu", **kw)
    xs, ys = zip(*loader)
    return torch.cat(xs), torch.cat(ys)


@pytest.mark.parametrize("name,image_size", [("photos", 64), ("photos", 84), ("odd", 33), ("odd", 40)])
def test_eval_uint8_agrees_within_one_level(datasets: dict[str, Path], name: str, image_size: int) -> None:
    dali_x, dali_y = epoch(datasets[name], "dali", image_size=image_size, dtype="uint8")
    kornia_x, kornia_y = epoch(datasets[name], "kornia", image_size=image_size, dtype="uint8")
    assert torch.equal(dali_y, kornia_y)
    assert dali_x.shape == kornia_x.shape
    diff = (dali_x.int() - kornia_x.int()).abs()
    assert diff.max() <= 2, f"max difference {diff.max()} gray levels"
    assert diff.float().mean() < 0.5
    assert int((dali_y == -100).sum()) == int((kornia_y == -100).sum())


def test_eval_float_channels_last_agrees(datasets: dict[str, Path]) -> None:
    dali_x, _ = epoch(datasets["photos"], "dali", image_size=48, dtype="float32", channels_last=True)
    kornia_x, _ = epoch(datasets["photos"], "kornia", image_size=48, dtype="float32", channels_last=True)
    assert dali_x.is_contiguous(memory_format=torch.channels_last)
    assert kornia_x.is_contiguous(memory_format=torch.channels_last)
    assert torch.allclose(dali_x, kornia_x, atol=2.5 / 255 / 0.224)


@pytest.mark.parametrize("name,size", [("odd", 33), ("photos", 84)])
def test_dali_eval_matches_torchvision_reference(datasets: dict[str, Path], name: str, size: int) -> None:
    """Independent of kornia: PIL decode + torchvision Resize(antialias) + CenterCrop.

    photos at 84: resize_short 96 equals the converted short side, the path without resampling.
    """
    from PIL import Image
    from torchvision.transforms.v2 import functional as F

    from fastdata.dataset import open_dataset

    ds = datasets[name]
    refs = []
    for ref in open_dataset(ds).shards:
        with tarfile.open(ref.path) as tar:
            jpgs = [tar.extractfile(m).read() for m in tar if m.name.endswith(".jpg")]
        for data in jpgs:
            rgb = np.array(Image.open(io.BytesIO(data)).convert("RGB"))
            t = torch.from_numpy(rgb).permute(2, 0, 1)
            refs.append(F.center_crop(F.resize(t, round(size / 0.875), antialias=True), [size, size]))
    dali_x, dali_y = epoch(ds, "dali", image_size=size, dtype="uint8")
    real = dali_x[dali_y >= 0]
    assert len(real) == len(refs)
    diff = (real.int() - torch.stack(refs).int()).abs()
    assert diff.max() <= 2 and diff.float().mean() < 0.5
