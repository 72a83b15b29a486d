"""FGVC-Aircraft as torchvision's `FGVCAircraft` downloads it (`fgvc-aircraft-2013b/`): `data/images/1025794.jpg`
..., and in `data/` a list an annotation level and split (`images_variant_train.txt`: `1025794 707-320`, an image id
and its class, which may hold spaces: `1340192 Cessna 172`), with `variants.txt` naming the 100 variants in order.

- The classes are the variants, in `variants.txt`'s order (torchvision's labels); without it, the variants the lists
  name, sorted. The splits are the lists': train, val and test (`trainval` where there is no train list).
- An image in two splits, a line without a class, or a class `variants.txt` does not name stops the conversion,
  saying so: the lists are not FGVC-Aircraft's. Images no list names are rejected as not listed.
"""

from __future__ import annotations

from pathlib import Path

from converters.images.labels_csv import Labels
from converters.images.list_text import list_text
from fastdata.errors import ConvertError

IMAGES = "images"
CLASSES = "variants.txt"
SPLITS = {"train": "train", "val": "val", "test": "test"}
MAX_FILE = 1 << 24  # bytes of a list read (the real ones hold a few thousand lines)


def found(src: Path) -> Path | None:
    """The folder of FGVC-Aircraft's images and lists (`fgvc-aircraft-2013b/data/`, or SRC itself when it is that
    folder), None for any other source."""
    for data in (src / "data", src):
        if (data / IMAGES).is_dir() and any((data / f"images_variant_{s}.txt").is_file() for s in (*SPLITS,
                                                                                                  "trainval")):
            return data
    return None


def _lines(path: Path) -> list[tuple[int, str, str]]:
    text = list_text(path, MAX_FILE, "an FGVC-Aircraft list")
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        image, _, label = line.strip().partition(" ")
        if not label.strip():
            raise ConvertError(f"{path}:{n}: expected an image id and its class, got {line!r}")
        out.append((n, image, label.strip()))
    return out


def read_fgvc(data: Path) -> Labels:
    """Each listed image's variant, by its id (`1025794`, the file `images/1025794.jpg`), with its split."""
    lists = {split: data / f"images_variant_{split}.txt" for split in SPLITS}
    if not lists["train"].is_file():
        lists["train"] = data / "images_variant_trainval.txt"
    rows: dict[str, str] = {}
    splits: dict[str, str] = {}
    for split, path in lists.items():
        if not path.is_file():
            continue
        for n, image, label in _lines(path):
            if image in splits:
                raise ConvertError(f"{path}:{n}: image {image} is in {splits[image]} too: an image has one split")
            rows[image], splits[image] = label, split
    names = sorted(set(rows.values()))
    if (data / CLASSES).is_file():
        names = [line.strip() for line in (data / CLASSES).read_text(encoding="utf-8").splitlines() if line.strip()]
        unknown = sorted(set(rows.values()) - set(names))
        if unknown:
            raise ConvertError(f"{data / CLASSES} does not name the class {unknown[0]!r} a list gives: the lists are "
                               "not FGVC-Aircraft's")
    return Labels(rows, tuple(names), splits)
