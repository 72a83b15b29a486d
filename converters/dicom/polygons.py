"""The pixels of one closed planar contour on its slice (rtstruct.py), by DICOM's rule (PS3.3 C.8.8.6.3): "points
in space lying along the path defined by the contour are considered to be part of the ROI", so a pixel belongs to
the contour's region when its centre lies inside the contour or on it. Within one contour the even-odd rule holds:
a keyhole contour (an outline and its hole joined by a channel of no width) leaves its hole out.

Vertices come as (row, column) coordinates, pixel centres at whole numbers. A centre within `EDGE` of an edge is on
it: ContourData written with six significant digits puts a vertex that lay on a centre that near it. The fill is a
scanline over the edges, in numpy: scikit-image's `draw.polygon` tests every pixel of a contour's box against every
vertex (0.36 s for one 800-vertex body outline on a 512 x 512 slice, about a minute a series), and Pillow's
`ImageDraw.polygon` rounds the vertices to whole pixels.
"""

from __future__ import annotations

import numpy as np

from converters.dicom.geometry import RejectSeries

EDGE = 1e-3  # pixels
MAX_CROSSINGS_PER_ROW = 64  # a contour's edges crossing the rows of a slice, on average over the series: a bound


def region(r: np.ndarray, q: np.ndarray, shape: tuple[int, int], budget: list[int], rel: str) -> np.ndarray:
    """The (rows, columns) pixels of the contour of vertices (r, q) whose centres lie inside it or on it; `budget`:
    the crossings of rows still allowed (RejectSeries past it)."""
    out = _interior(r, q, shape, budget, rel)
    _mark_edges(out, r, q)
    return out


def _interior(r: np.ndarray, q: np.ndarray, shape: tuple[int, int], budget: list[int], rel: str) -> np.ndarray:
    """Even-odd: on each row the crossings, sorted, pair up as (in, out); the centres from `in` to `out`, both
    included, are inside (those within EDGE outside them are on an edge: _mark_edges)."""
    rows, cols = shape
    row, x = _crossings(r, q, rows, budget, rel)
    order = np.lexsort((x, row))  # a row's crossings are even in number (half-open rows): they pair within the row
    row, x = row[order][0::2], x[order]
    start = np.clip(np.ceil(x[0::2]), 0, cols).astype(np.intp)
    stop = np.clip(np.floor(x[1::2]) + 1, 0, cols).astype(np.intp)
    keep = stop > start
    return _runs(rows, cols, row[keep], start[keep], stop[keep])


def _runs(rows: int, cols: int, row: np.ndarray, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """The pixels of the runs [start, stop) of `row`, as a (rows, cols) mask."""
    diff = np.zeros((rows, cols + 1), np.int32)
    np.add.at(diff, (row, start), 1)
    np.add.at(diff, (row, stop), -1)
    return np.cumsum(diff, axis=1)[:, :cols] > 0


def _mark_edges(out: np.ndarray, r: np.ndarray, q: np.ndarray) -> None:
    """Adds the centres that lie on an edge, which the half-open rows of the interior may leave out (the bottom
    row of a contour, a vertex at its lowest point)."""
    rows, cols = out.shape
    r0, r1, q0, q1 = r, np.roll(r, -1), q, np.roll(q, -1)
    flat = np.abs(r1 - r0) <= EDGE
    on_row = flat & (np.abs(r0 - np.rint(r0)) <= EDGE) & (np.rint(r0) >= 0) & (np.rint(r0) < rows)
    start = np.clip(np.ceil(np.minimum(q0, q1)[on_row] - EDGE), 0, cols).astype(np.intp)
    stop = np.clip(np.floor(np.maximum(q0, q1)[on_row] + EDGE) + 1, 0, cols).astype(np.intp)
    keep = stop > start
    out |= _runs(rows, cols, np.rint(r0[on_row]).astype(np.intp)[keep], start[keep], stop[keep])
    sloped = np.flatnonzero(~flat)
    low, high = np.minimum(r0, r1)[sloped], np.maximum(r0, r1)[sloped]
    first = np.clip(np.ceil(low - EDGE), 0, rows).astype(np.int64)
    counts = np.maximum(np.clip(np.floor(high + EDGE) + 1, 0, rows).astype(np.int64) - first, 0)
    edge, row = _each_row(first, counts)
    edge = sloped[edge]
    x = q0[edge] + (row - r0[edge]) * (q1[edge] - q0[edge]) / (r1[edge] - r0[edge])
    col = np.rint(x)
    hit = (np.abs(x - col) <= EDGE) & (col >= 0) & (col < cols)
    out[row[hit], col[hit].astype(np.intp)] = True


def _crossings(r: np.ndarray, q: np.ndarray, rows: int, budget: list[int], rel: str) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) where a closed polygon's edges cross the rows' pixel centres: an edge from row r0 to r1 crosses
    the whole rows in [min, max) (half-open, so a vertex on a row is counted once)."""
    r0, r1, q0, q1 = r, np.roll(r, -1), q, np.roll(q, -1)
    first = np.clip(np.ceil(np.minimum(r0, r1)), 0, rows).astype(np.int64)
    end = np.clip(np.ceil(np.maximum(r0, r1)), 0, rows).astype(np.int64)
    counts = end - first  # 0 for an edge along a row
    budget[0] -= int(counts.sum())
    if budget[0] < 0:
        raise RejectSeries(f"{rel}: contours crossing the slices' rows more than {MAX_CROSSINGS_PER_ROW} times a row "
                           "on average; not the outline of an anatomy")
    edge, row = _each_row(first, counts)
    t = (row - r0[edge]) / (r1[edge] - r0[edge])
    return row, q0[edge] + t * (q1[edge] - q0[edge])


def _each_row(first: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(edge, row) for each of the `counts[e]` rows from `first[e]` of every edge e."""
    total = int(counts.sum())
    edge = np.repeat(np.arange(len(first)), counts)
    return edge, np.repeat(first, counts) + (np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts))
