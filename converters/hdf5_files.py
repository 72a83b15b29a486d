"""HDF5 files, read with h5py: MINC-2 volumes (nifti/minc.py, through nibabel) and PatchCamelyon's images and labels
(images/pcam.py). An HDF5 file may link to an object of another file (an external link), keep a dataset's bytes in
other files (external storage) or map them from other files (a virtual dataset), and h5py follows each when the
object is read: such a file could make a conversion read, as pixels or voxels, any file the user can. `outside`
walks a file before anything in it is read and says when it reaches outside itself."""

from __future__ import annotations

from typing import Any

SIGNATURE = b"\x89HDF\r\n\x1a\n"  # the first bytes of an HDF5 file (without a user block)
ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError)  # what h5py raises on a damaged file
OUTSIDE = "only what lies in the file is read"


def is_hdf5(path: str) -> bool:
    """Whether the file at `path` starts as an HDF5 file does."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SIGNATURE)) == SIGNATURE
    except OSError:
        return False


def outside(h5py: Any, f: Any, max_objects: int, holds: str = "") -> str | None:
    """Why the open HDF5 file `f` is not read (None: everything in it lies in it). Every link is walked (soft links
    name a path in the file: their targets are walked where they lie), at most `max_objects` of them (a file
    linking its groups in a cycle has more; `holds`, when given, says after that how many the caller's files hold).
    Link names are listed without resolving them; an object is opened only once its link is known to lie in the
    file."""
    seen = 0
    groups = [f]
    while groups:
        group = groups.pop()
        for name in group:
            seen += 1
            if seen > max_objects:
                return f"an HDF5 file of more than {max_objects} objects" + (f"; {holds}" if holds else "")
            link = group.get(name, getlink=True)
            if isinstance(link, h5py.ExternalLink):
                return f"the HDF5 file links to an object in another file; {OUTSIDE}"
            if isinstance(link, h5py.SoftLink):
                continue
            item = group[name]
            if isinstance(item, h5py.Group):
                groups.append(item)
            elif isinstance(item, h5py.Dataset) and (item.external or item.is_virtual):
                return (f"an HDF5 dataset whose bytes lie in other files (external storage, or a virtual dataset); "
                        f"{OUTSIDE}")
    return None
