"""The images kind: ImageNet-style folders, Hugging Face tables of images (tables.py), TFRecord files of
tf.train.Example records (tfrecords.py), torchvision's CIFAR and MNIST files or Kaggle's tables of pixels
(array_files.py), LSUN's LMDB environments (lsun.py), datasets labelled by their own files (flowers102.py,
fgvc_aircraft.py, dataset_lists.py) ->
baseline RGB JPEG samples (jpg, cls, json; with --multi-label, json lists the classes)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from converters.images import imagenet_archives, lsun
from converters.images.array_kinds import has_array_files
from converters.images.class_order import ORDERS, order_classes
from converters.images.discover import discover_images
from converters.images.encode import ImageOptions, process_image
from converters.images.id_names import name_ids
from converters.images.labels_csv import EXTENSIONS
from converters.images.split_lists import ONE_SPLIT, apply_split_lists, parse_split_lists
from converters.images.tables import has_image_tables
from converters.images.tfrecords import has_tfrecords
from converters.kind import ArrowLayout, Discovery
from converters.tree import SPLIT_HELP
from converters.val_fraction import apply_val_fraction
from converters.walk import first_files

DETECT_FILES = 2000  # files looked at by detect
# --multi-label: no cls member; each sample's json member lists its classes in `labels` (fastdata/label_members.py)
MULTI_LABEL_EXTRA = {"members": ["jpg", "json"], "label_member": "json", "label_field": "labels", "multi_label": True}


class ImagesKind:
    name = "images"
    formats = ("wds", "arrow")
    member_order = ("jpg", "cls", "json")
    unit = "img"  # progress bar unit
    extensions = EXTENSIONS

    def detect(self, src: Path, /) -> bool:
        return src.is_dir() and (any(path.suffix.lower() in EXTENSIONS for path in first_files(src, DETECT_FILES))
                                 or has_image_tables(src, limit=DETECT_FILES) or has_tfrecords(src, limit=DETECT_FILES)
                                 or has_array_files(src, limit=DETECT_FILES) or bool(imagenet_archives.found(src))
                                 or bool(lsun.found(src)))

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--short-side", type=int, default=256,
                            help="cap the shorter side at N pixels, keeping the aspect ratio (0: keep size)")
        parser.add_argument("--quality", type=int, default=90, help="JPEG quality when re-encoding (1-100)")
        parser.add_argument("--max-pixels", type=int, default=ImageOptions.max_pixels,
                            help="reject images with more pixels than this (decompression bombs)")
        parser.add_argument("--labels", metavar="[SPLIT=]CSV",
                            help="a 'filename,class' CSV of the images under SRC, their classes; val=CSV: of the "
                                 "loose images of the val folder (Kaggle's ImageNet; docs/converting.md); or "
                                 "ImageNet's devkit (ILSVRC2012_devkit_t12.tar.gz), the val images' ground truth")
        parser.add_argument("--multi-label", action="store_true",
                            help="images: each row of the --labels CSV names several classes (ChestX-ray14's "
                                 "'Effusion|Mass', Planet's 'haze primary'; or one-hot columns marking several), "
                                 "or a table's list column, a TFRecord feature, Pascal VOC's, COCO's, CelebA's, "
                                 "CheXpert's or MIMIC-CXR-JPG's own files do; batches then carry multi-hot labels")
        parser.add_argument("--uncertain", choices=("ones", "zeros"),
                            help="images: CheXpert's and MIMIC-CXR-JPG's uncertain findings (-1.0) count as present "
                                 "(ones) or absent (zeros)")
        parser.add_argument("--label-pattern", metavar="REGEX",
                            help="images: each file's class is the first group of REGEX in its name, as in "
                                 r"'^(.+)_\d+\.jpg$' (fastai's from_name_re; Oxford-IIIT Pet, dogs vs cats)")
        parser.add_argument("--split-list", metavar="SPLIT=FILE", action="append", default=[],
                            help="images: the files FILE lists (a name per line, as Food-101's meta/test.txt) are in "
                                 "SPLIT; repeat for each split")
        parser.add_argument("--val-fraction", type=float, default=0.0, metavar="F",
                            help="images, nifti, dicom: hold out about F of a one-split source (a Decathlon task's "
                                 "imagesTr) as val, each file (case) by its path's hash, each DICOM patient by its "
                                 "PatientID's (Keras' validation_split, fastai's valid_pct)")
        parser.add_argument("--classes", metavar="FILE",
                            help="images: names of the class ids 0..K-1 a labels file gives, one a line (or "
                                 "'name id' lines); or of classes that are codes, by 'code,name' lines (Open "
                                 "Images' class descriptions, ImageNet's LOC_synset_mapping.txt); or, for classes that "
                                 "are names, the classes of the labels, a name a line (ImageNet-R's folders among "
                                 "ImageNet's 1000 classes)")
        parser.add_argument("--class-order", choices=ORDERS, default="name",
                            help="images: classes that are whole numbers (class folders 0 ... 999, as ImageNetV2's) "
                                 "in the order of their names as text, as ImageFolder orders them (default), or of "
                                 "their values, so that a folder's label is its number")
        parser.add_argument("--split", default="train",
                            help=SPLIT_HELP)
        parser.add_argument("--keep-metadata", action="store_true",
                            help="keep EXIF/XMP/IPTC/comments in JPEGs copied unchanged (default: removed; ICC kept)")
        parser.add_argument("--unlabeled", action="store_true",
                            help="images, text: no labels: every input of the tree, class folders and label columns "
                                 "ignored (a folder without subfolders is unlabeled anyway)")
        parser.add_argument("--image-field", metavar="COLUMN",
                            help="images from Parquet/Arrow tables: the image column (default: the one there is); "
                                 "from TFRecord files: the image feature (default: image/encoded or image); with "
                                 "--labels: the CSV's file column (default: the first); of Hugging Face ImageFolder "
                                 "metadata: its file column (default: file_name)")
        parser.add_argument("--label-field", metavar="COLUMN",
                            help="images, text from Parquet/Arrow tables: the label column (default: the "
                                 "ClassLabel, or label/labels); images from TFRecord files: the label feature "
                                 "(default: image/class/synset, image/class/label or label); with --labels: the "
                                 "CSV's label column (default: the first other); of Hugging Face ImageFolder "
                                 "metadata: its label column (default: label, labels, class, category or target)")

    def options_from_args(self, args: Any) -> ImageOptions:
        return ImageOptions(short_side=args.short_side, quality=args.quality, max_pixels=args.max_pixels,
                            labels=args.labels, split=args.split, unlabeled=args.unlabeled,
                            keep_metadata=args.keep_metadata, image_field=args.image_field,
                            label_field=args.label_field, label_pattern=args.label_pattern,
                            split_lists=tuple(args.split_list), classes=args.classes,
                            val_fraction=args.val_fraction, multi_label=args.multi_label,
                            uncertain=args.uncertain, class_order=args.class_order)

    def discover(self, src: Path, /, *, options: ImageOptions, follow_symlinks: bool = True) -> Discovery:
        found = discover_images(src, labels_csv=options.labels, split=options.split, unlabeled=options.unlabeled,
                                follow_symlinks=follow_symlinks, image_field=options.image_field,
                                label_field=options.label_field, max_pixels=options.max_pixels,
                                label_pattern=options.label_pattern, multi_label=options.multi_label,
                                uncertain=options.uncertain)
        found = apply_split_lists(found, parse_split_lists(options.split_lists), options.split, src)
        found = apply_val_fraction(found, options.val_fraction, options.split, layouts=ONE_SPLIT)
        found = order_classes(found, options.class_order)
        return name_ids(found, Path(options.classes).expanduser() if options.classes else None)

    def processor(self, options: ImageOptions):
        return functools.partial(process_image, opts=options)

    def arrow_layout(self, discovery: Discovery, options: ImageOptions) -> ArrowLayout:
        features = {
            "key": {"dtype": "string", "_type": "Value"},
            "image": {"_type": "Image"},
            "label": {"names": list(discovery.classes), "_type": "ClassLabel"},
            "json": {"dtype": "string", "_type": "Value"},
        }
        fields = [
            ("key", pa.string()),
            ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            ("label", pa.int64()),
            ("json", pa.string()),
        ]
        if not discovery.classes:  # unlabeled: no label column at all
            features.pop("label")
            fields = [f for f in fields if f[0] != "label"]
        elif options.multi_label:  # a list of class indices a row: Hugging Face's Sequence(ClassLabel)
            features = dict(("labels", {"feature": f, "_type": "Sequence"}) if n == "label" else (n, f)
                            for n, f in features.items())
            fields = [("labels", pa.list_(pa.int64())) if f[0] == "label" else f for f in fields]
        schema = pa.schema(fields, metadata={"huggingface": json.dumps({"info": {"features": features}})})
        return ArrowLayout(schema=schema)

    def describe(self, discovery: Discovery, options: ImageOptions) -> dict[str, Any]:
        return {
            "preprocessing": {
                "short_side": options.short_side,
                "quality": options.quality,
                "max_pixels": options.max_pixels,
                "encoding": "baseline RGB JPEG (4:2:0), EXIF orientation applied",
                "resample": "lanczos after libjpeg DCT downscale",
                "copy_when_compliant": True,
                "metadata": "kept" if options.keep_metadata else "EXIF/XMP/IPTC/comments removed, ICC kept",
            },
            "extra": dict(MULTI_LABEL_EXTRA) if options.multi_label else
                     {"members": [m for m in self.member_order if discovery.classes or m != "cls"]},
        }


KIND = ImagesKind()
__all__ = ["KIND", "ImageOptions", "ImagesKind"]
