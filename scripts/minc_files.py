"""MINC files of known voxels and geometry, for the tests, the fuzz harness and the docs walk's sample data (not
used by fastdata itself). nibabel reads MINC and writes none, so these are written as the MINC file formats lay
them out: MINC-1 as netCDF (scipy's netCDF writer), MINC-2 as HDF5 (h5py). Each axis
of the image array is named (`zspace`, `yspace`, `xspace`, `time`) and has a variable (MINC-1) or a dataset
(MINC-2) of that name whose attributes give its step, start and direction cosines; `image-min` and `image-max`
map the stored values' valid range onto real values (scalars, or one pair per slice of the first axis)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT_COSINES = {"xspace": (1.0, 0.0, 0.0), "yspace": (0.0, 1.0, 0.0), "zspace": (0.0, 0.0, 1.0)}


@dataclass
class Axis:
    name: str
    step: float = 1.0
    start: float = 0.0
    cosines: tuple[float, float, float] | None = None  # None: the name's default (xspace: +x, ...)
    spacing: str = "regular__"


@dataclass
class Minc:
    """A MINC image: `data` in the order of `axes` (C order: the first axis varies slowest), stored as its dtype;
    real value = image_min + (stored - valid_min) * (image_max - image_min) / (valid_max - valid_min)."""

    data: np.ndarray
    axes: list[Axis]
    valid_range: tuple[float, float] | None = None  # None: the dtype's range
    image_min: float | np.ndarray | None = None  # None: valid_range's (no scaling); an array: per slice of axis 0
    image_max: float | np.ndarray | None = None
    patient: str = ""  # a patient's name in the file's patient attributes (and its history), as scanners write it

    def _range(self) -> tuple[float, float]:
        if self.valid_range is not None:
            return self.valid_range
        if self.data.dtype.kind == "f":  # stored as real values: no scaling
            return 0.0, 1.0
        info = np.iinfo(self.data.dtype)
        return float(info.min), float(info.max)

    def _scale(self) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self._range()
        return (np.asarray(lo if self.image_min is None else self.image_min, np.float64),
                np.asarray(hi if self.image_max is None else self.image_max, np.float64))

    def cosines(self, axis: Axis) -> tuple[float, float, float]:
        return axis.cosines if axis.cosines is not None else DEFAULT_COSINES.get(axis.name, (0.0, 0.0, 0.0))


def write_minc1(path: Path, minc: Minc) -> Path:
    from scipy.io import netcdf_file

    path.parent.mkdir(parents=True, exist_ok=True)
    with netcdf_file(str(path), "w", version=1) as f:
        for axis, n in zip(minc.axes, minc.data.shape):
            f.createDimension(axis.name, n)
            var = f.createVariable(axis.name, "i", ())
            var.spacing = axis.spacing
            var.step = axis.step
            var.start = axis.start
            if axis.name.endswith("space"):
                var.direction_cosines = np.asarray(minc.cosines(axis), np.float64)
            var.units = "mm"
        code = {np.dtype(np.uint8): "b", np.dtype(np.int8): "b", np.dtype(np.int16): "h", np.dtype(np.uint16): "h",
                np.dtype(np.int32): "i", np.dtype(np.float32): "f", np.dtype(np.float64): "d"}[minc.data.dtype]
        image = f.createVariable("image", code, tuple(a.name for a in minc.axes))
        stored = minc.data.view({"b": np.int8, "h": np.int16}.get(code, minc.data.dtype))
        image[:] = stored
        if minc.data.dtype.kind in "iu":
            image.signtype = "unsigned" if minc.data.dtype.kind == "u" else "signed__"
            image.valid_range = np.asarray(minc._range(), np.float64)
        lo, hi = minc._scale()
        dims = (minc.axes[0].name,) if lo.ndim == 1 else ()
        for name, values in (("image-min", lo), ("image-max", hi)):
            var = f.createVariable(name, "d", dims)
            if dims:
                var[:] = values
            else:
                var.data[()] = float(values)  # scipy's assignValue indexes a 0-d array with [:]
        if minc.patient:
            patient = f.createVariable("patient", "i", ())
            patient.full_name = minc.patient
            f.history = f"dcm2mnc --patient {minc.patient}"
    return path


def write_minc2(path: Path, minc: Minc) -> Path:
    import h5py

    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(str(path), "w") as f:
        root = f.create_group("minc-2.0")
        dims = root.create_group("dimensions")
        for axis in minc.axes:
            d = dims.create_dataset(axis.name, data=np.int32(0))
            d.attrs["spacing"] = np.bytes_(axis.spacing)
            d.attrs["step"] = axis.step
            d.attrs["start"] = axis.start
            if axis.name.endswith("space"):
                d.attrs["direction_cosines"] = np.asarray(minc.cosines(axis), np.float64)
        group = root.create_group("image").create_group("0")
        image = group.create_dataset("image", data=minc.data)
        image.attrs["dimorder"] = np.bytes_(",".join(a.name for a in minc.axes))
        if minc.data.dtype.kind in "iu":
            image.attrs["valid_range"] = np.asarray(minc._range(), np.float64)
        lo, hi = minc._scale()
        for name, values in (("image-min", lo), ("image-max", hi)):
            scale = group.create_dataset(name, data=values)
            if values.ndim == 1:
                scale.attrs["dimorder"] = np.bytes_(minc.axes[0].name)
        if minc.patient:
            root.create_group("info").create_dataset("patient", data=np.int32(0)).attrs["full_name"] = np.bytes_(
                minc.patient)
            root.attrs["history"] = np.bytes_(f"dcm2mnc --patient {minc.patient}")
    return path
