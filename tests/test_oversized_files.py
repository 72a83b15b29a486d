"""A file named as an image that is larger than any image under --max-pixels can be (a disk image, a video, a
sparse file named `.jpg`) is rejected by its size, unread. Before, each was read whole into a worker's memory
before Pillow said it was no image: a 3 GiB sparse file took 3.2 GB and 10 s; a few of them side by side, the
workers' memory. The limit is the one the images of tables and LMDB values had already: 8 bytes a pixel of
--max-pixels (16-bit RGBA, uncompressed) and 1 MiB of headers."""

from __future__ import annotations

from pathlib import Path

from conftest_pairs import convert_pairs, make_pair_tree
from conftest_text import TOKENIZER
from helpers import convert_images, make_image

from converters.images.encode import bytes_limit
from fastdata.manifest import read_manifest


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)  # no byte written: the disk holds none of it
    return path


def test_a_huge_file_named_as_an_image_is_rejected_unread(tmp_path) -> None:
    src = tmp_path / "src"
    make_image(src / "cat" / "a.jpg", size=(40, 30))
    make_image(src / "dog" / "b.jpg", size=(40, 30), seed=1)
    _sparse(src / "dog" / "disk.jpg", 3 << 30)
    result = convert_images(src, tmp_path / "out")
    assert read_manifest(tmp_path / "out").splits["train"].samples == 2
    assert result.rejected == [{"split": "train", "source": "dog/disk.jpg", "reason": (
        "too large for an image: a file of 3,221,225,472 bytes, more than an image of --max-pixels 89,478,485 may "
        "hold (716,876,456)")}]


def test_the_limit_follows_max_pixels_and_a_file_at_it_is_read(tmp_path) -> None:
    limit = bytes_limit(10_000)
    assert limit == 8 * 10_000 + (1 << 20)
    src = tmp_path / "src"
    for name, size in (("at.jpg", limit), ("past.jpg", limit + 1)):
        path = make_image(src / "cat" / name, size=(40, 30))
        with open(path, "ab") as f:  # a JPEG padded after its end: still an image, and this many bytes
            f.write(b"\0" * (size - path.stat().st_size))
    make_image(src / "dog" / "b.jpg", size=(40, 30), seed=1)
    result = convert_images(src, tmp_path / "out", max_pixels=10_000)
    assert read_manifest(tmp_path / "out").splits["train"].samples == 2  # at.jpg and b.jpg
    assert [(r["source"], r["reason"]) for r in result.rejected] == [
        ("cat/past.jpg", f"too large for an image: a file of {limit + 1:,} bytes, more than an image of --max-pixels "
                         f"10,000 may hold ({limit:,})")]


def test_the_image_of_an_image_text_pair_too(tmp_path) -> None:
    src = make_pair_tree(tmp_path / "src", 4)
    _sparse(src / "img_002.jpg", 2 << 30)
    result = convert_pairs(src, tmp_path / "out", tokenizer=str(TOKENIZER))
    assert read_manifest(tmp_path / "out").splits["train"].samples == 3
    assert [r["source"] for r in result.rejected] == ["img_002.jpg"]
    assert result.rejected[0]["reason"].startswith("too large for an image: a file of 2,147,483,648 bytes")
