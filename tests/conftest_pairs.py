"""Builders for the image-text tests: pairs whose identity is in both halves (the grey level of the image and
the number in its captions), so a test can check that every image still sits beside its own caption."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from helpers import SAMPLES
from PIL import Image

TOKENIZER = SAMPLES / "tokenizers" / "bert-base-uncased.json"
COCO_CAPTIONS = SAMPLES / "captions" / "captions_photos.json"
BASE, STEP = 20, 5  # sample i is a flat grey image of level BASE + STEP * i


def grey(i: int) -> int:
    return BASE + STEP * i


def make_pair_tree(root: Path, n: int = 24, *, captions: int = 1, size: tuple[int, int] = (56, 40)) -> Path:
    """`root/img_<i>.jpg` (flat grey, level grey(i)) + `root/img_<i>.txt` ("photo <i> caption <k>" lines, caption
    k longer by k words, so a sample's token rows differ in length; sample i has `captions` captions when i is
    even, else 1)."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.new("RGB", size, (grey(i),) * 3).save(root / f"img_{i:03d}.jpg", quality=95)
        k = captions if i % 2 == 0 else 1
        lines = [f"photo {i} caption {c}" + " and more" * c for c in range(k)]
        (root / f"img_{i:03d}.txt").write_text("\n".join(lines) + "\n")
    return root


def convert_pairs(src: Path, dst: Path, **config: object):
    """Run the image_text conversion in-process (1 job, 5 samples a shard unless told)."""
    from converters import get_kind
    from converters.engine import ConvertConfig, convert
    from converters.image_text import ImageTextOptions

    keys = {"captions", "tokenizer", "max_length", "short_side", "quality", "max_pixels", "split", "keep_metadata",
            "image_field", "caption_field"}
    opts = ImageTextOptions(**{k: v for k, v in config.items() if k in keys})
    cfg = {"jobs": 1, "samples_per_shard": 5, **{k: v for k, v in config.items() if k not in keys}}
    return convert(get_kind("image_text"), src, dst, options=opts, config=ConvertConfig(**cfg))


def image_ids(images) -> list[int]:
    """The sample number each uint8 image of a batch shows (its mean grey level)."""
    means = images.float().mean(dim=(1, 2, 3)).tolist()
    return [round((m - BASE) / STEP) for m in means]


def caption_number(caption: str) -> int:
    """k of "photo i caption k ..."."""
    return int(re.search(r"caption (\d+)", caption).group(1))


def caption_ids(captions: list[str]) -> list[int]:
    """The sample number each caption names (-1 for an empty padding caption)."""
    return [int(re.match(r"photo (\d+)", c).group(1)) if c else -1 for c in captions]


def tokenizer():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER))
    tok.no_padding()
    tok.no_truncation()
    return tok


def flat_grey(images) -> bool:
    """Every image of the batch is one flat grey level (no two samples blended into one image)."""
    x = images.float()
    return bool(np.all((x.amax(dim=(1, 2, 3)) - x.amin(dim=(1, 2, 3))).numpy() <= 3))


def stored_pairs(dst: Path) -> dict[str, tuple[str, list[str], dict[str, bytes]]]:
    """{source: (split, captions, members)} of every pair stored in the tar shards of `dst`."""
    import json
    import tarfile

    out = {}
    for shard in sorted(dst.glob("*.tar")):
        with tarfile.open(shard) as tar:
            got: dict[str, dict[str, bytes]] = {}
            for m in tar.getmembers():
                key, _, ext = m.name.partition(".")
                got.setdefault(key, {})[ext] = tar.extractfile(m).read()
        for members in got.values():
            source = json.loads(members["json"])["source"]
            out[source] = (shard.name.split("-")[0], members["txt"].decode().split("\n"), members)
    return out
