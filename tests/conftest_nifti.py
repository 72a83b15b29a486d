"""NIfTI test data made in fixtures with nibabel: cases of known voxels, affines and masks, in the Decathlon /
nnU-Net layout or loose, and the in-process conversion of them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

# voxel i runs along -x (RAS; +x in LPS), j along -y, k along +z: a typical CT affine, spacing (i, j, k)
AFFINE = np.array([[-0.8, 0.0, 0.0, 100.0], [0.0, -0.7, 0.0, 120.0], [0.0, 0.0, 2.5, -300.0], [0.0, 0.0, 0.0, 1.0]])


def save(path: Path, data: np.ndarray, affine: np.ndarray = AFFINE, *, units: str = "mm") -> Path:
    import nibabel as nib

    path.parent.mkdir(parents=True, exist_ok=True)
    img = nib.Nifti1Image(data, affine)
    img.header.set_xyzt_units(units)
    nib.save(img, str(path))
    return path


def case(seed: int, shape: tuple[int, int, int] = (20, 18, 8)) -> tuple[np.ndarray, np.ndarray]:
    """(int16 HU image, uint8 mask with labels 1 and 2) in nibabel's (i, j, k) order."""
    rng = np.random.default_rng(seed)
    image = rng.integers(-1000, 1000, shape).astype(np.int16)
    mask = np.zeros(shape, np.uint8)
    mask[4:12, 5:11, 2:6] = 1
    mask[6:9, 6:9, 3:5] = 2
    return image, mask


def decathlon(root: Path, *, cases: int = 3, test_cases: int = 1, labels: dict | None = None,
              modality: dict | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """An MSD task folder: imagesTr + labelsTr (liver_N), imagesTs, dataset.json; returns {name: (image, mask)}."""
    made = {}
    for n in range(cases):
        image, mask = case(n)
        save(root / "imagesTr" / f"liver_{n}.nii.gz", image)
        save(root / "labelsTr" / f"liver_{n}.nii.gz", mask)
        made[f"liver_{n}"] = (image, mask)
    for n in range(test_cases):
        save(root / "imagesTs" / f"liver_{100 + n}.nii.gz", case(100 + n)[0])
    (root / "dataset.json").write_text(json.dumps({
        "name": "Liver", "labels": labels or {"0": "background", "1": "liver", "2": "cancer"},
        "modality": modality or {"0": "CT"}}))
    return made


def zyx(arr: np.ndarray) -> np.ndarray:
    """nibabel's (i, j, k) array as the converter's (z, y, x) one."""
    return arr.transpose(2, 1, 0)


def convert_nifti(src: Path, dst: Path, *, salt: str = "test-salt", **kwargs: object):
    """Run the nifti conversion in-process (1 job); keyword arguments go to NiftiOptions or ConvertConfig."""
    from dataclasses import fields

    from converters import get_kind
    from converters.engine import ConvertConfig, convert
    from converters.nifti import NiftiOptions

    names = {f.name for f in fields(NiftiOptions)}
    opts = NiftiOptions(salt=salt, **{k: v for k, v in kwargs.items() if k in names})
    config = {"jobs": 1, "samples_per_shard": 4, **{k: v for k, v in kwargs.items() if k not in names}}
    return convert(get_kind("nifti"), src, dst, options=opts, config=ConvertConfig(**config))


def load_mask(sample: dict[str, bytes]) -> np.ndarray:
    import io

    return np.load(io.BytesIO(sample["label.npy"]), allow_pickle=False)


def volumes_by_source(dst: Path, result, split: str = "train") -> dict[str, tuple[np.ndarray, np.ndarray | None, dict]]:
    """{source path: (image, mask or None, meta)} of a converted split, pseudonyms mapped back."""
    from conftest_dicom import load_volume, read_samples, reasons_by_path

    names = reasons_by_path(result, key="source")
    out = {}
    for sample in read_samples(dst, split).values():
        arr, meta = load_volume(sample)
        out[names[meta["source"]]] = (arr, load_mask(sample) if "label.npy" in sample else None, meta)
    return out
