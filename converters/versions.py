"""The library versions that shape a conversion's bytes, recorded in the plan and the manifest.

Two machines with another Pillow (or libjpeg-turbo, pyarrow, tokenizers, pydicom...) write other bytes
for the same input, so a conversion is made with one set: a resume, a `--part` or a Ray worker that
reports a different set is refused, naming the differences, instead of mixing shards.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any

from fastdata import __version__
from fastdata.errors import ConvertError

# distributions whose version changes the output of a kind (the shard writers use pyarrow for Arrow shards)
LIBRARIES: dict[str, tuple[str, ...]] = {
    "images": ("pillow", "numpy", "pyarrow"),
    "text": ("tokenizers", "numpy", "pyarrow"),
    "image_text": ("pillow", "numpy", "tokenizers"),
    # highdicom places a segmentation's (SEG's) frames on its series' slices: the masks
    "dicom": ("pydicom", "numpy", "scipy", "pylibjpeg", "pylibjpeg-libjpeg", "pylibjpeg-openjpeg", "pylibjpeg-rle",
              "nibabel", "highdicom"),
    # SimpleITK reads MetaImage and NRRD files, h5py MINC-2 files (with nibabel)
    "nifti": ("nibabel", "numpy", "scipy", "SimpleITK", "h5py"),
}


def byte_versions(kind: str) -> dict[str, str]:
    """{library: version} of everything that shapes `kind`'s output on this machine (absent: "none")."""
    out = {"fastdata": __version__}
    for dist in LIBRARIES.get(kind, ()):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "none"
    if kind in ("images", "image_text"):  # Pillow's JPEG codec is a separate C library with its own version
        features = importlib.import_module("PIL.features")
        out["libjpeg-turbo"] = str(features.version("libjpeg_turbo") or "none")
    return out


def check_versions(expected: dict[str, Any] | None, kind: str, *, where: str) -> None:
    """Refuse to convert on a machine whose libraries differ from those the conversion was planned with."""
    if not expected:
        return  # a plan made before versions were recorded
    mine = byte_versions(kind)
    differ = {k: (v, mine.get(k, "none")) for k, v in expected.items() if mine.get(k, "none") != v}
    if differ:
        shown = ", ".join(f"{k} {a} (plan) vs {b} (here)" for k, (a, b) in sorted(differ.items()))
        raise VersionMismatch(f"{where} has other library versions than this conversion was planned with: {shown}. "
                              "Shards made with both would not be byte-identical; install the plan's versions here, "
                              "or convert into a new destination")


class VersionMismatch(ConvertError):
    """A machine's libraries differ from the plan's (never retried: a retry on the same machine fails too)."""
