"""Adopted shards' non-JPEG members reach both image backends as the same pixels: transparency composited over
white, 16-bit and float images scaled, palettes expanded (`pixels.to_rgb`), whichever backend decodes them."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_adopt import raw_tar
from PIL import Image

import fastdata
from converters.adopt import AdoptOptions, adopt
from fastdata.errors import ShardError

pytest.importorskip("nvidia.dali")
pytest.importorskip("kornia")

HEIGHT, WIDTH, CLEAR = 40, 48, 20  # columns 0..CLEAR-1 fully transparent where the image has transparency
UNDER = (200, 30, 30)  # the colour stored under the transparent pixels


def _rgb() -> np.ndarray:
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    rgb = np.stack([x * 5 % 256, y * 6 % 256, (x + y) * 3 % 256], -1).astype(np.uint8)
    rgb[:, :CLEAR] = UNDER
    return rgb


def _alpha() -> np.ndarray:
    alpha = np.full((HEIGHT, WIDTH), 255, np.uint8)
    alpha[:, :CLEAR] = 0
    alpha[:, CLEAR:CLEAR + 10] = 128
    return alpha


def _saved(im: Image.Image, fmt: str, **kw: object) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def _palette_with_clear_index() -> bytes:
    pal = Image.fromarray(_rgb()).quantize(16)
    clear = pal.getpixel((0, 0))  # the index of the colour under the transparent columns
    return _saved(pal, "PNG", transparency=clear)


# label -> (extension, bytes, whether columns 0..CLEAR-1 are transparent)
MEMBERS = {
    0: ("png", _saved(Image.fromarray(np.dstack([_rgb(), _alpha()]), "RGBA"), "PNG"), True),
    1: ("png", _saved(Image.fromarray(np.dstack([_rgb()[..., 0], _alpha()]), "LA"), "PNG"), True),
    2: ("png", _palette_with_clear_index(), True),
    3: ("webp", _saved(Image.fromarray(np.dstack([_rgb(), _alpha()]), "RGBA"), "WEBP", lossless=True), True),
    4: ("tif", _saved(Image.fromarray(np.dstack([_rgb(), _alpha()]), "RGBA"), "TIFF"), True),
    5: ("png", _saved(Image.fromarray(_rgb()[..., 1].astype(np.uint16) * 257), "PNG"), False),
    6: ("tif", _saved(Image.fromarray(_rgb()[..., 2].astype(np.float32) / 255), "TIFF"), False),
    7: ("tif", _saved(Image.fromarray(_rgb()).convert("CMYK"), "TIFF"), False),
}


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("adopt_pixels") / "s"
    members = []
    for label, (ext, data, _) in MEMBERS.items():
        members += [(f"k{label}.{ext}", data), (f"k{label}.cls", str(label).encode())]
    raw_tar(folder / "x-000000.tar", members)
    result = adopt(folder, options=AdoptOptions(jobs=1))
    assert not result.rejected
    return folder


def _by_label(folder: Path, backend: str, **kw: object) -> dict[int, torch.Tensor]:
    loader = fastdata.loader(folder, batch_size=4, image_size=32, backend=backend, device="cpu", num_threads=2,
                             dtype="uint8", **kw)
    out = {}
    for images, labels in loader:
        out.update({int(y): x for x, y in zip(images, labels) if y != -100})
    return out


def test_eval_pixels_agree_and_transparency_is_white_on_both_backends(shards: Path) -> None:
    kornia = _by_label(shards, "kornia", train=False)
    dali = _by_label(shards, "dali", train=False)
    assert sorted(kornia) == sorted(dali) == sorted(MEMBERS)
    for label, (_, _, transparent) in MEMBERS.items():
        diff = (kornia[label].int() - dali[label].int()).abs()
        assert diff.max() <= 2, (label, int(diff.max()))
        # eval: resized to 36 x 43, centre crop 32: column 0 of the crop is column 6.5 of the 48 stored
        left = dali[label][:, :, 0]
        if transparent:
            assert (left == 255).all(), (label, left[:, 0].tolist())
        else:
            assert (left != 255).any(), label


def test_train_crops_agree_on_both_backends(shards: Path) -> None:
    kornia = _by_label(shards, "kornia", train=True, seed=3)
    dali = _by_label(shards, "dali", train=True, seed=3)
    assert sorted(kornia) == sorted(dali) == sorted(MEMBERS)
    for label in MEMBERS:
        diff = (kornia[label].int() - dali[label].int()).abs()
        assert diff.float().mean() < 0.5 and diff.max() <= 8, (label, float(diff.float().mean()), int(diff.max()))


def test_a_corrupt_png_fails_by_name_on_the_dali_backend_or_is_skipped(tmp_path: Path) -> None:
    good = MEMBERS[0][1]
    cut = good[:len(good) - 40]  # IDAT cut short: the header reads, the pixels do not
    raw_tar(tmp_path / "s" / "x-000000.tar", [("a.png", good), ("a.cls", b"0"), ("bad.png", cut), ("bad.cls", b"1"),
                                              ("c.png", good), ("c.cls", b"1")])
    assert not adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).rejected
    with pytest.raises(ShardError, match=r"undecodable image in .*x-000000\.tar, key bad: "):
        _by_label(tmp_path / "s", "dali", train=False)
    loader = fastdata.loader(tmp_path / "s", batch_size=4, image_size=32, backend="dali", device="cpu",
                             train=False, on_error="skip")
    labels = torch.cat([y for _, y in loader])
    assert labels[labels != -100].tolist() == [0, 1]  # a and c, in order; bad left out
