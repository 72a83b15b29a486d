"""ImageNet as image-net.org hands it out, read inside its archives, nothing unpacked: `ILSVRC2012_img_train.tar`, a
tar of one tar a class (`n01440764.tar` of `n01440764_10026.JPEG` ...), `ILSVRC2012_img_val.tar`, the 50,000 val
images (`ILSVRC2012_val_00000001.JPEG` ...), and the devkit `ILSVRC2012_devkit_t12.tar.gz`, whose
`data/ILSVRC2012_validation_ground_truth.txt` gives the n-th val image's ILSVRC2012_ID, a synset of `data/meta.mat`.
torchvision's `ImageNet` takes the same three files (and unpacks them first). A folder of the class tars (the
training archive unpacked one level, the first step of every set-up) is read the same way.

- The classes are the 1000 WordNet ids, sorted: ImageFolder's order and torchvision's. A training image's class is
  its tar's name; a val image's, the WNID of its ground-truth line's ILSVRC2012_ID.
- A tar is uncompressed, so an image inside it is a range of the archive's bytes: each work item's payload is that
  range (`spill.FileRange`), read with one pread by the worker. Only the tar headers are read at discovery.
- Members that are no image (by extension), no regular file, or no class tar are rejections, and so are the val
  images the ground truth does not reach. A damaged or truncated archive is a rejection of what could not be read,
  naming the archive; what was read before converts. Val images without the devkit, a devkit without the ground
  truth or meta.mat, or a ground-truth id meta.mat does not have stop the conversion.
"""

from __future__ import annotations

import io
import re
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from converters.images.labels_csv import EXTENSIONS, Labels
from converters.kind import Discovery
from converters.mat_files import cell_text, load_mat
from converters.sample import Rejection, WorkItem
from converters.spill import FileRange
from converters.table_files import TableError
from converters.tree import outside_rejections
from converters.walk import NOT_FOLLOWED, display, listed
from fastdata.errors import ConvertError

TRAIN = "ILSVRC2012_img_train.tar"
VAL = "ILSVRC2012_img_val.tar"
DEVKIT = "ILSVRC2012_devkit_t12.tar.gz"
GROUND_TRUTH = "data/ILSVRC2012_validation_ground_truth.txt"
META = "data/meta.mat"
CLASS_TAR = re.compile(r"(n[0-9]{8})\.tar")
VAL_IMAGE = re.compile(r"ILSVRC2012_val_([0-9]{8})\.[A-Za-z]+")
MAX_DEVKIT_FILE = 1 << 24  # bytes of meta.mat or the ground truth read (the real ones are under 1 MB)


class _Window(io.RawIOBase):
    """The bytes `start` ... `start + length` of an open file, as a file of its own: a class tar inside the
    training archive, which tarfile reads without ever going past its end."""

    def __init__(self, f, start: int, length: int) -> None:
        self.f, self.start, self.length, self.pos = f, start, length, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.length}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def read(self, size: int = -1) -> bytes:
        size = self.length - self.pos if size is None or size < 0 else min(size, self.length - self.pos)
        if size <= 0:
            return b""
        self.f.seek(self.start + self.pos)
        data = self.f.read(size)
        self.pos += len(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def found(src: Path) -> list[Path]:
    """The archives of ImageNet's training or val images SRC holds, or without the training archive its class tars
    (`n01440764.tar` ..., the training archive unpacked one level); [] for any other source."""
    archives = [src / name for name in (TRAIN, VAL) if (src / name).is_file()]
    if not (src / TRAIN).is_file():
        archives += [src / name for name in listed(src) if CLASS_TAR.fullmatch(name) and (src / name).is_file()]
    return archives


def _members(tar: tarfile.TarFile, where: str, rejected: list[Rejection], split: str) -> Iterator[tarfile.TarInfo]:
    """The members of `tar`, a damaged or truncated archive ending them with a rejection that names `where`."""
    try:
        yield from tar
    except (tarfile.TarError, OSError, EOFError) as exc:
        rejected.append(Rejection(split, where, f"damaged or truncated archive: {exc}; the members after the last "
                                                "one read are not read"))


def _open(f, where: str, rejected: list[Rejection], split: str) -> tarfile.TarFile | None:
    """The tar archive `f` holds; None, with a rejection that names `where`, for one that is no tar archive."""
    try:
        return tarfile.open(fileobj=f, mode="r:")
    except (tarfile.TarError, OSError, EOFError) as exc:
        rejected.append(Rejection(split, where, f"damaged or truncated archive: {exc}"))
        return None


class _Reader:
    def __init__(self, src: Path) -> None:
        self.src = src
        self.items: dict[str, list[WorkItem]] = {}
        self.rejected: list[Rejection] = []
        self.identity: list[list[object]] = []
        self.seen: set[str] = set()

    def take(self, archive: Path, rel: str, member: tarfile.TarInfo, base: int, split: str, label: int,
             end: int) -> None:
        """One image member of `archive` (whose first byte lies `base` bytes into the file, and which ends at its
        byte `end`), or its rejection."""
        if rel in self.seen:
            self.rejected.append(Rejection(split, rel, "the archive holds a member of this name before: that one is "
                                                       "taken"))
        elif not member.isfile():
            self.rejected.append(Rejection(split, rel, "not a regular file in the archive: not read"))
        elif member.offset_data + member.size > end:
            self.rejected.append(Rejection(split, rel, "truncated: its bytes run past the end of the archive that "
                                                       "holds it"))
        elif Path(member.name).suffix.lower() not in EXTENSIONS:
            self.rejected.append(Rejection(split, rel, f"unsupported extension {Path(member.name).suffix!r}; allowed: "
                                                       f"{', '.join(EXTENSIONS)}"))
        else:
            payload = FileRange(str(archive), base + member.offset_data, member.size)
            self.items.setdefault(split, []).append(WorkItem(split=split, rel=rel, source=str(archive), label=label,
                                                             payload=payload))
            self.identity.append([split, rel, label, member.size])
            self.seen.add(rel)

    def train(self, archive: Path) -> tuple[str, ...]:
        """Take every image of the class tars of the training archive; the classes, sorted."""
        name = archive.name
        with open(archive, "rb") as f:
            outer = _open(f, name, self.rejected, "train")
            inner = [] if outer is None else list(_members(outer, name, self.rejected, "train"))
            classes = tuple(sorted({m[1] for m in (CLASS_TAR.fullmatch(i.name) for i in inner if i.isfile()) if m}))
            index = {c: i for i, c in enumerate(classes)}
            for member in inner:
                match = CLASS_TAR.fullmatch(member.name)
                if match is None or not member.isfile():
                    self.rejected.append(Rejection("train", f"{name}/{display(member.name)}", "not a class tar "
                                                   "(n01440764.tar) of the training archive: not read"))
                else:
                    self.class_tar(archive, f, member.offset_data, member.size, f"{name}/{member.name}",
                                   index[match[1]])
        return classes

    def class_tars(self, paths: list[Path]) -> tuple[str, ...]:
        """Take every image of the class tars `paths` (the training archive unpacked one level: `n01440764.tar`
        ...); the classes, sorted."""
        paths = sorted(paths)  # `n01440764.tar` ...: in the order of their classes
        for label, path in enumerate(paths):
            with open(path, "rb") as f:
                self.class_tar(path, f, 0, path.stat().st_size, path.name, label)
        return tuple(CLASS_TAR.fullmatch(p.name)[1] for p in paths)

    def class_tar(self, path: Path, f, start: int, length: int, where: str, label: int) -> None:
        """Take the images of the class tar that lies `length` bytes from `start` of `path` (open as `f`), read
        through a window that never passes its end."""
        tar = _open(_Window(f, start, length), where, self.rejected, "train")
        for image in [] if tar is None else _members(tar, where, self.rejected, "train"):
            self.take(path, f"{where}/{display(image.name)}", image, start, "train", label, length)

    def val(self, archive: Path, wnids: list[str], classes: tuple[str, ...]) -> None:
        """Take every val image the ground truth labels (`wnids`: the n-th image's class)."""
        index = {c: i for i, c in enumerate(classes)}
        end = archive.stat().st_size
        with open(archive, "rb") as f:
            tar = _open(f, archive.name, self.rejected, "val")
            for member in [] if tar is None else _members(tar, archive.name, self.rejected, "val"):
                rel = f"{archive.name}/{display(member.name)}"
                match = VAL_IMAGE.fullmatch(member.name)
                n = int(match[1]) if match else 0
                if not 1 <= n <= len(wnids):
                    self.rejected.append(Rejection("val", rel, f"no line of {GROUND_TRUTH} labels it (it has "
                                                               f"{len(wnids)})"))
                elif wnids[n - 1] not in index:
                    self.rejected.append(Rejection("val", rel, f"class {wnids[n - 1]} has no training images"))
                else:
                    self.take(archive, rel, member, 0, "val", index[wnids[n - 1]], end)


def _devkit_file(tar: tarfile.TarFile, name: str, devkit: Path) -> bytes:
    member = next((m for m in tar.getmembers() if m.isfile() and m.name.endswith("/" + name)), None)
    if member is None:
        raise ConvertError(f"{devkit} holds no {name}: is it ImageNet 2012's devkit (ILSVRC2012_devkit_t12)?")
    if member.size > MAX_DEVKIT_FILE:
        raise ConvertError(f"{devkit}: {name} is {member.size} bytes, more than ImageNet's devkit holds")
    data = tar.extractfile(member)
    assert data is not None  # a regular file
    return data.read()


def _synsets(data: bytes, devkit: Path) -> dict[int, str]:
    """ILSVRC2012_ID -> WNID of meta.mat's synsets (read with scipy, in a child process)."""
    with tempfile.TemporaryDirectory(prefix="fastdata-devkit-") as tmp:
        path = Path(tmp) / "meta.mat"
        path.write_bytes(data)
        try:
            held = load_mat(path, ["synsets"], limit=MAX_DEVKIT_FILE, what="ImageNet's meta.mat")
        except TableError as exc:
            raise ConvertError(f"{devkit}: {META}: {exc}") from exc
    synsets = held.get("synsets")
    if not isinstance(synsets, np.ndarray) or synsets.dtype.names is None or \
            not {"ILSVRC2012_ID", "WNID"} <= set(synsets.dtype.names):
        raise ConvertError(f"{devkit}: {META} holds no 'synsets' struct array of ILSVRC2012_ID and WNID")
    out: dict[int, str] = {}
    for record in synsets.reshape(-1):
        value, wnid = record["ILSVRC2012_ID"], cell_text(record["WNID"])
        if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "iu" and wnid is not None:
            out[int(value.reshape(-1)[0])] = wnid
    return out


def read_devkit(devkit: Path) -> list[str]:
    """Each val image's WNID, in the order of the images' numbers, from the devkit's ground truth and meta.mat."""
    try:
        with tarfile.open(devkit, mode="r:gz") as tar:
            truth = _devkit_file(tar, GROUND_TRUTH, devkit)
            meta = _devkit_file(tar, META, devkit)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ConvertError(f"cannot read {devkit}: {exc}") from exc
    synsets = _synsets(meta, devkit)
    wnids = []
    for n, line in enumerate(truth.decode("ascii", "replace").rstrip().splitlines(), 1):  # line n: image n
        if not line.strip().isdigit() or int(line) not in synsets:
            raise ConvertError(f"{devkit}: {GROUND_TRUTH}:{n}: {line.strip()[:40]!r} is no ILSVRC2012_ID of {META}")
        wnids.append(synsets[int(line)])
    return wnids


def is_devkit(path: Path) -> bool:
    """Whether a labels file given as `--labels` is a tar archive (ImageNet's devkit), not a table."""
    return path.name.lower().endswith((".tar.gz", ".tgz", ".tar")) and path.is_file()


def devkit_labels(devkit: Path) -> Labels:
    """The val images' classes by their file names (`ILSVRC2012_val_00000001.JPEG`), from the devkit's ground
    truth: `--labels val=ILSVRC2012_devkit_t12.tar.gz` for the val archive unpacked beside class folders."""
    wnids = read_devkit(devkit)
    rows = {f"ILSVRC2012_val_{n:08d}.JPEG": wnid for n, wnid in enumerate(wnids, 1)}
    return Labels(rows, tuple(sorted(set(wnids))))


def discover_imagenet_archives(src: Path, follow: bool) -> Discovery | None:
    """The images of ImageNet's training and val archives, each read where it lies; None when SRC holds neither.
    An archive that is a link is not read when links are not followed."""
    archives = found(src)
    if not archives:
        return None
    reader = _Reader(src)
    read = set()
    for path in archives:
        if path.is_symlink() and not follow:
            reader.rejected.append(Rejection("train", path.name, NOT_FOLLOWED))
        else:
            read.add(path.name)
    classes: tuple[str, ...] = ()
    if TRAIN in read:
        classes = reader.train(src / TRAIN)
    loose = [src / name for name in sorted(read) if CLASS_TAR.fullmatch(name)]
    if loose:
        classes = reader.class_tars(loose)
    if VAL in read:
        if not (src / DEVKIT).is_file():
            raise ConvertError(f"{src / VAL}: ImageNet's val images have no labels: {DEVKIT} (its ground truth) is not "
                               f"in {src}; put it there, or move {VAL} away to convert train alone")
        wnids = read_devkit(src / DEVKIT)
        classes = classes or tuple(sorted(set(wnids)))
        reader.val(src / VAL, wnids, classes)
    taken = {TRAIN, VAL, DEVKIT} | {p.name for p in archives}
    beside = [n for n in listed(src) if n not in taken]
    reader.rejected += outside_rejections(src, beside, "beside ImageNet's archives: not read", follow=follow,
                                          private=False)
    return Discovery(reader.items, classes, reader.rejected, "imagenet_archives", reader.identity)
