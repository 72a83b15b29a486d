"""Options of the NIfTI conversion: one frozen dataclass, validated eagerly. The options it shares with the dicom
kind (--spacing, --salt, --keep-phi, --max-voxels, --split) mean the same there and here."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from converters.dicom.options import DEFAULT_MAX_VOXELS, DicomOptions
from converters.nifti.channels import ALL
from fastdata.manifest import check_split_name

MAX_CHANNEL = 9999  # nnU-Net names a case's channel files NAME_0000 .. NAME_9999
_MODALITY = re.compile(r"[A-Za-z0-9_\-+ ]{1,32}")
_MASK_WORD = re.compile(r"[A-Za-z0-9+]{1,32}")  # one word of a file name: its separators (_ - . space) split words
_CHANNEL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_\-+.]{0,63}")  # flair, t1ce, t2w: what a BraTS file name adds


def parse_channel(text: str | None) -> int | str | None:
    """`--channel 2` (a number), `--channel flair` (a name) or `--channel CTres,SUV` (names, spaces around a comma
    dropped)."""
    if text is not None and "," in text:
        return ",".join(name.strip() for name in text.split(","))
    return int(text) if text is not None and text.isascii() and text.isdigit() else text


@dataclass(frozen=True)
class NiftiOptions:
    """What decides the bytes of a NIfTI conversion.

    `spacing`, `salt`, `keep_phi`, `split`, `max_voxels`, `orientation`, `val_fraction`, `overlap` and `structures` are
    the dicom kind's (DicomOptions).
    `channel` picks one channel of a multi-channel case: a number (a 4D file's 4th axis, or nnU-Net's NAME_000C
    files) or a name (a case folder's file: flair of BraTS's ..._flair.nii.gz); None converts cases of one channel
    and rejects the others, naming their channels. `modality` names the images' modality ("CT" makes the
    values Hounsfield units); None takes it from the source's dataset.json, where there is one. `mask_words` are
    words that mark a mask's file name besides seg, label, mask, gt and their kin (case_folders.MaskWords).
    `resample_channels` samples a channel file or mask off its case's first channel's grid onto that grid
    (channel_grid.py) instead of rejecting the case.
    """

    spacing: tuple[float, float, float] | None = None
    salt: str = field(default="", metadata={"secret": True})
    keep_phi: bool = False
    split: str = "train"
    max_voxels: int = DEFAULT_MAX_VOXELS
    channel: int | str | None = None
    modality: str | None = None
    orientation: str | None = None
    val_fraction: float = 0.0  # cases held out of the one split (imagesTr's train) as val (val_fraction.py)
    mask_words: tuple[str, ...] = ()  # --mask-word: FreeSurfer's aseg, LA-2018's laendo
    overlap: str = "reject"  # --overlap: a voxel two per-structure masks mark (converters/dicom/label_volume.py)
    structures: tuple[str, ...] = ()  # --structures: the per-structure masks to merge, by name, in class order
    resample_channels: bool = False  # --resample-channels

    def __post_init__(self) -> None:
        # the shared options are checked by the dicom kind's rules, word for word
        DicomOptions(spacing=self.spacing, salt=self.salt, max_voxels=self.max_voxels, orientation=self.orientation,
                     val_fraction=self.val_fraction, overlap=self.overlap, structures=self.structures)
        check_split_name(self.split)
        if isinstance(self.channel, str) and "," in self.channel:
            names = self.channel.split(",")
            if not all(_CHANNEL_NAME.fullmatch(n) for n in names) or len(set(names)) < len(names) or ALL in names:
                raise ValueError(f"--channel NAME,NAME must name each channel once, each a name that starts with a "
                                 f"letter (CTres,SUV), got {self.channel!r}")
        elif isinstance(self.channel, str):
            if not _CHANNEL_NAME.fullmatch(self.channel):
                raise ValueError(f"--channel must be a number in 0..{MAX_CHANNEL} or a name that starts with a letter "
                                 f"(flair, t1ce), got {self.channel!r}")
        elif self.channel is not None and (not isinstance(self.channel, int) or isinstance(self.channel, bool)
                                           or not 0 <= self.channel <= MAX_CHANNEL):
            raise ValueError(f"--channel must be a number in 0..{MAX_CHANNEL} or a name, got {self.channel!r}")
        if not isinstance(self.mask_words, tuple) or not all(
                isinstance(w, str) and _MASK_WORD.fullmatch(w) for w in self.mask_words):
            raise ValueError(f"--mask-word must be one word of a file name: 1 to 32 letters, digits or +, without "
                             f"the separators _ - . or space that split a name into words, got {self.mask_words!r}")
        if not isinstance(self.resample_channels, bool):
            raise ValueError(f"resample_channels must be True or False, got {self.resample_channels!r}")
        if self.modality is not None and not (isinstance(self.modality, str) and _MODALITY.fullmatch(self.modality)):
            raise ValueError(f"--modality must be a name of 1 to 32 letters, digits, spaces or _-+ (CT, MRI, T2), "
                             f"got {self.modality!r}")
