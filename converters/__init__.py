"""The offline side: one module per kind of source, one shared engine for shard writing.

`KINDS` maps a kind name to the module that defines it (imported lazily, so a missing optional
dependency only matters for the kind that needs it)."""

from __future__ import annotations

import importlib

from converters.kind import Kind

KINDS: dict[str, str] = {  # `--kind auto` asks each in this order
    "image_text": "converters.image_text",
    "images": "converters.images",
    "dicom": "converters.dicom",
    "nifti": "converters.nifti",
    "text": "converters.text",
}


def get_kind(name: str) -> Kind:
    if name not in KINDS:
        raise ValueError(f"unknown --kind {name!r}; choose from {sorted(KINDS)}")
    return importlib.import_module(KINDS[name]).KIND
