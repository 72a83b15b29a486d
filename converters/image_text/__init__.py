"""The image_text kind: captioned images -> WebDataset samples `{key}.jpg` (pre-resized baseline JPEG, as the
images kind makes it), `{key}.txt` (the captions, one per line), `{key}.json` and, with `--tokenizer`,
`{key}.ids.npy` (token ids). The shards are what img2dataset writes, so OpenCLIP, WebDataset and DALI read
them too; `fastdata.loader` yields `(images, text)` batches (fastdata/pairs/)."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Any

from converters.image_text.captions import names_files_and_captions
from converters.image_text.discover import discover_pairs
from converters.image_text.process import IDS_FILL, ImageTextOptions, PairProcessor
from converters.image_text.tables import discover_caption_tables, has_caption_tables
from converters.images import KIND as IMAGES
from converters.images.labels_csv import EXTENSIONS
from converters.images.table_columns import bytes_limit
from converters.images.tables import table_files
from converters.kind import Discovery
from converters.metadata_files import METADATA
from converters.text.tokenize import tokenizer_identity, tokenizer_info
from converters.walk import first_files

DETECT_FILES = 2000


class ImageTextKind:
    name = "image_text"
    formats = ("wds",)
    member_order = ("jpg", "txt", "ids.npy", "json")
    unit = "pair"

    def detect(self, src: Path, /) -> bool:
        """Images with a same-stem .txt beside them among the first files, images and a Hugging Face ImageFolder
        metadata file with file and caption columns, or tables with an image and a caption column (tables.py)."""
        stems: dict[str, set[str]] = {}
        metadata = []
        for path in first_files(src, DETECT_FILES):
            stems.setdefault(str(path.with_suffix("")), set()).add(path.suffix.lower())
            if path.name in METADATA:
                metadata.append(path)
        images = any(exts & set(EXTENSIONS) for exts in stems.values())
        return any(".txt" in exts and exts & set(EXTENSIONS) for exts in stems.values()) or (
            images and any(names_files_and_captions(p) for p in metadata)) or (
            src.is_dir() and has_caption_tables(src, limit=DETECT_FILES))

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--captions", metavar="FILE",
                            help="image_text: CSV/TSV/JSONL/Parquet with file and caption columns, or a COCO "
                                 "captions_*.json (default: a same-stem .txt beside each image)")
        parser.add_argument("--caption-field", metavar="COLUMN",
                            help="image_text: the caption column of Parquet/Arrow tables, of a --captions table or "
                                 "of Hugging Face metadata (default: caption, text, ..., or caption_0, caption_1, "
                                 "...)")

    def options_from_args(self, args: Any) -> ImageTextOptions:
        return ImageTextOptions(captions=getattr(args, "captions", None), tokenizer=getattr(args, "tokenizer", None),
                                max_length=getattr(args, "max_length", None), short_side=args.short_side,
                                quality=args.quality, max_pixels=args.max_pixels, split=args.split or "train",
                                keep_metadata=args.keep_metadata, image_field=getattr(args, "image_field", None),
                                caption_field=getattr(args, "caption_field", None))

    def _sha(self, options: ImageTextOptions) -> str | None:
        return tokenizer_info(options.tokenizer)["sha256"] if options.tokenizer else None

    def discover(self, src: Path, /, *, options: ImageTextOptions, follow_symlinks: bool = True) -> Discovery:
        tokenizer = tokenizer_identity(options.tokenizer)  # a bad tokenizer fails here, before anything is written
        if not options.captions and src.is_dir() and table_files(src, limit=DETECT_FILES):
            found = discover_caption_tables(src, image_field=options.image_field, caption_field=options.caption_field,
                                            split=options.split, max_bytes=bytes_limit(options.max_pixels),
                                            follow_symlinks=follow_symlinks)
        else:
            found = discover_pairs(src, captions=options.captions, split=options.split,
                                   follow_symlinks=follow_symlinks, fields=(options.image_field, options.caption_field))
        found.identity[:0] = tokenizer
        return found

    def processor(self, options: ImageTextOptions) -> PairProcessor:
        return PairProcessor(options, sha256=self._sha(options))

    def describe(self, discovery: Discovery, options: ImageTextOptions) -> dict[str, Any]:
        images = IMAGES.describe(discovery, options.image_options())["preprocessing"]
        captions = (posixpath.basename(options.captions) if options.captions else
                    "a caption column of the Parquet/Arrow tables" if discovery.layout == "tables" else
                    "Hugging Face ImageFolder metadata files" if discovery.layout == "metadata" else
                    "same-stem .txt beside each image")
        preprocessing = {**images, "captions": captions,
                         "caption_normalization": "surrounding whitespace removed, line breaks made spaces"}
        extra: dict[str, Any] = {"text_member": "txt"}
        members = ["jpg", "txt", "json"]
        if options.tokenizer:
            info = tokenizer_info(options.tokenizer)
            preprocessing.update(tokenizer=os.path.basename(options.tokenizer), tokenizer_sha256=info["sha256"],
                                 add_special_tokens=True, max_length=options.max_length)
            extra.update(tokenizer=info, ids_member="ids.npy", ids_fill=IDS_FILL, max_length=options.max_length)
            members = ["jpg", "txt", "ids.npy", "json"]
        return {"preprocessing": preprocessing, "extra": {"members": members, **extra}}


KIND = ImageTextKind()
__all__ = ["KIND", "ImageTextKind", "ImageTextOptions"]
