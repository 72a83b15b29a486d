"""The volume loader: 3D patches from converted DICOM datasets (kind "dicom"), augmented on the device."""

from __future__ import annotations

from fastdata.volumes.options import VolumeLoaderOptions

__all__ = ["VolumeLoaderOptions"]
