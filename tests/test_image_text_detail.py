"""Image-text details, checked in-process (conversion workers run in forked processes, where mutation testing
cannot see which test reaches a function): caption-file parsing edge cases, discovery rules, the per-pair
processor, and the caption batcher's choices of ids, padding and tokenizer."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_pairs import TOKENIZER, convert_pairs, make_pair_tree, tokenizer
from PIL import Image

from converters.image_text.captions import read_captions
from converters.image_text.discover import MAX_TXT_BYTES, Captions, discover_pairs
from converters.image_text.process import ImageTextOptions, PairProcessor, ids_array, npy_bytes
from converters.sample import Rejection, WorkItem
from fastdata.errors import ConvertError, ShardError
from fastdata.images.reader import RawSample
from fastdata.manifest import Manifest
from fastdata.pairs.captions import CaptionBatcher, CaptionOptions, choose

# -- captions files ----------------------------------------------------------------------------------


def test_jsonl_blank_lines_non_string_values_and_row_names(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"file": "a.jpg", "caption": "one"}\n\n{"file": "b.jpg", "caption": 7}\n'
                    '{"file": 3, "caption": "three"}\n')
    rows = read_captions(path)
    assert [(r.path, r.caption, r.where) for r in rows] == [
        ("a.jpg", "one", "c.jsonl:1"), ("b.jpg", "", "c.jsonl:3"), ("", "three", "c.jsonl:4")]
    (tmp_path / "bad.jsonl").write_text('{"file": "a.jpg"\n')
    with pytest.raises(ConvertError, match=r"bad.jsonl:1: not a JSON object"):
        read_captions(tmp_path / "bad.jsonl")


def test_csv_empty_cells_bom_and_line_numbers(tmp_path):
    path = tmp_path / "c.csv"
    path.write_bytes("\ufeffFile,Caption\r\na.jpg,first\r\n,no file\r\nb.jpg,\r\n".encode())
    rows = read_captions(path)
    assert [(r.path, r.caption, r.where) for r in rows] == [
        ("a.jpg", "first", "c.csv:2"), ("", "no file", "c.csv:3"), ("b.jpg", "", "c.csv:4")]
    (tmp_path / "d.csv").write_bytes(b"file,caption\n\xff\xfe,x\n")
    with pytest.raises(ConvertError, match="cannot read captions file"):
        read_captions(tmp_path / "d.csv")


def test_flickr_captions_files_are_read_as_they_ship(tmp_path):
    """Flickr8k's `captions.txt` (a CSV named .txt) was refused for its extension; Flickr30k's `results.csv` is split
    by "|" with columns `image_name| comment_number| comment`, and its one damaged row has no comment cell."""
    (tmp_path / "captions.txt").write_text("image,caption\n1000268201_693b08cb0e.jpg,A child in a pink dress .\n"
                                           "1000268201_693b08cb0e.jpg,\"A girl, going into a wooden building .\"\n")
    rows = read_captions(tmp_path / "captions.txt")
    assert [(r.path, r.caption, r.where) for r in rows] == [
        ("1000268201_693b08cb0e.jpg", "A child in a pink dress .", "captions.txt:2"),
        ("1000268201_693b08cb0e.jpg", "A girl, going into a wooden building .", "captions.txt:3")]
    (tmp_path / "results.csv").write_text("image_name| comment_number| comment\n1000092795.jpg| 0| Two young guys .\n"
                                          "2199200615.jpg| 4 A dog runs across the grass .\n")
    rows = read_captions(tmp_path / "results.csv")
    assert [(r.path, r.caption.strip()) for r in rows] == [("1000092795.jpg", "Two young guys ."),
                                                           ("2199200615.jpg", "")]  # rejected later: no caption


@pytest.mark.parametrize(("header", "row", "want"), [
    ("\ufeffimage_name| comment", "a.jpg| a cat", ("a.jpg", "a cat")),  # a BOM before a bar-split header
    ("file,x|caption|image", "a.jpg,1|a cat|b.jpg", ("b.jpg", "a cat")),  # commas give a file column, bars both
    ("caption,y|image|caption", "a cat,1|b.jpg|x", ("b.jpg", "x")),  # commas give a caption column, bars both
])
def test_the_delimiter_is_the_one_that_gives_both_a_file_and_a_caption_column(tmp_path, header, row, want):
    (tmp_path / "c.csv").write_text(f"{header}\n{row}\n", encoding="utf-8")
    assert [(r.path, r.caption.strip()) for r in read_captions(tmp_path / "c.csv")] == [want]


def test_a_table_whose_header_no_delimiter_splits_into_a_file_and_a_caption_names_its_columns(tmp_path):
    (tmp_path / "c.csv").write_text("image:caption\na.jpg:a cat\n")
    with pytest.raises(ConvertError, match=r"has columns \['image:caption'\]; it needs a file column named one of"):
        read_captions(tmp_path / "c.csv")
    (tmp_path / "c.csv").write_text("image;caption\na.jpg;a cat, sitting\n")  # a European spreadsheet's CSV
    assert [(r.path, r.caption) for r in read_captions(tmp_path / "c.csv")] == [("a.jpg", "a cat, sitting")]


def test_parquet_rows_and_an_unreadable_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"filename": ["a.jpg", None], "text": ["x", "y"]}), tmp_path / "c.parquet")
    rows = read_captions(tmp_path / "c.parquet")
    assert [(r.path, r.caption, r.where) for r in rows] == [("a.jpg", "x", "c.parquet:row 0"),
                                                            ("", "y", "c.parquet:row 1")]
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(ConvertError, match="cannot read captions file .*bad.parquet"):
        read_captions(tmp_path / "bad.parquet")


def test_coco_with_junk_entries(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"images": [{"id": 1, "file_name": "a.jpg"}, "junk", {"id": 2, "file_name": 5}],
                                "annotations": [{"image_id": 1, "caption": "x"}, "junk",
                                                {"image_id": 2, "caption": "y"}, {"image_id": 9, "caption": "z"}]}))
    rows = read_captions(path)
    assert [(r.path, r.caption) for r in rows] == [("a.jpg", "x"), ("", ""), ("", "y"), ("", "z")]
    assert rows[3].where == "c.json:annotation 3 (image_id 9)"
    path.write_text(json.dumps([{"images": []}]))
    with pytest.raises(ConvertError, match="an object with 'images' and 'annotations'"):
        read_captions(path)


# -- discovery -------------------------------------------------------------------------------------


def _reasons(found) -> dict[str, str]:
    return {r.source: r.reason for r in found.rejected}


def test_sidecar_rules_size_encoding_splits_and_layout(tmp_path):
    src = make_pair_tree(tmp_path / "src", n=4)
    (src / "img_000.txt").write_bytes(b"x" * (MAX_TXT_BYTES + 1))
    (src / "img_001.txt").write_bytes(b"\xff\xfe caption")
    (src / "img_002.txt").write_bytes(b"x" * 10 + b"\n" * (MAX_TXT_BYTES - 10))  # exactly the limit: taken
    make_pair_tree(src / "val" / "deeper", n=1)
    make_pair_tree(src / "Testing", n=1)  # another name of a split folder
    make_pair_tree(src / "other", n=1)
    found = discover_pairs(src, captions=None, split="train")
    why = _reasons(found)
    assert why["img_000.jpg"].startswith(f"caption file of {MAX_TXT_BYTES + 1} bytes")
    assert why["img_001.jpg"].startswith("caption file is not UTF-8 text")
    assert [it.rel for it in found.splits["train"]] == ["img_002.jpg", "img_003.jpg", "other/img_000.jpg"]
    assert [it.rel for it in found.splits["val"]] == ["val/deeper/img_000.jpg"]
    assert [it.rel for it in found.splits["test"]] == ["Testing/img_000.jpg"]
    assert found.splits["val"][0].split == "val" and found.layout == "sidecar-txt"
    assert found.splits["train"][0].payload == Captions(("x" * 10,))
    [kept] = [entry for entry in found.identity if entry[1] == "img_002.jpg"]
    assert kept[0] == "train" and kept[3] == ["x" * 10]


def test_paths_named_like_split_folders_only_count_as_folders(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    Image.new("RGB", (8, 8)).save(src / "val.jpg")
    (src / "val.txt").write_text("a file named val")
    found = discover_pairs(src, captions=None, split="train")
    assert [it.rel for it in found.splits["train"]] == ["val.jpg"]


def test_windows_and_dot_paths_in_captions_files_are_refused(tmp_path):
    src = make_pair_tree(tmp_path / "src", n=1)
    captions = tmp_path / "c.csv"
    captions.write_text("file,caption\nC:\\x.jpg,drive\n..,up\n.,here\nsub\\..\\img_000.jpg,fine\n")
    found = discover_pairs(src, captions=str(captions), split="train")
    refused = [s for s, r in _reasons(found).items() if r.startswith("path outside the source folder")]
    assert sorted(refused) == ["c.csv:2: C:\\x.jpg", "c.csv:3: ..", "c.csv:4: ."]
    assert [it.rel for it in found.splits["train"]] == ["img_000.jpg"] and found.layout == "captions-file"


def test_absolute_paths_under_the_source_in_a_captions_file_are_taken_relative_to_it(tmp_path):
    """A captions table exported with full paths (pandas, a notebook) had every row refused as "outside the source
    folder". A path under SRC, as written or through the link SRC is reached by, names that image; one that
    leaves SRC (a sibling whose name starts like it, or `..` past it) is still refused."""
    src = make_pair_tree(tmp_path / "src", n=3)
    (tmp_path / "srcab").mkdir()
    (tmp_path / "link").symlink_to(src)
    captions = tmp_path / "c.csv"
    captions.write_text(f"file,caption\n{src}/img_000.jpg,full\n{tmp_path}/link/img_001.jpg,through the link\n"
                        f"{tmp_path}/srcab/img_002.jpg,sibling\n{src}/../srcab/img_002.jpg,climbs out\n")
    found = discover_pairs(tmp_path / "link", captions=str(captions), split="train")
    assert sorted(it.rel for it in found.splits["train"]) == ["img_000.jpg", "img_001.jpg"]
    refused = [s for s, r in _reasons(found).items() if r.startswith("path outside the source folder")]
    assert sorted(refused) == [f"c.csv:4: {tmp_path}/srcab/img_002.jpg", f"c.csv:5: {src}/../srcab/img_002.jpg"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_links_and_special_files_are_rejected_not_opened(tmp_path):
    src = make_pair_tree(tmp_path / "src", n=2)
    os.mkfifo(src / "pipe.jpg")
    (src / "gone.jpg").symlink_to(tmp_path / "missing.jpg")
    (src / "link.jpg").symlink_to(src / "img_000.jpg")
    (src / "link.txt").write_text("a linked image")
    why = _reasons(discover_pairs(src, captions=None, split="train"))
    assert "FIFO" in why["pipe.jpg"] and why["gone.jpg"].startswith("broken symlink")
    no_follow = discover_pairs(src, captions=None, split="train", follow_symlinks=False)
    assert _reasons(no_follow)["link.jpg"] == "symbolic link not followed (--no-follow-symlinks)"
    with pytest.raises(ConvertError, match="is not a directory"):
        discover_pairs(src / "img_000.jpg", captions=None, split="train")


def test_changed_captions_change_the_fingerprint(tmp_path):
    src = make_pair_tree(tmp_path / "src", n=2)
    first = convert_pairs(src, tmp_path / "a").manifest.fingerprint
    (src / "img_001.txt").write_text("photo 1 with another caption\n")
    assert convert_pairs(src, tmp_path / "b").manifest.fingerprint != first


# -- the per-pair processor ---------------------------------------------------------------------------


def test_image_options_reach_the_image_and_json_is_canonical(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    Image.new("RGB", (120, 60), (200, 10, 10)).save(src / "wide.png")
    item = WorkItem(split="train", rel="wide.png", source=str(src / "wide.png"), position=3,
                    payload=Captions(("red", "a red rectangle")))
    sample = PairProcessor(ImageTextOptions(short_side=20, quality=50), sha256=None)(item)
    with Image.open(io.BytesIO(sample.members["jpg"])) as im:
        assert im.size == (40, 20)
    finer = PairProcessor(ImageTextOptions(short_side=20, quality=95), sha256=None)(item)
    assert len(sample.members["jpg"]) < len(finer.members["jpg"])  # --quality reaches the encoder
    meta = json.loads(sample.members["json"])
    assert list(meta) == sorted(meta) and meta["captions"] == 2 and "label" not in meta
    assert sample.key == "00000003" and sample.members["txt"] == b"red\na red rectangle"
    assert sample.stats["captions"] == 2 and sample.stats["captions_per_image"] == {"2": 1}
    big = PairProcessor(ImageTextOptions(short_side=20, max_pixels=100), sha256=None)(item)
    assert isinstance(big, Rejection) and "decompression bomb" in big.reason
    none = PairProcessor(ImageTextOptions(), sha256=None)(WorkItem("val", "wide.png", str(src / "wide.png")))
    assert none == Rejection("val", "wide.png", "no caption")


def test_keep_metadata_and_the_split_reach_the_image_options(tmp_path):
    """--keep-metadata keeps a photo's bytes as they are, EXIF included, as for the images kind."""
    exif = Image.Exif()
    exif[0x010E] = "shot at home"  # ImageDescription
    buf = io.BytesIO()
    Image.new("RGB", (40, 20), (10, 200, 10)).save(buf, "JPEG", quality=95, exif=exif.tobytes())
    (tmp_path / "a.jpg").write_bytes(buf.getvalue())
    item = WorkItem(split="val", rel="a.jpg", source=str(tmp_path / "a.jpg"), payload=Captions(("green",)))
    kept = PairProcessor(ImageTextOptions(keep_metadata=True, split="val"), sha256=None)(item)
    stripped = PairProcessor(ImageTextOptions(split="val"), sha256=None)(item)
    assert kept.members["jpg"] == buf.getvalue() and b"shot at home" not in stripped.members["jpg"]
    options = ImageTextOptions(short_side=64, quality=80, max_pixels=5000, split="val", keep_metadata=True)
    image = options.image_options()
    assert (image.short_side, image.quality, image.max_pixels, image.split, image.unlabeled, image.keep_metadata) == (
        64, 80, 5000, "val", True, True)


def test_option_checks():
    with pytest.raises(ValueError, match="--max-length must be an integer >= 2"):
        ImageTextOptions(tokenizer=str(TOKENIZER), max_length=1)
    assert ImageTextOptions(tokenizer=str(TOKENIZER), max_length=2).max_length == 2
    with pytest.raises(ValueError) as err:
        ImageTextOptions(max_length=8)
    assert str(err.value) == "--max-length truncates token ids: it needs --tokenizer"
    with pytest.raises(ValueError, match="--quality"):
        ImageTextOptions(quality=0)
    for bad in (0, True, 1.5, 2**24 + 1, 2**63):  # 2**63 raised torch's "Maximum allowed dimension exceeded"
        with pytest.raises(ValueError, match=r"^max_length=.* is not allowed; it must be None or an integer from 1 "
                                             r"to 16,777,216 \(a batch holds max_length tokens a row\)$"):
            CaptionOptions(max_length=bad)
    assert CaptionOptions(max_length=1).max_length == 1 and CaptionOptions(max_length=2**24).max_length == 2**24
    for bad in (5, True, b"t.json", ["t.json"]):  # a number raised Path's "expected str, bytes or os.PathLike"
        with pytest.raises(ValueError, match=r"^tokenizer=.* is not allowed; it must be None \(the ids stored in the "
                                             r"shards\) or the path of a tokenizer.json$"):
            CaptionOptions(tokenizer=bad)
    assert CaptionOptions(tokenizer=TOKENIZER).tokenizer == TOKENIZER  # a Path
    with pytest.raises(ValueError, match="return_captions=1 is not allowed"):
        CaptionOptions(return_captions=1)


def test_ids_are_int32_rows_filled_with_minus_one_and_never_pickled():
    arr = ids_array([[5, 6, 7], [8]])
    assert arr.dtype == np.int32 and arr.tolist() == [[5, 6, 7], [8, -1, -1]]
    data = npy_bytes(arr)
    assert np.array_equal(np.load(io.BytesIO(data), allow_pickle=False), arr)


# -- the caption batcher ------------------------------------------------------------------------------


def _manifest(**extra) -> Manifest:
    return Manifest(kind="image_text", shard_format="wds", classes=(), splits={}, preprocessing={}, rejected=(),
                    extra={"text_member": "txt", **extra}, fingerprint="0" * 64, tool_version="0")


def _raw(captions: list[str], ids: np.ndarray | None = None, index: int = 0) -> RawSample:
    extra = ("\n".join(captions).encode(),) + ((npy_bytes(ids),) if ids is not None else ())
    return RawSample(data=b"", label=-1, key=f"{index:08d}", shard=Path("s.tar"), extra=extra, index=index)


STORED = {"ids_member": "ids.npy", "ids_fill": -1, "tokenizer": {"pad_id": 7, "sha256": "ab" * 32}}


def test_stored_ids_pad_with_the_manifests_pad_id_and_cut_at_max_length():
    b = CaptionBatcher(_manifest(**STORED), CaptionOptions(), train=False, seed=0, device=torch.device("cpu"))
    out = b([_raw(["x", "y"], ids_array([[1, 2, 3], [4]])), None], epoch=0)
    assert b.pad_id == 7 and set(out) == {"input_ids", "attention_mask"}
    assert out["input_ids"].tolist() == [[1, 2, 3, 7, 7, 7, 7, 7], [7] * 8]
    assert out["attention_mask"].tolist() == [[1, 1, 1, 0, 0, 0, 0, 0], [0] * 8]
    cut = CaptionBatcher(_manifest(**STORED), CaptionOptions(max_length=2, return_captions=True), train=False,
                         seed=0, device=torch.device("cpu"))([_raw(["x"], ids_array([[1, 2, 3]])), None], epoch=0)
    assert cut["input_ids"].tolist() == [[1, 2], [7, 7]] and cut["captions"] == ["x", ""]


def test_another_fill_value_is_read_from_the_manifest():
    m = _manifest(**{**STORED, "ids_fill": 99})
    ids = np.array([[1, 99, 99]], dtype=np.int32)
    out = CaptionBatcher(m, CaptionOptions(), train=False, seed=0, device=torch.device("cpu"))([_raw(["x"], ids)], 0)
    assert out["attention_mask"].sum() == 1


@pytest.mark.parametrize(("ids", "captions"), [
    (np.array([1, 2], dtype=np.int32), 1),  # not [captions, length]
    (np.array([[1.5, 2.0]]), 1),  # not integers
    (np.array([[1, 2]], dtype=np.int32), 2),  # one row for two captions
])
def test_stored_ids_that_do_not_fit_are_shard_errors(ids, captions):
    from fastdata.pairs.captions import _stored_ids

    raw = RawSample(data=b"", label=-1, key="k", shard=Path("s.tar"), extra=(b"a\nb", npy_bytes(ids)), index=0)
    with pytest.raises(ShardError, match=rf"^sample k in s.tar: token ids of shape {re.escape(str(ids.shape))} and "
                                         rf"dtype {ids.dtype} do not match its captions \({captions}; an int array "
                                         r"\[captions, length\]\)$"):
        _stored_ids(raw, captions, 0, -1, 2**63)
    if ids.ndim == 2 and ids.dtype.kind == "i":  # one row for one caption fits
        assert _stored_ids(raw, 1, 0, -1, 2**63) == [1, 2]


def test_pickled_or_garbage_ids_and_empty_or_foreign_captions_are_refused():
    from fastdata.pairs.captions import _captions, _stored_ids

    buf = io.BytesIO()
    np.save(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    pickled = RawSample(data=b"", label=-1, key="k", shard=Path("s.tar"), extra=(b"a", buf.getvalue()), index=0)
    with pytest.raises(ShardError, match="^sample k in s.tar: its token ids are not a readable .npy"):
        _stored_ids(pickled, 1, 0, -1, 2**63)
    with pytest.raises(ShardError, match="^sample 00000000 in s.tar: its caption is empty$"):
        _captions(_raw(["  ", ""]))
    latin1 = RawSample(data=b"", label=-1, key="k", shard=Path("s.tar"), extra=("café".encode("latin-1"),), index=0)
    with pytest.raises(ShardError, match="^sample k in s.tar: its caption is not UTF-8 text"):
        _captions(latin1)


def test_tokenizing_at_load_truncates_inside_the_special_tokens_and_pads_with_the_tokenizers_id():
    b = CaptionBatcher(_manifest(), CaptionOptions(tokenizer=str(TOKENIZER), max_length=5), train=False, seed=0,
                       device=torch.device("cpu"))
    out = b([_raw(["a rather long caption of many words"]), _raw(["hi"])], epoch=0)
    tok = tokenizer()
    assert b.pad_id == 0 and b.tokenized
    assert out["input_ids"][0].tolist()[-1] == tok.token_to_id("[SEP]")  # the tokenizer truncated, not a cut
    assert out["input_ids"][1].tolist() == tok.encode("hi").ids + [0] * (5 - len(tok.encode("hi").ids))


def test_the_same_tokenizer_as_stored_uses_the_stored_ids():
    from fastdata.text.tokenizer import load_tokenizer

    sha = load_tokenizer(TOKENIZER)[1]
    m = _manifest(**{**STORED, "tokenizer": {"pad_id": 0, "sha256": sha}})
    b = CaptionBatcher(m, CaptionOptions(tokenizer=str(TOKENIZER)), train=False, seed=0, device=torch.device("cpu"))
    out = b([_raw(["anything"], ids_array([[42, 43]]))], epoch=0)
    assert out["input_ids"][0, :2].tolist() == [42, 43]  # the stored ids, not the tokenizer's for "anything"
    other = _manifest(**{**STORED, "tokenizer": {"pad_id": 0, "sha256": "cd" * 32}})
    b2 = CaptionBatcher(other, CaptionOptions(tokenizer=str(TOKENIZER)), train=False, seed=0,
                        device=torch.device("cpu"))
    assert b2([_raw(["anything"], ids_array([[42, 43]]))], epoch=0)["input_ids"][0, 0] == 101


def test_two_captions_are_both_drawn():
    assert {choose(2, train=True, seed=0, epoch=e, index=1) for e in range(30)} == {0, 1}
    assert choose(1, train=True, seed=0, epoch=5, index=1) == 0


def test_verify_reads_captions_and_ids_as_the_loader_does(tmp_path):
    """A caption that is not UTF-8 or ids past the vocabulary passed `verify` (it looked at images and labels only),
    then stopped the loader at that sample."""
    from fastdata.verify import verify_dataset

    make_pair_tree(tmp_path / "src", 6)
    root = tmp_path / "pairs"
    convert_pairs(tmp_path / "src", root, tokenizer=str(TOKENIZER))
    assert verify_dataset(root) == []
    idx, tar = root / "train-000000.idx", root / "train-000000.tar"
    spans = [line.split() for line in idx.read_text().splitlines()[1:3]]
    data = bytearray(tar.read_bytes())
    txt = spans[0].index("txt")
    data[int(spans[0][txt + 1])] = 0xFF  # the first byte of sample 0's caption
    ids = spans[1].index("ids.npy")
    offset, size = int(spans[1][ids + 1]), int(spans[1][ids + 2])
    data[offset + size - 4:offset + size] = np.array([40000], dtype="<i4").tobytes()  # sample 1's last id
    tar.write_bytes(bytes(data))
    key0, key1 = spans[0][txt + 3].partition(".")[0], spans[1][ids + 3].partition(".")[0]
    assert verify_dataset(root) == [
        f"{tar}: sha256 differs from the manifest",
        f"{tar}: sample {key0}: its caption is not UTF-8 text ('utf-8' codec can't decode byte 0xff in position 0: "
        "invalid start byte)",
        f"{tar}: sample {key1}: token id 40000 lies outside the tokenizer's vocabulary (0..30521)",
    ]


def test_verify_of_pairs_with_several_captions_each_is_clean_and_names_a_missing_member(tmp_path):
    """Gaps a mutation round of verify.py found: rows padded with the fill value are not ids outside the vocabulary,
    and a missing caption or ids member is named (which one)."""
    from fastdata.verify import verify_dataset

    make_pair_tree(tmp_path / "src", 4, captions=3)  # even samples: 3 captions of different lengths, fill after
    root = tmp_path / "pairs"
    convert_pairs(tmp_path / "src", root, tokenizer=str(TOKENIZER))
    assert verify_dataset(root) == []
    idx, tar = root / "train-000000.idx", root / "train-000000.tar"
    lines = idx.read_text().splitlines()
    first, second = lines[1].split(), lines[2].split()
    key0, key1 = first[3].partition(".")[0], second[3].partition(".")[0]

    def without(fields, ext):
        at = fields.index(ext)
        return " ".join(fields[:at] + fields[at + 4:])

    lines[1], lines[2] = without(first, "txt"), without(second, "ids.npy")
    idx.write_text("\n".join(lines) + "\n")
    problems = verify_dataset(root)
    assert f"{tar}: sample {key0} has no txt member" in problems
    assert f"{tar}: sample {key1} has no ids.npy member" in problems
