"""One small dataset of every kind a loader reads (images as WebDataset and Arrow, an image mixture, image-text
pairs, tokens, volumes, volumes with masks) and `make_loader(kind, ...)`: a fresh loader of that kind, and what
identifies one of its batches. For tests that hold for every kind of loader."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest_images import make_datasets
from conftest_pairs import convert_pairs, make_pair_tree

import fastdata

IMAGES = dict(batch_size=2, image_size=16, backend="kornia", device="cpu", num_threads=1, prefetch=1, dtype="uint8")
KINDS = ("images", "image mixture", "pairs", "text", "volumes", "masked volumes")


@pytest.fixture(scope="module", name="kinds_data")
def kinds_data_fixture(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kinds")
    out = make_datasets(root / "images")
    convert_pairs(make_pair_tree(root / "pairs_src", n=8), root / "pairs")
    out["pairs"] = root / "pairs"
    pytest.importorskip("pydicom")
    from conftest_dicom import Phantom, convert_dicom, write_phantom

    write_phantom(root / "dicom" / "p0", Phantom(slices=6))
    convert_dicom(root / "dicom", root / "volumes")
    out["volumes"] = root / "volumes"
    pytest.importorskip("nibabel")
    from conftest_nifti import convert_nifti, decathlon

    decathlon(root / "task", cases=2, test_cases=0)
    convert_nifti(root / "task", root / "masked")
    out["masked volumes"] = root / "masked"
    return out


def make_loader(kind: str, data: dict[str, Path], tokens: Path):
    """A fresh loader of `kind` on `data` (the `kinds_data` fixture) and the fortunes `tokens`, and what identifies
    one of its batches."""
    if kind == "images":
        return fastdata.loader(data["wds"], **IMAGES), lambda b: b[1].tolist()
    if kind == "image mixture":
        return fastdata.loader({str(data["wds"]): 1.0, str(data["arrow"]): 2.0}, **IMAGES), lambda b: b[1].tolist()
    if kind == "pairs":
        return (fastdata.loader(data["pairs"], **{**IMAGES, "return_captions": True}),
                lambda b: b[1]["captions"])
    if kind == "text":
        return fastdata.loader(tokens, max_tokens=2048), lambda b: b["input_ids"].sum().item()
    if kind == "masked volumes":
        return (fastdata.loader(data["masked volumes"], batch_size=1, patch_size=(4, 8, 8), patches_per_volume=4,
                                num_workers=1, sampling="foreground"),
                lambda b: (b[0].double().sum().item(), b[1]["labels"].sum().item()))
    return (fastdata.loader(data["volumes"], batch_size=1, patch_size=(4, 8, 8), patches_per_volume=4,
                             num_workers=1),
            lambda b: b[0].double().sum().item())
