"""Find the images of an ImageNet-style tree: `SRC/<class>/...`, `SRC/<split>/<class>/...` (or
`SRC/<class>/<split>/...`), the files a `filename,class` CSV lists, or files whose names hold their classes
(name_labels.py). Class index = position in the sorted class names (ImageFolder); the class ids of a CSV (whole
numbers) stay the labels they are (`label_order`; the CSV is read by labels_csv.py)."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from pathlib import Path

from converters.class_folders import ClassFolders, split_classes
from converters.images import celeba, chexpert, coco, flowers102, voc
from converters.images.array_files import discover_array_files, has_array_files
from converters.images.encode import DEFAULT_MAX_PIXELS
from converters.images.labels_csv import (
    EXTENSIONS,
    Labels,
    label_order,
    listed_names,
    read_labels,
    warn_if_a_class_each,
)
from converters.images.name_labels import class_of_name, compile_label_pattern
from converters.images.table_columns import TableOptions, bytes_limit
from converters.images.tables import discover_tables, table_files
from converters.images.tfrecords import discover_tfrecords, has_tfrecords
from converters.kind import Discovery
from converters.sample import Rejection, WorkItem
from converters.tree import SPLIT_FOLDERS, Collector, is_folder, listed, split_folders, split_of_folder
from fastdata.errors import ConvertError

log = logging.getLogger(__name__)
TABLE_LOOK = 2000  # files looked at for tables of images, and for no image file among them


def _check_file(path: Path, rel: str, split: str) -> tuple[int | None, Rejection | None]:
    """(size, None) for a usable file, or (None, rejection) saying why it is not (a regular file: `Walk.problem`
    was asked before)."""
    if path.suffix.lower() not in EXTENSIONS:
        return None, Rejection(split, rel, f"unsupported extension {path.suffix!r}; allowed: {', '.join(EXTENSIONS)}")
    try:
        return path.stat().st_size, None
    except OSError as exc:
        return None, Rejection(split, rel, f"unreadable: {exc.strerror or exc}")


class _Collector(Collector):
    pattern: re.Pattern[str] | None = None  # --label-pattern: each file's class from its name (a string, for now)

    def add_file(self, path: Path, split: str, label: int | str | tuple[int, ...] | None) -> None:
        rel = self.rel(path)
        size, rejection = _check_file(path, rel, split)
        if rejection is None and self.pattern is not None:
            label, problem = class_of_name(self.pattern, path.name)
            rejection = None if problem is None else Rejection(split, rel, problem)
        if rejection is not None:
            self.rejected.append(rejection)
            return
        self.items.setdefault(split, []).append(WorkItem(split=split, rel=rel, source=str(path), label=label))
        self.identity.append([split, rel, label, size])


def _take_listed(col: _Collector, folder: Path, csv_path: Path, split: str,
                 classes: tuple[str, ...] | None = None, table: Labels | None = None,
                 skip: tuple[str, ...] = (), multi: bool = False, listing: str | None = None) -> tuple[str, ...]:
    """Take the files under `folder` a labels CSV lists, named by their paths relative to `folder` (`a.jpg`,
    `part_1/a.jpg`), each in the split its row gives (a split column's, else `split`); every other file is rejected
    as not listed, and so is a row whose class is not among `classes` (None: the CSV's own classes are the classes).
    `table`: the labels, read already from `csv_path`; `skip`: the files directly under `folder` read with them,
    which are no images to reject. `multi` (--multi-label): a row names several classes, and a file's label is the
    sorted tuple of their indices. `listing`: what rejections name as the list (`csv_path`'s name). Returns the
    classes."""
    prefix = "" if folder == col.src else col.rel(folder) + "/"
    # no `root` for the walk: `folder` is the source itself, or a split folder that holds no folder
    found = [(col.rel(path), path, problem) for path, problem in col.walk.files(folder)]
    found = [(rel, path, problem) for rel, path, problem in found if path.parent != folder or path.name not in skip]
    names = [rel[len(prefix):] for rel, _, _ in found]
    labels, own, splits = table or read_labels(csv_path, names, folder, multi=multi)
    listing = listing or csv_path.name
    if splits is not None and prefix and table is None:
        raise ConvertError(f"{csv_path} has a split column: --labels {split}=FILE puts every file it lists in "
                           f"{split}; give it as --labels FILE instead")
    row_split = splits or dict.fromkeys(labels, split)  # a split column's, else the one split of the folder
    classes = own if classes is None else classes
    index = {c: i for i, c in enumerate(classes)}
    seen = set()
    listed, ambiguous = listed_names(labels, names)
    for name, (rel, path, problem) in zip(names, found):
        row = listed.get(name)
        if row is not None:
            seen.add(row)
        if problem is not None:  # a link not followed, a loop, a special file: said, never opened
            col.rejected.append(Rejection(split if row is None else row_split[row], rel, problem))
        elif row is None:
            col.rejected.append(Rejection(split, rel, f"not listed in labels file {listing}"))
        elif multi:
            col.add_file(path, row_split[row], tuple(sorted(index[c] for c in labels[row])))
        elif labels[row] not in index:
            col.rejected.append(Rejection(split, rel, f"class not among train's classes: {labels[row]!r}"))
        else:
            col.add_file(path, row_split[row], index[labels[row]])
    for name in sorted(set(labels) - seen):
        if name in ambiguous:
            col.rejected.append(Rejection(row_split[name], prefix + name, f"listed in {listing} without an "
                                          f"extension, which several files have ({', '.join(ambiguous[name])}): "
                                          "name the file whole"))
        else:
            col.rejected.append(Rejection(row_split[name], prefix + name, f"listed in {listing} but no such "
                                          "file in the source"))
    return classes


def _discover_listed(src: Path, csv_path: Path, split: str, follow: bool, multi: bool = False) -> Discovery:
    """The files a labels CSV lists, anywhere under `src` (`_take_listed`)."""
    col = _Collector(src, follow=follow)
    classes = _take_listed(col, src, csv_path, split, multi=multi)
    return Discovery(col.items, classes, col.rejected, "flat+labels", col.identity)


def _discover_flowers(src: Path, split: str, follow: bool) -> Discovery:
    """Oxford Flowers-102 (flowers102.py): `jpg/` labelled by `imagelabels.mat`, split by `setid.mat`."""
    col = _Collector(src, follow=follow)
    table = flowers102.read_flowers(src)
    classes = _take_listed(col, src, src / flowers102.LABELS, split, table=table,
                           skip=(flowers102.LABELS, flowers102.SETID))
    return Discovery(col.items, classes, col.rejected, "flowers102", col.identity)


def _discover_celeba(src: Path, files: tuple[Path, Path], split: str, follow: bool, multi: bool) -> Discovery:
    """CelebA (celeba.py): its images' attributes, with --multi-label, split by its partition file."""
    if not multi:
        raise ConvertError(celeba.NEEDS_OPTION.format(src=src, attributes=files[0].name, folder=celeba.FOLDER))
    col = _Collector(src, follow=follow)
    table = celeba.read_celeba(src, *files)
    classes = _take_listed(col, src, files[0], split, table=table, skip=celeba.FILES, multi=True)
    return Discovery(col.items, classes, col.rejected, "celeba", col.identity)


def _discover_voc(src: Path, split: str, follow: bool, multi: bool) -> Discovery:
    """Pascal VOC (voc.py): `JPEGImages/` with the classes and splits of the lists in `ImageSets/Main/`."""
    if not multi:
        raise ConvertError(voc.NEEDS_OPTION.format(src=src))
    table, unmarked = voc.read_voc(src)
    col = _Collector(src, follow=follow)
    classes = _take_listed(col, src / voc.IMAGES, src / voc.LISTS, split, table=table, multi=True,
                           listing=voc.LISTS.as_posix())
    for i, r in enumerate(col.rejected):  # the images of a split no class list marks: not merely unlisted
        listed_in = unmarked.get(Path(r.source).stem) if r.reason.startswith("not listed in") else None
        if listed_in is not None:
            col.rejected[i] = Rejection(listed_in, r.source, voc.UNMARKED.format(split=listed_in))
    return Discovery(col.items, classes, col.rejected, "voc", col.identity)


def _discover_coco(src: Path, splits: list[tuple[str, Path, Path]], follow: bool, multi: bool) -> Discovery:
    """COCO (coco.py): each split's folder with the classes its instances file gives its images."""
    if not multi:
        raise ConvertError(coco.NEEDS_OPTION.format(src=src))
    col = _Collector(src, follow=follow)
    classes: tuple[str, ...] = ()
    for split, instances, folder, table in coco.read_coco(src, splits):
        classes = _take_listed(col, folder, instances, split, table=table, multi=True)
    return Discovery(col.items, classes, col.rejected, "coco", col.identity)


def _discover_chexpert(src: Path, files: list[tuple[str, Path]], follow: bool, multi: bool,
                       uncertain: str | None) -> Discovery:
    """CheXpert (chexpert.py): the X-rays its labels files list, each with its findings."""
    if not multi:
        raise ConvertError(chexpert.NEEDS_OPTION.format(src=src))
    col = _Collector(src, follow=follow)
    table = chexpert.read_chexpert(src, files, uncertain)
    classes = _take_listed(col, src, files[0][1], "train", table=table, skip=tuple(chexpert.FILES), multi=True,
                           listing=" and ".join(path.name for _, path in files))
    return Discovery(col.items, classes, col.rejected, "chexpert", col.identity)


def _discover_unlabeled(src: Path, top: list[str], split: str, follow: bool,
                        pattern: re.Pattern[str] | None = None) -> Discovery:
    """Every image under `src`, without a label or (`pattern`) with the class its file name gives: split folders
    (`train/val/test` and their aliases, tree.py) are splits, anything else `split`; class folders are plain
    folders."""
    col = _Collector(src, follow=follow)
    col.pattern = pattern
    splits = split_folders([n for n in top if is_folder(src / n, follow=follow)])
    if splits:
        col.reject_outside(top, list(splits))
        for folder, s in splits.items():
            col.add_tree(src / folder, s, None)
    else:
        col.add_tree(src, split, None)
    if pattern is None:
        return Discovery(col.items, (), col.rejected, "unlabeled", col.identity)
    names = [str(it.label) for items in col.items.values() for it in items]
    warn_if_a_class_each("--label-pattern", names, "images", "does its group match the class alone?")
    classes = label_order(set(names))
    index = {c: i for i, c in enumerate(classes)}
    items = {s: [replace(it, label=index[str(it.label)]) for it in its] for s, its in col.items.items()}
    return Discovery(items, classes, col.rejected, "name", col.identity)


def _warn_if_splits_by_other_names(src: Path, classes: tuple[str, ...], follow: bool) -> None:
    """Log a warning when every class folder holds no file but the same two or more folders: a
    `SRC/<split>/<class>/` tree whose split folders have names no split has (`seg_train/`, `Train_Set/`), each
    taken for a class of its own."""
    inner = set()
    for c in classes:
        names = listed(src / c)
        if any(not is_folder(src / c / n, follow=follow) for n in names):
            return
        inner.add(frozenset(names))
    if len(classes) >= 2 and len(inner) == 1 and len(next(iter(inner))) >= 2:
        log.warning("the class folders %s hold no image but the same folders (%s): if they are splits, name them "
                    "%s; as they are, each is one class", ", ".join(classes), ", ".join(sorted(next(iter(inner)))),
                    SPLIT_FOLDERS)


def _splits_inside(src: Path, classes: tuple[str, ...], follow: bool) -> dict[str, dict[str, str]] | None:
    """For a `SRC/<class>/<split>/` tree (every class folder holds split folders and nothing else: `cat/train/`,
    `cat/val/`): class -> (folder -> split). None for any other tree. Read as one split, val's images were
    trained on."""
    inside = {}
    for c in classes:  # an empty class folder reads either way
        names = listed(src / c)
        if any(split_of_folder(n) is None or not is_folder(src / c / n, follow=follow) for n in names):
            return None
        inside[c] = split_folders(names)
    return inside if any(inside.values()) else None


def labels_of_split(value: str | None) -> tuple[str, Path] | None:
    """`--labels val=FILE`: (the split, FILE), which labels the loose images of that split folder; None for a
    plain `--labels FILE` (a file whose name holds `=` and exists is a plain file)."""
    if not value or "=" not in value or Path(value).is_file():
        return None
    name, _, path = value.partition("=")
    split = split_of_folder(name)
    return None if split is None else (split, Path(path).expanduser())  # `~` after `=` is left as it is by zsh


MULTI_LABEL_SOURCES = ("--multi-label reads the classes of each image from a labels CSV of the whole source "
                       "(--labels FILE), from a column of Parquet or Arrow tables that lists them, from a feature "
                       "of TFRecord files that lists them, or from the lists of CelebA, Pascal VOC, COCO and "
                       "CheXpert (docs/converting.md, \"Several classes an image\")")
LOOSE_SPLIT = "not inside a class folder: the split folder has none; --labels {split}=FILE labels its images"


IMAGES_FOLDER = "images"  # Tiny ImageNet's `val/images/` and `test/images/`: a split's loose images one folder down
TINY_LABELS = "val_annotations.txt"  # beside Tiny ImageNet's `val/images/`: `val_0.JPEG<TAB>n03444034<TAB>box`


def _loose_folders(src: Path, named: dict[str, str], follow: bool) -> dict[str, Path | None]:
    """Split folder -> where it keeps loose images: itself when it holds no folder; its one folder `images/` (Tiny
    ImageNet's `val/images/`), unless another split has a class folder of that name; None when it holds class
    folders."""
    folders = {f: [n for n in listed(src / f) if is_folder(src / f / n, follow=follow)] for f in named}
    images_class = any(IMAGES_FOLDER in names and names != [IMAGES_FOLDER] for names in folders.values())
    return {f: src / f if not names else src / f / IMAGES_FOLDER if names == [IMAGES_FOLDER] and not images_class
            else None for f, names in folders.items()}


def _annotated_split(src: Path, named: dict[str, str], loose: dict[str, Path | None]) -> tuple[str, Path] | None:
    """(the split, its labels file) where a split folder is Tiny ImageNet's `val/`: `images/` beside
    `val_annotations.txt`, which labels them as `--labels val=val/val_annotations.txt` would."""
    for folder, split in named.items():
        labels = src / folder / TINY_LABELS
        if labels.is_file() and loose[folder] == src / folder / IMAGES_FOLDER:
            log.info("%s/ is labelled by %s (Tiny ImageNet's layout)", folder, labels)
            return split, labels
    return None


def discover_images(src: Path, /, *, labels_csv: str | None = None, split: str = "train",
                    unlabeled: bool = False, follow_symlinks: bool = True, image_field: str | None = None,
                    label_field: str | None = None, max_pixels: int = DEFAULT_MAX_PIXELS,
                    label_pattern: str | None = None, multi_label: bool = False,
                    uncertain: str | None = None) -> Discovery:
    """The inputs of an image source. `label_pattern` gives each file the class its name holds (name_labels.py),
    the tree walked as unlabeled. A folder with no subfolder (and no labels CSV), split folders of loose images
    only, or any tree with `unlabeled=True`, give unlabeled samples. `labels_csv` lists the files of the whole tree,
    or (`val=FILE`) those of a split folder of loose images beside split folders of class folders (ImageNet's
    val/). A tree of Parquet or Arrow tables and no image file is read by tables.py."""
    if not src.is_dir():
        raise ConvertError(f"source {src} is not a directory")
    given = [o for o, v in (("--labels", labels_csv), ("--label-pattern", label_pattern), ("--unlabeled", unlabeled))
             if v]
    if len(given) > 1 or multi_label and (unlabeled or label_pattern):
        given = given if len(given) > 1 else ["--multi-label", given[0]]
        raise ValueError(f"{' and '.join(given)} contradict each other: pick one")
    if uncertain is not None and (unlabeled or label_pattern or labels_csv or not chexpert.found(src)):
        raise ValueError(f"--uncertain reads the uncertain findings of CheXpert's own files; {src} is not laid out "
                         "as CheXpert (train.csv of a Path column beside train/), or other labels are asked for")
    split_labels = labels_of_split(labels_csv)
    if multi_label and split_labels is not None:
        raise ValueError(MULTI_LABEL_SOURCES)
    if labels_csv and split_labels is None:
        return _discover_listed(src, Path(labels_csv), split, follow_symlinks, multi_label)
    tables = bool(table_files(src, limit=TABLE_LOOK))
    tfrecords = not tables and has_tfrecords(src, limit=TABLE_LOOK)
    arrays = not tables and not tfrecords and has_array_files(src, limit=TABLE_LOOK)
    if tfrecords or tables or arrays:
        what = ("TFRecord files" if tfrecords else "image datasets kept as arrays" if arrays else
                "Parquet or Arrow tables")
        if split_labels or label_pattern:
            given = f"--labels {labels_csv}" if split_labels else "--label-pattern"
            raise ValueError(f"{given} labels image files; {src} holds {what}")
        if multi_label and arrays:
            raise ValueError(f"{MULTI_LABEL_SOURCES}; {src} holds {what}")
        tables = TableOptions(image_field, label_field, unlabeled, split, bytes_limit(max_pixels), multi_label)
        read = discover_tfrecords if tfrecords else discover_array_files if arrays else discover_tables
        return read(src, tables, follow_symlinks=follow_symlinks)
    if image_field or label_field:
        raise ValueError("--image-field and --label-field name the columns of Parquet or Arrow tables of images "
                         f"(or the features of TFRecord files); {src} holds image files, or no table")
    layout = None if unlabeled or label_pattern or labels_csv else celeba.found(src)
    if layout is not None:
        return _discover_celeba(src, layout, split, follow_symlinks, multi_label)
    if not (unlabeled or label_pattern or labels_csv) and voc.found(src):
        return _discover_voc(src, split, follow_symlinks, multi_label)
    instances = [] if unlabeled or label_pattern or labels_csv else coco.found(src)
    if instances:
        return _discover_coco(src, instances, follow_symlinks, multi_label)
    xrays = [] if unlabeled or label_pattern or labels_csv else chexpert.found(src)
    if xrays:
        return _discover_chexpert(src, xrays, follow_symlinks, multi_label, uncertain)
    if multi_label:
        raise ValueError(MULTI_LABEL_SOURCES)
    if not unlabeled and not label_pattern and not labels_csv and flowers102.is_flowers(src):
        return _discover_flowers(src, split, follow_symlinks)
    follow = follow_symlinks
    top = listed(src)
    if label_pattern:
        return _discover_unlabeled(src, top, split, follow, compile_label_pattern(label_pattern))
    dirs = [n for n in top if is_folder(src / n, follow=follow)]
    named = split_folders([n for n in dirs if split_of_folder(n) is not None])
    images_in = _loose_folders(src, named, follow)
    classy = {f: s for f, s in named.items() if images_in[f] is None}  # split folders of class folders
    split_labels = split_labels or (None if unlabeled else _annotated_split(src, named, images_in))
    labelled = None
    if split_labels:
        labelled = next((f for f, s in named.items() if s == split_labels[0]), None)
        if labelled is None:
            raise ConvertError(f"--labels {labels_csv}: {src} has no {split_labels[0]} folder")
        if labelled in classy:
            raise ConvertError(f"--labels {labels_csv}: {labelled}/ holds class folders, which label its images; "
                               "SPLIT=FILE labels a split folder of loose images")
    elif named and not classy and len(named) == len(dirs) and not unlabeled:
        log.warning("the split folders %s hold images but no class folder: converted unlabeled", ", ".join(named))
        unlabeled = True
    if unlabeled or not dirs:
        return _discover_unlabeled(src, top, split, follow)
    col = _Collector(src, follow=follow)
    if classy or labelled:
        layout = "split/class"
        folders = ClassFolders.of(split_classes(src, classy, follow=follow))  # () without classy
        classes = folders.classes
        if labelled:
            inner = images_in[labelled] or src / labelled
            classes = _take_listed(col, inner, split_labels[1], split_labels[0], classes if classy else None)
            for name in listed(src / labelled) if inner != src / labelled else ():  # beside `images/`
                if name != IMAGES_FOLDER and (src / labelled / name).resolve() != split_labels[1].resolve():
                    col.reject(src / labelled / name, split_labels[0], f"beside {labelled}/{IMAGES_FOLDER}/, which "
                                                                       "holds the split's images")
        index = {c: i for i, c in enumerate(classes)}
        loose = [f for f in named if f not in classy and f != labelled]
        for folder in loose:
            col.reject(src / folder, named[folder], LOOSE_SPLIT.format(split=named[folder]))
        col.reject_outside(top, list(named))
        for folder, s in classy.items():
            for name in listed(src / folder):
                path = src / folder / name
                if not is_folder(path, follow=follow):
                    col.reject(path, s, "not inside a class folder")
                elif name not in index:
                    col.reject(path, s, folders.why_not(name))
                else:
                    col.add_tree(path, s, index[name])
    else:
        folders = ClassFolders.of(dirs)
        classes = folders.classes
        inside = _splits_inside(src, classes, follow)
        layout = "class" if inside is None else "class/split"
        if inside is None:
            _warn_if_splits_by_other_names(src, classes, follow)
        for i, c in enumerate(classes):
            for folder, s in inside[c].items() if inside else [("", split)]:
                col.add_tree(src / c / folder if folder else src / c, s, i)
        for name in top:
            if name not in classes:
                col.reject(src / name, split, (name in dirs and folders.problems.get(name)) or
                           "not inside a class folder")
    col.warn_unused(classes, "images")
    return Discovery(col.items, classes, col.rejected, layout, col.identity)
