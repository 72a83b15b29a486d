"""What only a CUDA device can check (`make gpu-check` runs these with `-m gpu`; elsewhere they skip):
DALI's mixed nvJPEG decode and GPU resize, the kornia backend on the device with pinned non-blocking copies
and nvJPEG decode, volume patches and their augmentation on the device, GPU tensors that agree with the
CPU ones of the same epoch, segmentation masks moved with their patches on the device, user hooks on the hook
stage's own CUDA stream with the device's generator seeded, batches read on other streams only once the producer
has written them, and image-text pairs whose images and token ids land on the device."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (make gpu-check)")]

pytest.importorskip("nvidia.dali")
pytest.importorskip("kornia")

from conftest_adopt import MODE_MEMBERS, by_label, mode_shards  # noqa: E402
from conftest_images import loader, make_datasets, resumed_after_one_batch, run  # noqa: E402
from conftest_pairs import TOKENIZER, caption_ids, convert_pairs, image_ids, make_pair_tree  # noqa: E402
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


def test_masks_follow_their_patches_on_cuda(tmp_path: Path) -> None:
    pytest.importorskip("nibabel")
    import numpy as np
    from conftest_nifti import convert_nifti, save

    mask = np.zeros((24, 24, 24), np.uint8)
    mask[6:16, 4:14, 8:18] = 1
    save(tmp_path / "src" / "imagesTr" / "c.nii.gz", mask.astype(np.int16) * 100, np.eye(4))
    save(tmp_path / "src" / "labelsTr" / "c.nii.gz", mask, np.eye(4))
    ds = convert_nifti(tmp_path / "src", tmp_path / "ds").dst
    for x, meta in fastdata.loader(ds, device="cuda", batch_size=2, patches_per_volume=4, patch_size=12,
                                   pad_value=0.0, sampling="foreground", affine_prob=1.0, elastic_prob=1.0):
        labels = meta["labels"]
        assert labels.is_cuda and labels.dtype == torch.long and labels.shape == x.shape
        y = x / 100
        whole = (y - y.round()).abs() < 0.02  # see tests/test_nifti_loader.py: the nearest voxel holds that label
        assert bool((y.round() == labels)[whole].all())


def test_channels_move_together_on_cuda(tmp_path: Path) -> None:
    """--channel all volumes on the device: channel 1 is channel 0 times 2 (tests/test_nifti_channels.py), and
    kornia's warps on CUDA keep it so."""
    pytest.importorskip("nibabel")
    import numpy as np
    from conftest_nifti import case, convert_nifti, save

    image, mask = case(0)
    for m, name in enumerate(("flair", "t1")):
        save(tmp_path / "src" / "P1" / f"P1_{name}.nii.gz", (image * (m + 1)).astype(np.int16))
    save(tmp_path / "src" / "P1" / "P1_seg.nii.gz", mask)
    ds = convert_nifti(tmp_path / "src", tmp_path / "ds", channel="all").dst
    for x, meta in fastdata.loader(ds, device="cuda", batch_size=2, patches_per_volume=4, patch_size=8,
                                   pad_value=0.0, affine_prob=1.0, elastic_prob=1.0):
        assert x.is_cuda and x.shape[1] == 2 and meta["labels"].shape[1] == 1
        torch.testing.assert_close(x[:, 1], x[:, 0] * 2, rtol=1e-5, atol=1e-2)


def test_token_batches_land_on_cuda(tmp_path: Path) -> None:
    from conftest_text import convert_text, copy_fortunes

    ds = convert_text(copy_fortunes(tmp_path / "src", names=("science",)), tmp_path / "tok", separator="%").dst
    batch = next(iter(fastdata.loader(ds, max_tokens=1024, device="cuda")))
    assert batch["input_ids"].is_cuda and batch["attention_mask"].is_cuda


@pytest.mark.parametrize("backend", ["dali", "kornia"])
def test_hooks_on_cuda_draw_per_seed_and_batch_and_resume(tmp_path: Path, backend: str) -> None:
    """The hook stage runs the hooks on its own CUDA stream with the device's generator seeded for each batch:
    an identity hook gives the batches of no hook, and a hook whose output is only what it draws on the device
    draws the same for the same seed, epoch and batch (also after a mid-epoch resume) and otherwise not."""
    ds = make_datasets(tmp_path)["wds"]
    seen: set[tuple[str, torch.dtype]] = set()

    def drawn(x: torch.Tensor) -> torch.Tensor:
        seen.add((x.device.type, x.dtype))
        return torch.rand_like(x)

    kw = dict(backend=backend, device="cuda", train=True, seed=6, dtype="uint8")
    plain = run(loader(ds, **kw))
    same = run(loader(ds, **kw, augment=lambda x: x, batch_transform=lambda x, y: (x, y)))
    assert plain and len(same) == len(plain)
    for (a, ya), (b, yb) in zip(plain, same):  # the float path rounds once more than DALI's uint8 output
        assert b.is_cuda and torch.equal(ya, yb) and (a.int() - b.int()).abs().max() <= 1
    first, again = run(loader(ds, **kw, augment=drawn)), run(loader(ds, **kw, augment=drawn))
    other = run(loader(ds, **{**kw, "seed": 7}, augment=drawn))
    assert seen == {("cuda", torch.float32)} and len(first) >= 2
    assert all(torch.equal(a, b) for (a, _), (b, _) in zip(first, again))
    assert not torch.equal(first[0][0], first[1][0])  # each batch draws anew
    assert all(not torch.equal(a, b) for (a, _), (b, _) in zip(first, other))
    full = loader(ds, **kw, augment=drawn)
    full.set_epoch(1)
    whole = run(full)
    assert not torch.equal(whole[0][0], first[0][0])  # and each epoch
    rest = resumed_after_one_batch(ds, 1, **kw, augment=drawn)
    assert len(rest) == len(whole) - 1 and all(torch.equal(a, b) for (a, _), (b, _) in zip(whole[1:], rest))
    brighter = run(loader(ds, **{**kw, "train": False}, split="val", augment=lambda x: (x + 0.5).clamp(0, 1)))
    x, y = brighter[-1]
    pad = y == -100
    assert pad.any() and not x[pad].any() and x[~pad].min() >= 127  # padding rows stay black after the hook


def _poison_cached_blocks(nbytes: tuple[int, ...]) -> None:
    """Leave blocks of these sizes, filled with 0xFF (NaN as float32), in the caching allocator's pool of the current
    stream: the next tensors of these sizes allocated on that stream reuse them. Their fill is queued on the stream
    before the work that writes a batch there, so a batch read before it is written reads 0xFF, never a previous
    batch that may hold the same values."""
    blocks = [torch.empty(n, dtype=torch.uint8, device="cuda").fill_(255) for n in nbytes for _ in range(4)]
    del blocks


@pytest.mark.parametrize("backend", ["dali", "kornia"])
def test_a_batch_is_read_only_after_the_producer_has_written_it(tmp_path: Path, backend: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Before each batch is written on the producer's stream (DALI's copy into torch's memory on the producer
    thread's stream, the kornia backend's upload and normalise on a stream of its own), that stream is given blocks
    of 0xFF to allocate the batch in, then held back by a long kernel. The hook stage works on a stream of its own,
    and so does a user who iterates under `torch.cuda.stream(side)`: both must wait for the producer's event
    (`PlannedBackend._ready`), or they read 0xFF."""
    from fastdata.images.dali_backend import DaliBackend
    from fastdata.images.kornia_backend import KorniaBackend

    ds = make_datasets(tmp_path)["wds"]
    kw = dict(backend=backend, device="cuda", train=True, seed=6, dtype="uint8")
    plain = run(loader(ds, **kw))
    cls, name = (DaliBackend, "_to_torch") if backend == "dali" else (KorniaBackend, "_submit")
    inner = getattr(cls, name)
    rows = 4 * 3 * 32 * 32  # one uint8 batch; the hook's float [0, 1] batch is four times that

    def late(self, *args, **kwargs):  # runs on the producer thread, its stream current (production.py, `_produce`)
        _poison_cached_blocks((rows, 4 * rows))
        torch.cuda._sleep(200_000_000)  # about a tenth of a second
        return inner(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, late)
    hooked = run(loader(ds, **kw, augment=lambda x: x))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        mine = [(x.clone(), y.clone()) for x, y in loader(ds, **kw)]
    torch.cuda.synchronize()
    assert len(plain) == len(hooked) == len(mine) >= 2
    for (a, ya), (b, yb), (c, yc) in zip(plain, hooked, mine):
        assert torch.equal(ya, yb) and torch.equal(ya, yc)
        assert (a.int() - b.int()).abs().max() <= 1 and torch.equal(a, c)


@pytest.mark.parametrize("backend", ["dali", "kornia"])
def test_image_text_pairs_on_cuda_match_the_cpu(tmp_path: Path, backend: str) -> None:
    """Images and token rows of a pair reach the device together: the same ids, masks and captions as on the
    CPU, each image still the one its caption names (flat grey levels), in train and in eval."""
    convert_pairs(make_pair_tree(tmp_path / "src", n=11, captions=2), tmp_path / "out", tokenizer=str(TOKENIZER))
    kw = dict(batch_size=4, image_size=32, num_threads=2, backend=backend, dtype="uint8", return_captions=True)
    gpu = run(fastdata.loader(tmp_path / "out", device="cuda", train=False, **kw))
    cpu = run(fastdata.loader(tmp_path / "out", device="cpu", train=False, **kw))
    assert len(gpu) == len(cpu) == 3
    for (gx, gt), (cx, ct) in zip(gpu, cpu):
        assert gx.is_cuda and gt["input_ids"].is_cuda and gt["attention_mask"].is_cuda
        assert gt["captions"] == ct["captions"] and torch.equal(gt["input_ids"].cpu(), ct["input_ids"])
        assert torch.equal(gt["attention_mask"].cpu(), ct["attention_mask"])
        assert image_ids(gx.cpu()) == image_ids(cx) and (gx.cpu().int() - cx.int()).abs().max() <= 3
    for x, t in fastdata.loader(tmp_path / "out", device="cuda", train=True, seed=3, **kw):
        assert image_ids(x.cpu()) == caption_ids(t["captions"]), "an image came apart from its caption"
