"""Sources still packed as they were downloaded: a `.zip`, `.tar`, `.tar.gz`, `.7z` or `.rar` given as the source,
or a folder no kind recognises that holds such archives (Kaggle's `intel-image-classification.zip`, a tarball from
a dataset's site). A conversion reads folders: what to run to unpack them first, named for the archive at hand."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from fastdata.reasons import shown_names
from fastdata.wds_index import COMPRESSED_TAR_SUFFIXES

# by the name's end (any case): what the archive is, and how it unpacks into the folder OUT
_UNPACK = {
    ".zip": ("a zip archive", "unzip -q {src} -d {out}"),
    ".7z": ("a 7-Zip archive", "7z x {src} -o{out}"),
    ".rar": ("a RAR archive", "mkdir -p {out} && unrar x {src} {out}/"),
    ".tar": ("a tar archive", "mkdir -p {out} && tar -xf {src} -C {out}"),
    **{suffix: ("a compressed tar archive", "mkdir -p {out} && tar -xf {src} -C {out}")
       for suffix in COMPRESSED_TAR_SUFFIXES},
}


def archive_suffix(name: str) -> str | None:
    """The suffix of `name` that makes it an archive (no suffix known ends another), else None."""
    lower = name.lower()
    return next((s for s in _UNPACK if lower.endswith(s) and len(lower) > len(s)), None)


def _unpacked(path: Path) -> tuple[str, Path]:
    """(the archive suffix of `path`, the folder beside it named as it is less that suffix); ValueError for a path
    that is no archive."""
    suffix = archive_suffix(path.name)
    if suffix is None:
        raise ValueError(f"{path.name} is no archive")
    return suffix, path.with_name(path.name[:-len(suffix)])


def unpack_command(path: Path) -> str:
    """The shell command that unpacks the archive `path` into a folder beside it named as it is, less its suffix."""
    suffix, out = _unpacked(path)
    return _UNPACK[suffix][1].format(src=shlex.quote(str(path)), out=shlex.quote(str(out)))


def packed_source_problem(src: Path) -> str | None:
    """Why the source `src` cannot be converted as it is, when it is an archive file: what it is and how to unpack it
    and convert the folder; None for anything else."""
    from converters.images.imagenet_archives import DEVKIT, TRAIN, VAL  # (lazy: what it imports, only here)

    if archive_suffix(src.name) is None or not src.is_file():
        return None
    if src.name in (TRAIN, VAL, DEVKIT):
        return (f"{src} is one of ImageNet's archives, which a conversion reads as they are from the folder that "
                f"holds them with the devkit: `fastdata convert {shlex.quote(str(src.parent))} DST`")
    suffix, out = _unpacked(src)
    return (f"{src} is {_UNPACK[suffix][0]}: fastdata converts the folder it unpacks into: `{unpack_command(src)}`, "
            f"then `fastdata convert {shlex.quote(str(out))} DST`")


def packed_folder_advice(src: Path, files: Sequence[Path]) -> str | None:
    """What to do with the folder `src`, which no kind recognised, when some of the `files` a look at it found are
    archives: unpack them (and, for plain `.tar` files, adopt them instead if they are WebDataset shards); None when
    none is."""
    packed = [p for p in files if archive_suffix(p.name) is not None]
    if not packed:
        return None
    if len(packed) == 1:
        out = _unpacked(packed[0])[1]
        advice = (f"{packed[0].name} is an archive: unpack it (`{unpack_command(packed[0])}`) and convert what it "
                  f"holds (`fastdata convert {shlex.quote(str(out))} DST`)")
    else:
        advice = (f"{shown_names([p.name for p in packed])} are archives: unpack each into a folder of its name "
                  f"(`{unpack_command(packed[0])}`, ...) and convert {src} again")
    if all(p.name.lower().endswith(".tar") for p in packed):
        advice += f"; WebDataset shards are adopted as they are: `fastdata index {shlex.quote(str(src))}`"
    return advice
