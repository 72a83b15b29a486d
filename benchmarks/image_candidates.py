"""The candidates of images_per_sec.py, each written the way its users write it.

Every candidate is built fresh for every timed repetition (nothing decoded survives from one
repetition to the next) and yields `(images, labels)`: float32 [B, 3, S, S] normalised with the
ImageNet mean/std, NCHW contiguous (with `Spec.channels_last`: NCHW shape in channels_last memory, the
default of fastdata and FFCV, each candidate producing it as its users would), labels int64 [B]. The
ceiling yields lists of decoded images.
With `Spec.epochs` > 1 one loader yields that many epochs back to back, as a training loop reads it
(the runner then times the epochs after the first: `Spec.warmup_epoch_batches`).
"""

from __future__ import annotations

import tarfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.ffcv_candidate import FFCV_PYTHON
from benchmarks.ffcv_candidate import INSTALL as FFCV_INSTALL
from benchmarks.kernel_floor import kernel_floor, kernel_floor_setup

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Spec:
    """What every candidate must produce, from which files, with how many threads."""

    raw: str  # ImageNet-style folder of the split (class folders directly inside)
    shards: str  # converted dataset directory
    split: str
    batch_size: int
    train: bool
    threads: int
    image_size: int = 224
    seed: int = 0
    device: str = "cpu"  # "cuda": every candidate delivers its batches on the GPU (--device)
    epochs: int = 1  # epochs of one loader per repetition (--epochs)
    images: int = 0  # samples of the split (every candidate reads the same photos)
    channels_last: bool = False  # the batches' memory format (--channels-last); the shape is NCHW either way

    @property
    def warmup_epoch_batches(self) -> int:
        """With several epochs: the batches of the first, which the runner does not time (0 with one epoch).
        Train drops the last partial batch (every candidate), eval keeps it."""
        if self.epochs <= 1:
            return 0
        return self.images // self.batch_size if self.train else -(-self.images // self.batch_size)

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def resize_short(self) -> int:
        return round(self.image_size / 0.875)


def _torchvision_transform(spec: Spec):
    import torchvision.transforms as T

    if spec.train:
        steps = [T.RandomResizedCrop(spec.image_size), T.RandomHorizontalFlip()]
    else:
        steps = [T.Resize(spec.resize_short), T.CenterCrop(spec.image_size)]
    return T.Compose([*steps, T.ToTensor(), T.Normalize(MEAN, STD)])


def _epochs(spec: Spec, one_epoch: Callable[[int], Iterable[Any]]) -> Iterator[Any]:
    """`spec.epochs` epochs of one loader, back to back: `one_epoch(e)` iterates epoch e."""
    for epoch in range(spec.epochs):
        yield from one_epoch(epoch)


def torchvision_imagefolder(spec: Spec, state: Any) -> Iterable[Any]:
    """(a) The baseline: torchvision ImageFolder on the raw JPEG tree, DataLoader with one worker per core."""
    from torch.utils.data import DataLoader
    from torchvision.datasets import ImageFolder

    dataset = ImageFolder(spec.raw, transform=_torchvision_transform(spec))
    loader = DataLoader(dataset, batch_size=spec.batch_size, shuffle=spec.train, num_workers=spec.threads,
                        drop_last=spec.train, pin_memory=spec.cuda)
    return _epochs(spec, lambda epoch: _tuples(loader, spec))


def _tuples(loader: Iterable[Any], spec: Spec) -> Iterator[Any]:
    """DataLoader's collate gives `[images, labels]` lists; yield `(images, labels)` like the others,
    on the GPU with --device cuda (pinned memory, non-blocking copies: what users write), in channels_last
    memory with --channels-last (converted in the training loop, as torchvision's reference scripts do)."""
    import torch

    it = iter(loader)
    try:
        for images, labels in it:
            labels = torch.as_tensor(labels)  # webdataset's batching makes a numpy array of the int labels
            if spec.cuda:
                images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
            if spec.channels_last:
                images = images.contiguous(memory_format=torch.channels_last)
            yield images, labels
    finally:
        del it  # shuts the workers down now, inside the measured block


def _shard_urls(spec: Spec) -> list[str]:
    from fastdata.dataset import open_dataset

    return [str(ref.path) for ref in open_dataset(spec.shards, split=spec.split).shards]


def webdataset_pil(spec: Spec, state: Any) -> Iterable[Any]:
    """(b) The webdataset library over our shards, PIL decode, torchvision transforms, DataLoader workers, in the
    multi-worker form webdataset documents: each worker batches its own shards (partial batches allowed), and
    train re-batches across workers in the main process (unbatched -> shuffle -> batched). A plain DataLoader
    with drop_last batches inside each worker: with as many workers as shards holding fewer samples than a batch
    (16 workers on a GPU machine), it yields nothing at all."""
    import webdataset as wds

    urls = _shard_urls(spec)
    dataset = wds.WebDataset(urls, shardshuffle=len(urls) if spec.train else False, seed=spec.seed,
                             empty_check=False)
    if spec.train:
        dataset = dataset.shuffle(1000)
    dataset = dataset.decode("pil").to_tuple("jpg", "cls").map_tuple(_torchvision_transform(spec), int)
    dataset = dataset.batched(spec.batch_size, partial=True)
    loader = wds.WebLoader(dataset, batch_size=None, num_workers=spec.threads, pin_memory=spec.cuda)
    if spec.train:
        loader = loader.unbatched().shuffle(1000).batched(spec.batch_size, partial=False)
    return _epochs(spec, lambda epoch: _tuples(loader, spec))


def dali_plain(spec: Spec, state: Any) -> Iterator[Any]:
    """(c) A plain DALI pipeline on the raw tree as DALI's documentation writes it (CPU operators here)."""
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
    from nvidia.dali import pipeline_def
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    cuda = spec.cuda

    @pipeline_def(batch_size=spec.batch_size, num_threads=spec.threads, device_id=0 if cuda else None,
                  seed=spec.seed + 1)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=spec.raw, random_shuffle=spec.train, name="Reader")
        images = fn.decoders.image(jpegs, device="mixed" if cuda else "cpu", output_type=types.RGB)
        if spec.train:
            images = fn.random_resized_crop(images, size=(spec.image_size, spec.image_size))
            mirror = fn.random.coin_flip(probability=0.5)
        else:
            images = fn.resize(images, resize_shorter=spec.resize_short)
            mirror = False
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout=_dali_layout(spec),
                                          crop=(spec.image_size, spec.image_size),
                                          mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD], mirror=mirror)
        return images, labels.gpu() if cuda else labels

    policy = LastBatchPolicy.DROP if spec.train else LastBatchPolicy.PARTIAL
    iterator = DALIGenericIterator(pipe(), ["images", "labels"], reader_name="Reader", last_batch_policy=policy)
    return _dali_epochs(spec, iterator, lambda out: (_nchw(out["images"], spec), out["labels"].view(-1).long()))


def _dali_layout(spec: Spec) -> str:
    """DALI writes channels_last memory as layout HWC (then viewed as NCHW: `_nchw`)."""
    return "HWC" if spec.channels_last else "CHW"


def _nchw(images: Any, spec: Spec) -> Any:
    return images.permute(0, 3, 1, 2) if spec.channels_last else images


def _dali_epochs(spec: Spec, iterator: Any, convert: Callable[[Any], Any]) -> Iterator[Any]:
    """`spec.epochs` epochs of a DALIGenericIterator (reset between epochs, as DALI's docs loop)."""
    try:
        for epoch in range(spec.epochs):
            if epoch:
                iterator.reset()
            for out in iterator:
                yield convert(out[0])
    finally:
        del iterator


def dali_shards(spec: Spec, state: Any) -> Iterator[Any]:
    """(h; the issue's c2) Plain DALI on fastdata's own shards, docs style: readers.webdataset with our
    .idx files, ROI decode (decoders.image_random_crop) in train. Measures the engine apart from the pre-resize."""
    return _dali_on_shards(spec, decode_only=False)


def dali_decode_only(spec: Spec, state: Any) -> Iterator[Any]:
    """(n) The ceiling of DALI's decoder: (h) without its resize, flip and normalise. The same reader and the same
    decode (the random crop window in train, nvJPEG with `--device cuda`); each image then cut to its first pixel,
    so that a batch is dense and its decode is finished when the batch is taken. A loader that decodes these shards
    with DALI's decoder and its defaults delivers at most this rate, whatever it does around the decode."""
    return _dali_on_shards(spec, decode_only=True)


def _dali_on_shards(spec: Spec, *, decode_only: bool) -> Iterator[Any]:
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
    from nvidia.dali import pipeline_def
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    from fastdata.dataset import open_dataset

    refs = open_dataset(spec.shards, split=spec.split).shards
    cuda = spec.cuda
    decoder = "mixed" if cuda else "cpu"

    @pipeline_def(batch_size=spec.batch_size, num_threads=spec.threads, device_id=0 if cuda else None,
                  seed=spec.seed + 1)
    def pipe():
        jpegs, labels = fn.readers.webdataset(paths=[str(r.path) for r in refs],
                                              index_paths=[str(r.index_path) for r in refs], ext=["jpg", "cls"],
                                              missing_component_behavior="error", random_shuffle=spec.train,
                                              name="Reader")
        labels = fn.pad(labels, axes=(0,), shape=(8,), fill_value=0)  # ASCII digits of unequal lengths
        labels = labels.gpu() if cuda else labels
        if spec.train:
            images = fn.decoders.image_random_crop(jpegs, device=decoder, output_type=types.RGB)
        else:
            images = fn.decoders.image(jpegs, device=decoder, output_type=types.RGB)
        if decode_only:
            return fn.crop(images, crop=(1, 1), crop_pos_x=0.0, crop_pos_y=0.0), labels
        if spec.train:
            images = fn.resize(images, size=(spec.image_size, spec.image_size))
            mirror = fn.random.coin_flip(probability=0.5)
        else:
            images = fn.resize(images, resize_shorter=spec.resize_short)
            mirror = False
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout=_dali_layout(spec),
                                          crop=(spec.image_size, spec.image_size),
                                          mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD], mirror=mirror)
        return images, labels

    policy = LastBatchPolicy.DROP if spec.train else LastBatchPolicy.PARTIAL
    iterator = DALIGenericIterator(pipe(), ["images", "labels"], reader_name="Reader", last_batch_policy=policy)
    return _dali_epochs(spec, iterator, lambda out: (out["images"] if decode_only else _nchw(out["images"], spec),
                                                     _cls_labels(out["labels"])))


def _cls_labels(raw: Any) -> Any:
    """The `.cls` members (ASCII digits, as WebDataset writes them) of a batch as int64 labels."""
    import torch

    rows = raw.cpu().numpy() if raw.is_cuda else raw.numpy()
    values = [int(bytes(r).rstrip(b"\0").decode() or -1) for r in rows]
    return torch.tensor(values, dtype=torch.int64, device=raw.device)


Hooks = Callable[[int], dict[str, Any]]  # number of classes -> the hook options of a fastdata candidate


def _fastdata(backend: str, hooks: Hooks | None = None) -> Callable[[Spec, Any], Iterable[Any]]:
    def build(spec: Spec, state: Any) -> Iterable[Any]:
        import fastdata
        from fastdata.dataset import open_dataset

        extra = hooks(len(open_dataset(spec.shards, split=spec.split).classes)) if hooks else {}
        loader = fastdata.loader(spec.shards, split=spec.split, batch_size=spec.batch_size, backend=backend,
                                 train=spec.train, image_size=spec.image_size, num_threads=spec.threads,
                                 device=spec.device, dtype="float32",
                                 channels_last=spec.channels_last, seed=spec.seed, **extra)

        def epoch(e: int) -> Iterable[Any]:
            loader.set_epoch(e)
            return loader

        return _epochs(spec, epoch)

    build.__doc__ = f"fastdata.loader(..., backend={backend!r}) on the shards, NCHW float32 like the peers."
    return build


def identity_hooks(num_classes: int) -> dict[str, Any]:
    """(i) Hooks that change nothing: what running user hooks costs by itself."""
    return {"augment": lambda x: x, "batch_transform": lambda x, y: (x, y)}


def timm_hooks(num_classes: int) -> dict[str, Any]:
    """(j) The timm-style ImageNet recipe as fastdata hooks: kornia RandAugment + random erasing on the
    device batch, torchvision v2 MixUp/CutMix on the final batch (soft labels)."""
    import torch
    from kornia.augmentation import RandomErasing
    from kornia.augmentation.auto import RandAugment
    from torchvision.transforms import v2

    return {"augment": torch.nn.Sequential(RandAugment(n=2, m=9), RandomErasing(p=0.25)),
            "batch_transform": v2.RandomChoice([v2.MixUp(num_classes=num_classes),
                                                v2.CutMix(num_classes=num_classes)])}


def torchvision_timm(spec: Spec, state: Any) -> Iterator[Any]:
    """(k) The same recipe as torchvision users run it: RandAugment on each PIL image and random erasing on
    each tensor in DataLoader workers, MixUp/CutMix on the collated batch in the training loop."""
    import torchvision.transforms as T
    from torch.utils.data import DataLoader
    from torchvision.datasets import ImageFolder
    from torchvision.transforms import v2

    transform = T.Compose([T.RandomResizedCrop(spec.image_size), T.RandomHorizontalFlip(),
                           T.RandAugment(num_ops=2, magnitude=9), T.ToTensor(), T.Normalize(MEAN, STD),
                           T.RandomErasing(p=0.25)])
    dataset = ImageFolder(spec.raw, transform=transform)
    mix = v2.RandomChoice([v2.MixUp(num_classes=len(dataset.classes)), v2.CutMix(num_classes=len(dataset.classes))])
    loader = DataLoader(dataset, batch_size=spec.batch_size, shuffle=True, num_workers=spec.threads, drop_last=True,
                        pin_memory=spec.cuda)
    for images, labels in _epochs(spec, lambda epoch: _tuples(loader, spec)):
        yield mix(images, labels)


def read_shard_jpegs(spec: Spec) -> list[bytes]:
    """The JPEG bytes of every sample of the split, read once from the shards (done before timing)."""
    out = []
    for url in _shard_urls(spec):
        with tarfile.open(url) as tar:
            for member in tar:
                if member.isfile() and member.name.endswith(".jpg"):
                    f = tar.extractfile(member)
                    if f is not None:
                        out.append(f.read())
    if not out:
        raise ValueError(f"no .jpg member in the shards of {spec.shards} (split {spec.split})")
    return out


def decode_ceiling(spec: Spec, state: Any) -> Iterator[list[Any]]:
    """(f) The ceiling: libjpeg-turbo (simplejpeg) decode alone of the same shard bytes, same threads
    (train drops the last partial batch, as every candidate does)."""
    from concurrent.futures import ThreadPoolExecutor

    import simplejpeg

    def decode(data: bytes):
        return simplejpeg.decode_jpeg(data, colorspace="RGB")

    with ThreadPoolExecutor(spec.threads) as pool:
        for _ in range(spec.epochs):
            batch: list[Any] = []
            for image in pool.map(decode, state):
                batch.append(image)
                if len(batch) == spec.batch_size:
                    yield batch, None
                    batch = []
            if batch and not spec.train:
                yield batch, None


@dataclass(frozen=True)
class Candidate:
    key: str
    label: str
    build: Callable[[Spec, Any], Iterable[Any]]
    setup: Callable[[Spec], Any] | None = None
    ceiling: bool = False
    python: Path | None = None  # another environment's interpreter runs it (benchmarks/runner.ExternalWorker)
    install: str = ""  # how to create that environment, said when it is missing


def _ffcv(spec: Spec, state: Any) -> Iterable[Any]:
    from benchmarks.ffcv_candidate import ffcv_loader

    loader = ffcv_loader(spec, state)
    return _epochs(spec, lambda epoch: loader)


def _ffcv_setup(spec: Spec) -> Any:
    from benchmarks.ffcv_candidate import ffcv_setup

    return ffcv_setup(spec)


CANDIDATES: dict[str, Candidate] = {c.key: c for c in (
    Candidate("a", "PyTorch DataLoader + torchvision ImageFolder (raw JPEGs)", torchvision_imagefolder),
    Candidate("b", "webdataset + PIL + torchvision (shards)", webdataset_pil),
    Candidate("c", "plain DALI pipeline, docs style (raw JPEGs)", dali_plain),
    Candidate("h", "plain DALI on fastdata's shards (webdataset reader, ROI decode)", dali_shards),
    Candidate("d", "fastdata, DALI backend (shards)", _fastdata("dali")),
    Candidate("e", "fastdata, kornia backend (shards)", _fastdata("kornia")),
    Candidate("f", "ceiling: libjpeg-turbo decode only (shard bytes)", decode_ceiling, read_shard_jpegs, True),
    Candidate("n", "ceiling: DALI's decoder alone on fastdata's shards ((h) less resize, flip, normalise)",
              dali_decode_only, ceiling=True),
    Candidate("m", "kernel floor: fastdata's decode/resize/flip/normalise kernels alone (shard bytes)", kernel_floor,
              kernel_floor_setup),
    Candidate("g", "FFCV 1.0.2 (JPEG beton of the same photos, max_resolution 341, quality 90)", _ffcv, _ffcv_setup,
              python=FFCV_PYTHON, install=FFCV_INSTALL),
    Candidate("i", "fastdata, kornia backend, identity hooks (shards)", _fastdata("kornia", identity_hooks)),
    Candidate("l", "fastdata, DALI backend, identity hooks (shards)", _fastdata("dali", identity_hooks)),
    Candidate("j", "fastdata, kornia backend, timm recipe as hooks (shards; train only)",
              _fastdata("kornia", timm_hooks)),
    Candidate("k", "DataLoader + ImageFolder, timm recipe per sample + MixUp/CutMix (raw JPEGs; train only)",
              torchvision_timm),
)}


def raw_split_folder(raw: Path, split: str) -> Path:
    """The class-folder root of `split` inside a raw tree (`raw/<split>/<class>` or `raw/<class>`)."""
    candidate = raw / split
    if candidate.is_dir() and any(p.is_dir() for p in candidate.iterdir()):
        return candidate
    return raw
