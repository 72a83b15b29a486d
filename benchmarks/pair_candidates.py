"""The candidates of pairs_per_sec.py, each written the way its users write it.

Every candidate yields CLIP-style training batches from the same shards: images float32 [B, 3, S, S]
(random resized crop, normalised), and token ids int64 [B, max_length] of one caption a sample. The OpenCLIP
pipeline and plain DALI read the shards without stored ids and tokenize; fastdata reads the stored ids (c, d)
or tokenizes in its prefetch stage (e).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)  # OpenAI CLIP's normalisation, as OpenCLIP uses it
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


@dataclass(frozen=True)
class Spec:
    shards: str  # image_text dataset with stored token ids
    plain: str  # the same pairs without ids (what img2dataset writes)
    tokenizer: str
    batch_size: int
    threads: int
    image_size: int = 224
    max_length: int = 77
    seed: int = 0
    train: bool = True  # pairs are benchmarked in training mode only


def _tokenizer(spec: Spec) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(spec.tokenizer)
    tok.enable_truncation(spec.max_length)
    tok.enable_padding(length=spec.max_length, pad_id=0)
    return tok


def _urls(path: str) -> list[str]:
    from fastdata.dataset import open_dataset

    return [str(ref.path) for ref in open_dataset(path, split="train").shards]


def open_clip_style(spec: Spec, state: Any) -> Iterator[Any]:
    """(a) OpenCLIP's training pipeline: webdataset DataPipeline in DataLoader workers, PIL decode, torchvision
    RandomResizedCrop(scale 0.9-1, bicubic) + normalise, the tokenizer called per sample, batched in the worker."""
    import torch
    import torchvision.transforms as T
    import webdataset as wds
    from torch.utils.data import DataLoader

    preprocess = T.Compose([T.RandomResizedCrop(spec.image_size, scale=(0.9, 1.0),
                                                interpolation=T.InterpolationMode.BICUBIC),
                            T.ToTensor(), T.Normalize(CLIP_MEAN, CLIP_STD)])
    tok = _tokenizer(spec)

    def tokenize(text: str) -> Any:
        return torch.tensor(tok.encode(text.split("\n")[0]).ids, dtype=torch.int64)

    pipeline = wds.DataPipeline(
        wds.SimpleShardList(_urls(spec.plain), seed=spec.seed), wds.shuffle(100), wds.split_by_worker,
        wds.tarfile_to_samples(), wds.shuffle(1000), wds.decode("pilrgb"),
        wds.rename(image="jpg;png;jpeg", text="txt"), wds.map_dict(image=preprocess, text=tokenize),
        wds.to_tuple("image", "text"), wds.batched(spec.batch_size, partial=False))
    for batch in DataLoader(pipeline, batch_size=None, num_workers=spec.threads):
        yield tuple(batch)  # webdataset batches are lists: a tuple is what the others yield


def dali_webdataset(spec: Spec, state: Any) -> Iterator[Any]:
    """(b) Plain DALI: readers.webdataset with a txt member (padded to a dense byte batch), ROI decode, resize,
    normalise; the captions tokenized per batch with encode_batch after the pipeline."""
    import numpy as np
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
    import torch
    from nvidia.dali import pipeline_def
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    from fastdata.dataset import open_dataset

    refs = open_dataset(spec.plain, split="train").shards
    tok = _tokenizer(spec)

    @pipeline_def(batch_size=spec.batch_size, num_threads=spec.threads, device_id=None, seed=spec.seed + 1)
    def pipe():
        jpegs, text = fn.readers.webdataset(paths=[str(r.path) for r in refs],
                                            index_paths=[str(r.index_path) for r in refs], ext=["jpg", "txt"],
                                            random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB,
                                               random_area=(0.9, 1.0))
        images = fn.resize(images, size=(spec.image_size, spec.image_size))
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mean=[m * 255 for m in CLIP_MEAN], std=[s * 255 for s in CLIP_STD])
        return images, fn.pad(text, fill_value=0)

    iterator = DALIGenericIterator(pipe(), ["images", "text"], reader_name="Reader",
                                   last_batch_policy=LastBatchPolicy.DROP)
    try:
        for out in iterator:
            raw = out[0]["text"].numpy().astype(np.uint8)
            captions = [bytes(row).rstrip(b"\0").decode("utf-8").split("\n")[0] for row in raw]
            ids = torch.tensor([e.ids for e in tok.encode_batch(captions)], dtype=torch.int64)
            yield out[0]["images"], ids
    finally:
        del iterator


def _fastdata(backend: str, *, stored_ids: bool):
    def build(spec: Spec, state: Any) -> Iterator[Any]:
        import fastdata

        loader = fastdata.loader(spec.shards if stored_ids else spec.plain, batch_size=spec.batch_size, train=True,
                                 backend=backend, device="cpu", image_size=spec.image_size, num_threads=spec.threads,
                                 seed=spec.seed, mean=CLIP_MEAN, std=CLIP_STD, scale=(0.9, 1.0), hflip=False,
                                 channels_last=False, max_length=spec.max_length,
                                 tokenizer=None if stored_ids else spec.tokenizer)
        for images, text in loader:
            yield images, text["input_ids"]

    return build


@dataclass(frozen=True)
class Candidate:
    key: str
    label: str
    build: Any
    setup: Any = None


CANDIDATES: dict[str, Candidate] = {c.key: c for c in (
    Candidate("a", "OpenCLIP-style: webdataset + PIL + torchvision + tokenizer in DataLoader workers",
              open_clip_style),
    Candidate("b", "plain DALI: webdataset reader with txt, ROI decode, encode_batch after", dali_webdataset),
    Candidate("c", "fastdata, DALI backend, ids stored at conversion", _fastdata("dali", stored_ids=True)),
    Candidate("d", "fastdata, kornia backend, ids stored at conversion", _fastdata("kornia", stored_ids=True)),
    Candidate("e", "fastdata, DALI backend, tokenized at load (img2dataset shards)",
              _fastdata("dali", stored_ids=False)),
)}
