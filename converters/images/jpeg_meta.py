"""Remove metadata from a JPEG without touching its image data: EXIF (GPS position, camera serial numbers,
owner, time), XMP, IPTC/Photoshop, multi-picture thumbnails and comments go; the colour profile (ICC) and
the segments that decide how pixels decode (JFIF, Adobe colour transform, tables, frame) stay. The entropy
coded data after the start of scan is copied byte for byte, so the pixels do not change at all.
"""

from __future__ import annotations

SOI, SOS, EOI = 0xD8, 0xDA, 0xD9
APP1, APP2, APP13, COM = 0xE1, 0xE2, 0xED, 0xFE
STANDALONE = {0x01, *range(0xD0, 0xD8)}  # markers without a length (TEM, RSTn)


class NotAJpeg(ValueError):
    pass


def _dropped(marker: int, body: bytes) -> bool:
    if marker in (APP1, APP13, COM):  # EXIF / XMP, IPTC / Photoshop, comments
        return True
    if marker == APP2:  # keep the ICC profile, drop FlashPix and MPF (multi-picture thumbnails)
        return not body.startswith(b"ICC_PROFILE\x00")
    return 0xE3 <= marker <= 0xEF and marker != 0xEE  # other APPn (maker data), but APP14 "Adobe" decides colours


def strip_metadata(data: bytes) -> tuple[bytes, list[str]]:
    """(the JPEG without metadata segments, the names of what was removed)."""
    if data[:2] != b"\xff\xd8":
        raise NotAJpeg("no JPEG start-of-image marker")
    out = bytearray(data[:2])
    removed: list[str] = []
    i = 2
    while i < len(data):
        if data[i] != 0xFF:
            raise NotAJpeg(f"expected a marker at byte {i}")
        while i < len(data) and data[i] == 0xFF:  # fill bytes before a marker
            i += 1
        if i >= len(data):
            break
        marker = data[i]
        i += 1
        if marker in STANDALONE:
            out += bytes((0xFF, marker))
            continue
        if marker == EOI:
            out += bytes((0xFF, marker))
            return bytes(out), removed
        if i + 2 > len(data):
            raise NotAJpeg("a segment length runs past the end of the file")
        length = int.from_bytes(data[i:i + 2], "big")
        if length < 2 or i + length > len(data):
            raise NotAJpeg(f"segment 0xFF{marker:02X} has a bad length {length}")
        body = data[i + 2:i + length]
        if marker == SOS:  # the scan and everything after it are copied unchanged
            out += bytes((0xFF, marker)) + data[i:]
            return bytes(out), removed
        if _dropped(marker, body):
            removed.append(_name(marker, body))
        else:
            out += bytes((0xFF, marker)) + data[i:i + length]
        i += length
    return bytes(out), removed


def _name(marker: int, body: bytes) -> str:
    if marker == APP1:
        return "XMP" if body.startswith(b"http://ns.adobe.com/") else "EXIF"
    return {APP13: "IPTC", COM: "comment", APP2: "APP2"}.get(marker, f"APP{marker - 0xE0}")
