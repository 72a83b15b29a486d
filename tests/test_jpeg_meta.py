"""Metadata removal from JPEGs copied byte for byte (converters/images/jpeg_meta.py), segment by segment: what
goes (EXIF, XMP, IPTC, comments, FlashPix and multi-picture APP2, maker APPn), what stays (JFIF, the ICC profile,
Adobe's APP14, tables, frame, scan), every output byte compared, and every malformed structure refused with its
own message."""

from __future__ import annotations

import io

import numpy as np
import pytest
from conftest_adopt import encoded
from PIL import Image

from converters.images.jpeg_meta import NotAJpeg, strip_metadata


def seg(marker: int, body: bytes) -> bytes:
    return bytes((0xFF, marker)) + (len(body) + 2).to_bytes(2, "big") + body


def baseline_jpeg() -> bytes:
    """A small real JPEG: SOI, then its own segments (JFIF, tables, frame), scan, EOI."""
    return encoded("JPEG", size=(24, 16), seed=3, quality=90)


KEPT = [seg(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"),
        seg(0xE2, b"ICC_PROFILE\x00\x01\x01fake-profile"),
        seg(0xEE, b"Adobe\x00\x64\x00\x00\x00\x00\x01")]
DROPPED = [(seg(0xE1, b"Exif\x00\x00MM\x00*GPS"), "EXIF"),
           (seg(0xE1, b"http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta/>"), "XMP"),
           (seg(0xE2, b"FPXR\x00flashpix"), "APP2"),
           (seg(0xE2, b"MPF\x00thumbnails"), "APP2"),
           (seg(0xE3, b"maker"), "APP3"),
           (seg(0xEC, b"Ducky"), "APP12"),
           (seg(0xED, b"Photoshop 3.0\x00IPTC"), "IPTC"),
           (seg(0xEF, b"last"), "APP15"),
           (seg(0xFE, b"shot at home"), "comment")]


def test_every_metadata_segment_goes_and_every_decoding_segment_stays() -> None:
    image = baseline_jpeg()
    body = image[2:]  # the encoder's own segments, scan and EOI
    interleaved = b"".join(k + d for k, (d, _) in zip(KEPT * 3, DROPPED))
    data = b"\xff\xd8" + interleaved + body
    out, removed = strip_metadata(data)
    assert out == b"\xff\xd8" + b"".join(k for k, _ in zip(KEPT * 3, DROPPED)) + body
    assert removed == [name for _, name in DROPPED]
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(out))), np.asarray(Image.open(io.BytesIO(image))))


def test_a_jpeg_without_metadata_comes_back_unchanged() -> None:
    image = baseline_jpeg()
    assert strip_metadata(image) == (image, [])
    # the markers just past the APPn range (JPEG extensions) are not metadata either
    extension = b"\xff\xd8" + seg(0xF0, b"JPG0 extension") + seg(0xDF, b"EXP") + b"\xff\xd9"
    assert strip_metadata(extension) == (extension, [])


def test_the_scan_is_copied_byte_for_byte_whatever_it_holds() -> None:
    scan = seg(0xDA, b"\x01\x01\x00\x00\x3f\x00") + b"\x12\xff\x00\xff\xe1\x00\x04ab\xff\xfe\xff\xd9garbage"
    data = b"\xff\xd8" + seg(0xFE, b"c") + scan
    assert strip_metadata(data) == (b"\xff\xd8" + scan, ["comment"])


def test_fill_bytes_and_standalone_markers_before_the_scan() -> None:
    # fill bytes before a marker are dropped; TEM and RSTn (no length) are kept and the walk goes on after them
    data = b"\xff\xd8" + b"\xff\xff\xff" + seg(0xE1, b"Exif\x00\x00") + b"\xff\x01" + b"\xff\xd3" + \
        seg(0xE0, b"JFIF\x00") + b"\xff\xd9"
    out, removed = strip_metadata(data)
    assert out == b"\xff\xd8" + b"\xff\x01" + b"\xff\xd3" + seg(0xE0, b"JFIF\x00") + b"\xff\xd9"
    assert removed == ["EXIF"]


@pytest.mark.parametrize(("data", "expected"), [
    (b"\xff\xd8", b"\xff\xd8"),  # nothing after the start of image
    (b"\xff\xd8" + seg(0xE0, b""), b"\xff\xd8" + seg(0xE0, b"")),  # a last segment of length 2, ending the file
    (b"\xff\xd8" + seg(0xFE, b"x") + b"\xff\xff", b"\xff\xd8"),  # fill bytes to the end
    (b"\xff\xd8" + seg(0xE0, b"J") + b"\xff\xd9" + seg(0xFE, b"after"), b"\xff\xd8" + seg(0xE0, b"J") + b"\xff\xd9"),
])
def test_where_the_walk_ends(data: bytes, expected: bytes) -> None:
    assert strip_metadata(data)[0] == expected


@pytest.mark.parametrize(("data", "message"), [
    (b"\x89PNG\r\n\x1a\n", "no JPEG start-of-image marker"),
    (b"", "no JPEG start-of-image marker"),
    (b"\xff\xd8" + seg(0xE0, b"J") + b"\x00\xff\xd9", "expected a marker at byte 7"),
    (b"\xff\xd8\xff\xe1", "a segment length runs past the end of the file"),
    (b"\xff\xd8\xff\xe1\x00", "a segment length runs past the end of the file"),
    (b"\xff\xd8\xff\xe1\x00\x01", "segment 0xFFE1 has a bad length 1"),
    (b"\xff\xd8\xff\xfe\x00\x00\xff\xd9", "segment 0xFFFE has a bad length 0"),
    (b"\xff\xd8\xff\xe2\x00\x09ICC", "segment 0xFFE2 has a bad length 9"),
    (b"\xff\xd8\xff\xe2\x00\x06ICC", "segment 0xFFE2 has a bad length 6"),
])
def test_malformed_structures_are_refused_with_their_own_message(data: bytes, message: str) -> None:
    with pytest.raises(NotAJpeg) as caught:
        strip_metadata(data)
    assert str(caught.value) == message
