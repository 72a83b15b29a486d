"""The edges of `fastdata index`'s scan of a tar (converters/adopt/scan.py) that its other tests did not pin down,
found by mutmut: each reason word for word, names that are unsafe only in their Windows spelling or by one control
character, every kind of special member, folders stored in the tar, hidden names in subfolders, the sizes at
which a label, a caption or an image stops being read, and the sample a damaged tar cuts off."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from conftest_adopt import encoded, raw_tar

from converters.adopt import AdoptOptions, adopt
from converters.adopt.scan import SampleScan, scan_tar, unsafe_name
from fastdata.pairs.members import MAX_CAPTION_BYTES
from fastdata.wds_index import Member

BLANK = "whitespace or a control character in the name (the index format separates fields by spaces)"


@pytest.mark.parametrize(("name", "reason"), [
    ("/abs/a.jpg", "absolute path"),
    ("\\\\server\\a.jpg", "absolute path"),
    ("up/../a.jpg", "'..' in the path"),
    ("up\\..\\a.jpg", "'..' in the path"),
    ("a b.jpg", BLANK),
    ("a\x01b.jpg", BLANK),
    ("a\x1fb.jpg", BLANK),
    ("a\x7fb.jpg", BLANK),
    ("a!b/c..d.jpg", None),  # '!' is the first printable character; '..' inside a name is no parent folder
])
def test_an_unsafe_member_name_is_named_by_its_reason(name: str, reason: str | None):
    assert unsafe_name(name) == reason


def test_every_kind_of_special_member_is_recorded_by_its_kind_and_the_samples_around_it_kept(tmp_path: Path):
    jpg = encoded("JPEG")
    path = tmp_path / "s" / "a.tar"
    path.parent.mkdir()
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        def add(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.size = kind, len(data)
            if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                info.linkname = "a.jpg"
            tar.addfile(info, io.BytesIO(data) if data else None)

        add("d/", kind=tarfile.DIRTYPE)  # `tar -cf` of a folder stores the folder first
        add("d/a.jpg", jpg)
        add("d/e/", kind=tarfile.DIRTYPE)
        for name, kind in [("s.jpg", tarfile.SYMTYPE), ("h.jpg", tarfile.LNKTYPE), ("c.jpg", tarfile.CHRTYPE),
                           ("b.jpg", tarfile.BLKTYPE), ("f.jpg", tarfile.FIFOTYPE)]:
            add(name, kind=kind)
        add("d/e/b.jpg", jpg)
    scan = scan_tar(path, max_pixels=1 << 24)
    assert [s.key for s in scan.samples] == ["d/a", "d/e/b"] and all(s.problem is None for s in scan.samples)
    assert scan.problems == [f"member {name!r} is not a regular file ({kind}): not read" for name, kind in [
        ("s.jpg", "symbolic link"), ("h.jpg", "hard link"), ("c.jpg", "device"), ("b.jpg", "device"),
        ("f.jpg", "FIFO")]]


def test_hidden_names_in_subfolders_are_skipped_and_a_member_without_extension_rejects_its_sample(tmp_path: Path):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("x/y/.hidden.jpg", jpg), ("x/y/a.jpg", jpg), ("x/y/a.cls", b"1"),
                                       ("x/.y/b.jpg", jpg), ("x/.y/b.cls", b"0"), ("noext", b"1"), ("c.jpg", jpg),
                                       ("c.cls", b"0")])
    result = adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    assert [(r["source"], r["reason"]) for r in result.rejected] == [
        ("a.tar", "member 'x/y/.hidden.jpg' has a hidden name (starts with '.'): skipped, as WebDataset and DALI "
                  "skip it"),
        ("a.tar:noext", "member 'noext': no extension after the key")]
    assert result.manifest.splits["train"].samples == 3  # a folder named .y holds no hidden name


def test_an_extension_twice_in_one_sample_rejects_it_with_its_reason(tmp_path: Path):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.cls", b"1"), ("a.jpg", jpg), ("a.cls", b"1"),
                                       ("b.jpg", jpg), ("b.cls", b"0")])
    scan = scan_tar(tmp_path / "s" / "a.tar", max_pixels=1 << 24)
    assert [(s.key, s.problem) for s in scan.samples] == [
        ("a", "member extension(s) ['cls', 'jpg'] appear twice in one sample"), ("b", None)]


def test_the_sizes_at_which_a_label_a_caption_and_an_image_stop_being_read(tmp_path: Path):
    jpg = encoded("JPEG", size=(48, 40))
    raw_tar(tmp_path / "l" / "a.tar", [("a.jpg", jpg), ("a.cls", b"1" * 300), ("b.jpg", jpg), ("b.cls", b"0")])
    assert scan_tar(tmp_path / "l" / "a.tar", max_pixels=1 << 24).samples[0].problem == (
        "a label member of 257 bytes or more (a label holds at most 256)")  # 257 bytes read, not the 300
    raw_tar(tmp_path / "c" / "a.tar", [("a.jpg", jpg), ("a.txt", b"a" * MAX_CAPTION_BYTES), ("b.jpg", jpg),
                                       ("b.txt", b"a" * (MAX_CAPTION_BYTES + 1))])
    scan = scan_tar(tmp_path / "c" / "a.tar", max_pixels=1 << 24)
    assert [s.caption for s in scan.samples] == [
        None, f"its caption member is {MAX_CAPTION_BYTES + 1} bytes, more than a caption has ({MAX_CAPTION_BYTES})"]
    raw_tar(tmp_path / "i" / "a.tar", [("a.jpg", jpg)])
    assert scan_tar(tmp_path / "i" / "a.tar", max_pixels=48 * 40).samples[0].problem is None  # exactly the limit
    assert scan_tar(tmp_path / "i" / "a.tar", max_pixels=48 * 40 - 1).samples[0].problem.startswith(
        "decompression bomb: 48x40 = 1920 pixels is over the limit of 1919")


def test_a_file_that_is_no_tar_and_a_tar_damaged_inside_its_first_sample_say_where(tmp_path: Path):
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "a.tar").write_bytes(b"\x01" * 2000)
    scan = scan_tar(tmp_path / "n" / "a.tar", max_pixels=1 << 24)
    assert scan.samples == [] and len(scan.problems) == 1
    assert scan.problems[0].startswith("damaged or truncated tar (no tar header at the start): ")
    jpg = encoded("JPEG", size=(200, 160))
    data = raw_tar(tmp_path / "d" / "a.tar", [("a.cls", b"1"), ("a.jpg", jpg), ("b.jpg", jpg)]).read_bytes()
    second = data.index(b"a.jpg")  # the header of the first sample's second member
    (tmp_path / "d" / "a.tar").write_bytes(data[:second + 512 + 100])  # cut inside that member's data
    scan = scan_tar(tmp_path / "d" / "a.tar", max_pixels=1 << 24)
    assert scan.problems == [f"damaged or truncated tar (after byte {second + 512 + 100}): unexpected end of data; "
                             "samples past that point are not indexed"]
    assert [(s.key, s.problem) for s in scan.samples] == [("a", "cut off by the damaged end of the tar")]


def test_a_damaged_header_inside_the_tar_is_reported_not_taken_for_its_end(tmp_path: Path):
    """tarfile (and so WebDataset) ends an archive at the first block after the start that is no header, without
    an error: the samples past it were lost without a word."""
    jpg = encoded("JPEG")
    data = raw_tar(tmp_path / "a.tar", [("a.cls", b"1"), ("a.jpg", jpg), ("b.cls", b"0"), ("b.jpg", jpg),
                                        ("c.cls", b"0"), ("c.jpg", jpg)]).read_bytes()
    bad = data.index(b"b.cls")  # sample b's first header
    (tmp_path / "a.tar").write_bytes(data[:bad] + b"\xff" * 512 + data[bad + 512:])
    scan = scan_tar(tmp_path / "a.tar", max_pixels=1 << 24)
    assert [(s.key, s.problem) for s in scan.samples] == [("a", None)]
    assert scan.problems == [f"damaged tar: tar readers (tarfile, WebDataset) end the archive at byte {bad}, where "
                             f"no tar header is, and data follows (from byte {bad}): a damaged header, or data "
                             "appended; samples past that point are not indexed"]
    zeros = data[:bad] + bytes(1024) + b"junk" + bytes(10)  # the archive's end, then data
    (tmp_path / "a.tar").write_bytes(zeros)
    assert scan_tar(tmp_path / "a.tar", max_pixels=1 << 24).problems[0].startswith(
        f"damaged tar: tar readers (tarfile, WebDataset) end the archive at byte {bad}, where no tar header is, and "
        f"data follows (from byte {bad + 1024}): ")
    (tmp_path / "a.tar").write_bytes(data[:bad] + bytes(20480))  # an end of zero blocks alone is the end
    assert scan_tar(tmp_path / "a.tar", max_pixels=1 << 24).problems == []


def test_a_saved_scan_of_a_sample_reads_back_as_it_was(tmp_path: Path):
    sample = SampleScan([Member("json", 512, 20, "k.json"), Member("jpg", 1024, 300, "k.jpg")], image="jpg",
                        image_format="jpeg", label="3", problem=None, caption="why", orientation=6,
                        label_member="json", label_field="class_id", unlabeled=None)
    assert SampleScan.from_dict(sample.to_dict()) == sample
    other = SampleScan([], unlabeled="its json member is not JSON")
    assert SampleScan.from_dict(other.to_dict()) == other


def test_a_sample_labelled_in_its_json_member_keeps_no_reason(tmp_path: Path):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "a.tar", [("a.jpg", jpg), ("a.json", b'{"cls": 4}'), ("b.jpg", jpg), ("b.json", b"{}")])
    a, b = scan_tar(tmp_path / "a.tar", max_pixels=1 << 24).samples
    assert (a.label, a.label_member, a.label_field, a.unlabeled) == ("4", "json", "cls", None)
    assert (b.label, b.label_member, b.unlabeled) == (
        None, None, "its json member has none of the fields label, cls, class (read for its label)")


def test_an_image_cut_inside_its_header_is_rejected_naming_the_error(tmp_path: Path):
    raw_tar(tmp_path / "a.tar", [("a.png", encoded("PNG")[:20]), ("b.jpg", encoded("JPEG"))])
    a, b = scan_tar(tmp_path / "a.tar", max_pixels=1 << 24).samples
    assert (a.problem, a.orientation, b.problem) == ("not a readable image: OSError: Truncated File Read", 1, None)
