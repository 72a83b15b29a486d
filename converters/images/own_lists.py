"""Datasets of one class an image that come with lists of their own, converted as they lie: Oxford Flowers-102
(flowers102.py), FGVC-Aircraft (fgvc_aircraft.py), CUB-200-2011 and NABirds (cub.py), Oxford-IIIT Pet
(oxford_pet.py), Stanford Dogs (stanford_dogs.py), Stanford Cars (stanford_cars.py), Food-101 and DTD
(folder_lists.py). Each module finds its dataset's folder and reads its lists into `Labels`; the files of its images
folder are taken as any listed files are (listed_files.py). GTSRB as Kaggle copies it is one of them; as torchvision
and its own archives lay it out (gtsrb.py), its training signs lie in class folders and its test signs in a list's,
and its module takes them; so do SUN397's (sun397.py), whose classes are folders below a letter, and
Places365's (places365.py), whose training and validation images lie in folders of their own, and iNaturalist's
(inaturalist.py), whose files in COCO's shape split one folder of images. Datasets of several classes an image:
dataset_lists.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from converters.images import (
    cub,
    fgvc_aircraft,
    flowers102,
    folder_lists,
    gtsrb,
    inaturalist,
    oxford_pet,
    places365,
    stanford_cars,
    stanford_dogs,
    sun397,
)
from converters.images.labels_csv import Labels
from converters.images.listed_files import ImageCollector, take_listed
from converters.kind import Discovery


@dataclass(frozen=True)
class OwnLists:
    layout: str  # the manifest's name for it
    images: Path  # the folder whose files the lists name
    lists: Path  # the list that rejections name (`listing`: what they call all of them)
    read: Callable[[], Labels]
    listing: str | None = None
    skip: tuple[str, ...] = ()  # files directly in `images` read as lists, no images to reject
    why_unlisted: Callable[[str], tuple[str, str] | None] | None = None  # (split, reason) of a file no list names


def _found(src: Path) -> OwnLists | None:
    if flowers102.is_flowers(src):
        return OwnLists("flowers102", src, src / flowers102.LABELS, lambda: flowers102.read_flowers(src),
                        skip=(flowers102.LABELS, flowers102.SETID))
    data = fgvc_aircraft.found(src)
    if data is not None:
        return OwnLists("fgvc_aircraft", data / fgvc_aircraft.IMAGES, data / "images_variant_train.txt",
                        lambda: fgvc_aircraft.read_fgvc(data), "the images_variant lists")
    root = cub.found(src)
    if root is not None:
        return OwnLists("cub", root / cub.IMAGES, root / cub.LISTS[0], lambda: cub.read_cub(root))
    pets = oxford_pet.found(src)
    if pets is not None:
        return OwnLists("oxford_pet", pets / oxford_pet.IMAGES, pets / oxford_pet.LISTS["train"],
                        lambda: oxford_pet.read_pets(pets), "trainval.txt and test.txt")
    dogs = stanford_dogs.found(src)
    if dogs is not None:
        return OwnLists("stanford_dogs", dogs / stanford_dogs.IMAGES, dogs / stanford_dogs.LISTS["train"],
                        lambda: stanford_dogs.read_dogs(dogs), "train_list.mat and test_list.mat")
    cars = stanford_cars.found(src)
    if cars is not None:
        annotations = stanford_cars.ANNOTATIONS
        return OwnLists("stanford_cars", cars, cars / annotations["train"], lambda: stanford_cars.read_cars(cars),
                        "cars_train_annos.mat and cars_test_annos_withlabels.mat", skip=(annotations["test"],),
                        why_unlisted=stanford_cars.why_unlisted)
    release = stanford_cars.release_found(src)
    if release is not None:
        return OwnLists("stanford_cars", release, release / stanford_cars.RELEASE,
                        lambda: stanford_cars.read_release(release), skip=(stanford_cars.RELEASE,))
    kaggle = gtsrb.kaggle_found(src)
    if kaggle is not None:
        return OwnLists("gtsrb_kaggle", kaggle, kaggle / gtsrb.KAGGLE_LISTS["train"], lambda: gtsrb.read_kaggle(kaggle),
                        "Train.csv and Test.csv", skip=gtsrb.KAGGLE_SKIP)
    listed = folder_lists.found(src)
    if listed is not None:
        name, top = listed
        lists = folder_lists.DATASETS[name][1]
        return OwnLists(name, top / folder_lists.IMAGES, top / lists["train"],
                        lambda: folder_lists.read_lists(name, top), " and ".join(Path(p).name for p in lists.values()))
    return None


def discover_own_lists(src: Path, split: str, follow: bool) -> Discovery | None:
    """The images of a dataset labelled by its own lists, each in the split they give it (an image they leave out
    rejected in `split`), GTSRB's, SUN397's, Places365's and iNaturalist's as their modules take them; None for
    any other source."""
    own = _found(src)
    if own is None:
        return (gtsrb.discover_gtsrb(src, follow) or sun397.discover_sun397(src, split, follow)
                or places365.discover_places365(src, follow) or inaturalist.discover_inaturalist(src, follow))
    col = ImageCollector(src, follow=follow)
    classes = take_listed(col, own.images, own.lists, split, table=own.read(), skip=own.skip, listing=own.listing,
                          why_unlisted=own.why_unlisted)
    return Discovery(col.items, classes, col.rejected, own.layout, col.identity)
