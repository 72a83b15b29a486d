"""The volume loader: 3D patches from converted DICOM and NIfTI datasets (kinds "dicom", "nifti"), with their
segmentation masks where there are some, augmented on the device."""

from __future__ import annotations

from fastdata.volumes.options import VolumeLoaderOptions

__all__ = ["VolumeLoaderOptions"]
