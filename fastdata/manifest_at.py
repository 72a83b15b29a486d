"""The manifest of a dataset given as a folder or a URL (for `fastdata info` and `fastdata verify`)."""

from __future__ import annotations

from pathlib import Path

from fastdata.manifest import Manifest, read_manifest
from fastdata.storage.url import is_url


def read_any_manifest(location: str | Path) -> Manifest:
    """`location/manifest.json`: read from disk, or with one GET from remote storage."""
    if is_url(str(location)):
        from fastdata.storage.client import RemoteStore
        from fastdata.storage.open import manifest_at

        return manifest_at(RemoteStore(str(location)))[0]
    return read_manifest(location)
