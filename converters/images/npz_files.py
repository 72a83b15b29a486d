"""Image datasets saved as NumPy arrays, as Keras, MedMNIST and Kuzushiji ship them: one `.npz` file, Keras'
`mnist.npz` (`x_train`, `y_train`, `x_test`, `y_test`) and MedMNIST's `pathmnist.npz`, `chestmnist_224.npz`, ...
(`train_images`, `train_labels`, `val_images`, ..., `test_labels`); or files of one array each, `.npy` files
(`X_train.npy`, `y_train.npy`) and `.npz` files of one member (Kuzushiji-49's `k49-train-imgs.npz`, its `arr_0`).

- A `.npz` file is a zip archive of `.npy` files (`np.savez`, `np.savez_compressed`). Each array is read by its
  name, from its end: images are `x`, `images` or `imgs`, their labels the array named alike with `y` or `labels`,
  with a split's name or alias (`valid`, `validation`) before or after (`x_train`, `train_images`), the words
  before them the dataset's name (`k49-train-imgs`); an array without a split goes to `--split`. Headers are read
  by numpy (`numpy.lib.format`) before any value; nothing is unpickled (an array of Python objects is refused
  unread, as `np.load(..., allow_pickle=False)` refuses it).
- Images: uint8 [N, rows, columns] or [N, rows, columns, 1 or 3 channels], sides up to 4,096, read a block of 64 MB
  at a time (MedMNIST's 224-pixel files hold gigabytes). Labels: whole numbers, [N] or [N, 1]: class ids; [N, K]
  rows of one 1 (one-hot): the class of the 1's column; other [N, K] of 0 and 1 (ChestMNIST's 14 findings) with
  `--multi-label`: the classes `0` ... `K-1`, each image's label those whose value is 1.
- Each `.npz` member's stored bytes are checked against the archive's CRC before any of its images is taken, so a
  damaged member is refused whole rather than converted in part with wrong pixels; a compressed member that would
  grow more than 1,000 times is refused unread (all-zero images: a small file that would convert for hours).
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from converters.images.pixel_arrays import layout_problem
from converters.table_files import TableError
from fastdata.manifest_splits import canonical_split

ROLES = ("x", "y", "images", "imgs", "labels")  # the words that say what an array holds
PARTNERS = {"x": ("y",), "images": ("labels",), "imgs": ("labels",), "y": ("x",), "labels": ("images", "imgs")}
MAX_LABEL_BYTES = 1 << 31  # labels are read whole
MAX_RATIO = 1000  # bytes a compressed member may grow to, for each byte stored
BLOCK_BYTES = 64 << 20  # bytes of images read at a time, and of a member checked at a time
# a member unreadable (zipfile raises NotImplementedError for a compression method it lacks)
ERRORS = (OSError, EOFError, zlib.error, zipfile.BadZipFile, ValueError, NotImplementedError)


@dataclass(frozen=True)
class Key:
    """An array's name read: whether it holds images, its split (None: --split), the names its labels' or images'
    array may have, lower case (`X_train` is read with `Y_train` or `y_train`), and the dataset's name before them
    (`k49` of `k49-train-imgs`; "" for none)."""

    images: bool
    split: str | None
    partners: tuple[str, ...]
    family: str = ""


def key_of(name: str) -> Key | None:
    """The array `name` (`x_train`, `train_images`, `labels`, `k49-train-imgs`, `kuzushiji50_train_labels`) read
    from its end: what it holds, then its split before or after that (words set apart by `-`, `_` or `.`); the words
    before them name the dataset. None for a name that is neither."""
    tokens = re.split(r"([-_.])", name)  # words at even places, the separators between them
    words = [t.lower() for t in tokens[::2]]
    if "" in words:
        return None
    if words[-1] in ROLES:
        role = len(words) - 1
        split = canonical_split(words[-2]) if len(words) > 1 else None
    elif len(words) > 1 and words[-2] in ROLES and canonical_split(words[-1]):
        role, split = len(words) - 2, canonical_split(words[-1])
    else:
        return None
    first = role - 1 if split and role == len(words) - 1 else role  # the first word of the role and split
    word = words[role]
    partners = tuple("".join([*tokens[:2 * role], other, *tokens[2 * role + 1:]]).lower() for other in PARTNERS[word])
    return Key(word in ("x", "images", "imgs"), split, partners, "".join(tokens[:max(0, 2 * first - 1)]).lower())


def is_npz(path: Path) -> bool:
    return path.suffix.lower() == ".npz" and zipfile.is_zipfile(path)


def _member_names(path: Path) -> list[str] | None:
    """The names of the files in the zip archive at `path` (its directory read, no value), or None for no archive."""
    try:
        with zipfile.ZipFile(path) as zf:
            return [n for n in zf.namelist() if not n.endswith("/")]
    except ERRORS:
        return None


def array_key(path: Path, members: list[str] | None = None) -> Key | None:
    """The name of the file at `path` read as one array's: a `.npy` file (`x_train.npy`), or a `.npz` file of one
    array named by the file (`k49-train-imgs.npz`, whose `arr_0` is what `np.savez(file, images)` names it; its
    `members`, where they have been read); None for any other file."""
    lower = path.name.lower()
    if not lower.endswith((".npy", ".npz")):
        return None
    key = key_of(path.name[:-4])
    if key is None or lower.endswith(".npy"):
        return key
    members = _member_names(path) if members is None else members
    return key if members is not None and len(members) == 1 else None


def holds_images(path: Path) -> bool:
    """Whether the file at `path` is an array file named as images are (array_key), or a `.npz` file with a member so
    named (its directory read, no value)."""
    members = _member_names(path) if path.suffix.lower() == ".npz" else None
    key = array_key(path, members)
    if key is not None or members is None:
        return key is not None and key.images
    return any((k := key_of(n[:-4])) is not None and k.images for n in members if n.endswith(".npy"))


@dataclass(frozen=True)
class Header:
    """A member's `.npy` header: its shape and dtype."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def item_bytes(self) -> int:
        return int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize


class Arrays:
    """Arrays by name (a `.npz` file's members, or the `.npy` files of a folder, without `.npy`): their headers,
    labels and images. `raw` opens what `members` holds for an array, at its `.npy` header; TableError where its
    bytes cannot be trusted."""

    def __init__(self, members: dict[str, Any], raw: Callable[[Any], IO[bytes]]) -> None:
        self.members = members
        self._raw = raw

    def find(self, names: tuple[str, ...]) -> str | None:
        """The array named by the first of `names` there is, whatever its case, or None."""
        lower = {k.lower(): k for k in self.members}
        return next((lower[n] for n in names if n in lower), None)

    def _open(self, key: str) -> tuple[IO[bytes], Header]:
        f = self._raw(self.members[key])
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise TableError(f"an .npy file of version {version[0]}.{version[1]}: a structured array, not numbers")
        except ERRORS as exc:
            f.close()
            raise TableError(f"not an .npy file numpy reads: {_why(exc)}") from exc
        except TableError:
            f.close()
            raise
        if any(d < 0 for d in shape):  # (numpy's header reader takes any whole numbers)
            f.close()
            raise TableError(f"a shape of {list(shape)}: a negative dimension")
        if dtype.hasobject:
            f.close()
            raise TableError(f"an array of Python objects ({dtype}), which only unpickling reads: not read")
        if fortran and len(shape) > 1:
            f.close()
            raise TableError("an array stored column-major (Fortran order): save it with np.ascontiguousarray")
        return f, Header(tuple(shape), dtype)

    @contextmanager
    def images(self, key: str) -> Iterator[tuple[Header, Iterator[np.ndarray]]]:
        """(the header of the images array `key`, its whole images, uint8 [rows, columns(, 3)], a block at a time);
        TableError saying why it holds none."""
        f, head = self._open(key)
        with f:
            why = layout_problem(key, head.dtype, head.shape)
            if why is not None:
                raise TableError(why)
            yield head, _blocks(f, head)

    def labels(self, key: str, count: int, *, multi: bool) -> tuple[list[Any], int | None]:
        """(the labels of the array `key` for `count` images: a class id each, or with `multi` the list of the
        classes whose value is 1 (None: a row of other values); the number of classes a row of flags or a one-hot
        row gives, else None); TableError saying why it holds none."""
        f, head = self._open(key)
        with f:
            shape = head.shape
            if head.dtype.kind not in "biu" or len(shape) not in (1, 2) or shape[0] != count:
                raise TableError(f"no labels for its {count} images: {key!r} is no array of whole numbers, one row an "
                                 f"image ({head.dtype} {list(shape)})")
            size = count * head.item_bytes
            if size > MAX_LABEL_BYTES:
                raise TableError(f"{key!r} holds {size} bytes of labels, more than {MAX_LABEL_BYTES}")
            try:
                data = f.read(size)
            except ERRORS as exc:
                raise TableError(f"{key!r} cannot be read: {_why(exc)}") from exc
        if len(data) < size:
            raise TableError(f"{key!r} is cut short: {len(data)} of {size} bytes of labels")
        values = np.frombuffer(data, head.dtype).reshape(shape).astype(np.int64)
        if len(shape) == 1 or shape[1] == 1:
            rows = values.reshape(-1).tolist()
            return ([[v] for v in rows] if multi else rows), None
        flags = np.isin(values, (0, 1)).all(axis=1)
        if multi:
            return [np.flatnonzero(r).tolist() if ok else None for r, ok in zip(values, flags, strict=True)], shape[1]
        if flags.all() and (values.sum(axis=1) == 1).all():  # one-hot (Keras' to_categorical): one class a row
            return values.argmax(axis=1).tolist(), shape[1]
        raise TableError(f"{shape[1]} labels an image in {key!r}, not one 1 a row (one-hot): flags of several classes "
                         "(ChestMNIST's findings) convert with --multi-label")


class ZipArrays(Arrays):
    """The `.npy` members of an open `.npz` file (a zip archive); `others`, those of other names."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        super().__init__({i.filename[:-4]: i for i in zf.infolist() if i.filename.endswith(".npy")}, self._member)
        self.zf = zf
        self.others = [i.filename for i in zf.infolist() if not i.filename.endswith(".npy") and not i.is_dir()]

    def _member(self, info: zipfile.ZipInfo) -> IO[bytes]:
        return _checked(self.zf, info)


def _checked(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> IO[bytes]:
    """The member `info` of `zf`, open, once it is known not to grow more than MAX_RATIO times and its bytes match
    the archive's CRC-32 (read a block at a time, kept nowhere); TableError saying why not."""
    if info.file_size > MAX_RATIO * max(1, info.compress_size):  # (a stored member's sizes are equal)
        raise TableError(f"its {info.file_size} bytes are stored in {info.compress_size}, more than {MAX_RATIO} "
                         "times fewer (an array of zeros, or a forged size)")
    try:
        with zf.open(info) as f:
            while f.read(BLOCK_BYTES):
                pass
        return zf.open(info)
    except ERRORS as exc:
        raise TableError(f"damaged: {_why(exc)}") from exc


def array_files(folder: Path) -> Arrays:
    """The files of `folder` that are one array each (array_key: `x_train.npy` beside `y_train.npy`, as `np.save`
    writes them; `k49-train-imgs.npz` beside `k49-train-labels.npz`)."""
    return Arrays({p.name[:-4]: p for p in sorted(folder.iterdir()) if p.is_file() and array_key(p) is not None},
                  _array_file)


def _array_file(path: Path) -> IO[bytes]:
    try:
        if path.suffix.lower() == ".npy":
            return open(path, "rb")
        with zipfile.ZipFile(path) as zf:  # (the member open keeps the file open)
            return _checked(zf, next(i for i in zf.infolist() if not i.is_dir()))
    except (*ERRORS, StopIteration) as exc:
        raise TableError(f"unreadable: {_why(exc)}") from exc


def _blocks(f: IO[bytes], head: Header) -> Iterator[np.ndarray]:
    """The whole images of a member whose header `head` has been read from `f`: TableError (after the images
    before it) where its values stop short or cannot be read."""
    item = head.item_bytes
    per_block = max(1, BLOCK_BYTES // item)
    shape = head.shape
    for start in range(0, shape[0], per_block):
        want = min(per_block, shape[0] - start)
        try:
            data = f.read(want * item)
        except ERRORS as exc:
            raise TableError(f"cannot be read from image {start}: {_why(exc)}") from exc
        n = len(data) // item
        block = np.frombuffer(data, np.uint8, count=n * item).reshape(n, *shape[1:])
        yield from (image[:, :, 0] if image.ndim == 3 and image.shape[2] == 1 else image for image in block)
        if n < want:
            raise TableError(f"cut short: {start + n} of {shape[0]} images are whole")


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@contextmanager
def opened(path: Path) -> Iterator[ZipArrays]:
    """The `.npz` file at `path`, open; TableError saying why it cannot be."""
    try:
        zf = zipfile.ZipFile(path)
    except ERRORS as exc:
        raise TableError(f"not a zip archive numpy wrote: {_why(exc)}") from exc
    with zf:
        yield ZipArrays(zf)
