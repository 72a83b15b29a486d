"""fastdata/images/pixels.py, value by value: every Pillow mode to 8-bit RGB by what the mode means (transparency
over white, 16-bit and I scaled from 0..65535, F read as 0..1, LAB through an ICC transform), the format
signatures, the lazily opened image, and the strict decode check's answers."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from conftest_adopt import encoded
from PIL import Image

from fastdata.images.pixels import decode_problem, open_image, other_format, to_rgb


def _rgb(im: Image.Image) -> list[tuple[int, int, int]]:
    out = to_rgb(im)
    assert out.mode == "RGB" and out.size == im.size
    return [tuple(int(v) for v in px) for px in np.asarray(out).reshape(-1, 3)]


def test_rgb_is_returned_as_it_is() -> None:
    im = Image.new("RGB", (2, 1), (1, 2, 3))
    assert to_rgb(im) is im


def test_transparency_is_composited_over_white() -> None:
    rgba = Image.new("RGBA", (3, 1))
    rgba.putdata([(10, 20, 30, 0), (10, 20, 30, 255), (0, 0, 0, 128)])
    got = _rgb(rgba)
    assert got[:2] == [(255, 255, 255), (10, 20, 30)]
    assert all(abs(v - 127) <= 1 for v in got[2])  # half of white over black
    la = Image.new("LA", (2, 1))
    la.putdata([(40, 0), (40, 255)])
    assert _rgb(la) == [(255, 255, 255), (40, 40, 40)]
    assert _rgb(rgba.convert("RGBa"))[:2] == [(255, 255, 255), (10, 20, 30)]
    assert _rgb(la.convert("La")) == [(255, 255, 255), (40, 40, 40)]  # premultiplied: failed before
    pa = Image.new("PA", (2, 1))
    pa.putpalette([200, 100, 50] * 256)
    pa.putdata([(0, 0), (0, 255)])
    assert _rgb(pa) == [(255, 255, 255), (200, 100, 50)]


def test_a_palette_image_with_a_transparent_index() -> None:
    p = Image.new("P", (2, 1))
    p.putpalette([0, 0, 0, 200, 100, 50] + [0, 0, 0] * 254)
    p.putdata([0, 1])
    plain = _rgb(p)
    p.info["transparency"] = 0
    assert plain == [(0, 0, 0), (200, 100, 50)]
    assert _rgb(p) == [(255, 255, 255), (200, 100, 50)]  # index 0 is see-through: white


@pytest.mark.parametrize(("mode", "key", "pixels"), [("RGB", (10, 20, 30), [(10, 20, 30), (200, 100, 50)]),
                                                    ("L", 77, [77, 120])])
def test_a_png_colour_key_is_transparent(mode: str, key: object, pixels: list) -> None:
    im = Image.new(mode, (2, 1))
    im.putdata(pixels)
    buf = io.BytesIO()
    im.save(buf, "PNG", transparency=key)
    keyed = open_image(buf.getvalue())
    assert keyed.mode == mode and keyed.info["transparency"] == key
    second = (200, 100, 50) if mode == "RGB" else (120, 120, 120)
    assert _rgb(keyed) == [(255, 255, 255), second]  # opaque before: the key's own colour
    assert _rgb(im) == [(10, 20, 30) if mode == "RGB" else (77, 77, 77), second]  # no key: nothing transparent


@pytest.mark.parametrize("mode", ["I;16", "I;16B", "I"])
def test_16_bit_and_i_images_are_scaled_from_0_to_65535(mode: str) -> None:
    values = [0, 257, 32768, 49152, 51529, 65535]  # 191.25 and 200.502 tell 255/65535 from 256/65535 or /65536
    if mode == "I":
        im = Image.fromarray(np.array([values], dtype=np.int32), "I")
    else:
        im = Image.frombytes(mode, (6, 1), np.array(values, dtype="<u2" if mode == "I;16" else ">u2").tobytes())
    assert im.mode == mode
    assert _rgb(im) == [(v, v, v) for v in (0, 1, 128, 191, 201, 255)]


def test_i_values_outside_16_bits_are_clipped() -> None:
    im = Image.fromarray(np.array([[-5, 70000]], dtype=np.int32), "I")
    assert _rgb(im) == [(0, 0, 0), (255, 255, 255)]


def test_float_images_are_read_as_0_to_1() -> None:
    im = Image.fromarray(np.array([[0.0, 0.5, 0.75, 1.0, 1.5, -1.0, np.nan]], dtype=np.float32), "F")
    assert _rgb(im) == [(v, v, v) for v in (0, 128, 191, 255, 255, 0, 0)]


def test_lab_goes_through_an_icc_transform() -> None:
    lab = Image.new("LAB", (3, 1))
    lab.putdata([(0, 128, 128), (255, 128, 128), (136, 208, 195)])  # black, white, a saturated red
    black, white, red = _rgb(lab)
    assert max(black) <= 2 and min(white) >= 253
    assert red[0] > 200 and red[1] < 80 and red[2] < 80


@pytest.mark.parametrize(("mode", "pixel", "rgb"), [("L", 77, (77, 77, 77)), ("1", 0, (0, 0, 0)),
                                                    ("1", 255, (255, 255, 255)), ("CMYK", (0, 0, 0, 0), (255,) * 3),
                                                    ("CMYK", (0, 255, 255, 0), (255, 0, 0))])
def test_other_modes_use_pillows_conversion(mode: str, pixel: object, rgb: tuple) -> None:
    assert _rgb(Image.new(mode, (1, 1), pixel)) == [rgb]


@pytest.mark.parametrize(("head", "name"), [
    (b"\x89PNG\r\n\x1a\n" + b"\0" * 8, "png"), (b"GIF87a", "gif"), (b"GIF89a" + b"\0" * 20, "gif"),
    (b"BM" + b"\0" * 30, "bmp"), (b"II*\x00", "tiff"), (b"MM\x00*" + b"\0" * 4, "tiff"),
    (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "webp"),
    (b"\xff\xd8\xff\xe0", None), (b"RIFF\x10\x00\x00\x00WAVEfmt ", None), (b"RIFF", None), (b"", None),
    (b"\x89PNG", None), (b"GIF8", None), (b"hello world", None),
])
def test_format_signatures(head: bytes, name: str | None) -> None:
    assert other_format(head) == name
    assert other_format(memoryview(head)) == name


def test_open_image_reads_the_header_only_and_keeps_pillows_bomb_warning_quiet(monkeypatch) -> None:
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), (1, 2, 3)).save(buf, "PNG")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # 1200 pixels: Pillow would warn
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        im = open_image(memoryview(buf.getvalue()))
    assert (im.format, im.size, im.mode) == ("PNG", (40, 30), "RGB")
    assert im.getpixel((0, 0)) == (1, 2, 3)


def test_decode_problems() -> None:
    jpeg, png = encoded("JPEG"), encoded("PNG")
    assert decode_problem(jpeg) is None and decode_problem(png) is None
    assert decode_problem(b"") == "empty image member"
    cut = decode_problem(jpeg[: len(jpeg) // 2])
    assert cut is not None and cut.startswith("ValueError: ")  # libjpeg-turbo's warning, strict
    broken_png = decode_problem(png[: len(png) // 2])
    assert broken_png is not None and broken_png.startswith("OSError: ")
    assert decode_problem(b"\xff\xd8 not really") is not None
