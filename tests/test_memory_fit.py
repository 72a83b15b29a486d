"""What the machine's memory cannot hold is refused when the loader is made (fastdata/memory_fit.py): batches past
the delivery device's memory (an eval loader pads its last batch to `batch_size` rows, so a huge batch size asked
for the memory even on a small split) and epochs whose plan cannot fit (`samples_per_epoch`, a text mixture's
`tokens_per_epoch`). On Linux such an allocation fails only once its pages are touched."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_images import image_sets_fixture, loader  # noqa: F401 (the session fixture)
from helpers import fake_cgroup

from fastdata import memory_fit
from fastdata.memory_fit import check_batch_memory, check_epoch_memory, memory_of


def test_the_memory_of_each_kind_of_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_fit, "memory_limit", lambda: None)  # no cgroup limit (this machine's, or a test's)
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
    monkeypatch.setattr(memory_fit, "memory_of", lambda device: 3 * 2 ** 30)
    check_batch_memory(2 ** 30, 3, torch.device("cpu"), what="w", lower="l")  # exactly the memory
    monkeypatch.setattr(memory_fit, "memory_of", lambda device: None)  # unknown: nothing to check against
    check_batch_memory(2 ** 60, 3, torch.device("cpu"), what="w", lower="l")
    monkeypatch.setattr(memory_fit, "memory_of", lambda device: 3 * 2 ** 30 - 1)
    with pytest.raises(ValueError) as err:
        check_batch_memory(2 ** 30, 3, torch.device("cpu"), what="4 images", lower="batch_size")
    assert str(err.value) == ("batches of 4 images take 1.0 GiB each, 3.0 GiB for the 3 a loader holds at once "
                              "(prefetch + 1), more than the 3.0 GiB of memory on cpu: lower batch_size")


def _limit(monkeypatch: pytest.MonkeyPatch, total: int) -> list[torch.device]:
    seen: list[torch.device] = []
    monkeypatch.setattr(memory_fit, "memory_of", lambda device: seen.append(device) or total)
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


def test_an_epoch_plan_up_to_the_memory_passes_and_one_draw_more_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_fit, "host_memory", lambda: 64 * 1000)
    check_epoch_memory("samples_per_epoch", 1000)  # 64 bytes a draw: exactly the memory
    check_epoch_memory("tokens_per_epoch", 4000, items_per_unit=0.25)  # 1,000 sequences
    with pytest.raises(ValueError) as err:
        check_epoch_memory("samples_per_epoch", 1001)
    assert str(err.value) == ("samples_per_epoch=1001 is not allowed; samples_per_epoch must be at most 1,000 on this "
                              "machine: an epoch's plan holds every sample it draws, at least 64 bytes each, and "
                              "this process may use 0.0 GiB of memory")
    with pytest.raises(ValueError, match=r"^tokens_per_epoch=4004 is not allowed; tokens_per_epoch must be at most "
                                         r"4,000 on this machine: an epoch's plan holds every sequence it draws"):
        check_epoch_memory("tokens_per_epoch", 4004, items_per_unit=0.25)
    monkeypatch.setattr(memory_fit, "host_memory", lambda: None)  # unknown: nothing to check against
    check_epoch_memory("samples_per_epoch", 2 ** 62)


def test_weighted_and_mixed_epochs_past_the_memory_are_refused_when_the_loader_is_made(
        image_sets: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """samples_per_epoch=2**31 planned for minutes and swapped; 10**30 raised numpy's 'expected non-negative
    integer' (a mixture)."""
    import fastdata

    monkeypatch.setattr(memory_fit, "host_memory", lambda: 64 * 10_000)  # and room for 3 batches of 4 images (147 KB)
    one = dict(split="train", sample_weights="balanced")
    both = [str(image_sets["wds"]), str(image_sets["arrow"])]
    with loader(image_sets["wds"], samples_per_epoch=10_000, **one) as ld:
        assert len(ld) == 2500
    with pytest.raises(ValueError, match=r"^samples_per_epoch=10001 is not allowed; samples_per_epoch must be at most "
                                         r"10,000 on this machine"):
        loader(image_sets["wds"], samples_per_epoch=10_001, **one)
    kw = dict(batch_size=4, image_size=32, backend="kornia", device="cpu", weights=[1, 3])
    with fastdata.loader(both, samples_per_epoch=10_000, **kw) as ld:
        assert len(ld) == 2500
    for bad, why in ((10_001, "at most 10,000 on this machine"), (10 ** 30, "at most 10,000"), (0, "an integer >= 1"),
                     (1.5, "an integer >= 1"), (True, "an integer >= 1")):
        with pytest.raises(ValueError, match=rf"^samples_per_epoch={bad!r} is not allowed; samples_per_epoch must be "
                                             rf"{why}"):
            fastdata.loader(both, samples_per_epoch=bad, **kw)


def test_a_text_mixture_is_refused_the_tokens_whose_sequences_its_plan_cannot_hold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest_text import convert_text, copy_fortunes

    import fastdata
    from fastdata.planning.mixture import Mixture

    a, b = tmp_path / "ta", tmp_path / "tb"
    convert_text(copy_fortunes(tmp_path / "a", ("computers",)), a)
    convert_text(copy_fortunes(tmp_path / "b", ("linux",)), b)
    mix = Mixture(sizes=(10, 30), weights=(1.0, 3.0), per_epoch=100, weight_by="tokens",
                  measures=(np.full(10, 4), np.full(30, 2)))
    assert mix.items_per_token() == pytest.approx(0.25 * 10 / 40 + 0.75 * 30 / 60)  # 1/16 + 3/8 sequences a token
    monkeypatch.setattr(memory_fit, "host_memory", lambda: 64 * 1000)  # 1,000 sequences
    with fastdata.loader([str(a), str(b)], weights=[1, 1], tokens_per_epoch=1000, batch_size=8) as ld:
        assert len(ld) > 0
    with pytest.raises(ValueError, match=r"^tokens_per_epoch=10000000000 is not allowed; tokens_per_epoch must be at "
                                         r"most [\d,]+ on this machine: an epoch's plan holds every sequence"):
        fastdata.loader([str(a), str(b)], weights=[1, 1], tokens_per_epoch=10 ** 10, batch_size=8)
    with pytest.raises(ValueError, match=r"^tokens_per_epoch=-5 is not allowed; tokens_per_epoch must be an integer"):
        fastdata.loader([str(a), str(b)], weights=[1, 1], tokens_per_epoch=-5, batch_size=8)


@pytest.mark.parametrize(("membership", "files", "limit"), [
    ("0::/\n", {"memory.max": "8589934592\n"}, 8 << 30),  # docker --memory 8g (cgroup v2)
    ("0::/\n", {"memory.max": "max\n"}, None),
    ("0::/pod/c\n", {"pod/c/memory.max": "max", "pod/memory.max": "4294967296"}, 4 << 30),  # the pod's limit
    ("0::/pod/c\n", {"pod/c/memory.max": "1073741824", "memory.max": "4294967296"}, 1 << 30),  # the smallest
    ("4:memory:/slurm/job\n", {"memory/slurm/job/memory.limit_in_bytes": "17179869184"}, 16 << 30),  # v1
    ("4:memory:/\n", {"memory/memory.limit_in_bytes": "9223372036854771712"}, None),  # v1: no limit
    ("4:memory:/\n", {"memory/memory.limit_in_bytes": "0"}, None),
    ("0::/\n", {}, None),
])
def test_the_cgroup_memory_limit(tmp_path: Path, membership: str, files: dict[str, str], limit: int | None) -> None:
    assert memory_fit.memory_limit(**fake_cgroup(tmp_path, membership, files)) == limit


def test_the_memory_a_process_may_use_is_the_smaller_of_the_machine_and_its_cgroup(monkeypatch) -> None:
    """A container limited to 8 GiB on a 512 GiB machine: batches past 8 GiB were allowed, and the kernel killed the
    process when they filled (exit 137, no message)."""
    monkeypatch.setattr(memory_fit, "physical_memory", lambda: 512 << 30)
    monkeypatch.setattr(memory_fit, "memory_limit", lambda: 8 << 30)
    assert memory_fit.host_memory() == memory_of(torch.device("cpu")) == 8 << 30
    with pytest.raises(ValueError, match=r"3.0 GiB each, 9.0 GiB for the 3 a loader holds at once \(prefetch \+ 1\), "
                                         r"more than the 8.0 GiB of memory on cpu"):
        check_batch_memory(3 << 30, 3, torch.device("cpu"), what="w", lower="l")
    monkeypatch.setattr(memory_fit, "memory_limit", lambda: None)
    assert memory_fit.host_memory() == 512 << 30
    monkeypatch.setattr(memory_fit, "physical_memory", lambda: None)
    assert memory_fit.host_memory() is None
    monkeypatch.setattr(memory_fit, "memory_limit", lambda: 1 << 30)
    assert memory_fit.host_memory() == 1 << 30
