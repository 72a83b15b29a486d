"""`decode_on_device` on the CPU (torchvision's decode_jpeg runs libjpeg there, nvJPEG on CUDA): each sample an
HWC uint8 size x size image with the host path's geometry, RGB whatever the JPEG's colour space, and a sample
the decoder rejects named by its shard and key while the others of the batch are decoded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_adopt import encoded, encoded_image
from PIL import Image

from fastdata.errors import ShardError
from fastdata.images.decode import decode_eval, decode_train
from fastdata.images.device_decode import Encoded, decode_on_device
from fastdata.images.geometry import Box
from fastdata.images.reader import RawSample

pytest.importorskip("torchvision")

CPU = torch.device("cpu")


def _black_and_white() -> bytes:
    """Pure black left half, pure white right half: the decoded pixels reach 0 and 255 exactly."""
    im = np.zeros((40, 48, 3), np.uint8)
    im[:, 24:] = 255
    return encoded_image(Image.fromarray(im), "JPEG", quality=95)


SAMPLES = {"colour": encoded("JPEG", seed=1), "grey": encoded("JPEG", seed=2, mode="L"),
           "cmyk": encoded("JPEG", seed=3, mode="CMYK"), "bw": _black_and_white()}
# torchvision converts CMYK to RGB about one grey level darker than libjpeg-turbo through simplejpeg (measured:
# max 2, mean 1.07); the other colour spaces decode identically, and only the resize rounds differently
BOUNDS = {"colour": (1, 0.3), "grey": (1, 0.3), "cmyk": (2, 1.2), "bw": (1, 0.3)}
BOXES = {"colour": Box(3, 5, 30, 28), "grey": Box(0, 0, 40, 48), "cmyk": Box(10, 2, 20, 36), "bw": Box(4, 6, 32, 40)}


def _enc(key: str, data: bytes, box: Box | None, flip: bool = False) -> Encoded:
    return Encoded(data=torch.frombuffer(bytearray(data), dtype=torch.uint8), key=key, shard="s-000001.tar",
                   box=box, flip=flip)


def _host(key: str, data: bytes, box: Box | None, flip: bool, size: int, resize_short: int) -> torch.Tensor:
    raw = RawSample(data, 0, key, Path("s-000001.tar"))
    if box is None:
        return decode_eval(raw, resize_short=resize_short, size=size)
    return decode_train(raw, box, 40, 48, size, flip=flip)


@pytest.mark.parametrize("train", [False, True])
def test_every_sample_is_rgb_uint8_hwc_with_the_host_geometry(train: bool) -> None:
    batch = [_enc(k, d, BOXES[k] if train else None, flip=train and k != "grey") for k, d in SAMPLES.items()]
    out = decode_on_device(batch, CPU, size=24, resize_short=28)
    assert len(out) == len(SAMPLES)
    for (key, data), enc, got in zip(SAMPLES.items(), batch, out):
        assert isinstance(got, torch.Tensor) and got.dtype == torch.uint8 and got.shape == (24, 24, 3), key
        want = _host(key, data, enc.box, enc.flip, 24, 28)
        diff = (got.int() - want.int()).abs()
        most, mean = BOUNDS[key]
        assert diff.max() <= most and diff.float().mean() < mean, (key, int(diff.max()), float(diff.float().mean()))
        if key == "bw":  # the float resize is rounded and clamped: black stays 0, white 255
            assert int(got.min()) == int(want.min()) == 0 and int(got.max()) == int(want.max()) == 255


def test_a_bad_sample_is_named_and_the_rest_of_the_batch_is_decoded() -> None:
    cut = SAMPLES["colour"][:200]  # the header reads, the scan data is cut short
    batch = [_enc("cmyk", SAMPLES["cmyk"], None), _enc("bad", cut, None), _enc("grey", SAMPLES["grey"], None)]
    out = decode_on_device(batch, CPU, size=24, resize_short=28)
    assert isinstance(out[1], ShardError)
    assert str(out[1]).startswith("corrupt JPEG in s-000001.tar, key bad: ")
    for i, key in ((0, "cmyk"), (2, "grey")):  # decoded one at a time, still as RGB
        assert out[i].shape == (24, 24, 3) and out[i].dtype == torch.uint8
        want = _host(key, SAMPLES[key], None, False, 24, 28)
        assert (out[i].int() - want.int()).abs().max() <= BOUNDS[key][0], key


def test_an_empty_batch_decodes_to_nothing() -> None:
    assert decode_on_device([], CPU, size=24, resize_short=28) == []
