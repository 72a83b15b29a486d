"""Adopted shards' non-JPEG members reach both image backends as the same pixels: transparency composited over
white, 16-bit and float images scaled, palettes expanded (`pixels.to_rgb`), whichever backend decodes them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest_adopt import MODE_MEMBERS, by_label, mode_shards, raw_tar

import fastdata
from converters.adopt import AdoptOptions, adopt
from fastdata.errors import ShardError

pytest.importorskip("nvidia.dali")
pytest.importorskip("kornia")


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mode_shards(tmp_path_factory.mktemp("adopt_pixels") / "s")


def test_eval_pixels_agree_and_transparency_is_white_on_both_backends(shards: Path) -> None:
    kornia = by_label(shards, "kornia", train=False)
    dali = by_label(shards, "dali", train=False)
    assert sorted(kornia) == sorted(dali) == sorted(MODE_MEMBERS)
    for label, (_, _, transparent) in MODE_MEMBERS.items():
        diff = (kornia[label].int() - dali[label].int()).abs()
        assert diff.max() <= 2, (label, int(diff.max()))
        # eval: resized to 36 x 43, centre crop 32: column 0 of the crop is column 6.5 of the 48 stored
        left = dali[label][:, :, 0]
        if transparent:
            assert (left == 255).all(), (label, left[:, 0].tolist())
        else:
            assert (left != 255).any(), label


def test_train_crops_agree_on_both_backends(shards: Path) -> None:
    kornia = by_label(shards, "kornia", train=True, seed=3)
    dali = by_label(shards, "dali", train=True, seed=3)
    assert sorted(kornia) == sorted(dali) == sorted(MODE_MEMBERS)
    for label in MODE_MEMBERS:
        diff = (kornia[label].int() - dali[label].int()).abs()
        assert diff.float().mean() < 0.5 and diff.max() <= 8, (label, float(diff.float().mean()), int(diff.max()))


def test_a_corrupt_png_fails_by_name_on_the_dali_backend_or_is_skipped(tmp_path: Path) -> None:
    good = MODE_MEMBERS[0][1]
    cut = good[:len(good) - 40]  # IDAT cut short: the header reads, the pixels do not
    raw_tar(tmp_path / "s" / "x-000000.tar", [("a.png", good), ("a.cls", b"0"), ("bad.png", cut), ("bad.cls", b"1"),
                                              ("c.png", good), ("c.cls", b"1")])
    assert not adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).rejected
    with pytest.raises(ShardError, match=r"undecodable image in .*x-000000\.tar, key bad: "):
        by_label(tmp_path / "s", "dali", train=False)
    loader = fastdata.loader(tmp_path / "s", batch_size=4, image_size=32, backend="dali", device="cpu",
                             train=False, on_error="skip")
    labels = torch.cat([y for _, y in loader])
    assert labels[labels != -100].tolist() == [0, 1]  # a and c, in order; bad left out
