"""Bad input never crashes a conversion and is never lost: every case is rejected with its reason."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
from helpers import convert_images, make_image

from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest


@pytest.fixture
def bad_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    src = tmp_path / "bad"
    good = [make_image(src / "a" / f"good_{i}.jpg", size=(40, 30), seed=i) for i in range(3)]
    good.append(make_image(src / "b" / "good_png.png", size=(40, 30), fmt="PNG"))
    data = good[0].read_bytes()
    (src / "b" / "truncated.jpg").write_bytes(data[: len(data) // 2])
    (src / "b" / "corrupt.jpg").write_bytes(data[:4] + os.urandom(600))
    (src / "b" / "empty.jpg").write_bytes(b"")
    (src / "b" / "notes.jpg").write_text("this is a text file with an image extension\n")
    (src / "b" / "readme.txt").write_text("not an image\n")
    make_image(src / "b" / "bomb.png", size=(200, 200), fmt="PNG")
    (src / "b" / "dangling.jpg").symlink_to(src / "b" / "does-not-exist.jpg")
    make_image(src / "b" / "locked.jpg", size=(40, 30))
    (src / "stray.jpg").write_bytes(data)  # not inside a class folder

    real_read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:  # root can read any file: simulate a permission error
        if self.name == "locked.jpg":
            raise PermissionError(13, "Permission denied")
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    return src


def test_every_bad_input_is_rejected_with_its_reason(bad_tree: Path, tmp_path: Path) -> None:
    result = convert_images(bad_tree, tmp_path / "out", max_pixels=100 * 100)
    m = read_manifest(tmp_path / "out")
    assert m.splits["train"].samples == 4  # the good ones all made it
    reasons = {r["source"]: r["reason"] for r in m.rejected}
    assert set(reasons) == {"b/truncated.jpg", "b/corrupt.jpg", "b/empty.jpg", "b/notes.jpg", "b/readme.txt",
                            "b/bomb.png", "b/dangling.jpg", "b/locked.jpg", "stray.jpg"}
    assert reasons["b/truncated.jpg"].startswith("corrupt or truncated image")
    assert reasons["b/corrupt.jpg"].startswith(("corrupt or truncated image", "not an image"))
    assert reasons["b/empty.jpg"] == "empty file (0 bytes)"
    assert reasons["b/notes.jpg"].startswith("not an image")
    assert reasons["b/readme.txt"] == ("unsupported extension '.txt'; allowed: .jpg, .jpeg, .jfif, .jpe, .png, .webp, "
                                       ".bmp, .tif, .tiff, .gif, .avif, .ppm, .pgm, .pbm, .pnm")
    assert reasons["b/bomb.png"].startswith("decompression bomb: 200x200 = 40000 pixels")
    assert reasons["b/dangling.jpg"].startswith("broken symlink")
    assert reasons["b/locked.jpg"] == "unreadable: Permission denied"
    assert reasons["stray.jpg"] == "not inside a class folder"
    assert len(result.rejected) == 9


def test_strict_exits_non_zero_and_summarises(bad_tree: Path, tmp_path: Path, capsys) -> None:
    code = cli(["convert", str(bad_tree), str(tmp_path / "out"), "-j", "1", "--strict", "--max-pixels", "10000",
                "--samples-per-shard", "4"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "rejected 9 input(s)" in out and "--strict" in err
    assert (tmp_path / "out" / "manifest.json").exists()  # the good samples are still written
    assert cli(["convert", str(bad_tree), str(tmp_path / "out2"), "-j", "1", "--max-pixels", "10000"]) == 0


def test_missing_and_empty_sources_write_nothing(tmp_path: Path, capsys) -> None:
    dst = tmp_path / "out"
    with pytest.raises(ConvertError, match="does not exist"):
        convert_images(tmp_path / "nope", dst)
    (tmp_path / "empty" / "cls").mkdir(parents=True)
    with pytest.raises(ConvertError, match="holds no images input to convert$"):  # nothing rejected: no count
        convert_images(tmp_path / "empty", dst)
    (tmp_path / "empty" / "cls" / "x.txt").write_text("x")
    with pytest.raises(ConvertError, match="1 file\\(s\\) rejected: 1 x unsupported extension '.txt'; allowed: .jpg"):
        convert_images(tmp_path / "empty", dst)
    assert not dst.exists()
    assert cli(["convert", str(tmp_path / "nope"), str(dst)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_destination_with_another_dataset_is_refused(small_tree: Path, tmp_path: Path) -> None:
    dst = tmp_path / "out"
    convert_images(small_tree, dst)
    before = {p.name: p.read_bytes() for p in dst.iterdir()}
    with pytest.raises(ConvertError, match=r"already holds a different dataset \(fingerprint [0-9a-f]{12}, "
                                           r"this conversion is [0-9a-f]{12}\): pick an empty directory"):
        convert_images(small_tree, dst, short_side=16)
    other = tmp_path / "other"
    other.mkdir()
    (other / "precious.txt").write_text("keep me")
    with pytest.raises(ConvertError, match="not empty and holds no fastdata dataset"):
        convert_images(small_tree, other)
    assert {p.name: p.read_bytes() for p in dst.iterdir()} == before
    assert [p.name for p in other.iterdir()] == ["precious.txt"]


def test_labels_csv_errors(tmp_path: Path) -> None:
    make_image(tmp_path / "flat" / "a.jpg")
    with pytest.raises(ConvertError, match="does not exist"):
        convert_images(tmp_path / "flat", tmp_path / "o", labels=str(tmp_path / "none.csv"))
    bad = tmp_path / "bad.csv"
    bad.write_text("a.jpg\n")
    with pytest.raises(ConvertError, match="expected 'filename,class'"):
        convert_images(tmp_path / "flat", tmp_path / "o", labels=str(bad))
    for i in range(3):
        make_image(tmp_path / "flat" / f"b{i}.jpg", seed=i)
    other = tmp_path / "other.csv"
    other.write_text("x.jpg,cat\ny.jpg,cat\n")  # a table of another folder: nothing matches, and the error says so
    with pytest.raises(ConvertError, match=r"holds no images input to convert \(6 file\(s\) rejected: 4 x not listed "
                                           r"in labels file other.csv; 2 x listed in other.csv but no such file in the "
                                           r"source\)$"):
        convert_images(tmp_path / "flat", tmp_path / "o", labels=str(other))


@pytest.mark.parametrize("args", [["--quality", "0"], ["--short-side", "-1"], ["--samples-per-shard", "0"],
                                  ["--shard-size", "12XB"], ["--num-parts", "2", "--part", "2"],
                                  ["--format", "arrow", "--jobs", "0"]])
def test_invalid_options_are_clear_errors(small_tree: Path, tmp_path: Path, args: list[str], capsys) -> None:
    try:
        code = cli(["convert", str(small_tree), str(tmp_path / "out"), *args])
    except SystemExit as exc:  # argparse rejects unparsable values itself
        code = exc.code
    assert code == 2
    assert "error" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_cleanup_after_the_manifest_tolerates_a_missing_state_folder(tmp_path: Path) -> None:
    from converters.state import cleanup

    (tmp_path / "x.tmp").write_bytes(b"half")
    (tmp_path / "keep.tar").write_bytes(b"")
    cleanup(tmp_path)  # no .partial/ (a merge, or a second cleanup): nothing to remove is not an error
    assert [p.name for p in tmp_path.iterdir()] == ["keep.tar"]


@pytest.mark.parametrize("fmt", ["wds", "arrow"])
def test_a_shard_whose_inputs_are_all_rejected_is_left_out_and_leaves_no_file(tmp_path: Path, fmt: str,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """One shard per input: the corrupt input's shard holds nothing, so its writer is aborted and removes its
    temporary file itself (the final sweep of stray temporary files is switched off here), the manifest lists
    the two other shards, and the rejection is recorded."""
    from converters import state

    monkeypatch.setattr(state, "cleanup", lambda dst: None)
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    (src / "a" / "bad.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(300))  # a JPEG marker, then zeros
    for i in range(2):
        make_image(src / "b" / f"good_{i}.jpg", size=(40, 30), seed=i)
    convert_images(src, tmp_path / "out", samples_per_shard=1, format=fmt)
    m = read_manifest(tmp_path / "out")
    shards = sorted(s.name for s in m.splits["train"].shards)
    assert len(shards) == 2 and m.splits["train"].samples == 2
    assert [r["source"] for r in m.rejected] == ["a/bad.jpg"]
    assert m.rejected[0]["reason"] == "not an image (no known image format signature)"
    suffix = ".tar" if fmt == "wds" else ".arrow"
    files = sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_file() and p.name != "manifest.json")
    assert files == sorted(shards + ([n.replace(".tar", ".idx") for n in shards] if fmt == "wds" else []))
    assert all(n.endswith(suffix) for n in shards)


URL_SOURCE = ("fastdata convert reads a local source, not {url}: copy it to a local disk first (`aws s3 sync`, `gcloud "
              "storage cp -r`, `azcopy copy`, `wget -r`) and convert that folder; the shards may go to a URL DST. "
              "WebDataset shards already there are adopted where they lie: `fastdata index "
              "'URL/shards-{{000000..000099}}.tar'`")


@pytest.mark.parametrize("url", ["s3://bucket/raw/", "gs://b/imagenet", "https://example.com/photos/"])
def test_a_url_source_is_refused_with_how_to_get_it_local(tmp_path: Path, capsys, url: str) -> None:
    """Before, a Path mangled it: 'source s3:/bucket/raw does not exist'."""
    for args in (["convert", url, str(tmp_path / "out")], ["convert", url, "--dry-run"],
                 ["convert", url, str(tmp_path / "out"), "--kind", "text"]):
        assert cli(args) == 2
        assert capsys.readouterr().err == f"fastdata convert: error: {URL_SOURCE.format(url=url)}\n"
    with pytest.raises(ConvertError) as info:
        convert_images(url, tmp_path / "out")
    assert str(info.value) == URL_SOURCE.format(url=url)
    assert not (tmp_path / "out").exists()


def test_a_file_url_source_names_its_local_folder(small_tree: Path, tmp_path: Path) -> None:
    assert cli(["convert", small_tree.as_uri(), str(tmp_path / "a"), "--no-progress", "-j", "1"]) == 0
    assert cli(["convert", str(small_tree), str(tmp_path / "b"), "--no-progress", "-j", "1"]) == 0
    assert (tmp_path / "a" / "manifest.json").read_bytes() == (tmp_path / "b" / "manifest.json").read_bytes()


@pytest.mark.parametrize(("args", "said"), [
    (["--multi-label"], "--multi-label (images): not an option of kind text"),
    (["--label-pattern", "^(.)"], "--label-pattern (images): not an option of kind text"),
    (["--short-side", "64", "--channel", "ct"], "--short-side (image_text, images), --channel (dicom, nifti): not an "
                                                "option of kind text"),
])
def test_an_option_of_another_kind_is_refused_not_ignored(tmp_path: Path, args: list[str], said: str,
                                                          capsys) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("a document\n")
    tokenizer = Path(__file__).parent / "data" / "tokenizers" / "bert-base-uncased.json"
    code = cli(["convert", str(corpus), str(tmp_path / "out"), "--tokenizer", str(tokenizer), *args])
    assert code == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert cli(["convert", str(corpus), str(tmp_path / "out"), "--tokenizer", str(tokenizer), "--split", "val"]) == 0


def test_an_option_of_images_given_its_default_is_no_foreign_option(small_tree: Path, tmp_path: Path) -> None:
    from fastdata.cli.convert import add_parser, foreign_options

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["convert", "src", "dst", "--short-side", "256", "--quality", "90"])
    assert foreign_options(args, "text") == []  # the defaults, spelt out
    args = parser.parse_args(["convert", "src", "dst", "--quality", "80"])
    assert foreign_options(args, "text") == [("--quality", "image_text, images")]
    assert foreign_options(args, "images") == foreign_options(args, "image_text") == []  # both read it
