"""PatchCamelyon (PCam) as torchvision's `PCAM` downloads it (`pcam/`): for each split, its images in
`camelyonpatch_level_2_split_{train,valid,test}_x.h5` and its labels in the `_y.h5` beside them, HDF5 files read
with h5py as torchvision reads them; the `_meta.csv` files of Zenodo's copy, and `_mask.h5` tumour masks, may lie
beside (not converted).

- An `_x.h5` file holds `x`, uint8 [N, 96, 96, 3]; its `_y.h5` holds `y`, [N, 1, 1, 1]: 1 when the patch's centre
  (32 x 32 pixels) holds tumour tissue, else 0. The classes are `0` and `1`, torchvision's targets. Any such pair of
  another name and side (up to 4,096, 1 or 3 channels, or [N, rows, columns] grey) is read the same way; an `_x.h5`
  without its `_y.h5` converts with `--unlabeled`.
- Splits: a file's name gives its split (`valid`: val); a name with none goes to `--split`.
- torchvision unpacks the downloaded `.h5.gz` and keeps it: a `.gz` beside its unpacked file is skipped. Alone, it is
  rejected, saying to unpack it (HDF5 is read in place, which a gzip stream does not allow).
- Nothing outside the file is read: a file linking elsewhere is refused (converters/hdf5_files.py). A dataset
  whose pixels are more than MAX_RATIO times the bytes the file stores for them (unwritten or extremely compressed
  chunks: a small file that would convert for hours) is refused, and so is one of more than MAX_IMAGES images.
- Images are read a block at a time; where a block cannot be read (a damaged chunk), its images are read one by
  one, and each that cannot is rejected, naming why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from converters import hdf5_files
from converters.images.pixel_arrays import layout_problem
from converters.table_files import TableError
from fastdata.errors import MissingDependencyError, require

NAME = re.compile(r"^(?P<stem>.+)_(?P<what>[xy])\.h5(?P<gz>\.gz)?$")
COMPANION = re.compile(r"^(?P<stem>.+)_(meta\.csv|mask\.h5(\.gz)?)$")  # patch coordinates, tumour masks
MAX_OBJECTS = 64  # links walked in a file (PCam's hold one dataset each)
MAX_RATIO = 1000  # a dataset's bytes of pixels for each byte the file stores for them
MAX_IMAGES = 1 << 24  # images of one file (PCam's train split: 262,144); each has a label in memory
BLOCK_BYTES = 64 << 20  # bytes of pixels read at a time


@dataclass(frozen=True)
class PcamName:
    stem: str  # `camelyonpatch_level_2_split_train`
    images: bool  # `_x` (images) or `_y` (labels)
    gz: bool  # a `.h5.gz` download

    def partner(self, path: Path) -> Path:
        """The unpacked file of the other half of the pair."""
        return path.with_name(f"{self.stem}_{'y' if self.images else 'x'}.h5")

    def unpacked(self, path: Path) -> Path:
        return path.with_name(path.name[:-3]) if self.gz else path


def pcam_name(name: str) -> PcamName | None:
    m = NAME.match(name)
    return None if m is None else PcamName(m["stem"], m["what"] == "x", m["gz"] is not None)


def is_images_file(path: Path) -> bool:
    """Whether `path` is named as PCam's images are and is an HDF5 file (or a `.gz` download of one)."""
    name = pcam_name(path.name)
    return name is not None and name.images and (name.gz or hdf5_files.is_hdf5(str(path)))


def images_beside(path: Path, stem: str) -> bool:
    """Whether the images file `{stem}_x.h5` lies beside `path`, unpacked or as its `.gz` download."""
    return any(path.with_name(f"{stem}_x.h5{gz}").is_file() for gz in ("", ".gz"))


def is_companion(path: Path) -> bool:
    """Whether `path` is a PCam `_meta.csv` (patch coordinates and slide names) or `_mask.h5` (tumour masks) beside
    its split's images: read with them, not converted."""
    m = COMPANION.match(path.name)
    return m is not None and images_beside(path, m["stem"])


def _h5py() -> Any:
    try:
        return require("h5py", "hdf5")
    except MissingDependencyError as exc:
        raise TableError(f"an HDF5 file, which is read with h5py: {exc}") from exc


def _why(exc: BaseException) -> str:
    """An h5py error as a reason quotes it: its type and the start of its message."""
    return f"{type(exc).__name__}: {str(exc)[:120]}"


def _unreadable(exc: BaseException) -> TableError:
    return TableError(f"not a readable HDF5 file ({_why(exc)})")


@contextmanager
def _opened(path: Path, variable: str, problem: Callable[[Any], str | None]) -> Iterator[Any]:
    """The dataset `variable` of the HDF5 file at `path`, once the file is known to hold nothing outside itself and
    `problem` has nothing to say of the dataset; TableError saying why not."""
    h5py = _h5py()
    try:
        f = h5py.File(path, "r")
    except hdf5_files.ERRORS as exc:
        raise _unreadable(exc) from exc
    with f:
        try:
            why = hdf5_files.outside(h5py, f, MAX_OBJECTS)
            item = None if why else f.get(variable)
            if why is None and not isinstance(item, h5py.Dataset):
                why = f"no dataset {variable!r} in the file (PCam's `_x.h5` holds 'x', its `_y.h5` 'y')"
            why = why or problem(item)
        except hdf5_files.ERRORS as exc:
            raise _unreadable(exc) from exc
        if why is not None:
            raise TableError(why)
        yield item


def _pixels_layout(x: Any) -> str | None:
    """Why the dataset `x` holds no images of [N, rows, columns(, 1 or 3 channels)] (None: it does)."""
    shape = tuple(x.shape or ())  # (a null dataspace has no shape)
    why = layout_problem("x", x.dtype, shape)
    if why is not None:
        return why
    if shape[0] > MAX_IMAGES:  # (a billion 1x1 images fit the ratio below in a megabyte)
        return f"'x' holds {shape[0]} images, more than {MAX_IMAGES}: not a file of PCam's (its largest holds 262,144)"
    stored = x.id.get_storage_size()
    if x.size and x.nbytes > MAX_RATIO * stored:
        return (f"'x' holds {x.nbytes} bytes of pixels in {stored} bytes of the file, more than {MAX_RATIO} times as "
                "many (unwritten or extremely compressed chunks); PCam's images are stored as they are")
    return None


def read_labels(path: Path, count: int) -> list[int | None]:
    """The `count` labels of the `_y.h5` file at `path` (an item None: a value that is no class id)."""
    def problem(y: Any) -> str | None:
        if y.dtype.kind not in "buif" or y.shape is None or y.size != count:
            return f"'y' is no array of {count} numbers, one an image ({y.dtype} {list(y.shape or ())})"
        return None

    with _opened(path, "y", problem) as y:
        try:
            values = np.asarray(y[()]).reshape(-1).tolist()
        except hdf5_files.ERRORS as exc:
            raise TableError(f"'y' cannot be read ({_why(exc)})") from exc
    return [int(v) if float(v).is_integer() else None for v in values]


@dataclass
class Images:
    """The images of an `_x.h5` file, read a block at a time."""

    x: Any

    @property
    def count(self) -> int:
        return int(self.x.shape[0])

    def __iter__(self) -> Iterator[np.ndarray | str]:
        """Each image (uint8 [rows, columns] or [rows, columns, 3]), or why it cannot be read."""
        per_block = max(1, BLOCK_BYTES // max(1, int(np.prod(self.x.shape[1:]))))
        for start in range(0, self.count, per_block):
            end = min(start + per_block, self.count)
            try:
                block = self.x[start:end]
            except hdf5_files.ERRORS:  # a damaged chunk: each image of the block on its own
                yield from (self._one(i) for i in range(start, end))
                continue
            yield from (_picture(image) for image in block)

    def _one(self, i: int) -> np.ndarray | str:
        try:
            return _picture(self.x[i])
        except hdf5_files.ERRORS as exc:
            return f"image {i} of 'x' cannot be read ({_why(exc)})"


def _picture(image: np.ndarray) -> np.ndarray:
    return image[:, :, 0] if image.ndim == 3 and image.shape[2] == 1 else image


@contextmanager
def images(path: Path) -> Iterator[Images]:
    """The images of the `_x.h5` file at `path`; TableError saying why it holds none."""
    with _opened(path, "x", _pixels_layout) as x:
        yield Images(x)
