"""Batches the delivery device cannot hold are refused when the loader is made (fastdata/batch_memory.py): an eval
loader pads its last batch to `batch_size` rows, so a huge batch size asked for the memory even on a small split,
and on Linux such an allocation fails only once its pages are touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from conftest_images import image_sets_fixture, loader  # noqa: F401 (the session fixture)

from fastdata import batch_memory
from fastdata.batch_memory import check_batch_memory, memory_of


def test_the_memory_of_each_kind_of_device(monkeypatch: pytest.MonkeyPatch) -> None:
    assert memory_of(torch.device("cpu")) == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") > 2 ** 28
    assert memory_of(torch.device("meta")) is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert memory_of(torch.device("cuda")) is None

    class Props:
        total_memory = 80 * 2 ** 30

    asked = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: asked.append(device) or Props())
    assert memory_of(torch.device("cuda:1")) == 80 * 2 ** 30 and asked == [torch.device("cuda:1")]
    monkeypatch.setattr(os, "sysconf", lambda name: (_ for _ in ()).throw(ValueError(name)))
    assert memory_of(torch.device("cpu")) is None


def test_batches_up_to_the_memory_pass_and_one_byte_more_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_memory, "memory_of", lambda device: 3 * 2 ** 30)
    check_batch_memory(2 ** 30, 3, torch.device("cpu"), what="w", lower="l")  # exactly the memory
    monkeypatch.setattr(batch_memory, "memory_of", lambda device: None)  # unknown: nothing to check against
    check_batch_memory(2 ** 60, 3, torch.device("cpu"), what="w", lower="l")
    monkeypatch.setattr(batch_memory, "memory_of", lambda device: 3 * 2 ** 30 - 1)
    with pytest.raises(ValueError) as err:
        check_batch_memory(2 ** 30, 3, torch.device("cpu"), what="4 images", lower="batch_size")
    assert str(err.value) == ("batches of 4 images take 1.0 GiB each, 3.0 GiB for the 3 a loader holds at once "
                              "(prefetch + 1), more than the 3.0 GiB of memory on cpu: lower batch_size")


def _limit(monkeypatch: pytest.MonkeyPatch, total: int) -> list[torch.device]:
    seen: list[torch.device] = []
    monkeypatch.setattr(batch_memory, "memory_of", lambda device: seen.append(device) or total)
    return seen


@pytest.mark.parametrize("dtype, item", [("float32", 4), ("bfloat16", 2), ("float16", 2), ("uint8", 1)])
def test_an_image_loader_is_refused_batches_its_device_cannot_hold(
        image_sets: dict[str, Path], monkeypatch: pytest.MonkeyPatch, dtype: str, item: int) -> None:
    """7 val images, batch 1000 in eval: one padded batch of 1000 rows, prefetch 2 (3 batches held)."""
    need = 3 * 1000 * 3 * 32 * 32 * item
    seen = _limit(monkeypatch, need)
    with loader(image_sets["wds"], split="val", train=False, batch_size=1000, dtype=dtype) as ld:
        assert len(ld) == 1 and seen == [torch.device("cpu")]
    _limit(monkeypatch, need - 1)
    with pytest.raises(ValueError, match=rf"^batches of 1000 {dtype} images of 32x32 take .* for the 3 a loader "
                                         r"holds at once .* lower batch_size \(or image_size, or prefetch\)$"):
        loader(image_sets["wds"], split="val", train=False, batch_size=1000, dtype=dtype)
    _limit(monkeypatch, need // 3 * 2)  # prefetch 1: two batches held
    loader(image_sets["wds"], split="val", train=False, batch_size=1000, dtype=dtype, prefetch=1).close()


def test_progressive_resizing_is_checked_at_its_largest_size(image_sets: dict[str, Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    need = 3 * 64 * 3 * 48 * 48 * 4
    _limit(monkeypatch, need - 1)
    with pytest.raises(ValueError, match="images of 48x48"):
        loader(image_sets["wds"], batch_size=64, image_size={0: 32, 2: 48, 4: 40})
    _limit(monkeypatch, need)
    loader(image_sets["wds"], batch_size=64, image_size={0: 32, 2: 48, 4: 40}).close()


def test_image_text_pairs_are_checked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest_pairs import TOKENIZER, convert_pairs, make_pair_tree

    import fastdata

    convert_pairs(make_pair_tree(tmp_path / "src", n=6), tmp_path / "pairs", tokenizer=str(TOKENIZER))
    _limit(monkeypatch, 3 * 512 * 3 * 32 * 32 * 4 - 1)
    with pytest.raises(ValueError, match="^batches of 512 float32 images of 32x32"):
        fastdata.loader(tmp_path / "pairs", batch_size=512, train=False, image_size=32, device="cpu",
                        backend="kornia")
