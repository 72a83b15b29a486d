"""What each kind writes into a manifest's `preprocessing` and `extra` (docs/format.md), word for word, for every
option that changes it: a user reads these to know how a dataset was made, and the DICOM ones say how its
patients were protected."""

from __future__ import annotations

import json

import pytest
from conftest_text import TOKENIZER

from converters import get_kind
from converters.kind import Discovery
from converters.text.tokenize import tokenizer_info


def discovery(classes: tuple[str, ...] = ()) -> Discovery:
    return Discovery(splits={}, classes=classes, rejected=[], layout="")


def test_images():
    from converters.images import ImageOptions

    kind = get_kind("images")
    labeled = kind.describe(discovery(("cat", "dog")), ImageOptions(short_side=128, quality=80, max_pixels=1000))
    assert labeled == {
        "preprocessing": {"short_side": 128, "quality": 80, "max_pixels": 1000,
                          "encoding": "baseline RGB JPEG (4:2:0), EXIF orientation applied",
                          "resample": "lanczos after libjpeg DCT downscale", "copy_when_compliant": True,
                          "metadata": "EXIF/XMP/IPTC/comments removed, ICC kept"},
        "extra": {"members": ["jpg", "cls", "json"]}}
    kept = kind.describe(discovery(), ImageOptions(keep_metadata=True, unlabeled=True))
    assert kept["preprocessing"]["metadata"] == "kept" and kept["extra"] == {"members": ["jpg", "json"]}


def test_text():
    from converters.text.options import TextOptions

    kind = get_kind("text")
    info = tokenizer_info(str(TOKENIZER))
    options = TextOptions(tokenizer=str(TOKENIZER), separator="%", text_field="body", max_length=64,
                          overflow="split", max_document_bytes=2**20)
    assert kind.describe(discovery(), options) == {
        "preprocessing": {"tokenizer": "bert-base-uncased.json", "tokenizer_sha256": info["sha256"],
                          "add_special_tokens": True, "max_length": 64, "overflow": "split", "per_line": False,
                          "separator": "%", "text_field": "body", "ids_field": None, "max_document_bytes": 2**20},
        "extra": {"tokenizer": info, "columns": ["key", "input_ids", "length", "source"]}}
    lines = kind.describe(discovery(("a", "b")), TextOptions(tokenizer=str(TOKENIZER), per_line=True))
    assert lines["preprocessing"]["per_line"] is True and lines["preprocessing"]["overflow"] == "truncate"
    assert lines["extra"]["columns"] == ["key", "input_ids", "length", "source", "label"]
    given = kind.describe(discovery(), TextOptions(tokenizer=str(TOKENIZER), ids_field="input_ids"))["preprocessing"]
    assert (given["ids_field"], given["add_special_tokens"]) == ("input_ids", False)  # the ids are taken as they are


@pytest.mark.parametrize(("given", "pseudonyms", "burned", "phi_removed"), [
    ({"salt": "SALT-7731"}, "keyed by the user's salt: the same in every conversion with that salt", "rejected", True),
    ({}, "keyed by a random salt of this conversion: linkable to no other conversion", "rejected", True),
    ({"keep_phi": True, "allow_burned_in": True}, "source paths and UIDs kept (--keep-phi)", "converted", False),
])
def test_dicom(given, pseudonyms, burned, phi_removed):
    pytest.importorskip("pydicom")
    from converters.dicom.options import DicomOptions
    from converters.dicom.privacy import PHI_KEYWORDS

    options = DicomOptions(spacing=(2.0, 1.0, 1.0), max_voxels=99, **given)
    described = get_kind("dicom").describe(discovery(), options)
    assert described == {
        "preprocessing": {
            "spacing": [2.0, 1.0, 1.0], "spacing_axes": "zyx", "orientation": "as stored",
            "interpolation": "images linear (scipy.ndimage.affine_transform, order=1), masks nearest (order=0)",
            "values": "CT: int16 Hounsfield units; others: int16 where every value is a whole number in its range, "
                      "else float32 (RescaleSlope/RescaleIntercept applied)",
            "slice_order": "ImagePositionPatient projected on the ImageOrientationPatient normal",
            "slice_tolerance": options.slice_tolerance, "keep_phi": options.keep_phi, "pseudonyms": pseudonyms,
            "burned_in_annotation": burned, "max_voxels": 99, "val_fraction": 0.0,
            "overlap": "reject: a voxel two structures claim rejects its case"},
        "extra": {"phi_removed": list(PHI_KEYWORDS) if phi_removed else [],
                  "masks": "label.npy of a series with a segmentation (SEG) or a structure set (RTSTRUCT): its "
                           "segments' or ROIs' classes (the manifest's classes), uint8 (uint16 past 255 classes), on "
                           "the series' grid"}}
    assert "SALT-7731" not in json.dumps(described)  # a secret: never written
    assert get_kind("dicom").describe(discovery(), DicomOptions())["preprocessing"]["spacing"] is None
    assert get_kind("dicom").describe(discovery(), DicomOptions(orientation="PIR"))["preprocessing"][
        "orientation"] == "PIR"
    assert get_kind("dicom").describe(discovery(), DicomOptions(structures=("Heart", "GTV-1")))["preprocessing"][
        "structures"] == ["Heart", "GTV-1"]
    assert get_kind("dicom").describe(discovery(), DicomOptions(suv=True))["preprocessing"]["values"].endswith(
        "(RescaleSlope/RescaleIntercept applied); PET in SUVbw (QIBA), float32")


def _hf_features(schema) -> dict:
    return json.loads(schema.metadata[b"huggingface"])["info"]["features"]


def test_arrow_layouts_declare_the_columns_and_hugging_face_features():
    import pyarrow as pa

    from converters.images import ImageOptions
    from converters.text.options import TextOptions

    value = {"dtype": "string", "_type": "Value"}
    text = get_kind("text").arrow_layout(discovery(("a", "b")), TextOptions(tokenizer=str(TOKENIZER))).schema
    assert text.names == ["key", "input_ids", "length", "source", "label"]
    assert [text.field(n).type for n in text.names] == [pa.string(), pa.list_(pa.uint16()), pa.int32(), pa.string(),
                                                       pa.int64()]
    assert _hf_features(text) == {
        "key": value, "input_ids": {"feature": {"dtype": "uint16", "_type": "Value"}, "_type": "Sequence"},
        "length": {"dtype": "int32", "_type": "Value"}, "source": value,
        "label": {"names": ["a", "b"], "_type": "ClassLabel"}}
    unlabeled = get_kind("text").arrow_layout(discovery(), TextOptions(tokenizer=str(TOKENIZER))).schema
    assert unlabeled.names == ["key", "input_ids", "length", "source"] and "label" not in _hf_features(unlabeled)
    images = get_kind("images").arrow_layout(discovery(("cat", "dog")), ImageOptions()).schema
    assert images.names == ["key", "image", "label", "json"]
    assert images.field("image").type == pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    assert [images.field(n).type for n in ("key", "label", "json")] == [pa.string(), pa.int64(), pa.string()]
    assert _hf_features(images) == {"key": value, "image": {"_type": "Image"},
                                    "label": {"names": ["cat", "dog"], "_type": "ClassLabel"}, "json": value}
    bare = get_kind("images").arrow_layout(discovery(), ImageOptions(unlabeled=True)).schema
    assert bare.names == ["key", "image", "json"] and "label" not in _hf_features(bare)
    with pytest.raises(ValueError, match="the dicom kind writes WebDataset tar shards only"):
        get_kind("dicom").arrow_layout(discovery(), None)


@pytest.mark.parametrize(("given", "pseudonyms"), [
    ({"salt": "SALT-7731"}, "keyed by the user's salt: the same in every conversion with that salt"),
    ({}, "keyed by a random salt of this conversion: linkable to no other conversion"),
    ({"keep_phi": True}, "source paths kept (--keep-phi)"),
])
def test_nifti(given, pseudonyms):
    from converters.nifti import NiftiOptions

    options = NiftiOptions(spacing=(1.0, 0.5, 0.5), channel=2, modality="T2", max_voxels=1000, orientation="RAS",
                           val_fraction=0.25, **given)
    assert get_kind("nifti").describe(discovery(), options) == {
        "preprocessing": {
            "spacing": [1.0, 0.5, 0.5], "spacing_axes": "zyx", "orientation": "RAS",
            "interpolation": "images linear (scipy.ndimage.affine_transform, order=1), masks nearest (order=0)",
            "values": "int16 where every value is a whole number in int16's range, else float32; CT in HU; "
                      "PAR/REC: display values (rescale slope and intercept)",
            "geometry": "the file's affine (NIfTI: sform, else qform; MGH: vox2ras; Analyze 7.5: nibabel's, x "
                        "right to left, or SPM's .mat; MINC: its axes' steps, starts and direction cosines; AFNI: "
                        "IJK_TO_DICOM_REAL; PAR/REC: nibabel's, of angulation and off-centre; MetaImage, NRRD: "
                        "ITK's); origin and direction in DICOM's LPS frame",
            "channel": 2, "modality": "T2", "mask_words": [], "keep_phi": bool(given.get("keep_phi")),
            "channel_grid": "every channel file and mask lies on its case's first channel's grid",
            "pseudonyms": pseudonyms, "max_voxels": 1000, "val_fraction": 0.25,
            "overlap": "reject: a voxel two structures claim rejects its case"},
        "extra": {"masks": "label.npy: uint8 (uint16 past 255 labels), on the image's grid"}}
    assert get_kind("nifti").describe(discovery(), NiftiOptions())["preprocessing"]["spacing"] is None
    picked = get_kind("nifti").describe(discovery(), NiftiOptions(structures=("liver", "spleen|milz"), overlap="later"))
    assert picked["preprocessing"]["structures"] == ["liver", "spleen|milz"]
    sampled = get_kind("nifti").describe(discovery(), NiftiOptions(resample_channels=True))["preprocessing"]
    assert sampled["channel_grid"] == ("a channel file or mask off its case's first channel's grid is sampled onto it "
                                       "(--resample-channels; the json's onto_grid)")
    assert picked["preprocessing"]["overlap"] == ("later: a voxel two structures claim takes the later class in class "
                                                  "order; each sample's json lists the voxels taken (overlaps)")
    with pytest.raises(ValueError, match="the nifti kind writes WebDataset tar shards only"):
        get_kind("nifti").arrow_layout(discovery(), options)
