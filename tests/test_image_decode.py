"""Per-image kernels of the kornia backend: layout (a memcpy into the batch row) and flip correctness."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from fastdata.images.decode import decode_train, hflip_hwc, resize_hwc
from fastdata.images.geometry import Box
from fastdata.images.reader import RawSample


def _jpeg(w: int, h: int) -> bytes:
    rng = np.random.default_rng(1)
    im = Image.fromarray(rng.integers(0, 256, (h // 8, w // 8, 3), dtype=np.uint8)).resize((w, h))
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=95)
    return buf.getvalue()


def test_resize_returns_dense_hwc() -> None:
    image = np.random.default_rng(0).integers(0, 256, (200, 300, 3), dtype=np.uint8)
    out = resize_hwc(image, 224, 224)
    assert out.shape == (224, 224, 3) and out.dtype == torch.uint8
    assert out.is_contiguous()  # so the copy into an NHWC batch row is a plain memcpy


def test_hflip_equals_torch_flip() -> None:
    image = torch.from_numpy(np.random.default_rng(2).integers(0, 256, (224, 224, 3), dtype=np.uint8))
    assert torch.equal(hflip_hwc(image), image.flip(1))


def test_decode_train_flip_is_the_mirror_of_no_flip() -> None:
    raw = RawSample(data=_jpeg(320, 240), label=0, key="00000000", shard=Path("x.tar"))
    box = Box(top=10, left=20, height=180, width=250)
    plain = decode_train(raw, box, 240, 320, 112, flip=False)
    mirrored = decode_train(raw, box, 240, 320, 112, flip=True)
    assert plain.shape == (112, 112, 3)
    assert torch.equal(mirrored, plain.flip(1))
