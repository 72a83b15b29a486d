"""`--caption-field` and `--image-field` name the columns of a captions file and of Hugging Face metadata, as they
name a table's: InstructPix2Pix-style `prompt` columns, a CSV of `img_path,description`. Before, the options were
refused unless the source held Parquet or Arrow tables, and such metadata left its folder converted as unlabeled
images (converters/image_text/captions.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest_pairs import convert_pairs, stored_pairs
from helpers import PHOTOS

from converters.image_text.captions import names_files_and_captions, read_captions
from converters.image_text.discover import discover_pairs
from fastdata.cli import main as cli
from fastdata.cli.convert import _detect
from fastdata.errors import ConvertError

PHOTO_FILES = sorted(PHOTOS.glob("*.jpg"))[:3]


def _folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for p in PHOTO_FILES:
        shutil.copyfile(p, root / p.name)
    return root


def test_metadata_of_a_prompt_column_converts_with_the_option(tmp_path):
    src = _folder(tmp_path / "src")
    (src / "metadata.jsonl").write_text("".join(json.dumps({"file_name": p.name, "prompt": f"a {p.stem}", "seed": 1})
                                                + "\n" for p in PHOTO_FILES))
    assert _detect(src) == "images"  # no column of a caption's usual names: labels' metadata, or none
    d = discover_pairs(src, captions=None, split="train", fields=(None, "Prompt"))  # any case
    assert d.layout == "metadata"
    assert [(it.rel, it.payload.texts) for it in d.splits["train"]] == [(p.name, (f"a {p.stem}",)) for p in PHOTO_FILES]
    assert cli(["convert", str(src), str(tmp_path / "dst"), "--caption-field", "prompt", "-j", "1",
                "--no-progress"]) == 0  # the option says image_text is meant
    assert {source: texts for source, (_, texts, _) in stored_pairs(tmp_path / "dst").items()} == {
        p.name: [f"a {p.stem}"] for p in PHOTO_FILES}


@pytest.mark.parametrize(("name", "write"), [
    ("pairs.csv", lambda path, rows: path.write_text("id,img_path,description\n" + "".join(
        f"{i},{f},{c}\n" for i, (f, c) in enumerate(rows)))),
    ("pairs.txt", lambda path, rows: path.write_text("img_path| description\n" + "".join(
        f"{f}| {c}\n" for f, c in rows))),  # the delimiter is found from the named columns
    ("pairs.tsv", lambda path, rows: path.write_text("img_path\tdescription\n" + "".join(
        f"{f}\t{c}\n" for f, c in rows))),
    ("pairs.jsonl", lambda path, rows: path.write_text("".join(
        json.dumps({"img_path": f, "description": c, "caption": "not this"}) + "\n" for f, c in rows))),
    ("pairs.parquet", lambda path, rows: pq.write_table(pa.table(
        {"img_path": [f for f, _ in rows], "description": [c for _, c in rows], "caption": ["no"] * len(rows)}), path)),
])
def test_a_captions_file_of_other_column_names_is_read_by_them(tmp_path, name, write):
    rows = [("a.jpg", "a cat"), ("b.jpg", "two dogs")]
    write(tmp_path / name, rows)
    assert names_files_and_captions(tmp_path / name, ("img_path", "description"))  # what detection reads
    got = read_captions(tmp_path / name, ("img_path", "description"))
    assert [(r.path, r.caption.strip()) for r in got] == rows  # (stripped when stored: normalize_caption)
    # (a bar-split header is split by no delimiter that finds both columns: its file column is missed too)
    with pytest.raises(ConvertError, match=r"it needs a (caption column named one of \['summary'\]|file column named "
                                           r"one of \['img_path'\])"):
        read_captions(tmp_path / name, ("img_path", "summary"))


def test_a_captions_file_named_with_its_columns_converts(tmp_path):
    src = _folder(tmp_path / "src")
    (tmp_path / "pairs.csv").write_text("img_path,description\n" + "".join(f"{p.name},the {p.stem}\n"
                                                                            for p in PHOTO_FILES))
    convert_pairs(src, tmp_path / "dst", captions=str(tmp_path / "pairs.csv"), image_field="img_path",
                  caption_field="description")
    assert {source: texts for source, (_, texts, _) in stored_pairs(tmp_path / "dst").items()} == {
        p.name: [f"the {p.stem}"] for p in PHOTO_FILES}


def test_the_options_where_no_table_has_such_columns_are_refused(tmp_path):
    src = _folder(tmp_path / "src")
    (src / f"{PHOTO_FILES[0].stem}.txt").write_text("a caption beside it\n")
    with pytest.raises(ValueError, match=r"--image-field and --caption-field name the columns of a captions file "
                                         r"\(--captions\), of Hugging Face metadata or of Parquet or Arrow tables; "
                                         r".* holds none with them"):
        discover_pairs(src, captions=None, split="train", fields=(None, "prompt"))
    (tmp_path / "captions.json").write_text(json.dumps({"images": [], "annotations": []}))
    with pytest.raises(ConvertError, match=r"captions.json is JSON \(COCO's or Karpathy's\), whose fields are fixed"):
        read_captions(tmp_path / "captions.json", (None, "prompt"))
