"""Image datasets kept as arrays, in the files torchvision's dataset classes download: CIFAR-10 and CIFAR-100's
pickled batches (cifar.py), MNIST-style IDX files (idx_files.py), SVHN's MATLAB files (svhn.py), STL-10's binary
files (stl10.py), PatchCamelyon's HDF5 files (pcam.py), USPS's and SEMEION's lines of numbers (digit_texts.py);
NumPy `.npz` and `.npy` files as Keras and MedMNIST ship them (npz_files.py, numpy_rows.py); and Kaggle's CSV tables
of pixels (pixel_tables.py).
Their images are read as the rows of a table are (tables.py `ImageRows`): each is encoded as PNG (lossless) into a
spill file and converted like an image file.

- Splits: CIFAR's `test_batch` and `test`, MNIST's `t10k-*`, USPS's `usps.t.bz2` and a name with a split's word
  (`emnist-letters-test-*`, `test_32x32.mat`, `test_X.bin`; `camelyonpatch_level_2_split_valid_x.h5`: val) are that
  split, and so is a NumPy array whose name holds one (`x_test`); the rest (SVHN's `extra_32x32.mat` too) is
  `--split` (default `train`).
- Classes: CIFAR's meta file names them in id order (CIFAR-100: the fine labels; `--label-field coarse_labels` for
  the 20 superclasses). IDX labels are class ids, so the classes are `0` ... the largest (`--classes FILE` names
  them, as for a labels CSV), and so are PCam's (`0` and `1`); SVHN's are the digits `0` ... `9`; STL-10's
  `class_names.txt` names them.
- One dataset a conversion: the files must lie in one folder. A dataset file in a second folder (torchvision's
  `data/` holding `MNIST/raw/` and `FashionMNIST/raw/`) is rejected, naming the first folder; a file that is no
  dataset file is rejected too. A meta file, an IDX, STL-10 or PCam labels file, STL-10's `class_names.txt`, PCam's
  `_meta.csv` and `_mask.h5` and a `.gz` copy beside its unpacked file are read with the batches or images they go with.
- A table of pixels without a label column (Kaggle's `test.csv`) is read once every table has been seen: beside a
  labelled one it is rejected, saying so; alone, it converts unlabeled.
"""

from __future__ import annotations

from pathlib import Path

from converters.images import (
    cifar,
    class_maps,
    digit_texts,
    idx_files,
    numpy_rows,
    pcam,
    pixel_tables,
    stl10,
    svhn,
)
from converters.images.array_kinds import WHAT, class_map_of, dataset_of, file_kind, named_by, split_of_stem
from converters.images.table_columns import Columns, TableOptions
from converters.images.tables import ImageRows, collected, png_bytes
from converters.kind import Discovery
from converters.sample import Rejection
from converters.table_files import TableError
from fastdata.manifest_splits import SPLIT_NAMES

NOT_ONE = ("not a file of an image dataset kept as arrays (this source is read as the files of torchvision's CIFAR, "
           "MNIST, SVHN, STL-10 or PCAM datasets, NumPy .npz files, or Kaggle's tables of pixels)")


class ArrayFiles(ImageRows):
    """Every image of the dataset's files, as a row of a table."""

    label_field = "field"

    def __init__(self, src: Path, opts: TableOptions, *, follow: bool) -> None:
        super().__init__(src, opts, follow=follow)
        self.folder: Path | None = None  # where the dataset's files are
        self.dataset: tuple[str, str] | None = None  # the dataset the folder's first file is of, and that file
        self.unlabeled_tables: list[tuple[Path, str, pixel_tables.PixelLayout, str]] = []  # read at the end

    def add_file(self, path: Path, split: str, label: int | None) -> None:
        rel = self.rel(path)
        kind, told = file_kind(path)
        stem = told.stem if isinstance(told, idx_files.Idx | stl10.StlName | pcam.PcamName) else path.stem
        split = split_of_stem(stem, self.split)
        if kind is None and path.name in stl10.COMPANIONS and any(path.parent.glob("*_X.bin")):
            self.identity.append([split, rel, None, path.stat().st_size, 0])  # read with the STL-10 images beside it
            return  # (fold_indices.txt: not converted)
        if kind is None and pcam.is_companion(path):
            self.identity.append([split, rel, None, path.stat().st_size, 0])  # PCam's patch coordinates or
            return  # masks: not converted
        if kind is None:
            self.rejected.append(Rejection(split, rel, NOT_ONE))
            return
        images = named_by(path) if kind == "map" else path
        if images is None:
            self.rejected.append(Rejection(split, rel, "a class map without the images whose classes it names "
                                                       "beside it: not read"))
            return
        if self.folder is None:
            self.folder = path.parent
        if path.parent != self.folder:
            self.rejected.append(Rejection(split, rel, f"a second dataset: the first is in "
                                                       f"{self.rel(self.folder)}; convert each folder apart"))
            return
        dataset = dataset_of(*file_kind(images), images) if kind == "map" else dataset_of(kind, told, path)
        self.dataset = self.dataset or (dataset, images.name)  # (a map's: the images it names)
        if dataset != self.dataset[0]:
            self.rejected.append(Rejection(split, rel, f"a second dataset: {self.dataset[1]}'s is the one converted "
                                                       "from this folder; convert each from a folder of its own "
                                                       "(links to its files will do)"))
            return
        if kind == "map":
            self.identity.append([split, rel, None, path.stat().st_size, 0])  # read with the images it names
            return
        if self.opts.multi_label and kind not in ("npz", "npy"):
            self.rejected.append(Rejection(split, rel, f"{WHAT[kind]} gives one class an image; --multi-label reads "
                                                       "the rows of flags of NumPy arrays: convert it apart"))
            return
        found = 0
        try:
            if kind == "table":
                found = self._add_pixel_table(path, rel, told, split)  # type: ignore[arg-type]
            elif kind == "idx":
                found = self._add_idx(path, rel, told, split)  # type: ignore[arg-type]
            elif kind == "cifar":
                found = self._add_batch(path, rel, split)
            elif kind == "mat":
                found = self._add_mat(path, rel, split)
            elif kind == "stl":
                found = self._add_stl(path, rel, told, split)  # type: ignore[arg-type]
            elif kind == "h5":
                found = self._add_h5(path, rel, told, split)  # type: ignore[arg-type]
            elif kind == "npz":
                found = numpy_rows.add_npz(self, path, rel, split)
            elif kind == "digits":
                found = self._add_digit_text(path, rel, split)
            elif kind == "npy":
                found = numpy_rows.add_array_file(self, path, rel, told, split)  # type: ignore[arg-type]
        except TableError as exc:
            self.rejected.append(Rejection(split, rel, str(exc)))
        self.identity.append([split, rel, None, path.stat().st_size, found])

    def no_label_field(self, labels_are: str) -> None:
        """TableError when --label-field is given: it names a field of CIFAR batches, and the file's labels are
        where `labels_are` says."""
        if self.opts.label_field:
            raise TableError(f"--label-field names a field of CIFAR batches; {labels_are}")

    def _add_batch(self, path: Path, rel: str, split: str) -> int:
        meta = next((path.with_name(m) for m in cifar.META if path.with_name(m).is_file()), None)
        if meta is None:
            raise TableError(f"no meta file beside it ({' or '.join(cifar.META)}): it names the classes")
        names, field = cifar.class_names(meta, self.opts.label_field)
        batch = cifar.read_batch(path, field)
        label = None if self.opts.unlabeled else field
        columns = Columns("data", label, names)
        self.labels.agree(rel, label, columns.names)
        return sum(self.add_row(png_bytes(image), y if label else None, columns, split, f"{rel}#{i}", str(path))
                   for i, (image, y) in enumerate(zip(batch.images, batch.labels, strict=True)))

    def _add_idx(self, path: Path, rel: str, idx: idx_files.Idx, split: str) -> int:
        if idx.packed and path.with_name(path.name[:-len(idx.packed)]).is_file():
            return 0  # the unpacked copy beside it is read
        if not idx.images:
            if not any(p.is_file() for p in idx.partner(path)):
                raise TableError(f"labels without their images file ({idx.partner(path)[0].name})")
            return 0  # read with its images
        self.no_label_field("an IDX file has one label an image")
        if idx_files.nist_beside_qmnist(path, idx):
            raise TableError("NIST's digits, QMNIST's train and test images among them: beside QMNIST's files they "
                             "would be converted twice; convert this pair from a folder of its own")
        images, count = idx_files.read_idx(path, 3)
        if idx.stem.lower().startswith("emnist"):
            images = images.transpose(0, 2, 1)  # EMNIST's images are stored transposed
        labels: list[int | None] = [None] * len(images)
        label, names = None, None
        if not self.opts.unlabeled:
            where = next((p for p in idx.partner(path) if p.is_file()), None)
            if where is None:
                raise TableError(f"no labels file beside it ({idx.partner(path)[0].name}); --unlabeled converts it "
                                 "without labels")
            values, label_count = idx_files.read_labels(where, idx_files.idx_name(where.name))  # type: ignore[arg-type]
            if label_count != count:
                raise TableError(f"{count} images and {label_count} labels in {where.name}")
            labels, label = [int(v) for v in values[:len(images)]], where.name
            mapped = class_map_of(path, "idx", idx)
            names = None if mapped is None else class_maps.read(mapped)
        columns = Columns("images", label, names)
        self.labels.agree(rel, label, names)
        if len(images) < count:
            self.rejected.append(Rejection(split, f"{rel}#{len(images)}", f"the file is cut short: {len(images)} of "
                                                                          f"{count} images are whole"))
        if label is not None and len(labels) < len(images):
            self.rejected.append(Rejection(split, f"{rel}#{len(labels)}", f"the labels file is cut short: "
                                                                          f"{len(labels)} labels for {len(images)} "
                                                                          f"whole images"))
        return sum(self.add_row(png_bytes(image), y, columns, split, f"{rel}#{i}", str(path))
                   for i, (image, y) in enumerate(zip(images, labels, strict=False)))

    def _add_digit_text(self, path: Path, rel: str, split: str) -> int:
        self.no_label_field("USPS's and SEMEION's labels are on each image's line")
        label = None if self.opts.unlabeled else "label"
        columns = Columns("pixels", label, None)
        self.labels.agree(rel, label, None)
        found = 0
        try:
            for number, image, y in digit_texts.rows(path):
                pixels = image if isinstance(image, str) else png_bytes(image)
                found += self.add_row(pixels, y if label else None, columns, split, f"{rel}#{number}", str(path))
        except TableError as exc:  # the lines before it are kept
            self.rejected.append(Rejection(split, rel, str(exc)))
        return found

    def _add_mat(self, path: Path, rel: str, split: str) -> int:
        self.no_label_field("a MATLAB file's labels are its 'y'")
        digits = svhn.read_digits(path, labelled=not self.opts.unlabeled)
        label = None if digits.labels is None else "y"
        columns = Columns("X", label, None)
        self.labels.agree(rel, label, None)
        labels = [None] * len(digits.images) if digits.labels is None else digits.labels
        grey = digits.images.shape[3] == 1
        return sum(self.add_row(png_bytes(image[:, :, 0] if grey else image), y, columns, split, f"{rel}#{i}",
                                str(path)) for i, (image, y) in enumerate(zip(digits.images, labels, strict=True)))

    def _add_stl(self, path: Path, rel: str, name: stl10.StlName, split: str) -> int:
        if not name.images:
            if not name.partner(path).is_file():
                raise TableError(f"labels without their images file ({name.partner(path).name})")
            return 0  # read with its images
        self.no_label_field("STL-10's labels are its _y.bin files")
        size = path.stat().st_size
        count, rest = divmod(size, stl10.IMAGE)
        labels: list[int | str | None] = [None] * count
        label, names = None, None
        if not self.opts.unlabeled:
            where = name.partner(path)
            if not where.is_file():
                raise TableError(f"no labels file beside it ({where.name}); --unlabeled converts every file without "
                                 "labels")
            names = stl10.class_names(path.with_name(stl10.CLASS_NAMES))
            labels, label = stl10.labels(where, count, len(names), cut=rest > 0), "y"
        columns = Columns("X", label, names)
        self.labels.agree(rel, label, names)
        if rest:
            self.rejected.append(Rejection(split, f"{rel}#{count}", f"the file is cut short: {count} whole images, "
                                                                     f"then {rest} bytes"))
        return sum(self.add_row(y if isinstance(y, str) else png_bytes(image), y, columns, split, f"{rel}#{i}",
                                str(path)) for i, (image, y) in enumerate(zip(stl10.images(path), labels, strict=True)))

    def _add_h5(self, path: Path, rel: str, name: pcam.PcamName, split: str) -> int:
        if name.gz:
            if name.unpacked(path).is_file():
                return 0  # torchvision keeps the download beside the file it unpacked, which is read
            raise TableError(f"a gzip-compressed HDF5 file, which is read in place only unpacked: gunzip it "
                             f"(to {name.unpacked(path).name})")
        if not name.images:
            if not pcam.images_beside(path, name.stem):
                raise TableError(f"labels without their images file ({name.partner(path).name})")
            return 0  # read with its images
        self.no_label_field("PCam's labels are the 'y' of its _y.h5 files")
        with pcam.images(path) as pictures:
            labels: list[int | None] = [None] * pictures.count
            label = None
            if not self.opts.unlabeled:
                where = name.partner(path)
                if not where.is_file():
                    raise TableError(f"no labels file beside it ({where.name}); --unlabeled converts it without "
                                     "labels")
                try:
                    labels, label = pcam.read_labels(where, pictures.count), "y"
                except TableError as exc:
                    raise TableError(f"{where.name}: {exc}") from exc
            columns = Columns("x", label, None)
            self.labels.agree(rel, label, None)
            return sum(self.add_row(image if isinstance(image, str) else png_bytes(image), y, columns, split,
                                     f"{rel}#{i}", str(path))
                       for i, (image, y) in enumerate(zip(pictures, labels, strict=True)))

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
        self.no_label_field(f"a table of pixels has its label in the column named "
                             f"{', '.join(pixel_tables.LABEL_COLUMNS)}")
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
                image = row.image if isinstance(row.image, str) else png_bytes(row.image)
                found += self.add_row(image, row.label if label else None, columns, row_split, where, str(path))
        except TableError as exc:
            self.rejected.append(Rejection(split, rel, str(exc)))  # the rows before it are kept
        return found


def discover_array_files(src: Path, opts: TableOptions, *, follow_symlinks: bool = True) -> Discovery:
    """The images of the CIFAR batches, IDX files or tables of pixels under `src`."""
    if opts.image_field:
        raise ValueError(f"--image-field names the image column of a table; {src} holds CIFAR batches, IDX files or "
                         "tables of pixels")
    return collected(ArrayFiles(src, opts, follow=follow_symlinks), "arrays")
