"""Candidate (g) of images_per_sec.py: FFCV 1.0.2 on a beton written by its own DatasetWriter from the same photos.

FFCV runs in its own environment (it builds against OpenCV and libturbojpeg and pins numba): create it with

    apt-get install libturbojpeg0-dev libopencv-dev pkg-config
    python -m venv .venv-ffcv
    .venv-ffcv/bin/pip install torch==2.13.0 numba opencv-python-headless pytorch_pfn_extras psutil pillow
    .venv-ffcv/bin/pip install --no-build-isolation ffcv==1.0.2

Without it the candidate is reported as not run. The beton is written once (`write_mode="jpg"`,
`max_resolution=341`, `jpeg_quality=90`) beside the fastdata shards and reused: JPEG bytes, as every other
candidate reads (RGBImageField's default `raw` mode stores decoded pixels, ten times the bytes). The pipeline is
FFCV's documented one: `RandomResizedCropRGBImageDecoder` -> flip -> normalise (train) or
`CenterCropRGBImageDecoder` (eval), with `NormalizeImage` before `ToTensor` (on the CPU, FFCV 1.0.2's
`Graph.group_operations` loops forever when a jitted operation follows a non-jitted one), and
`ToTorchImage(channels_last=spec.channels_last)`: contiguous NCHW as every candidate delivers, or with
--channels-last FFCV's default, a channels_last view (which skips the transpose). Its numba
compilation happens in the first batch of every fresh Loader: the `first batch s` column, apart from
`steady images/s`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FFCV_PYTHON = ROOT / ".venv-ffcv" / "bin" / "python"
INSTALL = "create it as benchmarks/ffcv_candidate.py says"
MAX_RESOLUTION, QUALITY = 341, 90
WRITE_MODE = "jpg"  # JPEG like every other candidate; RGBImageField's default stores raw pixels (10x the bytes)


class _Folder:
    """The raw class-folder tree as FFCV's DatasetWriter wants it: (PIL RGB image, label) by index."""

    def __init__(self, root: Path) -> None:
        classes = sorted(p.name for p in root.iterdir() if p.is_dir())
        self.items = [(p, k) for k, c in enumerate(classes) for p in sorted((root / c).iterdir())
                      if p.suffix.lower() in (".jpg", ".jpeg", ".png")]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[Any, int]:
        from PIL import Image

        path, label = self.items[i]
        with Image.open(path) as im:
            return im.convert("RGB"), label


def ffcv_setup(spec: Any) -> str:
    """The beton of the split (written once, then reused)."""
    from ffcv.fields import IntField, RGBImageField
    from ffcv.writer import DatasetWriter

    folder = Path(spec.shards).with_name(Path(spec.shards).name + "-ffcv")
    out = folder / f"{spec.split}-{MAX_RESOLUTION}-q{QUALITY}-{WRITE_MODE}.beton"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        writer = DatasetWriter(str(tmp), {"image": RGBImageField(write_mode=WRITE_MODE, max_resolution=MAX_RESOLUTION,
                                                                jpeg_quality=QUALITY),
                                          "label": IntField()}, num_workers=spec.threads)
        writer.from_indexed_dataset(_Folder(Path(spec.raw)))
        tmp.rename(out)
    return str(out)


def ffcv_loader(spec: Any, beton: str) -> Any:
    """(g) FFCV's Loader over the beton, `num_workers` = the threads every candidate gets."""
    import numpy as np
    from ffcv.fields.basics import IntDecoder
    from ffcv.fields.rgb_image import CenterCropRGBImageDecoder, RandomResizedCropRGBImageDecoder
    from ffcv.loader import Loader, OrderOption
    from ffcv.transforms import NormalizeImage, RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage

    from benchmarks.image_candidates import MEAN, STD

    size = (spec.image_size, spec.image_size)
    if spec.train:
        image = [RandomResizedCropRGBImageDecoder(size), RandomHorizontalFlip()]
    else:
        image = [CenterCropRGBImageDecoder(size, ratio=spec.image_size / spec.resize_short)]
    # the memory format every candidate delivers (ToTorchImage's default, channels_last=True, skips the transpose)
    image += [NormalizeImage(np.array(MEAN) * 255, np.array(STD) * 255, np.float32), ToTensor(),
              ToTorchImage(channels_last=spec.channels_last)]
    return Loader(beton, batch_size=spec.batch_size, num_workers=spec.threads, seed=spec.seed,
                  order=OrderOption.RANDOM if spec.train else OrderOption.SEQUENTIAL, drop_last=spec.train,
                  pipelines={"image": image, "label": [IntDecoder(), ToTensor(), Squeeze()]})
