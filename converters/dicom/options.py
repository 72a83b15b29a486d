"""Options of the DICOM conversion: one frozen dataclass, validated eagerly."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from converters.dicom.label_volume import check_policy
from converters.dicom.orientation import check_code
from converters.dicom.pet import NORMALISATIONS
from fastdata.manifest import check_split_name

DEFAULT_SALT_ENV = "FASTDATA_DICOM_SALT"
DEFAULT_MAX_VOXELS = 512 * 2**20  # a 1024 x 1024 x 512 volume: ~6 GB of float32 work memory in resampling
MODALITY = re.compile(r"[A-Z0-9_]{1,16}")  # a Modality code (PS3.3 C.7.3.1.1.1: CT, PT, MR), a code string's characters


@dataclass(frozen=True)
class DicomOptions:
    """What decides the bytes of a DICOM conversion.

    `spacing` is the output voxel spacing in mm in array-axis order (z, y, x) = (slice, row, column),
    or None to keep each series' native spacing. `salt` keys the pseudonyms; it is a secret field
    (metadata "secret"): never written out, not part of the fingerprint, and drawn at random by the
    engine when empty. `keep_phi` copies patient-identifying attributes, UIDs and source paths into
    the dataset (opt-in). `allow_burned_in` converts series marked BurnedInAnnotation YES.
    `max_voxels` caps a series before and after resampling (memory is about 12 bytes per voxel).
    `orientation` reorients every volume so that its x, y and z axes point as the code names ("LPS", "RAS":
    converters/dicom/orientation.py), or None to keep each volume's stored orientation. `overlap` says what a
    voxel in two of a mask's structures becomes (converters/dicom/label_volume.py). `channels` names the modalities
    whose series of one study's frame of reference are stacked into one (C, z, y, x) volume, in that order, on the
    first one's grid (converters/dicom/channels.py); () converts each series by itself.
    """

    spacing: tuple[float, float, float] | None = None
    salt: str = field(default="", metadata={"secret": True})
    keep_phi: bool = False
    split: str = "train"
    slice_tolerance: float = 0.05  # allowed relative deviation of a slice gap from the median gap
    allow_burned_in: bool = False
    max_voxels: int = DEFAULT_MAX_VOXELS
    orientation: str | None = None
    val_fraction: float = 0.0  # patients held out of --split as val, with all their series (discover.py)
    structures: tuple[str, ...] = ()  # the masks' classes to keep, by name ("Lung_L|Lung-Left"), in class order
    overlap: str = "reject"  # a voxel two structures claim: reject the case, or give it to the later class
    suv: bool | str = False  # PET series in SUV: "bw" (or True), "lbm" or "bsa" (converters/dicom/pet.py)
    channels: tuple[str, ...] = ()  # --channel CT,PT: modalities stacked as channels (converters/dicom/channels.py)

    def __post_init__(self) -> None:
        if self.spacing is not None:
            if len(self.spacing) != 3 or any(not isinstance(s, int | float) or not math.isfinite(s) or s <= 0
                                             for s in self.spacing):
                raise ValueError(f"--spacing must be three positive millimetre values Z Y X (or one for isotropic), "
                                 f"got {self.spacing!r}")
        if not isinstance(self.salt, str):
            raise TypeError(f"salt must be a string, got {type(self.salt).__name__}")
        if not 0 < self.slice_tolerance < 0.5:
            raise ValueError(f"slice_tolerance must be in (0, 0.5), got {self.slice_tolerance}")
        if not isinstance(self.max_voxels, int) or isinstance(self.max_voxels, bool) or self.max_voxels < 1:
            raise ValueError(f"--max-voxels must be a positive whole number, got {self.max_voxels!r}")
        check_split_name(self.split)
        if self.orientation is not None:
            check_code(self.orientation)
        if not (isinstance(self.val_fraction, int | float) and not isinstance(self.val_fraction, bool)
                and 0 <= self.val_fraction < 1):
            raise ValueError(f"--val-fraction must be in [0, 1), got {self.val_fraction!r}")
        check_policy(self.overlap)
        if self.suv is True:
            object.__setattr__(self, "suv", "bw")
        if self.suv is not False and self.suv not in NORMALISATIONS:
            raise ValueError(f"--suv must be one of {', '.join(NORMALISATIONS)} (bw when none is named), got "
                             f"{self.suv!r}")
        if not all(isinstance(entry, str) for entry in self.structures):
            raise ValueError(f"--structures must be names, got {list(self.structures)!r}")
        names = [name for entry in self.structures for name in structure_names(entry)]
        folded = {name.casefold() for name in names if name and name.strip() == name}
        if len(folded) != len(names):
            raise ValueError("--structures must name each structure once, by a name without leading or trailing "
                             f"spaces (a class's other names after a |), got {list(self.structures)!r}")
        if self.channels and (len(self.channels) < 2 or len(set(self.channels)) < len(self.channels)
                              or not all(isinstance(m, str) and MODALITY.fullmatch(m) for m in self.channels)):
            raise ValueError("dicom: --channel stacks the series of two or more modalities, each named once by its "
                             f"Modality code (CT,PT; CT,MR), got {','.join(map(str, self.channels))!r}")


def salt_from_args(args: Any) -> str:
    """`--salt`, else $FASTDATA_DICOM_SALT, else "" (the engine then draws a random one): both volume kinds'."""
    return args.salt if args.salt is not None else os.environ.get(DEFAULT_SALT_ENV, "")


def parse_orientation(text: str | None) -> str | None:
    """`--orientation ras` is RAS: the letters in capitals (checked by the options)."""
    return None if text is None else text.upper()


def parse_modalities(text: str | None) -> tuple[str, ...]:
    """The dicom kind's `--channel ct,pt`: the Modality codes to stack, in capitals and in that order (checked by the
    options); () for none."""
    return () if text is None else tuple(name.strip().upper() for name in text.split(","))


def parse_spacing(values: list[float] | None) -> tuple[float, float, float] | None:
    """`--spacing 1.0` (isotropic) or `--spacing Z Y X`; None keeps the native spacing."""
    if not values:
        return None
    if len(values) == 1:
        return (float(values[0]),) * 3
    if len(values) != 3:
        raise ValueError(f"--spacing takes one value (isotropic) or three (Z Y X), got {len(values)}: {values}")
    return (float(values[0]), float(values[1]), float(values[2]))


def shared_preprocessing(options: Any, kept: str) -> dict[str, Any]:
    """The `preprocessing` entries of the options both volume kinds share (DicomOptions, NiftiOptions); `kept`
    says what --keep-phi keeps."""
    return {
        "spacing": None if options.spacing is None else list(options.spacing),
        "spacing_axes": "zyx",
        "orientation": options.orientation or "as stored",
        "keep_phi": options.keep_phi,
        "pseudonyms": kept if options.keep_phi else (
            "keyed by the user's salt: the same in every conversion with that salt" if options.salt else
            "keyed by a random salt of this conversion: linkable to no other conversion"),
        "max_voxels": options.max_voxels,
        "val_fraction": options.val_fraction,
    }


def parse_structures(text: str | None) -> tuple[str, ...]:
    """`--structures "GTV-1,Heart|Coeur"`: the classes, in order (spaces around a comma or a bar dropped); () for
    none."""
    if text is None:
        return ()
    return tuple("|".join(name.strip() for name in entry.split("|")) for entry in text.split(","))


def structure_names(entry: str) -> tuple[str, ...]:
    """The names one `--structures` class goes by: "Lung_L|Lung-Left" is named Lung_L (the first), and matches
    structures named either way, in any case."""
    return tuple(entry.split("|"))


def structure_values(structures: tuple[str, ...]) -> dict[str, int]:
    """{a name, case-folded: its class value} of `--structures` (class 1 is the first)."""
    return {name.casefold(): n for n, entry in enumerate(structures, start=1) for name in structure_names(entry)}


def named_classes(structures: tuple[str, ...]) -> tuple[str, ...]:
    """The class names of `--structures`, each class's first name."""
    return tuple(structure_names(entry)[0] for entry in structures)


def unheld_structures(structures: tuple[str, ...], held: Iterable[str]) -> list[str]:
    """The `--structures` entries none of whose names is among `held` (the names a source's masks go by)."""
    values = structure_values(structures)
    found = {values.get(name.casefold()) for name in held}
    return [entry for n, entry in enumerate(structures, start=1) if n not in found]
