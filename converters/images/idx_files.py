"""MNIST and the datasets written as it is (Fashion-MNIST, KMNIST, EMNIST, QMNIST), in the IDX files torchvision's
`MNIST`, `FashionMNIST`, `KMNIST`, `EMNIST` and `QMNIST` download into `raw/`: `train-images-idx3-ubyte` beside
`train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte` beside `t10k-labels-idx1-ubyte`, each also as `.gz`; QMNIST's
`qmnist-train-images-idx3-ubyte` beside `qmnist-train-labels-idx2-int`, and NIST's digits as `xnist-*` (`.xz`).

- An IDX file is two zero bytes, a type byte (0x08: unsigned bytes; 0x0C: big-endian 32-bit integers, QMNIST's
  labels), the number of dimensions, each dimension as a big-endian 32-bit count, then the values. Images are
  N x rows x columns of bytes, labels N bytes, or QMNIST's N x 8 integers: the class, then where NIST has the digit
  (its series, writer, ...); torchvision's target is the class.
- An images file is read with the labels file of the same name; a file cut short keeps its whole images, and the
  rest is recorded. EMNIST stores each image transposed (`emnist-*`): it is turned back, as torchvision does.
- Where a file and its `.gz` or `.xz` copy are both there (torchvision keeps the archive beside what it unpacked),
  the unpacked one is read.
"""

from __future__ import annotations

import gzip
import lzma
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from converters.table_files import TableError

NAME = re.compile(r"^(?P<stem>.*)-(?P<what>images|labels)(?P<sep>[-.])idx(?P<ndim>[123])-(?P<type>ubyte|int)"
                  r"(?P<packed>\.gz|\.xz)?$", re.IGNORECASE)  # `.idx3`: Kaggle's copy of MNIST
UBYTE, INT = 0x08, 0x0C  # the type bytes of the files read: unsigned bytes, big-endian 32-bit integers
KINDS = {("images", "3", "ubyte"), ("labels", "1", "ubyte"), ("labels", "2", "int")}  # what a name may say
LABELS = (("1", "ubyte"), ("2", "int"))  # the labels files an images file may have: MNIST's, QMNIST's
PACKED = ("", ".gz", ".xz")  # unpacked first: where both are there, it is read
XZ = b"\xfd7zXZ\x00"
MAX_SIDE = 4096  # rows or columns of one image
MAX_COLUMNS = 64  # integers a label (QMNIST: 8)
MAX_BYTES = 1 << 31  # bytes of one file's values (EMNIST's largest: 547 MB)


@dataclass(frozen=True)
class Idx:
    """An IDX file's name read: its stem (`train`, `t10k`, `emnist-balanced-train`, `qmnist-test`), whether it holds
    images, how it is packed (`""`, `.gz`, `.xz`)."""

    stem: str
    images: bool
    packed: str
    sep: str = "-"  # between `images` and `idx3`
    ints: bool = False  # labels of 32-bit integers, several a label (QMNIST's)

    def partner(self, path: Path) -> list[Path]:
        """The paths the other file of the pair may have (MNIST's labels before QMNIST's, unpacked first)."""
        others = ([f"labels{self.sep}idx{n}-{t}" for n, t in LABELS] if self.images
                  else [f"images{self.sep}idx3-ubyte"])
        return [path.with_name(f"{self.stem}-{other}{p}") for other in others for p in PACKED]


def idx_name(name: str) -> Idx | None:
    m = NAME.match(name)
    if m is None or (m["what"].lower(), m["ndim"], m["type"].lower()) not in KINDS:
        return None
    return Idx(m["stem"], m["what"].lower() == "images", (m["packed"] or "").lower(), m["sep"],
               m["type"].lower() == "int")


def read_labels(path: Path, idx: Idx) -> tuple[np.ndarray, int]:
    """(the whole labels of the labels file at `path`, whose name reads as `idx`: the class of each, QMNIST's first
    value; the count its header gives); TableError saying why there are none."""
    if not idx.ints:
        return read_idx(path, 1)
    values, count = read_idx(path, 2, INT)
    return values[:, 0], count


def nist_beside_qmnist(path: Path, idx: Idx) -> bool:
    """Whether the images file at `path` (its name read as `idx`) holds NIST's digits (`xnist-`) beside QMNIST's
    train or test images, which are among them."""
    return idx.stem.lower() == "xnist" and any(
        (n := idx_name(p.name)) is not None and n.images and n.stem.lower().startswith("qmnist-")
        for p in path.parent.iterdir())


def read_idx(path: Path, ndim: int, kind: int = UBYTE) -> tuple[np.ndarray, int]:
    """(the whole items an IDX file of `ndim` dimensions of `kind` (UBYTE, INT) holds, [n, *item shape], uint8 or
    int32; the count its header gives, which a file cut short has fewer of); TableError saying why it is none."""
    size = 1 if kind == UBYTE else 4
    try:
        with open(path, "rb") as raw:
            magic = raw.read(6)
            raw.seek(0)
            f = (gzip.GzipFile(fileobj=raw) if magic[:2] == b"\x1f\x8b" else
                 lzma.LZMAFile(raw) if magic == XZ else raw)
            head = f.read(4 + 4 * ndim)
            if len(head) < 4 or head[:2] != b"\0\0" or head[2] != kind or head[3] != ndim:
                got = head[:4].hex(" ") or "nothing"
                what = "unsigned bytes" if kind == UBYTE else "32-bit integers"
                raise TableError(f"not an IDX file of {ndim}-dimensional {what}: it starts {got}, not "
                                 f"00 00 {kind:02x} 0{ndim}")
            if len(head) < 4 + 4 * ndim:
                raise TableError("the file is cut short inside its header")
            dims = struct.unpack(f">{ndim}I", head[4:])
            if ndim == 3 and not (0 < dims[1] <= MAX_SIDE and 0 < dims[2] <= MAX_SIDE):
                raise TableError(f"images of {dims[1]} x {dims[2]} pixels: not what an IDX dataset holds")
            if ndim == 2 and not 0 < dims[1] <= MAX_COLUMNS:
                raise TableError(f"labels of {dims[1]} values each: not what an IDX dataset holds")
            item = size * (dims[1] * dims[2] if ndim == 3 else dims[1] if ndim == 2 else 1)
            if dims[0] * item > MAX_BYTES:
                raise TableError(f"its header gives {dims[0]} items of {item} bytes, more than {MAX_BYTES} bytes")
            data = f.read(dims[0] * item)
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise TableError(f"unreadable: {type(exc).__name__}: {exc}") from exc
    n = len(data) // item
    values = np.frombuffer(data, np.uint8 if kind == UBYTE else ">i4", count=n * item // size)
    return values.reshape(n, *dims[1:]).astype(np.uint8 if kind == UBYTE else np.int32, copy=False), dims[0]
