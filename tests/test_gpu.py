"""What only a CUDA device can check (`make gpu-check` runs these with `-m gpu`; elsewhere they skip):
DALI's mixed nvJPEG decode and GPU resize, the kornia backend on the device with pinned non-blocking copies
and nvJPEG decode, volume patches and their augmentation on the device, and GPU tensors that agree with the
CPU ones of the same epoch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (make gpu-check)")]

pytest.importorskip("nvidia.dali")
pytest.importorskip("kornia")

from conftest_adopt import MODE_MEMBERS, by_label, mode_shards  # noqa: E402
from helpers import convert_images, copy_photos  # noqa: E402

import fastdata  # noqa: E402


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gpu")
    return convert_images(copy_photos(root / "photos", classes=3, limit=8), root / "ds", short_side=96).dst


def _epoch(ds: Path, **kw) -> tuple[torch.Tensor, torch.Tensor]:
    loader = fastdata.loader(ds, batch_size=4, num_threads=2, image_size=64, **kw)
    xs, ys = zip(*loader)
    return torch.cat(xs), torch.cat(ys)


# How far GPU eval pixels may lie from the CPU ones, per path, as measured on an H200 (docs/benchmarks.md):
# - dali: nvJPEG with libjpeg-style fancy chroma upsampling against libjpeg-turbo, then resize on each device:
#   max 3, mean 0.32 grey levels;
# - kornia: the decode stays on the host; only the normalisation runs on the device;
# - kornia with device_decode: torchvision's nvJPEG has no fancy upsampling, so chroma differs at colour edges
#   (up to 56 grey levels at full resolution, 29 after the resize) while the mean stays below 1. That the
#   geometry matches exactly is checked on the CPU, where the same path decodes with libjpeg-turbo
#   (test_image_loader.test_device_decode_plumbing_on_cpu: max 1).
@pytest.mark.parametrize("backend, extra, most, mean", [("dali", {}, 3, 0.5), ("kornia", {}, 2, 0.5),
                                                        ("kornia", {"device_decode": True}, 255, 1.0)])
def test_eval_on_cuda_agrees_with_cpu(photos: Path, backend: str, extra: dict, most: int, mean: float) -> None:
    gpu_x, gpu_y = _epoch(photos, backend=backend, train=False, device="cuda", dtype="uint8", **extra)
    cpu_x, cpu_y = _epoch(photos, backend=backend, train=False, device="cpu", dtype="uint8")
    assert gpu_x.is_cuda and gpu_y.is_cuda and gpu_x.shape == cpu_x.shape
    assert torch.equal(gpu_y.cpu(), cpu_y)
    diff = (gpu_x.cpu().int() - cpu_x.int()).abs()
    print(f"{backend} {extra}: max {int(diff.max())}, mean {float(diff.float().mean()):.3f}, "
          f"{100 * float((diff > 2).float().mean()):.2f}% over 2")
    assert diff.max() <= most and diff.float().mean() < mean, f"max {diff.max()}, mean {diff.float().mean():.3f}"


@pytest.mark.parametrize("backend", ["dali", "kornia"])
def test_train_on_cuda_is_seeded_and_float_normalised(photos: Path, backend: str) -> None:
    first, labels = _epoch(photos, backend=backend, train=True, device="cuda", seed=3)
    again, _ = _epoch(photos, backend=backend, train=True, device="cuda", seed=3)
    assert first.is_cuda and first.dtype == torch.float32 and first.shape[1:] == (3, 64, 64)
    assert torch.equal(first, again) and labels.is_cuda
    assert -3 < float(first.mean()) < 3  # normalised by the ImageNet mean/std, not 0-255


def test_adopted_transparent_and_16_bit_images_read_on_cuda_as_on_the_cpu(tmp_path: Path) -> None:
    """The DALI backend hands DALI's mixed decoder the host-decoded RGB (a PPM) of these members: no GPU decoder
    takes PPM, so DALI decodes it on the CPU; the pixels must be the kornia backend's on the CPU."""
    shards = mode_shards(tmp_path / "s")
    gpu = by_label(shards, "dali", train=False, device="cuda")
    cpu = by_label(shards, "kornia", train=False)
    assert sorted(gpu) == sorted(cpu) == sorted(MODE_MEMBERS)
    for label, (_, _, transparent) in MODE_MEMBERS.items():
        diff = (gpu[label].int() - cpu[label].int()).abs()
        assert diff.max() <= 3, (label, int(diff.max()))
        assert not transparent or bool((gpu[label][:, :, 0] == 255).all()), label


def test_kornia_batches_come_from_pinned_memory(photos: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copies: list[tuple[tuple[int, ...], bool, bool]] = []
    original = torch.Tensor.to

    def spy(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        if not self.is_cuda and out.is_cuda:
            copies.append((tuple(self.shape), self.is_pinned(), bool(kwargs.get("non_blocking"))))
        return out

    monkeypatch.setattr(torch.Tensor, "to", spy)
    _epoch(photos, backend="kornia", train=False, device="cuda")
    # the batches (4 rows); the normaliser's per-channel constants, shape (3,), go to the device once
    batches = [c for c in copies if c[0][:1] == (4,)]
    assert {c[0] for c in batches} == {(4, 64, 64, 3), (4,)}, copies
    assert all(pinned and non_blocking for _, pinned, non_blocking in batches), batches


def test_volume_patches_and_augmentation_on_cuda(tmp_path: Path) -> None:
    from conftest_dicom import Phantom, convert_dicom, write_phantom

    write_phantom(tmp_path / "src" / "a", Phantom(slices=20))
    ds = convert_dicom(tmp_path / "src", tmp_path / "vol").dst
    kw = dict(patch_size=(16, 16, 16), batch_size=2, seed=1, patches_per_volume=2)
    gpu = [p for p, _ in fastdata.loader(ds, device="cuda", train=True, elastic_prob=1.0, affine_prob=1.0, **kw)]
    again = [p for p, _ in fastdata.loader(ds, device="cuda", train=True, elastic_prob=1.0, affine_prob=1.0, **kw)]
    assert gpu and all(p.is_cuda and p.shape[1:] == (1, 16, 16, 16) for p in gpu)
    assert all(torch.equal(a, b) for a, b in zip(gpu, again))  # seeded on the device too
    cpu = [p for p, _ in fastdata.loader(ds, device="cpu", train=False, **kw)]
    on_gpu = [p for p, _ in fastdata.loader(ds, device="cuda", train=False, **kw)]
    assert all(torch.allclose(a, b.cpu(), atol=1e-5) for a, b in zip(cpu, on_gpu))


def test_token_batches_land_on_cuda(tmp_path: Path) -> None:
    from conftest_text import convert_text, copy_fortunes

    ds = convert_text(copy_fortunes(tmp_path / "src", names=("science",)), tmp_path / "tok", separator="%").dst
    batch = next(iter(fastdata.loader(ds, max_tokens=1024, device="cuda")))
    assert batch["input_ids"].is_cuda and batch["attention_mask"].is_cuda
