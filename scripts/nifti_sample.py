"""A Medical Segmentation Decathlon task folder made from nibabel's bundled real MR image (`anatomical.nii`, an
SPM-normalised brain, MIT licence, shipped inside the nibabel package): used by `make demo`, the docs walk and the
tests of real NIfTI files. Its mask is a threshold of the image (the brighter half of the head), a stand-in for an
expert's segmentation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def anatomical() -> Path:
    import nibabel

    return Path(nibabel.__file__).parent / "tests" / "data" / "anatomical.nii"


def bright_half(values):
    """The stand-in mask: the voxels brighter than the median of the head (the voxels above 0)."""
    import numpy as np

    return values > np.percentile(values[values > 0], 50)


def brain_task(root: Path) -> Path:
    """root/{imagesTr/brain_000.nii, labelsTr/brain_000.nii.gz, dataset.json}; returns root."""
    import nibabel as nib
    import numpy as np

    image = nib.load(anatomical())
    (root / "imagesTr").mkdir(parents=True, exist_ok=True)
    (root / "labelsTr").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(anatomical(), root / "imagesTr" / "brain_000.nii")
    values = np.asarray(image.dataobj)
    mask = bright_half(values).astype(np.uint8)
    nib.save(nib.Nifti1Image(mask, image.affine, image.header), root / "labelsTr" / "brain_000.nii.gz")
    (root / "dataset.json").write_text(json.dumps({"name": "Brain", "labels": {"0": "background", "1": "bright"},
                                                   "modality": {"0": "MRI"}}, indent=1))
    return root


def structures_task(root: Path) -> Path:
    """The same image in TotalSegmentator's layout: root/s0000/ct.nii (the image, whatever its modality) with
    root/s0000/segmentations/{bright,dim}.nii.gz (two structures: the brighter and the dimmer half of the head), and
    root/meta.csv giving s0000 the split train; returns root."""
    import nibabel as nib
    import numpy as np

    image = nib.load(anatomical())
    case = root / "s0000"
    (case / "segmentations").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(anatomical(), case / "ct.nii")
    values = np.asarray(image.dataobj)
    middle = np.percentile(values[values > 0], 50)
    for name, marked in (("bright", values > middle), ("dim", (values > 0) & (values <= middle))):
        nib.save(nib.Nifti1Image(marked.astype(np.uint8), image.affine, image.header),
                 case / "segmentations" / f"{name}.nii.gz")
    (root / "meta.csv").write_text("image_id;age;gender;split\ns0000;0;x;train\n")
    return root


def channels_task(root: Path) -> Path:
    """The same image as a BraTS case folder of two modalities: root/BraTS20_Training_001/..._t1.nii (the real
    image), ..._t2.nii.gz (its contrast inverted inside the head: a stand-in for a second modality on the same
    grid) and ..._seg.nii.gz (the threshold mask); returns root."""
    import nibabel as nib
    import numpy as np

    image = nib.load(anatomical())
    case = root / "BraTS20_Training_001"
    case.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(anatomical(), case / "BraTS20_Training_001_t1.nii")
    values = np.asarray(image.dataobj)
    inverted = np.where(values > 0, values.max() - values, 0).astype(values.dtype)
    nib.save(nib.Nifti1Image(inverted, image.affine, image.header), case / "BraTS20_Training_001_t2.nii.gz")
    mask = bright_half(values).astype(np.uint8)
    nib.save(nib.Nifti1Image(mask, image.affine, image.header), case / "BraTS20_Training_001_seg.nii.gz")
    return root


def metaimage_task(root: Path) -> Path:
    """The same image as LUNA16 hands out its CT: root/subset0/<series UID>.mhd with its .raw beside it, written by
    SimpleITK from the NIfTI file (ITK's reader and writer: the geometry in LPS, as ITK reads the NIfTI's); returns
    root."""
    import SimpleITK as sitk

    (root / "subset0").mkdir(parents=True, exist_ok=True)
    image = sitk.ReadImage(str(anatomical()))
    sitk.WriteImage(image, str(root / "subset0" / f"{LUNA_UID}.mhd"))
    return root


def slicer_cases(root: Path) -> Path:
    """The same image as 3D Slicer saves a volume and its segmentation: root/case01/CT.nrrd beside
    Segmentation.seg.nrrd (the brighter half of the head, gzip-encoded), written by SimpleITK; returns root."""
    import SimpleITK as sitk

    case = root / "case01"
    case.mkdir(parents=True, exist_ok=True)
    image = sitk.ReadImage(str(anatomical()))
    sitk.WriteImage(image, str(case / "CT.nrrd"))
    values = sitk.GetArrayViewFromImage(image)
    mask = sitk.GetImageFromArray(bright_half(values).astype("uint8"))
    mask.CopyInformation(image)
    sitk.WriteImage(mask, str(case / "Segmentation.seg.nrrd"), useCompression=True)
    return root


def oasis_scans(root: Path) -> Path:
    """The same image as OASIS-1 hands out its scans: root/OAS1_0001_MR1/RAW/OAS1_0001_MR1_mpr-1_anon.hdr with its .img
    beside it, an Analyze 7.5 pair written by nibabel (voxel sizes, no orientation); returns root."""
    import nibabel as nib
    import numpy as np

    image = nib.load(anatomical())
    raw = root / "OAS1_0001_MR1" / "RAW"
    raw.mkdir(parents=True, exist_ok=True)
    pair = nib.AnalyzeImage(np.asarray(image.dataobj), None)
    pair.header.set_zooms(image.header.get_zooms()[:3])
    nib.save(pair, str(raw / "OAS1_0001_MR1_mpr-1_anon.hdr"))
    return root


def freesurfer_cases(root: Path) -> Path:
    """The same image as FreeSurfer's MGH files: root/subj01/brain.mgz beside seg.mgz (the brighter half of the
    head), written by nibabel with the NIfTI's affine; returns root."""
    import nibabel as nib
    import numpy as np

    image = nib.load(anatomical())
    case = root / "subj01"
    case.mkdir(parents=True, exist_ok=True)
    values = np.asarray(image.dataobj)
    nib.save(nib.MGHImage(values.astype(np.float32), image.affine), str(case / "brain.mgz"))
    mask = bright_half(values).astype(np.int32)
    nib.save(nib.MGHImage(mask, image.affine), str(case / "seg.mgz"))
    return root


def freesurfer_subjects(root: Path) -> Path:
    """The same image as a FreeSurfer subject's volumes: root/subj01/brain.mgz, T1.mgz (a stand-in: half its values)
    and aseg.mgz (the brighter half of the head, label 17 as FreeSurfer's left hippocampus is: a mask without a
    mask word in its name); returns root."""
    import nibabel as nib
    import numpy as np

    image = nib.load(anatomical())
    case = root / "subj01"
    case.mkdir(parents=True, exist_ok=True)
    values = np.asarray(image.dataobj)
    nib.save(nib.MGHImage(values.astype(np.float32), image.affine), str(case / "brain.mgz"))
    nib.save(nib.MGHImage((values // 2).astype(np.float32), image.affine), str(case / "T1.mgz"))
    mask = np.where(bright_half(values), 17, 0).astype(np.int32)
    nib.save(nib.MGHImage(mask, image.affine), str(case / "aseg.mgz"))
    return root


def la2018_cases(root: Path) -> Path:
    """The same image as the 2018 Left Atrial Segmentation Challenge hands out a case: root/case01/lgemri.nrrd
    beside its mask laendo.nrrd (the brighter half of the head, 255 as the challenge marks it), written by SimpleITK;
    returns root."""
    import numpy as np
    import SimpleITK as sitk

    case = root / "case01"
    case.mkdir(parents=True, exist_ok=True)
    image = sitk.ReadImage(str(anatomical()))
    sitk.WriteImage(image, str(case / "lgemri.nrrd"))
    values = sitk.GetArrayViewFromImage(image)
    mask = sitk.GetImageFromArray(np.where(bright_half(values), 255, 0).astype("uint8"))
    mask.CopyInformation(image)
    sitk.WriteImage(mask, str(case / "laendo.nrrd"), useCompression=True)
    return root


def brainweb_normal(root: Path) -> Path:
    """The same image as BrainWeb's Simulated Brain Database hands out its normal brain: root/normal/
    t1_icbm_normal_1mm_pn3_rf20.mnc.gz (a T1 image: 1 mm, 3% noise, 20% intensity non-uniformity) beside
    phantom_1.0mm_normal_crsp.mnc.gz (its tissue classes, here the brighter half of the head, value 3 as BrainWeb
    marks white matter), gzip-compressed MINC-1 files with the NIfTI's geometry (minc_files.py writes them); returns
    root."""
    import gzip

    import nibabel as nib
    import numpy as np
    from minc_files import Axis, Minc, write_minc1

    image = nib.load(anatomical())
    values = np.asarray(image.dataobj).astype(np.int16)  # (i, j, k): along x, y, z, as its affine says; native order
    affine = image.affine
    axes = [Axis(name, float(affine[a, a]), float(affine[a, 3])) for name, a in (("zspace", 2), ("yspace", 1),
                                                                                 ("xspace", 0))]
    case = root / "normal"
    for name, voxels in (("t1_icbm_normal_1mm_pn3_rf20", values),
                         ("phantom_1.0mm_normal_crsp", np.where(bright_half(values), 3, 0).astype(np.uint8))):
        path = write_minc1(case / f"{name}.mnc", Minc(np.ascontiguousarray(voxels.transpose(2, 1, 0)), axes))
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        path.unlink()
    return root



def afni_subjects(root: Path) -> Path:
    """The bundled real MR brain as AFNI keeps a subject's anatomy: root/sub-01/anat+orig.HEAD with anat+orig.BRIK.gz
    and the brain mask 3dAutomask makes beside it (anat_mask+orig, here the brighter half of the head, value 1), both
    with the NIfTI's geometry (afni_files.py writes them); returns root."""
    import nibabel as nib
    import numpy as np
    from afni_files import Afni, write_afni

    image = nib.load(anatomical())
    values = np.asarray(image.dataobj).astype(np.int16)  # (i, j, k), as its affine says
    matrix = image.affine[:3] * np.array([[-1.0], [-1.0], [1.0]])  # RAS+ -> AFNI's DICOM order (LPS)
    subject = root / "sub-01"
    write_afni(subject / "anat+orig.HEAD", Afni(values, matrix, history="3dcopy anat.nii anat"), compress=".gz")
    write_afni(subject / "anat_mask+orig.HEAD", Afni(bright_half(values).astype(np.uint8), matrix), compress=".gz")
    return root


def kirby21_scans(root: Path) -> Path:
    """Two MPRAGE scans named as Kirby21 hands them out: root/KKI2009-01-MPRAGE.par with KKI2009-01-MPRAGE.rec, and
    KKI2009-02-MPRAGE; each a real Philips PAR header (nibabel's T1.PAR: 80 x 80 x 10) with a REC of random pixels
    (parrec_files.py writes them); returns root."""
    from parrec_files import copy_par

    for subject in (1, 2):
        copy_par("T1.PAR", root / f"KKI2009-{subject:02d}-MPRAGE.par", seed=subject)
    return root

LUNA_UID = "1.3.6.1.4.1.14519.5.2.1.6279.6001.100225287222365663678666836860"  # named as LUNA16's series are
