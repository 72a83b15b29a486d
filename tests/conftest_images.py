"""Builders for the image loader (kornia backend) tests: small converted datasets with exact control."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers import convert_images, make_image

from fastdata.images.loader import image_loader

# Unequal class sizes and mixed image sizes (landscape, portrait, tiny) so a batch mixes shapes.
TRAIN_COUNTS = (5, 3, 4)  # 12 samples
VAL_COUNTS = (2, 3, 2)  # 7 samples: odd, so rank splits and padding show
SIZES = ((64, 48), (40, 72), (96, 60), (33, 37), (50, 50))


def make_tree(root: Path) -> Path:
    seed = 100
    for split, counts in (("train", TRAIN_COUNTS), ("val", VAL_COUNTS)):
        for c, n in enumerate(counts):
            for i in range(n):
                seed += 1
                make_image(root / split / f"class_{c}" / f"img_{i}.jpg", size=SIZES[seed % len(SIZES)], seed=seed,
                           quality=92)
    return root


def make_datasets(root: Path) -> dict[str, Path]:
    """The same images converted to tar (shards of 4 samples) and Arrow (shards of 5)."""
    src = make_tree(root / "src")
    convert_images(src, root / "wds", samples_per_shard=4)
    convert_images(src, root / "arrow", samples_per_shard=5, format="arrow")
    return {"wds": root / "wds", "arrow": root / "arrow"}


@pytest.fixture(scope="session", name="image_sets")
def image_sets_fixture(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`make_datasets` once a session, for tests that only read them (import the fixture into the test module)."""
    return make_datasets(tmp_path_factory.mktemp("image-sets"))


def loader(ds: Path, **kw):
    base = dict(batch_size=4, image_size=32, num_threads=2, prefetch=2, backend="kornia", device="cpu")
    return image_loader(ds, **{**base, **kw})


def run(ld) -> list[tuple]:
    """Every (images, targets) batch of one pass, the tensors cloned (a loader may hand out reused buffers)."""
    return [(x.clone(), y.clone() if isinstance(y, torch.Tensor) else y) for x, y in ld]


def state_after_one_batch(ds: Path, epoch: int = 0, **kw) -> dict:
    """The state of a loader saved one batch into `epoch`."""
    first = loader(ds, **kw)
    first.set_epoch(epoch)
    it = iter(first)
    next(it)
    state = first.state_dict()
    it.close()
    return state


def resumed_after_one_batch(ds: Path, epoch: int = 0, **kw) -> list[tuple]:
    """The batches a fresh loader yields after loading the state saved one batch into `epoch`."""
    resumed = loader(ds, **kw)
    resumed.load_state_dict(state_after_one_batch(ds, epoch, **kw))
    return run(resumed)


def collect(it) -> tuple[list, list]:
    images, labels = [], []
    for x, y in it:
        images.append(x.clone())
        labels.append(y.clone())
    return images, labels


def jpg_entry(ds: Path, shard: str, line: int) -> tuple[int, int, str]:
    """(offset, size, key) of the jpg member of sample `line` of a tar shard, from its .idx."""
    fields = (ds / shard).with_suffix(".idx").read_text().splitlines()[1 + line].split()
    i = fields.index("jpg")
    return int(fields[i + 1]), int(fields[i + 2]), fields[i + 3].partition(".")[0]


def corrupt_sample(ds: Path, shard: str, line: int) -> str:
    """Overwrite the jpg bytes of one sample in place (same size, so the shard size still matches)."""
    offset, size, key = jpg_entry(ds, shard, line)
    data = bytearray((ds / shard).read_bytes())
    data[offset:offset + size] = bytes((13 * k + 5) % 256 for k in range(size))
    (ds / shard).write_bytes(bytes(data))
    return key


def set_manifest(ds: Path, **changes) -> None:
    path = ds / "manifest.json"
    m = json.loads(path.read_text())
    m.update(changes)
    path.write_text(json.dumps(m))


def fix_shard_size(ds: Path, shard: str) -> None:
    """Make the manifest agree with a shard's current size (to get past the cheap size check)."""
    path = ds / "manifest.json"
    m = json.loads(path.read_text())
    for split in m["splits"].values():
        for sh in split["shards"]:
            if sh["name"] == shard:
                sh["bytes"] = (ds / shard).stat().st_size
    path.write_text(json.dumps(m))
