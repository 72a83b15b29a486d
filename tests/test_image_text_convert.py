"""Converting captioned images (kind image_text): sidecar .txt files, every captions-file format, COCO, the
stored members and token ids, and the rejections (nothing is dropped silently)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest
from conftest_pairs import COCO_CAPTIONS, TOKENIZER, convert_pairs, make_pair_tree, tokenizer
from helpers import PHOTOS

from converters.image_text.captions import normalize_caption, read_captions
from converters.text.tokenize import tokenizer_info
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest


def members(dst: Path) -> dict[str, dict[str, bytes]]:
    """{key: {ext: bytes}} of every sample in the dataset's tar shards."""
    out: dict[str, dict[str, bytes]] = {}
    for tar_path in sorted(dst.glob("*.tar")):
        with tarfile.open(tar_path) as tar:
            for m in tar.getmembers():
                key, _, ext = m.name.partition(".")
                out.setdefault(f"{tar_path.name}:{key}", {})[ext] = tar.extractfile(m).read()
    return out


def by_source(dst: Path) -> dict[str, list[str]]:
    """{source image: its stored captions}."""
    return {json.loads(m["json"])["source"]: m["txt"].decode().split("\n") for m in members(dst).values()}


def reasons(dst: Path) -> dict[str, str]:
    return {r["source"]: r["reason"] for r in read_manifest(dst).rejected}


def test_sidecar_pairs_are_converted_with_their_captions(tmp_path):
    src = make_pair_tree(tmp_path / "src", n=7, captions=3)
    result = convert_pairs(src, tmp_path / "out")
    m = result.manifest
    assert m.kind == "image_text" and m.classes == () and m.num_samples == 7
    assert m.extra["members"] == ["jpg", "txt", "json"] and m.extra["text_member"] == "txt"
    assert m.preprocessing["captions"] == "same-stem .txt beside each image"
    assert m.preprocessing["caption_normalization"] == "surrounding whitespace removed, line breaks made spaces"
    assert "tokenizer" not in m.preprocessing and "ids_member" not in m.extra
    stored = by_source(tmp_path / "out")
    assert stored["img_000.jpg"] == ["photo 0 caption 0", "photo 0 caption 1 and more",
                                     "photo 0 caption 2 and more and more"]
    assert stored["img_001.jpg"] == ["photo 1 caption 0"]
    assert m.splits["train"].stats["captions"] == 4 * 3 + 3
    assert m.splits["train"].stats["captions_per_image"] == {"3": 4, "1": 3}
    sample = next(iter(members(tmp_path / "out").values()))
    assert list(sample) == ["jpg", "txt", "json"]  # img2dataset's member order and names
    assert "label" not in json.loads(sample["json"])


def test_token_ids_are_the_tokenizers_and_truncation_is_recorded(tmp_path):
    src = make_pair_tree(tmp_path / "src", n=4, captions=2)
    (src / "img_003.txt").write_text("a very long caption " * 20)
    result = convert_pairs(src, tmp_path / "out", tokenizer=str(TOKENIZER), max_length=12)
    m = result.manifest
    assert m.extra["ids_member"] == "ids.npy" and m.extra["tokenizer"]["pad_id"] == 0
    assert m.preprocessing["max_length"] == 12 and m.preprocessing["tokenizer"] == "bert-base-uncased.json"
    sha = tokenizer_info(str(TOKENIZER))["sha256"]
    assert m.preprocessing["tokenizer_sha256"] == sha and m.preprocessing["add_special_tokens"] is True
    assert m.extra["tokenizer"] == tokenizer_info(str(TOKENIZER))
    assert m.extra["members"] == ["jpg", "txt", "ids.npy", "json"]
    assert m.extra["ids_fill"] == -1 and m.extra["max_length"] == 12
    tok = tokenizer()
    tok.enable_truncation(12)
    for sample in members(tmp_path / "out").values():
        captions = sample["txt"].decode().split("\n")
        ids = np.load(io.BytesIO(sample["ids.npy"]))
        assert ids.dtype == np.int32 and ids.shape[0] == len(captions)
        for row, caption in zip(ids, captions):
            assert row[row != -1].tolist() == tok.encode(caption).ids
        assert json.loads(sample["json"])["tokens"] == [int((r != -1).sum()) for r in ids]
    assert m.splits["train"].stats["truncated_captions"] == 1
    assert m.splits["train"].stats["tokens"] == sum(len(tok.encode(c).ids) for s in by_source(tmp_path / "out").values()
                                                    for c in s)


def test_every_rejection_is_recorded(tmp_path):
    src = make_pair_tree(tmp_path / "src", n=5)
    (src / "img_001.txt").unlink()  # image without a caption
    (src / "img_002.txt").write_text("\n  \n")  # empty caption
    (src / "orphan.txt").write_text("a caption without its image")
    (src / "notes.md").write_text("not part of the dataset")
    shutil.copy(src / "img_003.jpg", src / "img_003.png")  # two images share one caption file
    result = convert_pairs(src, tmp_path / "out")
    why = reasons(tmp_path / "out")
    assert why["img_001.jpg"].startswith("no caption: no img_001.txt")
    assert why["img_002.jpg"].startswith("empty caption")
    assert why["orphan.txt"].startswith("caption without an image")
    assert why["notes.md"].startswith("not an image")
    assert "same stem" in why["img_003.jpg"] and "same stem" in why["img_003.png"]
    assert sorted(by_source(tmp_path / "out")) == ["img_000.jpg", "img_004.jpg"]
    assert result.manifest.num_samples == 2


def _rows(n: int) -> list[tuple[str, str]]:
    rows = [(f"img_{i:03d}.jpg", f"photo {i} caption 0") for i in range(n)]
    return rows + [("img_000.jpg", "photo 0 caption 1")]  # a second caption for one image


def _write_captions(path: Path, rows: list[tuple[str, str]]) -> Path:
    if path.suffix in (".csv", ".tsv"):
        with open(path, "w", newline="") as f:
            w = csv.writer(f, delimiter="," if path.suffix == ".csv" else "\t")
            w.writerow(["file", "caption"])
            w.writerows(rows)
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps({"file_name": f, "text": c}) + "\n" for f, c in rows))
    elif path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"image": [f for f, _ in rows], "caption": [c for _, c in rows]}), path)
    else:
        names = sorted({f for f, _ in rows})
        path.write_text(json.dumps({"images": [{"id": i, "file_name": f} for i, f in enumerate(names)],
                                    "annotations": [{"image_id": names.index(f), "id": k, "caption": c}
                                                    for k, (f, c) in enumerate(rows)]}))
    return path


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".parquet", ".json"])
def test_every_captions_file_format_gives_the_same_pairs(tmp_path, suffix):
    src = make_pair_tree(tmp_path / "src", n=4)
    for p in src.glob("*.txt"):
        p.unlink()
    captions = _write_captions(tmp_path / f"captions{suffix}", _rows(4))
    convert_pairs(src, tmp_path / "out", captions=str(captions))
    assert read_manifest(tmp_path / "out").preprocessing["captions"] == f"captions{suffix}"
    assert by_source(tmp_path / "out") == {
        "img_000.jpg": ["photo 0 caption 0", "photo 0 caption 1"], "img_001.jpg": ["photo 1 caption 0"],
        "img_002.jpg": ["photo 2 caption 0"], "img_003.jpg": ["photo 3 caption 0"]}


def test_a_tokenizer_that_cannot_be_read_stops_the_run_before_anything_is_written(tmp_path):
    src = make_pair_tree(tmp_path / "src", n=3)
    (tmp_path / "tok.json").write_text("{not json")
    with pytest.raises((ConvertError, ValueError), match="tok.json"):
        convert_pairs(src, tmp_path / "out", tokenizer=str(tmp_path / "tok.json"))
    assert not (tmp_path / "out").exists()


def test_the_tokenizer_file_and_max_length_are_part_of_what_a_destination_holds(tmp_path):
    src = make_pair_tree(tmp_path / "src", n=3)
    tok = tmp_path / "tok.json"
    shutil.copy(TOKENIZER, tok)
    convert_pairs(src, tmp_path / "out", tokenizer=str(tok), max_length=12)
    assert convert_pairs(src, tmp_path / "out", tokenizer=str(tok), max_length=12).manifest.num_samples == 3
    for other in ({}, {"tokenizer": str(tok), "max_length": 16}):
        with pytest.raises(ConvertError, match="already holds a different dataset"):
            convert_pairs(src, tmp_path / "out", **other)
    tok.write_text(json.dumps(json.loads(tok.read_text()), indent=1))  # the same path, another file
    with pytest.raises(ConvertError, match="already holds a different dataset"):
        convert_pairs(src, tmp_path / "out", tokenizer=str(tok), max_length=12)


def test_captions_file_rows_outside_the_source_are_refused(tmp_path):
    src = make_pair_tree(tmp_path / "src", n=3)
    (tmp_path / "secret.jpg").write_bytes((src / "img_000.jpg").read_bytes())
    rows = [("img_000.jpg", "photo 0"), ("../secret.jpg", "escape"), ("/etc/hostname", "absolute"),
            ("sub/../../secret.jpg", "sneaky"), ("img_001.jpg", "  "), ("missing.jpg", "no image"),
            ("img_000.txt", "a caption of a caption")]
    captions = _write_captions(tmp_path / "c.csv", rows)
    convert_pairs(src, tmp_path / "out", captions=str(captions))
    why = reasons(tmp_path / "out")
    refused = [s for s, r in why.items() if r.startswith("path outside the source folder")]
    assert sorted(refused) == ["c.csv:3: ../secret.jpg", "c.csv:4: /etc/hostname", "c.csv:5: sub/../../secret.jpg"]
    assert why["img_001.jpg (c.csv:6)"] == "empty caption"
    assert why["missing.jpg (c.csv:7)"] == "caption without an image: no such image in the source"
    assert why["img_000.txt (c.csv:8)"] == "caption without an image: not an image"
    assert why["img_002.jpg"] == "no caption: not named in c.csv"
    assert by_source(tmp_path / "out") == {"img_000.jpg": ["photo 0"]}


def test_split_folders_in_captions_file_paths(tmp_path):
    src = tmp_path / "src"
    make_pair_tree(src / "train", n=3)
    make_pair_tree(src / "val", n=2)
    rows = [(f"{s}/img_{i:03d}.jpg", f"photo {i}") for s, n in (("train", 3), ("val", 2)) for i in range(n)]
    for p in src.rglob("*.txt"):
        p.unlink()
    m = convert_pairs(src, tmp_path / "out", captions=str(_write_captions(tmp_path / "c.jsonl", rows))).manifest
    assert {s: m.splits[s].samples for s in m.splits} == {"train": 3, "val": 2}


@pytest.mark.parametrize(("name", "text", "message"), [
    ("c.csv", "path,words\na.jpg,hi\n", "needs a caption column"),
    ("c.csv", "words,caption\na.jpg,hi\n", "needs a file column"),
    ("c.json", "[1, 2]", "not a COCO captions file"),
    ("c.json", '{"images": []}', "not a COCO captions file"),
    ("c.json", "{not json", "is not valid JSON"),
    ("c.jsonl", '{"file": "a.jpg", "caption": "x"}\n[1]\n', "c.jsonl:2: expected a JSON object"),
    ("c.xml", "<x/>", "has extension '.xml'"),
    ("c.csv", "file,caption\n", "holds no rows"),
])
def test_unusable_captions_files_are_clear_errors(tmp_path, name, text, message):
    src = make_pair_tree(tmp_path / "src", n=2)
    (tmp_path / name).write_text(text)
    with pytest.raises(ConvertError, match=message):
        convert_pairs(src, tmp_path / "out", captions=str(tmp_path / name))
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_missing_captions_file_and_bad_options(tmp_path):
    src = make_pair_tree(tmp_path / "src", n=2)
    with pytest.raises(ConvertError, match="does not exist"):
        convert_pairs(src, tmp_path / "out", captions=str(tmp_path / "nope.csv"))
    with pytest.raises(ValueError, match="needs --tokenizer"):
        convert_pairs(src, tmp_path / "out", max_length=10)
    with pytest.raises(ValueError, match="not available for image_text"):
        convert_pairs(src, tmp_path / "out", format="arrow")


def test_normalize_caption_keeps_words_and_removes_line_breaks():
    assert normalize_caption("  two\r\nlines \n") == "two lines"
    assert normalize_caption("Ünïcode  spacing kept") == "Ünïcode  spacing kept"


def test_bundled_coco_captions_convert(tmp_path):
    """The real photos with the bundled COCO-format captions: every captioned photo, every caption, in order."""
    coco = json.loads(COCO_CAPTIONS.read_text())
    names = {im["id"]: im["file_name"] for im in coco["images"]}
    want: dict[str, list[str]] = {}
    for ann in coco["annotations"]:
        want.setdefault(names[ann["image_id"]], []).append(ann["caption"])
    rows = read_captions(COCO_CAPTIONS)
    assert len(rows) == len(coco["annotations"]) and rows[0].where.startswith("captions_photos.json:annotation 0")
    result = convert_pairs(PHOTOS, tmp_path / "out", captions=str(COCO_CAPTIONS), samples_per_shard=10)
    assert by_source(tmp_path / "out") == want
    uncaptioned = {r["source"] for r in result.manifest.rejected}
    assert uncaptioned == {p.name for p in PHOTOS.glob("*.jpg")} - set(want)


def test_cli_detects_pairs_and_converts(tmp_path, capsys):
    from fastdata.cli import main

    src = make_pair_tree(tmp_path / "src", n=3)
    assert main(["convert", str(src), str(tmp_path / "out"), "-j", "1", "--no-progress",
                 "--tokenizer", str(TOKENIZER)]) == 0
    m = read_manifest(tmp_path / "out")
    assert m.kind == "image_text" and m.ids_member == "ids.npy"
