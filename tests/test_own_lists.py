"""What the single-label datasets labelled by their own lists (converters/images/own_lists.py: Oxford Flowers-102,
FGVC-Aircraft, CUB-200-2011, Oxford-IIIT Pet, Food-101, Stanford Dogs, Stanford Cars, GTSRB as Kaggle copies it,
SUN397, Places365, iNaturalist; and Caltech-101, laid out by its folders) share with every other image source: the
layout the manifest names, the identity a resumed run checks (each image taken, with its label and size), and a
linked image followed unless asked not to. The layouts are the ones each dataset's own test file builds."""

from __future__ import annotations

import shutil

import pytest
from test_caltech101 import _caltech
from test_convert_flowers102 import flowers
from test_cub import _cub
from test_fgvc_aircraft import _aircraft
from test_food101_dtd import _food
from test_gtsrb import _kaggle
from test_inaturalist import _inat
from test_oxford_pet import _pets
from test_places365 import _places
from test_stanford_cars import _cars
from test_stanford_dogs import _dogs
from test_sun397 import _sun

from converters.images.discover import discover_images

LAYOUTS = {"flowers102": lambda root: flowers(root, [3, 1, 2], {"trnid": [1], "valid": [2], "tstid": [3]}),
           "fgvc_aircraft": _aircraft, "cub": _cub, "oxford_pet": _pets, "food101": _food, "stanford_dogs": _dogs,
           "stanford_cars": _cars, "gtsrb_kaggle": _kaggle, "sun397": _sun, "places365": _places,
           "inaturalist": _inat, "caltech101": _caltech}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_identity_names_each_image_taken_and_a_link_is_followed_unless_asked_not_to(tmp_path, layout):
    src = LAYOUTS[layout](tmp_path / "data")
    found = discover_images(src)
    assert found.layout == layout
    items = [it for its in found.splits.values() for it in its]
    entries = {rel: (split, label, size) for split, rel, label, size in found.identity}
    assert items and {it.rel: (it.split, it.label, (src / it.rel).stat().st_size) for it in items} == {
        it.rel: entries[it.rel] for it in items}
    first = items[0]
    outside = tmp_path / "elsewhere.jpg"
    shutil.move(src / first.rel, outside)
    (src / first.rel).symlink_to(outside)
    assert first.rel in {it.rel for its in discover_images(src).splits.values() for it in its}
    kept = discover_images(src, follow_symlinks=False)
    assert first.rel not in {it.rel for its in kept.splits.values() for it in its}
    assert first.rel in {r.source for r in kept.rejected}
