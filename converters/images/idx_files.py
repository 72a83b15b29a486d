"""MNIST and the datasets written as it is (Fashion-MNIST, KMNIST, EMNIST), in the IDX files torchvision's `MNIST`,
`FashionMNIST`, `KMNIST` and `EMNIST` download into `raw/`: `train-images-idx3-ubyte` beside
`train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte` beside `t10k-labels-idx1-ubyte`, each also as `.gz`.

- An IDX file is two zero bytes, a type byte (0x08: unsigned bytes, the only one these datasets use), the number of
  dimensions, each dimension as a big-endian 32-bit count, then the values. Images are N x rows x columns, labels N.
- An images file is read with the labels file of the same name; a file cut short keeps its whole images, and the
  rest is recorded. EMNIST stores each image transposed (`emnist-*`): it is turned back, as torchvision does.
- Where a file and its `.gz` copy are both there (torchvision keeps the archive beside what it unpacked), the
  unpacked one is read.
"""

from __future__ import annotations

import gzip
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from converters.table_files import TableError

NAME = re.compile(r"^(?P<stem>.*)-(?P<what>images|labels)(?P<sep>[-.])idx(?P<ndim>[13])-ubyte(?P<gz>\.gz)?$",
                  re.IGNORECASE)  # `.idx3`: Kaggle's copy of MNIST
UBYTE = 0x08
MAX_SIDE = 4096  # rows or columns of one image
MAX_BYTES = 1 << 31  # bytes of one file's values (EMNIST's largest: 547 MB)


@dataclass(frozen=True)
class Idx:
    """An IDX file's name read: its stem (`train`, `t10k`, `emnist-balanced-train`), whether it holds images."""

    stem: str
    images: bool
    gz: bool
    sep: str = "-"  # between `images` and `idx3`

    def partner(self, path: Path) -> list[Path]:
        """The paths the other file of the pair may have (unpacked first)."""
        other = f"labels{self.sep}idx1" if self.images else f"images{self.sep}idx3"
        return [path.with_name(f"{self.stem}-{other}-ubyte{gz}") for gz in ("", ".gz")]


def idx_name(name: str) -> Idx | None:
    m = NAME.match(name)
    if m is None or (m["what"].lower() == "images") != (m["ndim"] == "3"):
        return None
    return Idx(m["stem"], m["what"].lower() == "images", bool(m["gz"]), m["sep"])


def read_idx(path: Path, ndim: int) -> tuple[np.ndarray, int]:
    """(the whole items an IDX file of `ndim` dimensions holds, uint8 [n, *item shape]; the count its header gives,
    which a file cut short has fewer of); TableError saying why it is none."""
    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            f = gzip.GzipFile(fileobj=raw) if gz else raw
            head = f.read(4 + 4 * ndim)
            if len(head) < 4 or head[:2] != b"\0\0" or head[2] != UBYTE or head[3] != ndim:
                got = head[:4].hex(" ") or "nothing"
                raise TableError(f"not an IDX file of {ndim}-dimensional unsigned bytes: it starts {got}, not "
                                 f"00 00 08 0{ndim}")
            if len(head) < 4 + 4 * ndim:
                raise TableError("the file is cut short inside its header")
            dims = struct.unpack(f">{ndim}I", head[4:])
            if ndim == 3 and not (0 < dims[1] <= MAX_SIDE and 0 < dims[2] <= MAX_SIDE):
                raise TableError(f"images of {dims[1]} x {dims[2]} pixels: not what an IDX dataset holds")
            item = dims[1] * dims[2] if ndim == 3 else 1
            if dims[0] * item > MAX_BYTES:
                raise TableError(f"its header gives {dims[0]} items of {item} bytes, more than {MAX_BYTES} bytes")
            data = f.read(dims[0] * item)
    except (OSError, EOFError, zlib.error) as exc:
        raise TableError(f"unreadable: {type(exc).__name__}: {exc}") from exc
    n = len(data) // item
    return np.frombuffer(data, np.uint8, count=n * item).reshape(n, *dims[1:]), dims[0]
