"""Captioned images in Hugging Face's ImageFolder layout, as diffusers' text-to-image scripts want them: the images
and a `metadata.jsonl` (or `.csv`, `.parquet`) whose `file_name` names each image relative to the metadata file's
folder, and whose `text` is its caption. `fastdata convert` took such a folder for unlabeled images and set the
captions aside as an unsupported file; it is read as image-text pairs now (converters/image_text/discover.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from conftest_pairs import convert_pairs, stored_pairs
from helpers import PHOTOS

from converters.image_text import KIND as PAIRS
from converters.image_text.captions import names_files_and_captions
from converters.image_text.discover import discover_pairs
from fastdata.cli.convert import _detect

PHOTO_FILES = sorted(PHOTOS.glob("*.jpg"))


def _folder(root: Path, photos: list[Path]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for p in photos:
        shutil.copyfile(p, root / p.name)
    return root


def test_a_diffusers_folder_becomes_pairs(tmp_path: Path) -> None:
    src = _folder(tmp_path / "src", PHOTO_FILES[:4])
    lines = [json.dumps({"file_name": p.name, "text": f"a photo of {p.stem}"}) for p in PHOTO_FILES[:3]]
    (src / "metadata.jsonl").write_text("\n".join(lines) + "\n")
    (src / "notes.md").write_text("mine")
    assert _detect(src) == "image_text"
    result = convert_pairs(src, tmp_path / "out")
    captions = {source: texts for source, (_, texts, _) in stored_pairs(tmp_path / "out").items()}
    assert captions == {p.name: [f"a photo of {p.stem}"] for p in PHOTO_FILES[:3]}
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        PHOTO_FILES[3].name: "no caption: not named in a metadata file (metadata.jsonl)",
        "notes.md": "not an image (.jpg, .jpeg, .jfif, .jpe, .png, .webp, .bmp, .tif, .tiff, .gif, .avif, .ppm, .pgm, "
                    ".pbm, .pnm) or a "
                    "metadata file (metadata.jsonl, metadata.csv, metadata.parquet)"}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["preprocessing"]["captions"] == "Hugging Face ImageFolder metadata files"


def test_split_folders_each_with_metadata_name_files_relative_to_their_folder(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _folder(src / "train", PHOTO_FILES[:2])
    _folder(src / "test" / "images", PHOTO_FILES[2:3])
    (src / "train" / "metadata.csv").write_text(
        f"file_name,text\n{PHOTO_FILES[0].name},first\n{PHOTO_FILES[1].name},\"second, with a comma\"\n")
    pq.write_table(pa.table({"file_name": [f"images/{PHOTO_FILES[2].name}", "../../outside.jpg"],
                             "text": ["third", "x"]}), src / "test" / "metadata.parquet")
    d = discover_pairs(src, captions=None, split="train")
    assert d.layout == "metadata"
    got = {s: [(it.rel, it.payload.texts) for it in items] for s, items in d.splits.items()}
    assert got == {"train": [(f"train/{PHOTO_FILES[0].name}", ("first",)),
                             (f"train/{PHOTO_FILES[1].name}", ("second, with a comma",))],
                   "test": [(f"test/images/{PHOTO_FILES[2].name}", ("third",))]}
    assert [r.reason[:30] for r in d.rejected] == ["path outside the source folder"]


def test_metadata_without_captions_is_no_pair_source(tmp_path: Path) -> None:
    """ImageFolder metadata of labels (`file_name,label`) is not captions: the folder stays the images kind's."""
    src = _folder(tmp_path / "src", PHOTO_FILES[:1])
    (src / "metadata.csv").write_text(f"file_name,label\n{PHOTO_FILES[0].name},3\n")
    assert not PAIRS.detect(src) and _detect(src) == "images"
    (src / f"{PHOTO_FILES[0].stem}.txt").write_text("a caption beside it")  # sidecars: the pairs, metadata aside
    d = discover_pairs(src, captions=None, split="train")
    assert d.layout == "sidecar-txt" and [it.payload.texts for it in d.splits["train"]] == [("a caption beside it",)]
    assert [r.source for r in d.rejected] == ["metadata.csv"]
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "metadata.jsonl").write_text('{"file_name": "a.jpg", "text": "a cat"}\n')
    assert not PAIRS.detect(tmp_path / "only")  # captions, but no image among the first files


def test_the_header_alone_says_whether_a_table_names_files_and_captions(tmp_path: Path) -> None:
    cases = {"a.csv": "image_name| comment\nx.jpg| a cat\n", "b.jsonl": '\n{"file_name": "x", "caption": "y"}\n',
             "c.csv": "file_name,label\n", "d.jsonl": "[1, 2]\n", "e.jsonl": "{not json\n", "f.tsv": "file\ttext\n"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "g.parquet").write_bytes(b"PAR1 broken")
    pq.write_table(pa.table({"path": ["x"], "Caption": ["y"]}), tmp_path / "h.parquet")
    got = {p.name: names_files_and_captions(p) for p in sorted(tmp_path.iterdir())}
    assert got == {"a.csv": True, "b.jsonl": True, "c.csv": False, "d.jsonl": False, "e.jsonl": False,
                   "f.tsv": True, "g.parquet": False, "h.parquet": True}


def test_a_captions_file_named_wins_and_other_tables_are_no_metadata(tmp_path: Path) -> None:
    """`--captions` names the file to read: a metadata file beside it is then a file like any other. A captions
    table not named `metadata.*` is no ImageFolder metadata: without `--captions`, the folder is no pair source."""
    src = _folder(tmp_path / "src", PHOTO_FILES[:1])
    (src / "metadata.jsonl").write_text(json.dumps({"file_name": PHOTO_FILES[0].name, "text": "from metadata"}))
    (tmp_path / "captions.csv").write_text(f"file,caption\n{PHOTO_FILES[0].name},from the file\n")
    d = discover_pairs(src, captions=str(tmp_path / "captions.csv"), split="train")
    assert d.layout == "captions-file" and [it.payload.texts for it in d.splits["train"]] == [("from the file",)]
    assert [r.source for r in d.rejected] == ["metadata.jsonl"]
    other = _folder(tmp_path / "other", PHOTO_FILES[:1])
    shutil.copyfile(tmp_path / "captions.csv", other / "captions.csv")
    assert not PAIRS.detect(other)
