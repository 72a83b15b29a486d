"""The manifest: the one file a loader reads first. Written last and atomically by `fastdata convert`."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from fastdata.atomic import write_json_atomic
from fastdata.errors import ManifestError
from fastdata.json_text import BadJSON, parse_json
from fastdata.label_members import NAME_ENCODING, LabelRule, name_table
from fastdata.manifest_splits import (
    SPLIT_NAME,
    FieldCheck,
    ShardInfo,
    SplitInfo,
    check_split_name,
    plain_file_name,
    split_from_dict,
)

FORMAT_NAME = "fastdata"
FORMAT_VERSION = 1
CONVERT_AGAIN = "re-run `fastdata convert`"  # the remedy for damaged shards of a converted dataset
MANIFEST_NAME = "manifest.json"
SHARD_FORMATS = ("wds", "arrow")


@dataclass(frozen=True)
class Manifest:
    kind: str
    shard_format: str
    classes: tuple[str, ...]
    splits: dict[str, SplitInfo]
    preprocessing: dict[str, Any]
    rejected: tuple[dict[str, str], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    tool_version: str = ""
    format_version: int = FORMAT_VERSION
    shard_root: str | None = None  # where the shards lie (relative to the manifest's folder); None: beside it

    @property
    def num_samples(self) -> int:
        return sum(s.samples for s in self.splits.values())

    def split(self, name: str) -> SplitInfo:
        if name not in self.splits:
            raise ManifestError(f"unknown split {name!r}; this dataset has splits {sorted(self.splits)}")
        return self.splits[name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "format_version": self.format_version,
            "kind": self.kind,
            "shard_format": self.shard_format,
            "tool_version": self.tool_version,
            "fingerprint": self.fingerprint,
            "classes": list(self.classes),
            "preprocessing": self.preprocessing,
            "splits": {name: s.to_dict() for name, s in sorted(self.splits.items())},
            "rejected": list(self.rejected),
            "extra": self.extra,
            **({"shard_root": self.shard_root} if self.shard_root is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "manifest") -> Manifest:
        if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
            raise ManifestError(f"{where} is not a fastdata manifest (missing \"format\": \"{FORMAT_NAME}\")")
        version = d.get("format_version")
        if version != FORMAT_VERSION:
            raise ManifestError(
                f"{where} has format_version {version!r}, this fastdata reads version {FORMAT_VERSION}; "
                "re-run `fastdata convert` with this version, or install the fastdata that wrote it"
            )
        check = FieldCheck(where)
        try:
            splits_in = check.mapping(d, "splits")
            if not splits_in:
                raise check.error("splits", splits_in, "at least one split")
            splits = {name: split_from_dict(check, name, s) for name, s in splits_in.items()}
            names = [sh.name for s in splits.values() for sh in s.shards]
            names += [sh.index for s in splits.values() for sh in s.shards if sh.index]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise ManifestError(f"{where} lists the file(s) {twice[:5]} more than once; each shard and index "
                                    "file belongs to one place of one split")
            shard_root = d.get("shard_root")
            if shard_root is not None and (not isinstance(shard_root, str) or not shard_root or "\0" in shard_root):
                raise check.error("shard_root", shard_root, "a folder path (absolute or relative to the manifest)")
            kind = d.get("kind")
            if not isinstance(kind, str) or not kind:
                raise check.error("kind", kind, "a kind name such as 'images', 'text' or 'dicom'")
            if d.get("shard_format") not in SHARD_FORMATS:
                raise check.error("shard_format", d.get("shard_format"), f"one of {list(SHARD_FORMATS)}")
            classes = d.get("classes")
            if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
                raise check.error("classes", classes, "a list of class names (strings)")
            rejected = d.get("rejected", [])
            if not isinstance(rejected, list) or not all(isinstance(r, dict) for r in rejected):
                raise check.error("rejected", rejected, "a list of {split, source, reason} records")
            extra = _extra_from_dict(check, check.mapping(d, "extra", required=False))
            if extra.get("label_encoding") == NAME_ENCODING and len(set(classes)) != len(classes):
                raise check.error("classes", classes, "distinct names (label members hold the names)")
            return cls(
                kind=kind,
                shard_format=d["shard_format"],
                classes=tuple(classes),
                splits=splits,
                preprocessing=check.mapping(d, "preprocessing"),
                rejected=tuple(rejected),
                extra=extra,
                fingerprint=str(d.get("fingerprint", "")),
                tool_version=str(d.get("tool_version", "")),
                format_version=version,
                shard_root=shard_root,
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ManifestError(f"{where} is malformed: {exc!r}") from exc

    @property
    def labeled(self) -> bool:
        """Whether samples carry a class label (a dataset without classes is unlabeled)."""
        return bool(self.classes)

    @property
    def image_members(self) -> tuple[str, ...]:
        """Tar member extensions that hold a sample's image (converted datasets: jpg only)."""
        return tuple(self.extra.get("image_members") or ("jpg",))

    @property
    def label_member(self) -> str | None:
        """Tar member extension holding the class label (with `label_field`, a json member), None when unlabeled."""
        if not self.labeled:
            return None
        return str(self.extra.get("label_member") or "cls")

    @property
    def label_field(self) -> str | None:
        """Adopted shards labeled in a json member: the field that holds the label, else None."""
        return self.extra.get("label_field") if self.labeled else None

    @cached_property
    def label_rule(self) -> LabelRule | None:
        """How the loaders, `verify` and `sample_labels` read a tar sample's label (label_members.py); None when
        unlabeled."""
        member = self.label_member
        return None if member is None else LabelRule(member, self.label_field, self.label_names, self.multi_label)

    @property
    def multi_label(self) -> bool:
        """Images converted --multi-label: each sample has a list of classes (its json member's `label_field`)."""
        return self.labeled and bool(self.extra.get("multi_label"))

    @cached_property
    def label_names(self) -> dict[bytes, int] | None:
        """Adopted shards whose label members hold class names (extra.label_encoding "name"): each name's UTF-8
        bytes -> its index in `classes`; None when a label member holds the index itself."""
        if self.extra.get("label_encoding") != NAME_ENCODING:
            return None
        return name_table(self.classes)

    @property
    def text_member(self) -> str | None:
        """image_text: the tar member holding a sample's captions (one per line), else None."""
        return self.extra.get("text_member") if self.kind == "image_text" else None

    @property
    def ids_member(self) -> str | None:
        """image_text converted with a tokenizer: the tar member holding the captions' token ids (.npy)."""
        return self.extra.get("ids_member") if self.kind == "image_text" else None

    @property
    def remedy(self) -> str:
        """What rebuilds shards or index files found missing or changed: the command that made the manifest."""
        return "re-run `fastdata index`" if "adopted" in self.extra else CONVERT_AGAIN

    @property
    def tokenizer(self) -> dict[str, Any]:
        """Text and image_text converted with a tokenizer: its description (ids of its special tokens, vocabulary
        size, sha256; checked when the manifest is read); {} without one, `null` in the manifest included."""
        return self.extra.get("tokenizer") or {}

    @property
    def vocab_size(self) -> int | None:
        """Text and image_text converted with a tokenizer: its vocabulary size (every stored id lies below it)."""
        return self.tokenizer.get("vocab_size")

    @property
    def extra_members(self) -> tuple[str, ...]:
        """Members read with each sample's image besides its label: the captions (and ids) of image_text."""
        return tuple(m for m in (self.text_member, self.ids_member) if m)


__all__ = ["SPLIT_NAME", "Manifest", "ShardInfo", "SplitInfo", "check_split_name", "plain_file_name", "read_manifest",
           "write_manifest"]
_NAME_LISTS = ("members", "image_members", "columns", "phi_removed")
_TOKEN_IDS = ("pad_id", "bos_id", "eos_id")


def _extra_from_dict(check: FieldCheck, extra: dict[str, Any]) -> dict[str, Any]:
    """The kind-specific fields the readers use, checked for type (the rest is shown by `info` only)."""
    for key in _NAME_LISTS:
        value = extra.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise check.error(f"extra.{key}", value, "a list of names (strings)")
    for key in ("label_member", "label_field", "layout", "text_member", "ids_member"):
        if extra.get(key) is not None and not isinstance(extra[key], str):
            raise check.error(f"extra.{key}", extra[key], "a string")
    multi = extra.get("multi_label")
    if multi is not None and not isinstance(multi, bool):
        raise check.error("extra.multi_label", multi, "true or false")
    if multi and (not str(extra.get("label_member")).endswith("json") or not extra.get("label_field")):
        raise check.error("extra.multi_label", multi, "false unless extra.label_member is 'json' and "
                                                      "extra.label_field names the field listing each sample's classes")
    if extra.get("label_encoding") not in (None, "index", NAME_ENCODING):
        raise check.error("extra.label_encoding", extra["label_encoding"], f"'index' or {NAME_ENCODING!r}")
    fill = extra.get("ids_fill")
    if fill is not None and (not isinstance(fill, int) or isinstance(fill, bool) or not -2**63 <= fill < 2**63):
        raise check.error("extra.ids_fill", fill, "an integer (the int64 value after a caption's last token id)")
    tok = extra.get("tokenizer")
    if tok is not None:
        if not isinstance(tok, dict):
            raise check.error("extra.tokenizer", tok, "an object describing the tokenizer")
        for key in _TOKEN_IDS:
            if tok.get(key) is not None:
                check.count(f"extra.tokenizer.{key}", tok[key], minimum=0)
        if tok.get("vocab_size") is not None:
            check.count("extra.tokenizer.vocab_size", tok["vocab_size"], minimum=1)
        if tok.get("ids_dtype") not in (None, "uint16", "int32"):
            raise check.error("extra.tokenizer.ids_dtype", tok.get("ids_dtype"), "'uint16' or 'int32'")
    return extra


def read_manifest(root: Path | str) -> Manifest:
    """Read `root/manifest.json`, with errors that name the path and the fix."""
    root = Path(root)
    path = root / MANIFEST_NAME
    if not root.exists():
        raise ManifestError(f"dataset directory {str(root)!r} does not exist")
    if not root.is_dir() and root.name == MANIFEST_NAME:
        raise ManifestError(f"{str(root)!r} is the manifest; pass the folder that holds it, {str(root.parent)!r}")
    if not root.is_dir():
        raise ManifestError(f"{str(root)!r} is not a directory; pass the directory `fastdata convert` wrote")
    if not path.exists():
        from fastdata.dataset import missing_manifest_hint  # lazy: dataset.py imports this module

        raise ManifestError(f"no {MANIFEST_NAME} in {str(root)!r}: {missing_manifest_hint(root)}")
    try:
        data = parse_json(path.read_bytes())
    except (OSError, BadJSON) as exc:
        raise ManifestError(f"cannot read {path}: {exc}") from exc
    return Manifest.from_dict(data, where=str(path))


def write_manifest(root: Path | str, manifest: Manifest) -> Path:
    path = Path(root) / MANIFEST_NAME
    write_json_atomic(path, manifest.to_dict())
    return path
