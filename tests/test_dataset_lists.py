"""What the five datasets labelled by their own lists (converters/images/dataset_lists.py: CelebA, Pascal VOC, COCO,
CheXpert, MIMIC-CXR-JPG) share with every other image source: the identity a resumed run checks names each image
taken, with its size; a linked image is followed unless asked not to; and without --multi-label the refusal names
the source. The layouts are the ones each dataset's own test file builds."""

from __future__ import annotations

import shutil

import pytest
from test_celeba import _torchvision_layout
from test_chexpert import _chexpert
from test_coco import _coco
from test_mimic_cxr import _mimic
from test_voc import _voc

from converters.images.discover import discover_images
from fastdata.errors import ConvertError

LAYOUTS = {"celeba": (_torchvision_layout, None), "voc": (_voc, None), "coco": (_coco, None),
           "chexpert": (_chexpert, "ones"), "mimic": (_mimic, "ones")}


@pytest.mark.parametrize("name", LAYOUTS)
def test_the_identity_names_each_image_taken_and_a_link_is_followed_unless_asked_not_to(tmp_path, name):
    build, uncertain = LAYOUTS[name]
    src = build(tmp_path / "data")
    found = discover_images(src, multi_label=True, uncertain=uncertain)
    items = [it for its in found.splits.values() for it in its]
    sizes = {rel: size for _, rel, _, size in found.identity}
    assert items and {it.rel: (src / it.rel).stat().st_size for it in items} == {it.rel: sizes[it.rel] for it in items}
    first = items[0]
    outside = tmp_path / "elsewhere.jpg"
    shutil.move(src / first.rel, outside)
    (src / first.rel).symlink_to(outside)
    followed = discover_images(src, multi_label=True, uncertain=uncertain)
    assert first.rel in {it.rel for its in followed.splits.values() for it in its}
    kept = discover_images(src, multi_label=True, uncertain=uncertain, follow_symlinks=False)
    assert first.rel not in {it.rel for its in kept.splits.values() for it in its}
    assert first.rel in {r.source for r in kept.rejected}


@pytest.mark.parametrize("name", LAYOUTS)
def test_without_the_option_the_refusal_names_the_source(tmp_path, name):
    build, _ = LAYOUTS[name]
    src = build(tmp_path / "data")
    with pytest.raises(ConvertError) as err:
        discover_images(src)
    assert str(err.value).startswith(f"{src} is laid out as ") and "--multi-label" in str(err.value)
