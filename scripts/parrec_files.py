"""Philips PAR/REC files of known pixels, for the tests, the fuzz harness and the docs walk's sample data (not used by
fastdata itself). nibabel reads PAR/REC and writes none, and a PAR header is a long table of scanner fields, so the
headers are the real ones nibabel ships as its test data (written by Philips scanners, most without their REC file)
and the REC files are written here: one image per line of the PAR's image table, in the table's order, each image
`recon resolution` (x, y) pixels of `image pixel size` bits, x varying fastest."""

from __future__ import annotations

from pathlib import Path

import numpy as np

TYPES = {8: np.uint8, 16: np.uint16}


def bundled(name: str) -> Path:
    """A PAR file nibabel ships (`T1.PAR`, `DTI.PAR`, `phantom_EPI_asc_CLEAR_2_1.PAR`, ...)."""
    import nibabel

    return Path(nibabel.__file__).parent / "tests" / "data" / name


def image_table(par: Path) -> np.ndarray:
    """The PAR file's image table, one record per image, with nibabel's field names ('slice number', 'echo number',
    'dynamic scan number', 'image_type_mr', 'rescale slope', 'rescale intercept', 'recon resolution', ...)."""
    from nibabel import parrec

    with open(par, encoding="latin-1") as f:  # a patient's name may be in Latin-1
        _, images = parrec.parse_PAR_header(f)
    return images


def write_rec(par: Path, seed: int = 0) -> np.ndarray:
    """Write the REC file beside `par` (`.REC`, or `.rec` beside a `.par`), of random pixels; returns them as
    (image, y, x), the images in the order of the PAR's table."""
    table = image_table(par)
    x, y = (int(n) for n in table["recon resolution"][0])
    dtype = TYPES[int(table["image pixel size"][0])]
    pixels = np.random.default_rng(seed).integers(0, 4000 if dtype is np.uint16 else 256, (len(table), y, x))
    stored = pixels.astype(np.dtype(dtype).newbyteorder("<"))
    rec = par.with_suffix(".REC" if par.suffix.isupper() else ".rec")
    rec.write_bytes(stored.tobytes())
    return stored


def copy_par(name: str, to: Path, seed: int = 0) -> np.ndarray:
    """The bundled PAR file `name` copied to `to` (a `.PAR` or `.par` path), with a REC of random pixels beside it;
    returns them (write_rec)."""
    to.parent.mkdir(parents=True, exist_ok=True)
    to.write_bytes(bundled(name).read_bytes())
    return write_rec(to, seed)


def shuffle_images(par: Path, seed: int = 0) -> None:
    """Reorder the images of the PAR file `par` and of its REC alike, at random: the lines of its image table (the
    lines that start with a number) and the REC's images in the same order, as another scanner might write them."""
    lines = par.read_bytes().decode("latin-1").splitlines(keepends=True)
    rows = [i for i, line in enumerate(lines) if line.strip()[:1].isdigit()]
    order = np.random.default_rng(seed).permutation(len(rows))
    shuffled = list(lines)
    for row, source in zip(rows, order, strict=True):
        shuffled[row] = lines[rows[source]]
    par.write_bytes("".join(shuffled).encode("latin-1"))
    rec = par.with_suffix(".REC" if par.suffix.isupper() else ".rec")
    dtype = np.dtype(TYPES[int(image_table(par)["image pixel size"][0])]).newbyteorder("<")
    images = np.frombuffer(rec.read_bytes(), dtype=dtype).reshape(len(rows), -1)
    rec.write_bytes(images[order].tobytes())
