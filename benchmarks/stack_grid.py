"""Seconds to sample one series onto another's grid and count the voxels it leaves out (`--channel CT,PT`:
converters/dicom/resample.py's onto_grid and outside_grid, as a conversion calls them), for a PET onto its CT's grid,
with parallel axes (scipy's diagonal path) and with the PET turned by 0.01 degrees about z (the full matrix).
Hand-written results: docs/volumes.md ("Series stacked as channels").

    python benchmarks/stack_grid.py                                   # a 300 x 512 x 512 CT, a 300 x 200 x 200 PET
    python benchmarks/stack_grid.py --ct 20 64 64 --pet 20 24 24 --reps 1   # short
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from converters.dicom.geometry import Geometry  # noqa: E402
from converters.dicom.resample import onto_grid, outside_grid  # noqa: E402

AXIAL = ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0))  # (z, y, x) axes of an axial series, LPS


def turned(degrees: float) -> tuple[tuple[float, float, float], ...]:
    """AXIAL with its rows and columns turned about z."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return (0.0, 0.0, 1.0), (-s, c, 0.0), (c, s, 0.0)


PET_SPACING = (2.0, 4.07, 4.07)


def centred(ct: Geometry, shape: list[int]) -> tuple[float, float, float]:
    """The origin of an axial PET of `shape` whose centre is the CT's (its slices start at the CT's first)."""
    centre = [o + (n - 1) * s / 2 for o, n, s in zip(ct.origin, ct.shape[::-1], ct.spacing[::-1])]  # x, y, z
    return (centre[0] - (shape[2] - 1) * PET_SPACING[2] / 2, centre[1] - (shape[1] - 1) * PET_SPACING[1] / 2,
            ct.origin[2])


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ct", type=int, nargs=3, default=(300, 512, 512), metavar=("Z", "Y", "X"))
    p.add_argument("--pet", type=int, nargs=3, default=(300, 200, 200), metavar=("Z", "Y", "X"))
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args(argv)
    ct = Geometry(shape=tuple(args.ct), spacing=(2.0, 0.98, 0.98), origin=(-250.0, -250.0, -600.0), direction=AXIAL,
                  spacing_source="")
    values = np.random.default_rng(0).random(tuple(args.pet), dtype=np.float32)
    rows = []
    for name, direction in (("parallel axes", AXIAL), ("turned 0.01 degrees", turned(0.01))):
        pet = Geometry(shape=tuple(args.pet), spacing=PET_SPACING, origin=centred(ct, args.pet), direction=direction,
                       spacing_source="")
        seconds = []
        for _ in range(args.reps):
            start = time.perf_counter()
            out, outside = onto_grid(values, pet, ct, order=1, fill=0.0), outside_grid(pet, ct)  # as a conversion
            seconds.append(time.perf_counter() - start)
        rows.append({"case": name, "ct": list(args.ct), "pet": list(args.pet), "median_s": statistics.median(seconds),
                     "outside_voxels": outside, "shape": list(out.shape)})
        print(json.dumps(rows[-1]))
    return rows


if __name__ == "__main__":
    main()
