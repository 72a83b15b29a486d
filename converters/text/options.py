"""Options of the text kind: one frozen dataclass, validated eagerly."""

from __future__ import annotations

from dataclasses import dataclass

from fastdata.manifest import check_split_name

OVERFLOW = ("truncate", "split")
DEFAULT_MAX_DOCUMENT_BYTES = 64 * 2**20
MAX_DOCUMENT_BYTES = 2**40  # past it Python's read() overflowed ("cannot fit 'int' into an index-sized integer")


@dataclass(frozen=True)
class TextOptions:
    """How a text corpus becomes token-id sequences.

    A plain text file is one document, or one document per line (`per_line`), or records split by
    a line holding only `separator`. JSON Lines / JSON / Parquet documents are read from
    `text_field`. `max_length` caps a sequence (special tokens included); longer documents are
    truncated or split into windows of `max_length` tokens (`overflow`), all kept. A document (a
    whole plain file, a record, a JSON Lines line, a whole .json file, a Parquet value) larger than
    `max_document_bytes` is rejected: the bound on what discovery holds in memory at once. With `ids_field`, the
    rows of Parquet/Arrow tables and JSON (Lines) records are sequences of token ids already
    (`datasets.map(tokenizer)`'s input_ids): taken as they are, in the tokenizer's vocabulary, and nothing is
    tokenized (8 bytes an id count against `max_document_bytes`).
    """

    tokenizer: str
    per_line: bool = False
    separator: str | None = None
    text_field: str = "text"
    max_length: int | None = None
    overflow: str = "truncate"
    split: str = "train"
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    label_field: str | None = None  # a Parquet/Arrow table's label column (default: its ClassLabel, or label/labels)
    ids_field: str | None = None  # a column or JSON field of token ids, taken as they are (text_field unread)
    unlabeled: bool = False  # no labels: class folders are plain folders, label columns are not read

    def __post_init__(self) -> None:
        if not isinstance(self.tokenizer, str) or not self.tokenizer:
            raise ValueError("--tokenizer is required for text: pass the path of a Hugging Face tokenizer.json")
        if self.per_line and self.separator is not None:
            raise ValueError("--per-line and --separator are exclusive: pick one way to split text files")
        if self.separator is not None and (not self.separator or "\n" in self.separator):
            raise ValueError(f"--separator must be a non-empty single line (e.g. '%'), got {self.separator!r}")
        if self.unlabeled and self.label_field:
            raise ValueError("--label-field and --unlabeled contradict each other: pick one")
        if not self.text_field:
            raise ValueError("--text-field must name a field/column, e.g. 'text'")
        if self.ids_field is not None and not self.ids_field:
            raise ValueError("--ids-field must name a column, e.g. 'input_ids'")
        if self.max_length is not None and (not isinstance(self.max_length, int) or self.max_length < 2):
            raise ValueError(f"--max-length must be an integer >= 2 (or omitted for no limit), got {self.max_length!r}")
        if self.overflow not in OVERFLOW:
            raise ValueError(f"--overflow must be one of {list(OVERFLOW)}, got {self.overflow!r}")
        if (not isinstance(self.max_document_bytes, int) or isinstance(self.max_document_bytes, bool)
                or not 1 <= self.max_document_bytes <= MAX_DOCUMENT_BYTES):
            raise ValueError(f"--max-document-bytes must be a size from 1 byte to 1 TiB (a document is held in memory "
                             f"whole), got {self.max_document_bytes!r}")
        check_split_name(self.split)
