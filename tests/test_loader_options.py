"""PyTorch-native option values (torch.dtype, torch.device) are accepted by every loader, as their names are."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest_images import make_datasets
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)

import fastdata
from fastdata.coerce import device_name, dtype_name


def test_names_of_torch_values():
    assert dtype_name(torch.bfloat16) == "bfloat16" and dtype_name(torch.uint8) == "uint8"
    assert dtype_name("float16") == "float16" and dtype_name(3) == 3
    assert device_name(torch.device("cpu")) == "cpu" and device_name(torch.device("cuda", 1)) == "cuda:1"


@pytest.fixture(scope="module")
def ds(tmp_path_factory) -> dict[str, Path]:
    return make_datasets(tmp_path_factory.mktemp("opts"))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float16, torch.float32])
def test_image_loader_takes_torch_dtypes(ds, dtype):
    ld = fastdata.loader(ds["wds"], split="val", batch_size=4, image_size=32, train=False, backend="kornia",
                         device=torch.device("cpu"), dtype=dtype)
    x, _ = next(iter(ld))
    assert x.dtype == dtype and ld.options.dtype == str(dtype).removeprefix("torch.")


def test_a_dtype_that_is_not_allowed_is_still_refused(ds):
    with pytest.raises(ValueError, match="dtype"):
        fastdata.loader(ds["wds"], batch_size=4, backend="kornia", device="cpu", dtype=torch.int32)


def test_sequence_loader_takes_a_torch_device(fortunes_tokens):
    ld = fastdata.loader(fortunes_tokens, batch_size=8, device=torch.device("cpu"))
    assert next(iter(ld))["input_ids"].device.type == "cpu"


def test_volume_loader_takes_torch_dtype(tmp_path):
    pytest.importorskip("pydicom")
    from conftest_dicom import convert_dicom, write_phantom

    write_phantom(tmp_path / "src" / "p1")
    vols = tmp_path / "vols"
    convert_dicom(tmp_path / "src", vols)
    ld = fastdata.loader(vols, batch_size=1, patch_size=(4, 8, 8), dtype=torch.float16, device=torch.device("cpu"))
    patches, _ = next(iter(ld))
    assert patches.dtype == torch.float16


def test_usable_cpus_counts_this_process_affinity_and_is_at_least_one(monkeypatch: pytest.MonkeyPatch):
    """The default num_threads comes from the CPUs this process may run on (taskset, cgroups), not the machine's."""
    import os

    from fastdata.images.options import usable_cpus

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert usable_cpus() == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(), raising=False)
    assert usable_cpus() == 1
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # not Linux: the machine's count
    assert usable_cpus() == 64
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # undeterminable
    assert usable_cpus() == 1


@pytest.mark.parametrize("device", ["cuda:1:2", "cuda:x", "cuda:", "gpu", 0, None])
def test_every_loader_refuses_a_device_name_it_cannot_read_with_the_same_error(device):
    """'cuda:1:2' once passed the check ('cuda:' prefix) and failed later, and a device that was no string raised
    AttributeError in the sequence and volume options; every loader now says what a device may be."""
    from fastdata.images.options import ImageLoaderOptions
    from fastdata.text.options import SequenceLoaderOptions
    from fastdata.volumes.options import VolumeLoaderOptions

    for options in (ImageLoaderOptions, SequenceLoaderOptions, VolumeLoaderOptions):
        with pytest.raises(ValueError) as err:
            options(batch_size=2, device=device)
        assert str(err.value) == f"device={device!r} is not allowed; device must be 'cpu', 'cuda' or 'cuda:N'"
    for good in ("cpu", "cuda", "cuda:0", "cuda:15"):
        assert all(options(batch_size=2, device=good).device == good
                   for options in (ImageLoaderOptions, SequenceLoaderOptions, VolumeLoaderOptions))
