"""Seeded input mutations for the fuzz suite (tests/mutation_fuzz.py): bit flips, truncations, chunk
edits and interesting integers for any bytes; header edits that keep a file plausible (JPEG frame size,
PNG IHDR, tar size fields with a valid checksum); numbers written as text made ones that `isdigit()` accepts
and `int()` refuses or reads otherwise (index offsets, labels); and value edits for JSON documents (manifests, states).

Every mutation is a pure function of a `random.Random`, so (seed, case) reproduces it exactly."""

from __future__ import annotations

import copy
import json
import random
import re
import struct
from collections.abc import Callable
from typing import Any

INTERESTING = (0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF)


def flip_bits(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    out = bytearray(data)
    n = rng.randint(1, 8)
    for _ in range(n):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out), f"flip {n} bits"


def set_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    out = bytearray(data)
    i = rng.randrange(len(out))
    n = min(rng.randint(1, 16), len(out) - i)
    value = rng.choice((0x00, 0xFF, 0x7F, 0x80, None))
    out[i:i + n] = bytes(rng.randrange(256) if value is None else value for _ in range(n))
    return bytes(out), f"set {n} bytes at {i}"


def truncate(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    cut = rng.randrange(len(data))
    return data[:cut], f"truncate at {cut} of {len(data)}"


def delete_chunk(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    i = rng.randrange(len(data))
    n = rng.randint(1, max(1, min(4096, len(data) - i)))
    return data[:i] + data[i + n:], f"delete {n} bytes at {i}"


def duplicate_chunk(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    i = rng.randrange(len(data))
    n = rng.randint(1, max(1, min(4096, len(data) - i)))
    j = rng.randrange(len(data))
    return data[:j] + data[i:i + n] + data[j:], f"copy {n} bytes from {i} to {j}"


def interesting_int(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    width, order = rng.choice(((1, ""), (2, "<"), (2, ">"), (4, "<"), (4, ">"), (8, "<")))
    if len(data) < width:
        return flip_bits(rng, data)
    i = rng.randrange(len(data) - width + 1)
    value = rng.choice(INTERESTING) & ((1 << (8 * width)) - 1)
    fmt = {1: "B", 2: "H", 4: "I", 8: "Q"}[width]
    out = bytearray(data)
    out[i:i + width] = struct.pack(f"{order or '<'}{fmt}", value)
    return bytes(out), f"int{8 * width} {value} at {i}"


def jpeg_frame_size(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """The SOF marker's height/width set to an extreme: a header that lies about its data."""
    for marker in (b"\xff\xc0", b"\xff\xc1", b"\xff\xc2"):
        i = data.find(marker)
        if i >= 0 and i + 9 <= len(data):
            h, w = rng.choice((0, 1, 8, 0xFFFF, rng.randrange(1, 0x10000))), rng.choice((0, 1, 0xFFFF, 30000))
            out = bytearray(data)
            out[i + 5:i + 9] = struct.pack(">HH", h, w)
            return bytes(out), f"JPEG frame {w}x{h}"
    return set_bytes(rng, data)


def png_header_size(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """IHDR width/height set to an extreme, its CRC recomputed so the header is well formed."""
    import zlib

    i = data.find(b"IHDR")
    if i < 0 or i + 21 > len(data):
        return set_bytes(rng, data)
    w, h = rng.choice((0, 1, 1 << 16, 1 << 30)), rng.choice((1, 50000, 1 << 20))
    out = bytearray(data)
    out[i + 4:i + 12] = struct.pack(">II", w, h)
    out[i + 17:i + 21] = struct.pack(">I", zlib.crc32(bytes(out[i:i + 17])))
    return bytes(out), f"PNG IHDR {w}x{h}"


def tar_size_field(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """A member header's size field set to a lie (0, 1 TiB, past the end), its checksum made valid."""
    headers = [o for o in range(0, len(data) - 512, 512) if data[o + 257:o + 262] == b"ustar"]
    if not headers:
        return set_bytes(rng, data)
    o = rng.choice(headers)
    field = data[o + 124:o + 135].strip(b"\0 ")
    claimed = int(field, 8) if field and set(field) <= set(b"01234567") else 0  # an earlier step may have mangled it
    size = rng.choice((0, 1, 511, 1 << 40, len(data) * 2, claimed + 1))
    out = bytearray(data)
    out[o + 124:o + 136] = f"{size:011o}".encode()[-11:] + b"\0"
    out[o + 148:o + 156] = b"        "
    out[o + 148:o + 156] = f"{sum(out[o:o + 512]):06o}\0 ".encode()
    return bytes(out), f"tar member at {o} claims {size} bytes"


def tfrecord_payload(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """A TFRecord record's bytes mutated (or its length changed), its frame's length and CRCs made valid again, so
    that the mutation reaches the Example parser rather than the CRC check."""
    from converters.images.tfrecords import CRC, FRAME, masked_crc

    frames, pos = [], 0
    while pos + FRAME.size <= len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        if pos + FRAME.size + length + CRC.size > len(data):
            break
        if length:  # (an empty record, which an earlier mutation may have made, has no byte to mutate)
            frames.append((pos, length))
        pos += FRAME.size + length + CRC.size
    if not frames:
        return set_bytes(rng, data)
    at, length = rng.choice(frames)
    record, what = rng.choice(BYTES_MUTATORS)(rng, data[at + FRAME.size:at + FRAME.size + length])
    head = struct.pack("<Q", len(record))
    framed = head + CRC.pack(masked_crc(head)) + record + CRC.pack(masked_crc(record))
    return data[:at] + framed + data[at + FRAME.size + length + CRC.size:], f"TFRecord record at {at}: {what}"


def tar_name_byte(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """A byte of a member header's name made a byte that is not UTF-8 alone (0x80-0xff: a Latin-1 name from an old
    tool), or a control character, its checksum made valid."""
    headers = [o for o in range(0, len(data) - 512, 512) if data[o + 257:o + 262] == b"ustar"]
    if not headers:
        return set_bytes(rng, data)
    o = rng.choice(headers)
    length = data[o:o + 100].find(b"\0") % 101 or 100
    i = o + rng.randrange(length)
    value = rng.choice((0xE9, 0xFF, 0x80, 0xC3, 0x1B, 0x0A, 0x7F))
    out = bytearray(data)
    out[i] = value
    out[o + 148:o + 156] = b"        "
    out[o + 148:o + 156] = f"{sum(out[o:o + 512]):06o}\0 ".encode()
    return bytes(out), f"tar member name at {o}: byte {i - o} -> {value:#04x}"


_DICOM_SHORT = re.compile(rb"[\x00-\xff]{4}(?:AE|AS|AT|CS|DA|DS|DT|FL|FD|IS|LO|LT|PN|SH|SL|SS|ST|TM|UI|UL|US)"
                          rb"[\x00-\xff]{2}", re.DOTALL)


def dicom_length(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """An explicit-VR element's 2-byte length made longer or shorter by an even amount: its value runs on over the
    elements after it (a patient's name among them), or stops inside its own."""
    heads = [m.start() for m in _DICOM_SHORT.finditer(data, 132)]
    if not heads:
        return set_bytes(rng, data)
    at = rng.choice(heads)
    old = int.from_bytes(data[at + 6:at + 8], "little")
    new = max(0, min(0xFFFE, old + 2 * rng.choice((-4, -1, 1, 2, 4, 8, 16, 32, 64))))
    return data[:at + 6] + new.to_bytes(2, "little") + data[at + 8:], f"DICOM element at {at}: length {old} -> {new}"


# NIfTI-1 header fields that decide how the voxels are read and placed: (offset, struct format, name)
NIFTI_FIELDS = ((40, "<h", "dim[0]"), (42, "<h", "dim[1]"), (46, "<h", "dim[3]"), (48, "<h", "dim[4]"),
                (70, "<h", "datatype"), (72, "<h", "bitpix"), (80, "<f", "pixdim[1]"), (88, "<f", "pixdim[3]"),
                (108, "<f", "vox_offset"), (112, "<f", "scl_slope"), (116, "<f", "scl_inter"),
                (252, "<h", "qform_code"), (254, "<h", "sform_code"), (280, "<f", "srow_x[0]"),
                (292, "<f", "srow_x[3]"), (300, "<f", "srow_y[1]"), (316, "<f", "srow_z[2]"), (123, "<B", "xyzt_units"))
NIFTI_VALUES = {"<h": (0, -1, 1, 2, 5, 7, 8, 16, 4096, 32767, -32768), "<B": (0, 1, 3, 255),
                "<f": (0.0, -1.0, 1e-30, 1e30, float("nan"), float("inf"), -float("inf"), 352.0, 0.5)}


def nifti_field(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """One field of an uncompressed NIfTI-1 header (dimensions, data type, spacing, data offset, scaling, the
    affine, units) set to an extreme or a plausible wrong value."""
    if len(data) < 348:
        return set_bytes(rng, data)
    at, fmt, name = rng.choice(NIFTI_FIELDS)
    value = rng.choice(NIFTI_VALUES[fmt])
    return data[:at] + struct.pack(fmt, value) + data[at + struct.calcsize(fmt):], f"NIfTI {name} = {value}"


METAIMAGE_VALUES = (b"0", b"-1", b"nan", b"inf", b"1e308", b"", b"1 2", b"100000 100000 100000", b"0 0 0",
                    b"LOCAL", b"/dev/zero", b"../secret.raw", b"Doe_John.raw", b"LIST", b"s%03d.raw 1 3 1",
                    b"MET_DOUBLE", b"MET_UCHAR_ARRAY", b"MET_OTHER", b"True", b"4", b"2", b"1 0 0 0 0 0 0 0 1",
                    b"\xff\xfe")


def metaimage_field(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """The value of one `Key = value` line of a MetaImage header (NDims, DimSize, ElementSpacing, ElementType,
    TransformMatrix, CompressedData, ElementDataFile, ...) set to an extreme, a wrong type, or a path outside."""
    lines = [m.span(1) for m in re.finditer(rb"^[A-Za-z]+ = ([^\n]*)$", data[:4096], re.MULTILINE)]
    if not lines:
        return set_bytes(rng, data)
    a, b = rng.choice(lines)
    value = rng.choice(METAIMAGE_VALUES)
    key = data[:a].rsplit(b"\n", 1)[-1][:-3].decode()
    return data[:a] + value + data[b:], f"MetaImage {key} = {value!r}"


NRRD_VALUES = (b"0", b"-1", b"nan", b"inf", b"1e308", b"", b"4 3", b"100000 100000 100000", b"0 0 0", b"2", b"4",
               b"double", b"block", b"uchar", b"gzip", b"bzip2", b"ascii", b"hex", b"big", b"(nan,0,0) (0,1,0) (0,0,1)",
               b"(1,0,0) (1,0,0) (0,0,1)", b"right-anterior-superior", b"scanner-xyz", b"3D-right-handed-time",
               b"/dev/zero", b"../secret.raw", b"Doe_John.raw", b"LIST", b"s%03d.raw 1 3 1", b"list domain domain",
               b"\xff\xfe")
NRRD_FIELDS = (b"data file: ", b"DATAFILE: ", b"byte skip: ", b"line skip: ", b"encoding: ")


def nrrd_field(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """The value of one `field: value` line of a NRRD header (dimension, sizes, type, encoding, space, space
    directions, data file, ...) set to an extreme, a wrong type or a path outside; or a field added before the
    header's end (a `data file` in an attached header, a byte skip)."""
    end = data.find(b"\n\n")
    head = data[:end + 1 if end >= 0 else 4096]
    lines = [m.span(1) for m in re.finditer(rb"^[a-z ]+: ([^\n]*)$", head, re.MULTILINE)]
    if not lines:
        return set_bytes(rng, data)
    value = rng.choice(NRRD_VALUES)
    if rng.random() < 0.25:
        at = lines[-1][1] + 1
        field = rng.choice(NRRD_FIELDS)
        return data[:at] + field + value + b"\n" + data[at:], f"NRRD {field.decode()}{value!r} added"
    a, b = rng.choice(lines)
    key = data[:a].rsplit(b"\n", 1)[-1][:-2].decode()
    return data[:a] + value + data[b:], f"NRRD {key}: {value!r}"


SIGNS = (b"--", b"-", b"+")
NUMBER_FORMS = ("²".encode(), "１２".encode(), b"9" * 5000, b"1_0", b"0x1", *SIGNS)


def text_number(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """A run of ASCII digits replaced by a forged number: a superscript or fullwidth digit (UTF-8), 5000
    digits, a doubled or lone sign, an underscore, a hex literal; in place (same length) when it fits."""
    runs = [m.span() for m in re.finditer(rb"[0-9]+", data)]
    if not runs:
        return set_bytes(rng, data)
    a, b = rng.choice(runs)
    form = rng.choice(NUMBER_FORMS)
    if len(form) <= b - a and rng.random() < 0.5:  # in place: a tar member keeps its size
        new = form + data[a + len(form):b]
    else:
        new = form + data[a:b] if form in SIGNS else form
    return data[:a] + new + data[b:], f"number at {a} written as {new[:12]!r}"


BYTES_MUTATORS: tuple[Callable[[random.Random, bytes], tuple[bytes, str]], ...] = (
    flip_bits, set_bytes, truncate, delete_chunk, duplicate_chunk, interesting_int)


def mutate_bytes(rng: random.Random, data: bytes, extra: tuple[Callable, ...] = ()) -> tuple[bytes, str]:
    """One to three mutations of `data`, from the generic ones and the format's own `extra` ones."""
    steps = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if not data:
            break
        data, what = rng.choice(BYTES_MUTATORS + extra * 2)(rng, data)
        steps.append(what)
    return data, "; ".join(steps)


# -- JSON documents ------------------------------------------------------------------------------------

HUGE = 10**5000  # past int()'s 4,300-digit limit: written out by `dumps` as 5000 nines
ODD_VALUES: tuple[Any, ...] = (None, True, -1, 0, 10**18, -(10**18), 1.5, float("nan"), float("inf"), "", "x" * 5000,
                                "../../etc/passwd", "/dev/zero", [], {}, [None], {"": None}, "5", "\x1b[2J", HUGE)


class Nested:
    """A value wrapped in `depth` lists, written out by `dumps` without recursion (5000 levels deep)."""

    def __init__(self, value: Any, depth: int) -> None:
        self.value, self.depth = value, depth


def dumps(doc: Any) -> str:
    """JSON text of a mutated document (NaN and Infinity written as Python's json writes them)."""
    if isinstance(doc, Nested):
        return "[" * doc.depth + dumps(doc.value) + "]" * doc.depth
    if isinstance(doc, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {dumps(v)}" for k, v in doc.items()) + "}"
    if isinstance(doc, list):
        return "[" + ", ".join(dumps(v) for v in doc) + "]"
    if doc is HUGE:
        return "9" * 5000
    return json.dumps(doc)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def mutate_json(rng: random.Random, doc: Any) -> tuple[Any, str]:
    """A deep copy of `doc` with one to three edits: a value replaced by an odd one, a key removed,
    a list item duplicated, or a value nested deeply (write it with `dumps`)."""
    doc = json.loads(json.dumps(doc))
    steps = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = rng.choice(paths)
        parent, key = _get(doc, path[:-1]), path[-1]
        action = rng.choice(("value", "value", "value", "delete", "duplicate", "nest"))
        if action == "delete":
            del parent[key]
        elif action == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif action == "nest":
            parent[key] = Nested(parent[key], rng.choice((2, 50, 5000)))
        else:  # a fresh copy of an odd list or dict: an edit inside it must not change ODD_VALUES for later cases
            odd = rng.choice(ODD_VALUES)
            parent[key] = copy.deepcopy(odd) if isinstance(odd, list | dict) else odd
        steps.append(f"{action} at {'/'.join(map(str, path))}")
    return doc, "; ".join(steps)
