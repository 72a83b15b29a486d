"""Find the images of an ImageNet-style tree: `SRC/<class>/...`, `SRC/<split>/<class>/...` (or
`SRC/<class>/<split>/...`), the files a `filename,class` CSV lists (listed_files.py), files whose names hold their
classes (name_labels.py), a labels table in each split folder (folder_labels.py), or a dataset labelled by its own
lists (own_lists.py, dataset_lists.py) or by folders of its own (caltech101.py). Class index = position in the
sorted class names (ImageFolder); the class ids of a CSV (whole numbers) stay the labels they are (`label_order`;
the CSV is read by labels_csv.py)."""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import replace
from pathlib import Path

from converters.class_folders import ClassFolders, split_classes
from converters.images import folder_labels
from converters.images.array_files import discover_array_files
from converters.images.array_kinds import has_array_files, has_numpy_files
from converters.images.caltech101 import discover_caltech101
from converters.images.dataset_lists import discover_layout, reads_uncertain
from converters.images.encode import DEFAULT_MAX_PIXELS
from converters.images.imagenet_archives import discover_imagenet_archives
from converters.images.labels_csv import label_order, warn_if_a_class_each
from converters.images.listed_files import ImageCollector, take_listed
from converters.images.lsun import discover_lsun
from converters.images.name_labels import compile_label_pattern
from converters.images.omniglot import discover_omniglot
from converters.images.own_lists import discover_own_lists
from converters.images.table_columns import TableOptions, bytes_limit
from converters.images.tables import discover_tables, table_files
from converters.images.tfrecords import damaged_tfrecord, discover_tfrecords, has_tfrecords
from converters.images.top_folder import top_folder, under
from converters.kind import Discovery
from converters.tree import SPLIT_FOLDERS, split_folders, split_folders_in, split_of_folder
from converters.walk import is_folder, listed, readable
from fastdata.errors import ConvertError

log = logging.getLogger(__name__)
TABLE_LOOK = 2000  # files looked at for tables of images, and for no image file among them


def _discover_listed(src: Path, csv_path: Path, split: str, follow: bool, multi: bool = False,
                     columns: tuple[str | None, str | None] = (None, None)) -> Discovery:
    """The files a labels CSV lists, anywhere under `src` (`take_listed`)."""
    col = ImageCollector(src, follow=follow)
    classes = take_listed(col, src, csv_path, split, multi=multi, columns=columns)
    return Discovery(col.items, classes, col.rejected, "flat+labels", col.identity)


def _discover_unlabeled(src: Path, top: list[str], split: str, follow: bool,
                        pattern: re.Pattern[str] | None = None) -> Discovery:
    """Every image under `src`, without a label or (`pattern`) with the class its file name gives: split folders
    (`train/val/test` and their aliases, tree.py) are splits, anything else `split`; class folders are plain
    folders."""
    col = ImageCollector(src, follow=follow)
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
    `SRC/<split>/<class>/` tree whose split folders have names no split has (`trn/`, `tst/`, `fold1/`), each
    taken for a class of its own."""
    inner = set()
    for c in classes:
        if not readable(src / c):
            return
        names = listed(src / c)
        if any(not is_folder(src / c / n, follow=follow) for n in names):
            return
        inner.add(frozenset(names))
    if len(classes) >= 2 and len(inner) == 1 and len(next(iter(inner))) >= 2:
        log.warning("the class folders %s hold no image but the same folders (%s): if they are splits, name them "
                    "%s; as they are, each is one class", ", ".join(classes), ", ".join(sorted(next(iter(inner)))),
                    SPLIT_FOLDERS)


# folders a dataset keeps beside or above its images, never classes: read as class folders, a download's top folder
# (CUB's images/ and parts/, Oxford-IIIT Pet's annotations/, a YOLO export's images/ and labels/) was converted so
DATASET_FOLDERS = frozenset({"images", "imgs", "jpegimages", "annotations", "annotation", "labels", "masks", "trimaps",
                             "lists", "meta", "metadata", "segmentations", "imdb", "attributes", "parts"})


def _warn_if_dataset_folders(classes: tuple[str, ...]) -> None:
    """Log a warning when class folders are named as a dataset's own folders (`images/`, `annotations/`), or are
    letters that file the classes below them (SUN397's `a/abbey/`)."""
    named = [c for c in classes if c.lower() in DATASET_FOLDERS]
    if named:
        log.warning("the class folders %s are named as a dataset's folders, not as classes: if the source is a "
                    "download's top folder, convert the folder that holds its class folders, or see the layouts "
                    "that convert as they lie (docs/converting.md, \"Sources\")", ", ".join(named))
    if len(classes) >= 3 and all(len(c) == 1 and c.isalpha() for c in classes):  # (two may well be classes)
        log.warning("the class folders are the letters %s: SUN397 and Places365 file their classes below a letter "
                    "(a/abbey/); SUN397 converts as it lies with its ClassName.txt, Places365 from the folder holding "
                    "its categories_places365.txt and lists (docs/converting.md)", ", ".join(classes))


def _splits_inside(src: Path, classes: tuple[str, ...], follow: bool) -> dict[str, dict[str, str]] | None:
    """For a `SRC/<class>/<split>/` tree (every class folder holds split folders and nothing else: `cat/train/`,
    `cat/val/`): class -> (folder -> split). None for any other tree. Read as one split, val's images were
    trained on."""
    inside = {}
    for c in classes:  # an empty class folder reads either way, and so does one that cannot be read
        names = listed(src / c) if readable(src / c) else []
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
                       "of TFRecord files that lists them, from a split folder's Hugging Face metadata or Roboflow "
                       "_classes.csv, from the lists of CelebA, Pascal VOC, COCO, CheXpert and MIMIC-CXR-JPG, or "
                       "from the rows of flags of NumPy .npz files (MedMNIST's ChestMNIST) "
                       "(docs/converting.md, \"Several classes an image\")")
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
    if uncertain is not None and (unlabeled or label_pattern or labels_csv or not reads_uncertain(src)):
        raise ValueError(f"--uncertain reads the uncertain findings of CheXpert's or MIMIC-CXR-JPG's own files; {src} "
                         "is laid out as neither, or other labels are asked for")
    split_labels = labels_of_split(labels_csv)
    if multi_label and split_labels is not None:
        raise ValueError(MULTI_LABEL_SOURCES)
    if labels_csv and split_labels is None:
        return _discover_listed(src, Path(labels_csv), split, follow_symlinks, multi_label, (image_field, label_field))
    tables = bool(table_files(src, limit=TABLE_LOOK))
    tfrecords = not tables and has_tfrecords(src, limit=TABLE_LOOK)
    arrays = not tables and not tfrecords and has_array_files(src, limit=TABLE_LOOK)
    if tfrecords or tables or arrays:
        what = ("TFRecord files" if tfrecords else "image datasets kept as arrays" if arrays else
                "Parquet or Arrow tables")
        if split_labels or label_pattern:
            given = f"--labels {labels_csv}" if split_labels else "--label-pattern"
            raise ValueError(f"{given} labels image files; {src} holds {what}")
        if multi_label and arrays and not has_numpy_files(src, limit=TABLE_LOOK):
            raise ValueError(f"{MULTI_LABEL_SOURCES}; {src} holds {what}")
        tables = TableOptions(image_field, label_field, unlabeled, split, bytes_limit(max_pixels), multi_label)
        read = discover_tfrecords if tfrecords else discover_array_files if arrays else discover_tables
        return read(src, tables, follow_symlinks=follow_symlinks)
    meta = None if unlabeled or label_pattern or labels_csv else \
        folder_labels.found(src, follow_symlinks, image_field, label_field)
    if meta is not None:
        return folder_labels.discover_metadata(src, meta, split, follow_symlinks, multi_label)
    if (image_field or label_field) and not split_labels:
        raise ValueError("--image-field and --label-field name the columns of Parquet or Arrow tables of images, "
                         "the features of TFRecord files, the columns of a --labels CSV or of Hugging Face metadata "
                         f"(metadata.csv); {src} holds image files, or no table, and no labels CSV is given")
    layout = None if unlabeled or label_pattern or labels_csv else \
        discover_layout(src, split, follow_symlinks, multi_label, uncertain)
    if layout is not None:
        return layout
    read = functools.partial(discover_images, labels_csv=labels_csv, split=split, follow_symlinks=follow_symlinks,
                             image_field=image_field, label_field=label_field, max_pixels=max_pixels,
                             multi_label=multi_label, uncertain=uncertain)  # a download's top folder as the source
    inner = top_folder(src, follow=follow_symlinks) if multi_label else None
    if inner is not None:  # (a dataset --multi-label reads, in it)
        return under(read(inner), src, inner)
    if multi_label:
        damaged = damaged_tfrecord(src, limit=TABLE_LOOK)
        if damaged is not None:  # (a VOC record file whose first frame is damaged)
            raise ConvertError(f"--multi-label: {damaged.relative_to(src)} is named like a TFRecord file, but its "
                               "first frame is damaged or it is none (the frame's length fails its CRC), so no "
                               f"TFRecord file is read and {src} holds nothing --multi-label reads")
        raise ValueError(MULTI_LABEL_SOURCES)
    environments = None if label_pattern or labels_csv else discover_lsun(
        src, split, unlabeled=unlabeled, follow=follow_symlinks, max_bytes=bytes_limit(max_pixels))
    if environments is not None:
        return environments
    own = None if unlabeled or label_pattern or labels_csv else \
        discover_own_lists(src, split, follow_symlinks) or discover_caltech101(src, split, follow_symlinks) or \
        discover_omniglot(src, split, follow_symlinks) or \
        discover_imagenet_archives(src, follow_symlinks)
    if own is not None:
        return own
    inner = None if unlabeled or label_pattern else top_folder(src, follow=follow_symlinks)
    if inner is not None:
        return under(read(inner), src, inner)
    follow = follow_symlinks
    top = listed(src)
    if label_pattern:
        return _discover_unlabeled(src, top, split, follow, compile_label_pattern(label_pattern))
    dirs = [n for n in top if is_folder(src / n, follow=follow)]
    named = split_folders_in(src, dirs, follow=follow)
    unread = {f: s for f, s in named.items() if not readable(src / f)}  # left to the walk, which says why
    named = {f: s for f, s in named.items() if f not in unread}
    images_in = _loose_folders(src, named, follow)
    classy = {f: s for f, s in named.items() if images_in[f] is None}  # split folders of class folders
    split_labels = split_labels or (None if unlabeled else _annotated_split(src, named, images_in))
    labelled = None
    if split_labels:
        labelled = next((f for f, s in named.items() if s == split_labels[0]), None)
        if labelled is None:
            why = "its folder cannot be read" if split_labels[0] in unread.values() else \
                f"{src} has no {split_labels[0]} folder"
            raise ConvertError(f"--labels {labels_csv}: {why}")
        if labelled in classy:
            raise ConvertError(f"--labels {labels_csv}: {labelled}/ holds class folders, which label its images; "
                               "SPLIT=FILE labels a split folder of loose images")
    elif named and not classy and len(named) + len(unread) == len(dirs) and not unlabeled:
        log.warning("the split folders %s hold images but no class folder: converted unlabeled", ", ".join(named))
        unlabeled = True
    if unlabeled or not dirs or unread and not named:
        return _discover_unlabeled(src, top, split, follow)
    col = ImageCollector(src, follow=follow)
    if classy or labelled:
        layout = "split/class"
        folders = ClassFolders.of(split_classes(src, classy, follow=follow))  # () without classy
        classes = folders.classes
        if labelled:
            inner = images_in[labelled] or src / labelled
            classes = take_listed(col, inner, split_labels[1], split_labels[0], classes if classy else None,
                                  columns=(image_field, label_field))
            for name in listed(src / labelled) if inner != src / labelled else ():  # beside `images/`
                if name != IMAGES_FOLDER and (src / labelled / name).resolve() != split_labels[1].resolve():
                    col.reject(src / labelled / name, split_labels[0], f"beside {labelled}/{IMAGES_FOLDER}/, which "
                                                                       "holds the split's images")
        index = {c: i for i, c in enumerate(classes)}
        loose = [f for f in named if f not in classy and f != labelled]
        for folder in loose:
            col.reject(src / folder, named[folder], LOOSE_SPLIT.format(split=named[folder]))
        col.reject_outside(top, [*named, *unread])
        for folder, s in unread.items():
            col.add_tree(src / folder, s, None)  # (it cannot be read: the walk rejects it, saying why)
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
            # a class folder that holds no split folder as itself (one that cannot be read: the walk rejects it)
            for folder, s in inside[c].items() if inside and inside[c] else [("", split)]:
                col.add_tree(src / c / folder if folder else src / c, s, i)
        for name in top:
            if name not in classes:
                col.reject(src / name, split, (name in dirs and folders.problems.get(name)) or
                           "not inside a class folder")
    _warn_if_dataset_folders(classes)
    col.warn_unused(classes, "images")
    return Discovery(col.items, classes, col.rejected, layout, col.identity)
