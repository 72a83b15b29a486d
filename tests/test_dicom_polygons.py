"""The pixels of a closed planar contour (converters/dicom/polygons.py), by DICOM's rule: a pixel is the contour's
when its centre lies inside it or on it. The oracle is conftest_rtstruct.inside, a ray cast from each centre with
the centres on an edge counted in."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_rtstruct import inside  # noqa: E402

from converters.dicom.polygons import region  # noqa: E402


def _region(polygon, shape=(12, 10)) -> np.ndarray:
    r, q = (np.array(v, np.float64) for v in zip(*polygon, strict=True))
    return region(r, q, shape, [10**6], "rs")


def test_centres_on_the_contour_are_the_contours():
    """A square through four pixel centres holds the 4 x 4 centres on and in it, its bottom row and right column
    included (a half-open scanline alone leaves them out); a diamond holds its four tips; a contour traced through
    the centres of a mask's border (as masks are turned into contours) gives the mask back."""
    square = [(1.0, 1.0), (1.0, 4.0), (4.0, 4.0), (4.0, 1.0)]
    expected = np.zeros((12, 10), bool)
    expected[1:5, 1:5] = True
    np.testing.assert_array_equal(_region(square), expected)
    np.testing.assert_array_equal(_region(square), inside((12, 10), [square], boundary=True))
    diamond = [(2.0, 5.0), (5.0, 8.0), (8.0, 5.0), (5.0, 2.0)]
    got = _region(diamond)
    assert got[2, 5] and got[8, 5] and got[5, 2] and got[5, 8] and got.sum() == 25
    np.testing.assert_array_equal(got, inside((12, 10), [diamond], boundary=True))
    staircase = [(1.0, 2.0), (1.0, 5.0), (3.0, 5.0), (3.0, 7.0), (6.0, 7.0), (6.0, 3.0), (4.0, 3.0), (4.0, 2.0)]
    np.testing.assert_array_equal(_region(staircase), inside((12, 10), [staircase], boundary=True))
    assert _region(staircase)[6, 3:8].all() and _region(staircase)[1:5, 2].all()


def test_a_keyhole_contour_leaves_its_hole_out():
    """DICOM's way to draw a hole in one contour: the outline, a channel of no width in to the hole, the hole's
    outline, and the channel back out."""
    keyhole = [(0.5, 4.5), (0.5, 8.5), (8.5, 8.5), (8.5, 0.5), (0.5, 0.5), (0.5, 4.5), (3.5, 4.5), (3.5, 3.5),
               (5.5, 3.5), (5.5, 5.5), (3.5, 5.5), (3.5, 4.5)]
    expected = np.zeros((12, 10), bool)
    expected[1:9, 1:9] = True
    expected[4:6, 4:6] = False
    np.testing.assert_array_equal(_region(keyhole), expected)


def test_a_vertex_written_to_six_digits_is_still_on_its_centre():
    """ContourData of six significant digits puts a vertex that lay on a centre within 1e-3 of a
    pixel of it: still on it. One a hundredth of a pixel off is not."""
    near = [(1.0 + 4e-4, 1.0 - 3e-4), (1.0, 4.0 + 2e-4), (4.0 - 5e-4, 4.0), (4.0 + 1e-4, 1.0)]
    assert _region(near).sum() == 16
    off = [(1.0, 1.0), (1.0, 3.99), (3.99, 3.99), (3.99, 1.0)]
    assert _region(off).sum() == 9
    diamond = [(2.0004, 5.0), (5.0, 8.0 - 3e-4), (8.0 - 2e-4, 5.0), (5.0, 2.0006)]  # each tip a hair inside
    got = _region(diamond)
    assert got[2, 5] and got[8, 5] and got[5, 2] and got[5, 8] and got.sum() == 25


def test_an_edge_on_a_row_past_the_image_marks_no_row_of_it():
    """A square whose top edge lies on row -1 (above the image) and whose right edge lies on column 10 (past it):
    the rows and columns of the image it covers, and nothing wrapped round to the last row or column."""
    got = _region([(-1.0, 6.0), (-1.0, 10.0), (3.0, 10.0), (3.0, 6.0)])
    expected = np.zeros((12, 10), bool)
    expected[0:4, 6:10] = True
    np.testing.assert_array_equal(got, expected)


def test_random_polygons_match_the_ray_cast():
    """Star-shaped polygons of random vertices (some past the image, some on whole rows and columns): every pixel
    as the oracle says."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        n = int(rng.integers(3, 12))
        angles = np.sort(rng.uniform(0, 2 * np.pi, n))
        radii = rng.uniform(1.0, 9.0, n)
        polygon = [(float(6 + rr * np.sin(a)), float(5 + rr * np.cos(a))) for rr, a in zip(radii, angles, strict=True)]
        if rng.random() < 0.5:  # vertices on centres
            polygon = [(float(np.rint(r)), float(np.rint(c))) for r, c in polygon]
        np.testing.assert_array_equal(_region(polygon), inside((12, 10), [polygon], boundary=True), str(polygon))


def test_the_crossings_bound_counts_each_crossing():
    """_crossings spends one unit of the bound per crossing of a row's centre, the last unit included."""
    from converters.dicom.geometry import RejectSeries
    from converters.dicom.polygons import _crossings

    r, q = np.array([0.5, 0.5, 2.5, 2.5]), np.array([0.5, 3.5, 3.5, 0.5])  # rows 1 and 2, two edges each
    budget = [4]
    rows, cols = _crossings(r, q, 8, budget, "rs")
    assert budget == [0] and sorted(zip(rows.tolist(), cols.tolist())) == [(1, 0.5), (1, 3.5), (2, 0.5), (2, 3.5)]
    with pytest.raises(RejectSeries, match="more than 64 times a row"):
        _crossings(r, q, 8, [3], "rs")
