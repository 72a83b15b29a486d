"""Image datasets kept as arrays, in the files torchvision's dataset classes download: CIFAR-10 and CIFAR-100's
pickled batches (cifar.py) and MNIST-style IDX files (idx_files.py); and Kaggle's CSV tables of pixels
(pixel_tables.py). Their images are read as the rows of a table are (tables.py `ImageRows`): each is encoded as PNG
(lossless) into a spill file and converted like an image file.

- Splits: CIFAR's `test_batch` and `test`, MNIST's `t10k-*` and a name with a split's word (`emnist-letters-test-*`)
  are `test`; the rest is `--split` (default `train`).
- Classes: CIFAR's meta file names them in id order (CIFAR-100: the fine labels; `--label-field coarse_labels` for
  the 20 superclasses). IDX labels are class ids, so the classes are `0` ... the largest (`--classes FILE` names
  them, as for a labels CSV).
- One dataset a conversion: the files must lie in one folder. A dataset file in a second folder (torchvision's
  `data/` holding `MNIST/raw/` and `FashionMNIST/raw/`) is rejected, naming the first folder; a file that is no
  dataset file is rejected too. A meta file, an IDX labels file and a `.gz` copy beside its unpacked file are read
  with the batches or images they go with.
- A table of pixels without a label column (Kaggle's `test.csv`) is read once every table has been seen: beside a
  labelled one it is rejected, saying so; alone, it converts unlabeled.
"""

from __future__ import annotations

import io
from pathlib import Path

from converters.images import cifar, idx_files, pixel_tables
from converters.images.labels_csv import EXTENSIONS
from converters.images.table_columns import Columns, TableOptions
from converters.images.tables import ImageRows, collected
from converters.kind import Discovery
from converters.sample import Rejection
from converters.table_files import TableError
from converters.tree import first_files, splits_named
from fastdata.manifest_splits import SPLIT_NAMES

LOOK_AT = 8  # files named like CIFAR batches, or CSV files, whose first bytes `has_array_files` reads
NOT_ONE = ("not a CIFAR batch, an IDX file or a CSV table of pixels (this source is read as the files of "
           "torchvision's CIFAR or MNIST datasets, or Kaggle's tables of pixels)")


def _cifar_batch(path: Path) -> bool:
    return cifar.BATCH.match(path.name) is not None and cifar.is_pickle(path)


def has_array_files(src: Path, *, limit: int) -> bool:
    """Whether an IDX images file, a CIFAR batch or a table of pixels is among the first `limit` files of `src`, and
    no image file."""
    batches, tables, idx = [], [], False
    for path in first_files(src, limit):
        if path.suffix.lower() in EXTENSIONS:
            return False
        name = idx_files.idx_name(path.name)
        idx = idx or (name is not None and name.images)
        if cifar.BATCH.match(path.name):
            batches.append(path)
        elif path.suffix.lower() == ".csv":
            tables.append(path)
    return (idx or any(cifar.is_pickle(p) for p in batches[:LOOK_AT])
            or any(pixel_tables.table_layout(p) is not None for p in tables[:LOOK_AT]))


def what_file(path: Path) -> str | None:
    """What the file at `path` is among the files this module reads ("a CIFAR batch", "an IDX file", "a table of
    pixels"), or None."""
    if idx_files.idx_name(path.name) is not None:
        return "an IDX file"
    if _cifar_batch(path):
        return "a CIFAR batch"
    return "a table of pixels" if pixel_tables.table_layout(path) is not None else None


def _split(stem: str, default: str) -> str:
    if stem.lower() == "t10k":  # MNIST's test files
        return "test"
    named = splits_named(stem)
    return named.pop() if len(named) == 1 else default


def _png(image) -> bytes:  # type: ignore[no-untyped-def]
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


class _ArrayFiles(ImageRows):
    """Every image of the dataset's files, as a row of a table."""

    label_field = "field"

    def __init__(self, src: Path, opts: TableOptions, *, follow: bool) -> None:
        super().__init__(src, opts, follow=follow)
        self.folder: Path | None = None  # where the dataset's files are
        self.unlabeled_tables: list[tuple[Path, str, pixel_tables.PixelLayout, str]] = []  # read at the end

    def add_file(self, path: Path, split: str, label: int | None) -> None:
        rel = self.rel(path)
        idx = idx_files.idx_name(path.name)
        split = _split(path.stem if idx is None else idx.stem, self.split)
        layout = pixel_tables.table_layout(path) if idx is None else None
        cifar_file = idx is None and (_cifar_batch(path) or (path.name in cifar.META and cifar.is_pickle(path)))
        if idx is None and not cifar_file and layout is None:
            self.rejected.append(Rejection(split, rel, NOT_ONE))
            return
        if self.folder is None:
            self.folder = path.parent
        if path.parent != self.folder:
            self.rejected.append(Rejection(split, rel, f"a second dataset: the first is in "
                                                       f"{self.rel(self.folder)}; convert each folder apart"))
            return
        found = 0
        try:
            if layout is not None:
                found = self._add_pixel_table(path, rel, layout, split)
            elif idx is not None:
                found = self._add_idx(path, rel, idx, split)
            elif path.name not in cifar.META:
                found = self._add_batch(path, rel, split)
        except TableError as exc:
            self.rejected.append(Rejection(split, rel, str(exc)))
        self.identity.append([split, rel, None, path.stat().st_size, found])

    def _add_batch(self, path: Path, rel: str, split: str) -> int:
        meta = next((path.with_name(m) for m in cifar.META if path.with_name(m).is_file()), None)
        if meta is None:
            raise TableError(f"no meta file beside it ({' or '.join(cifar.META)}): it names the classes")
        names, field = cifar.class_names(meta, self.opts.label_field)
        batch = cifar.read_batch(path, field)
        label = None if self.opts.unlabeled else field
        columns = Columns("data", label, names)
        self.labels.agree(rel, label, columns.names)
        return sum(self._add_row(_png(image), y if label else None, columns, split, f"{rel}#{i}", str(path))
                   for i, (image, y) in enumerate(zip(batch.images, batch.labels, strict=True)))

    def _add_idx(self, path: Path, rel: str, idx: idx_files.Idx, split: str) -> int:
        if idx.gz and path.with_name(path.name[:-3]).is_file():
            return 0  # the unpacked copy beside it is read
        if not idx.images:
            if not any(p.is_file() for p in idx.partner(path)):
                raise TableError(f"labels without their images file ({idx.partner(path)[0].name})")
            return 0  # read with its images
        if self.opts.label_field:
            raise TableError("--label-field names a field of CIFAR batches; an IDX file has one label an image")
        images, count = idx_files.read_idx(path, 3)
        if idx.stem.lower().startswith("emnist"):
            images = images.transpose(0, 2, 1)  # EMNIST's images are stored transposed
        labels: list[int | None] = [None] * len(images)
        label = None
        if not self.opts.unlabeled:
            where = next((p for p in idx.partner(path) if p.is_file()), None)
            if where is None:
                raise TableError(f"no labels file beside it ({idx.partner(path)[0].name}); --unlabeled converts it "
                                 "without labels")
            values, label_count = idx_files.read_idx(where, 1)
            if label_count != count:
                raise TableError(f"{count} images and {label_count} labels in {where.name}")
            labels, label = [int(v) for v in values[:len(images)]], where.name
        columns = Columns("images", label, None)
        self.labels.agree(rel, label, None)
        if len(images) < count:
            self.rejected.append(Rejection(split, f"{rel}#{len(images)}", f"the file is cut short: {len(images)} of "
                                                                          f"{count} images are whole"))
        return sum(self._add_row(_png(image), y, columns, split, f"{rel}#{i}", str(path))
                   for i, (image, y) in enumerate(zip(images, labels, strict=False)))

    def add_tree(self, folder: Path, split: str, label: int | None) -> None:
        super().add_tree(folder, split, label)
        labelled = self.labels.column is not None
        for path, rel, layout, split in self.unlabeled_tables:  # read once every table's labels are known
            if labelled:
                self.rejected.append(Rejection(split, rel, f"no label column: the other tables label their rows "
                                                           f"(column {self.labels.column!r}); convert it apart, "
                                                           "with --unlabeled"))
            else:
                self._read_pixel_table(path, rel, layout, split)
        self.unlabeled_tables = []

    def _add_pixel_table(self, path: Path, rel: str, layout: pixel_tables.PixelLayout, split: str) -> int:
        if self.opts.label_field:
            raise TableError(f"--label-field names a field of CIFAR batches; a table of pixels has its label in the "
                             f"column named {', '.join(pixel_tables.LABEL_COLUMNS)}")
        if layout.label is None and not self.opts.unlabeled:  # Kaggle's test.csv beside a labelled train.csv
            self.unlabeled_tables.append((path, rel, layout, split))
            return 0
        return self._read_pixel_table(path, rel, layout, split)

    def _read_pixel_table(self, path: Path, rel: str, layout: pixel_tables.PixelLayout, split: str) -> int:
        label = None if self.opts.unlabeled or layout.label is None else layout.label_name
        columns = Columns("pixels", label, None)
        self.labels.field = "column"  # a table's, where messages name it
        self.labels.agree(rel, label, None)
        found = 0
        try:
            for n, row in pixel_tables.pixel_rows(path, layout):
                where = f"{rel}#{n}"
                row_split = row.split or split
                if row_split not in SPLIT_NAMES:
                    self.rejected.append(Rejection(split, where, f"no split: {row.split!r} in the split column"))
                    continue
                image = row.image if isinstance(row.image, str) else _png(row.image)
                found += self._add_row(image, row.label if label else None, columns, row_split, where, str(path))
        except TableError as exc:
            self.rejected.append(Rejection(split, rel, str(exc)))  # the rows before it are kept
        return found


def discover_array_files(src: Path, opts: TableOptions, *, follow_symlinks: bool = True) -> Discovery:
    """The images of the CIFAR batches, IDX files or tables of pixels under `src`."""
    if opts.image_field:
        raise ValueError(f"--image-field names the image column of a table; {src} holds CIFAR batches, IDX files or "
                         "tables of pixels")
    return collected(_ArrayFiles(src, opts, follow=follow_symlinks), "arrays")
