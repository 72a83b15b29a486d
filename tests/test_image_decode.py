"""Per-image kernels of the kornia backend: layout (a memcpy into the batch row) and flip correctness."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest_adopt import encoded_image
from PIL import Image

from fastdata.errors import ShardError
from fastdata.images.decode import check_header, decode_eval, decode_train, hflip_hwc, host_rgb, resize_hwc
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
    crop = image[10:160, 20:170]  # a strided view, as the crop box of a decoded image is
    same = resize_hwc(crop, 150, 150)
    assert same.is_contiguous() and np.array_equal(same.numpy(), crop)  # nothing to resize: still dense
    from torchvision.transforms.v2 import functional as TF

    chw = torch.from_numpy(np.ascontiguousarray(crop)).permute(2, 0, 1)
    want = TF.resize(chw, [100, 120], antialias=True)
    got = resize_hwc(crop, 100, 120)
    assert got.is_contiguous()
    # torchvision resizes uint8 with the uint8 kernel resize_hwc calls (0.29: equal), or, as 0.17 does (`make
    # test-oldest`), through float32 and rounding: then within one grey level
    through_float = F.interpolate(chw[None].float(), size=(100, 120), mode="bilinear", antialias=True)[0]
    if torch.equal(want, through_float.round().clamp(0, 255).to(torch.uint8)):
        assert (got.permute(2, 0, 1).int() - want.int()).abs().max() <= 1
    else:
        assert torch.equal(got.permute(2, 0, 1), want)


def test_hflip_mirrors_the_image_into_out() -> None:
    image = torch.from_numpy(np.random.default_rng(2).integers(0, 256, (224, 160, 3), dtype=np.uint8))
    want = torch.from_numpy(image.numpy()[:, ::-1].copy())
    assert torch.equal(hflip_hwc(image), want)
    out = np.zeros((224, 160, 3), dtype=np.uint8)
    got = hflip_hwc(image, out=out)
    assert np.shares_memory(got.numpy(), out) and np.array_equal(out, want.numpy())


def test_decode_train_flip_is_the_mirror_of_no_flip() -> None:
    raw = RawSample(data=_jpeg(320, 240), label=0, key="00000000", shard=Path("x.tar"))
    box = Box(top=10, left=20, height=180, width=250)
    plain = decode_train(raw, box, 240, 320, 112, flip=False)
    mirrored = decode_train(raw, box, 240, 320, 112, flip=True)
    assert plain.shape == (112, 112, 3)
    assert torch.equal(mirrored, plain.flip(1))


PHOTOS = Path(__file__).parent / "data" / "photos"


def test_dct_scaled_train_decode_matches_a_full_resolution_crop(monkeypatch) -> None:
    """Train decodes at 1/2, 1/4 or 1/8 in the DCT when the crop keeps the output resolution: the result is
    the full-resolution crop and resize within a few levels (a wrong factor or box would blur or shift it)."""
    import simplejpeg

    from fastdata.images.geometry import dct_factor

    shapes = []
    decode = simplejpeg.decode_jpeg

    def recording(*args, **kwargs):
        image = decode(*args, **kwargs)
        shapes.append(image.shape)
        return image

    monkeypatch.setattr(simplejpeg, "decode_jpeg", recording)
    for name, box, size, factor in [("aloeL.jpg", Box(100, 200, 480, 480), 112, 4),
                                    ("aloeL.jpg", Box(0, 0, 1110, 1282), 224, 4),
                                    ("building.jpg", Box(100, 100, 460, 460), 224, 2),
                                    ("building.jpg", Box(33, 71, 301, 333), 64, 4)]:
        data = (PHOTOS / name).read_bytes()
        full = np.array(Image.open(PHOTOS / name).convert("RGB"))
        height, width = full.shape[:2]
        assert dct_factor(box.height, box.width, size) == factor
        raw = RawSample(data=data, label=0, key="k", shard=Path("x.tar"))
        got = decode_train(raw, box, height, width, size, flip=False).numpy().astype(int)
        assert shapes[-1][:2] == (-(-height // factor), -(-width // factor))  # decoded at 1/factor, not in full
        crop = full[box.top:box.top + box.height, box.left:box.left + box.width]
        want = resize_hwc(crop, size, size).numpy().astype(int)
        diff = np.abs(got - want)
        assert diff.mean() < 5.5 and np.percentile(diff, 99) < 45, (name, box, diff.mean())


def test_a_non_jpeg_header_is_read_by_pillow_and_its_errors_name_the_sample() -> None:
    buf = io.BytesIO()
    Image.new("RGB", (30, 20), (1, 2, 3)).save(buf, "PNG")
    raw = RawSample(buf.getvalue(), 0, "k7", Path("s-000001.tar"))
    assert check_header(raw, 600) == (20, 30)  # (height, width); exactly max_pixels is allowed
    with pytest.raises(ShardError, match=r"^image too large in s-000001.tar, key k7: 30x20 pixels is more than "
                                         r"max_pixels=599 \(decompression bomb guard"):
        check_header(raw, 599)
    broken = RawSample(buf.getvalue()[:8] + b"not a PNG chunk", 0, "k8", Path("s-000002.tar"))
    with pytest.raises(ShardError) as err:
        check_header(broken, 600)
    cause = err.value.__cause__  # Pillow's own error, kept as the cause and named in the message
    assert cause is not None and str(err.value).startswith(
        f"undecodable image in s-000002.tar, key k8: {type(cause).__name__}: {cause}")


def test_host_rgb_hands_dali_the_kornia_pixels_of_a_non_jpeg_and_leaves_a_jpeg_alone() -> None:
    jpeg = RawSample((PHOTOS / "building.jpg").read_bytes(), 3, "j", Path("s.tar"), index=5)
    assert host_rgb(jpeg) is jpeg
    rgba = np.zeros((6, 5, 4), np.uint8)
    rgba[..., :3] = (200, 30, 30)
    rgba[:, 2:, 3] = 255  # columns 0-1 transparent, the rest opaque red
    png = encoded_image(Image.fromarray(rgba, "RGBA"), "PNG")
    raw = RawSample(png, 3, "k", Path("s.tar"), extra=(b"cap",), index=5)
    out = host_rgb(raw)
    assert bytes(out.data[:2]) == b"P6"  # a binary PPM, which DALI's decoders read as is
    with Image.open(io.BytesIO(out.data)) as im:
        got = np.array(im)
    want = np.zeros((6, 5, 3), np.uint8)
    want[:, :2] = 255
    want[:, 2:] = (200, 30, 30)
    np.testing.assert_array_equal(got, want)
    assert (out.label, out.key, out.shard, out.extra, out.index) == (3, "k", Path("s.tar"), (b"cap",), 5)
    broken = RawSample(png[:-30], 0, "k9", Path("s-000003.tar"))
    with pytest.raises(ShardError, match=r"^undecodable image in s-000003.tar, key k9: "):
        host_rgb(broken)


@pytest.mark.parametrize(("mode", "key", "as_is"), [("RGB", None, True), ("L", None, True), ("P", None, True),
                                                    ("1", None, True), ("P", 0, False), ("L", 0, False),
                                                    ("RGB", (0, 0, 0), False), ("I;16", None, False)])
def test_host_rgb_passes_on_only_the_modes_dali_reads_as_kornia_does(mode: str, key: object, as_is: bool) -> None:
    png = encoded_image(Image.new(mode, (4, 3)), "PNG", **({} if key is None else {"transparency": key}))
    raw = RawSample(png, 0, "k", Path("s.tar"))
    out = host_rgb(raw)
    assert (out is raw) == as_is
    if not as_is:
        with Image.open(io.BytesIO(out.data)) as im:
            assert (im.format, im.mode, im.size) == ("PPM", "RGB", (4, 3))


def test_a_non_jpeg_whose_pixels_fail_names_the_sample_and_pillows_error_on_both_paths() -> None:
    rgba = np.zeros((20, 30, 4), np.uint8)
    rgba[..., 3] = np.arange(30, dtype=np.uint8)  # not opaque: host_rgb decodes it
    png = encoded_image(Image.fromarray(rgba, "RGBA"), "PNG")
    raw = RawSample(png[:-30], 0, "k4", Path("s-000004.tar"))  # the header reads, the pixels do not
    assert check_header(raw, 600) == (20, 30)
    for decode in (lambda: decode_eval(raw, resize_short=24, size=16), lambda: host_rgb(raw)):
        with pytest.raises(ShardError) as err:
            decode()
        cause = err.value.__cause__
        assert cause is not None
        assert str(err.value) == f"undecodable image in s-000004.tar, key k4: {type(cause).__name__}: {cause}"
