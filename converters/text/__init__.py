"""The text kind: a text corpus -> token-id sequences in Arrow shards (input_ids, length, label)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa

from converters.kind import ArrowLayout, Discovery
from converters.text.discover import discover_text
from converters.text.options import DEFAULT_MAX_DOCUMENT_BYTES, OVERFLOW, TextOptions
from converters.text.records import EXTENSIONS, file_format
from converters.text.tokenize import TextProcessor, tokenizer_identity, tokenizer_info
from converters.walk import first_files
from fastdata.cli.format import parse_size

SNIFF_BYTES = 4096  # bytes read from an extension-less file to decide whether it is text
DETECT_FILES = 2000  # files looked at by detect


def _looks_like_text(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return False
    if not head or b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3  # a multi-byte character cut by the sniff window
    return True


class TextKind:
    name = "text"
    formats = ("arrow",)
    member_order = ()

    def detect(self, src: Path, /) -> bool:
        paths = [src] if src.is_file() else first_files(src, DETECT_FILES)
        for path in paths:
            fmt, _ = file_format(path.name)  # no extension, `.raw` or `.tokens`: text if it reads as text
            if fmt is not None and ((path.suffix and fmt != "wikitext") or _looks_like_text(path)):
                return True
        return False

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--tokenizer", metavar="JSON",
                            help="text, image_text: Hugging Face tokenizer.json to tokenize with")
        parser.add_argument("--per-line", action="store_true", help="text: one document per non-blank line")
        parser.add_argument("--separator", metavar="LINE",
                            help="text: records are separated by a line holding only LINE (e.g. '%%')")
        parser.add_argument("--text-field", default="text", help="text: JSON field / Parquet column (default: text)")
        parser.add_argument("--ids-field", metavar="COLUMN",
                            help="text: a Parquet/Arrow column or JSON field of token ids (lists of integers, as "
                                 "datasets.map(tokenizer) writes input_ids), taken as they are: nothing is tokenized, "
                                 "--tokenizer names the tokenizer that made them")
        parser.add_argument("--max-length", type=int,
                            help="text, image_text: at most N tokens per sequence (caption), specials included")
        parser.add_argument("--overflow", choices=OVERFLOW, default="truncate",
                            help="text: longer documents are truncated, or split into windows all kept")
        parser.add_argument("--max-document-bytes", type=parse_size, default=DEFAULT_MAX_DOCUMENT_BYTES,
                            metavar="SIZE", help="text: reject a document (or a whole .json file) larger than this "
                                                 "(default 64MiB)")

    def options_from_args(self, args: Any) -> TextOptions:
        return TextOptions(tokenizer=args.tokenizer, per_line=args.per_line, separator=args.separator,
                           text_field=args.text_field, max_length=args.max_length, overflow=args.overflow,
                           split=getattr(args, "split", None) or "train", max_document_bytes=args.max_document_bytes,
                           label_field=getattr(args, "label_field", None),
                           unlabeled=bool(getattr(args, "unlabeled", False)), ids_field=args.ids_field)

    def discover(self, src: Path, /, *, options: TextOptions, follow_symlinks: bool = True) -> Discovery:
        return discover_text(src, options=options, extra_identity=tokenizer_identity(options.tokenizer),
                             follow_symlinks=follow_symlinks)

    def processor(self, options: TextOptions) -> TextProcessor:
        return TextProcessor(options, sha256=tokenizer_info(options.tokenizer)["sha256"], with_labels=True)

    def arrow_layout(self, discovery: Discovery, options: TextOptions) -> ArrowLayout:
        dtype = tokenizer_info(options.tokenizer)["ids_dtype"]
        features: dict[str, Any] = {
            "key": {"dtype": "string", "_type": "Value"},
            "input_ids": {"feature": {"dtype": dtype, "_type": "Value"}, "_type": "Sequence"},
            "length": {"dtype": "int32", "_type": "Value"},
            "source": {"dtype": "string", "_type": "Value"},
        }
        fields = [("key", pa.string()), ("input_ids", pa.list_(getattr(pa, dtype)())), ("length", pa.int32()),
                  ("source", pa.string())]
        if discovery.classes:
            features["label"] = {"names": list(discovery.classes), "_type": "ClassLabel"}
            fields.append(("label", pa.int64()))
        schema = pa.schema(fields, metadata={"huggingface": json.dumps({"info": {"features": features}})})
        return ArrowLayout(schema=schema)

    def describe(self, discovery: Discovery, options: TextOptions) -> dict[str, Any]:
        info = tokenizer_info(options.tokenizer)
        return {
            "preprocessing": {
                "tokenizer": os.path.basename(options.tokenizer),
                "tokenizer_sha256": info["sha256"],
                "add_special_tokens": options.ids_field is None,  # ids given are taken as they are
                "max_length": options.max_length,
                "overflow": options.overflow,
                "per_line": options.per_line,
                "separator": options.separator,
                "text_field": options.text_field,
                "ids_field": options.ids_field,
                "max_document_bytes": options.max_document_bytes,
            },
            "extra": {"tokenizer": info, "columns": ["key", "input_ids", "length", "source"]
                      + (["label"] if discovery.classes else [])},
        }


KIND = TextKind()
__all__ = ["EXTENSIONS", "KIND", "TextKind", "TextOptions"]
