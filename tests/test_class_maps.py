"""Class names from the files datasets kept as arrays ship beside their images (converters/images/class_maps.py):
EMNIST's `emnist-NAME-mapping.txt`, Kuzushiji's `kmnist_classmap.csv` and `k49_classmap.csv`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import convert_images, converted_pixels, small_photos
from test_convert_array_files import write_mnist

from converters.images import class_maps
from converters.images.array_files import discover_array_files
from converters.images.table_columns import TableOptions
from converters.table_files import TableError
from fastdata.errors import ConvertError

K49 = ("あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほ"  # Kuzushiji-49's classes in id order
       "まみむめもやゆよらりるれろわゐゑをんゝ")
KMNIST = "おきすつなはまやれを"  # its 10
UPPER, LOWER = range(65, 91), range(97, 123)


def emnist_mapping(split: str) -> str:
    """The lines of EMNIST's `emnist-SPLIT-mapping.txt`: `ID CODE`, or `ID UPPER LOWER` for the letters."""
    if split == "letters":
        return "".join(f"{i} {u} {low}\n" for i, (u, low) in enumerate(zip(UPPER, LOWER, strict=True), 1))
    codes = list(range(48, 58))
    if split in ("byclass", "bymerge", "balanced"):
        codes += [*UPPER, *(LOWER if split == "byclass" else (ord(c) for c in "abdefghnqrt"))]
    return "".join(f"{i} {c}\n" for i, c in enumerate(codes))


def classmap(chars: str) -> str:
    """Kuzushiji's `*_classmap.csv`."""
    return "index,codepoint,char\n" + "".join(f"{i},U+{ord(c):04X},{c}\n" for i, c in enumerate(chars))


@pytest.mark.parametrize("split", ["balanced", "byclass", "bymerge", "digits", "letters", "mnist"])
def test_emnists_mappings_name_the_classes_as_torchvision_names_them(tmp_path: Path, split: str):
    datasets = pytest.importorskip("torchvision.datasets")
    (tmp_path / f"emnist-{split}-mapping.txt").write_text(emnist_mapping(split))
    names = class_maps.read(tmp_path / f"emnist-{split}-mapping.txt")
    assert list(names) == datasets.EMNIST.classes_split_dict[split]


def test_emnist_letters_convert_named_and_the_map_is_read_with_them(tmp_path: Path):
    raw = tmp_path / "EMNIST" / "raw"
    images = small_photos(5, 28, "L")
    write_mnist(raw, images.transpose(0, 2, 1), np.array([1, 26, 3, 4, 5], np.uint8), prefix="emnist-letters-",
                test=2)
    (raw / "emnist-letters-mapping.txt").write_text(emnist_mapping("letters"))
    m = convert_images(raw, tmp_path / "out").manifest
    assert m.classes == ("N/A", *"abcdefghijklmnopqrstuvwxyz")
    assert not m.rejected  # the map is read, not rejected
    got = converted_pixels(tmp_path / "out", "train")
    assert [got[f"emnist-letters-train-images-idx3-ubyte#{i}"][0] for i in range(3)] == [1, 26, 3]  # the ids kept
    found = discover_array_files(raw, TableOptions())
    mapping = raw / "emnist-letters-mapping.txt"
    assert ["train", "emnist-letters-mapping.txt", None, mapping.stat().st_size, 0] in found.identity  # a resume
    # sees it changed


def test_a_map_beside_emnists_six_datasets_goes_with_its_own(tmp_path: Path):
    raw = tmp_path / "raw"
    images = small_photos(5, 28, "L")
    write_mnist(raw, images, np.array([1, 2, 3, 4, 5], np.uint8), prefix="emnist-letters-", test=2, gz=False)
    write_mnist(raw, images, np.array([0, 9, 8, 7, 6], np.uint8), prefix="emnist-digits-", test=2, gz=False)
    for split in ("digits", "letters", "balanced"):
        (raw / f"emnist-{split}-mapping.txt").write_text(emnist_mapping(split))
    m = convert_images(raw, tmp_path / "out").manifest
    assert m.classes == tuple("0123456789")  # emnist-digits' map: the first dataset by name
    reasons = {r["source"]: r["reason"] for r in m.rejected}
    assert reasons.pop("emnist-balanced-mapping.txt") == ("a class map without the images whose classes it names "
                                                          "beside it: not read")
    assert sorted(reasons) == ["emnist-letters-mapping.txt", *(f"emnist-letters-{s}-{w}-ubyte"
                                                               for s in ("test", "train")
                                                               for w in ("images-idx3", "labels-idx1"))]
    assert set(reasons.values()) == {"a second dataset: emnist-digits-test-images-idx3-ubyte's is the one converted "
                                     "from this folder; convert each from a folder of its own (links to its files "
                                     "will do)"}


def test_kuzushiji_49s_npz_files_and_kmnists_idx_files_are_named_by_their_class_maps(tmp_path: Path):
    src = tmp_path / "k49"
    src.mkdir()
    images = small_photos(4, 28, "L")
    labels = np.array([48, 0, 12, 3], np.uint8)
    for split, part in (("train", slice(0, 3)), ("test", slice(3, 4))):
        np.savez_compressed(src / f"k49-{split}-imgs.npz", images[part])
        np.savez_compressed(src / f"k49-{split}-labels.npz", labels[part])
    (src / "k49_classmap.csv").write_text(classmap(K49), encoding="utf-8")
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == tuple(K49)
    assert m.classes[48] == "ゝ" and not m.rejected
    assert converted_pixels(tmp_path / "out", "train")["k49-train-imgs.npz#0"][0] == 48
    kmnist = write_mnist(tmp_path / "kmnist", images, np.array([0, 9, 4, 5], np.uint8), test=1, plain=False)
    (kmnist / "kmnist_classmap.csv").write_text(classmap(KMNIST), encoding="utf-8")  # the KMNIST site's MNIST format
    m = convert_images(kmnist, tmp_path / "out2").manifest
    assert m.classes == tuple(KMNIST) and not m.rejected
    assert converted_pixels(tmp_path / "out2", "test")["t10k-images-idx3-ubyte.gz#0"][0] == 5
    romaji = tmp_path / "romaji.csv"  # torchvision's KMNIST.classes, by `code,name` lines
    romaji.write_text("".join(f"{c},{r}\n" for c, r in zip(KMNIST, ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya",
                                                                      "re", "wo"], strict=True)), encoding="utf-8")
    m = convert_images(kmnist, tmp_path / "out3", classes=str(romaji)).manifest
    assert m.classes == ("o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo")


def test_one_hot_labels_take_the_maps_names_where_it_names_each_column(tmp_path: Path):
    src = tmp_path / "kmnist"
    src.mkdir()
    np.savez(src / "kmnist-train-imgs.npz", small_photos(3, 28, "L"))
    np.savez(src / "kmnist-train-labels.npz", np.eye(10, dtype=np.uint8)[[9, 0, 2]])
    (src / "kmnist_classmap.csv").write_text(classmap(KMNIST), encoding="utf-8")
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == tuple(KMNIST) and not m.rejected
    assert [converted_pixels(tmp_path / "out", "train")[f"kmnist-train-imgs.npz#{i}"][0] for i in range(3)] == [9, 0, 2]
    np.savez(src / "kmnist-train-labels.npz", np.eye(3, dtype=np.uint8)[[2, 0, 1]])
    found = discover_array_files(src, TableOptions())
    assert not any(found.splits.values())
    assert [(r.source, r.reason) for r in found.rejected] == [
        ("kmnist-train-imgs.npz", "kmnist_classmap.csv names 10 classes, and each label is a row of 3 flags")]


def test_a_label_past_the_map_is_a_rejection_of_its_image(tmp_path: Path):
    src = write_mnist(tmp_path / "raw", small_photos(4, 28, "L"), np.array([9, 10, 0, 1], np.uint8),
                      prefix="emnist-digits-", test=1, gz=False)
    (src / "emnist-digits-mapping.txt").write_text(emnist_mapping("digits"))
    m = convert_images(src, tmp_path / "out").manifest
    assert m.splits["train"].samples == 2
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("emnist-digits-train-images-idx3-ubyte#1",
         "label is no class of field 'emnist-digits-train-labels-idx1-ubyte' (10 classes): 10")]


@pytest.mark.parametrize(("name", "text", "error"), [
    ("emnist-digits-mapping.txt", "0 48\n1 48\n", r"the ids 0 and 1 are both named '0'"),
    ("emnist-digits-mapping.txt", "0 48\n0 49\n", r":2: the class id 0 again \(first at line 1\)"),
    ("emnist-digits-mapping.txt", "0 48\n3 49\n", r"the ids 1, 2 have no line"),
    ("emnist-digits-mapping.txt", "0 48\n1 x\n", r":2: not `ID CODE` or `ID UPPER LOWER`"),
    ("emnist-digits-mapping.txt", "0 48 49 50\n", r":1: not `ID CODE`"),
    ("emnist-digits-mapping.txt", "0 7\n", r":1: the code 7 is no character that prints"),
    ("emnist-digits-mapping.txt", "0 32\n", r":1: the code 32 is no character that prints"),
    ("emnist-digits-mapping.txt", "0 55296\n", r":1: the code 55296 is no character"),
    ("emnist-digits-mapping.txt", "0 1114112\n", r":1: the code 1114112 is no character"),
    ("emnist-digits-mapping.txt", "10000 48\n", r":1: the class id 10000 is over 9999"),
    ("emnist-digits-mapping.txt", "\n\n", r"names no class"),
    ("k49_classmap.csv", "id,code,char\n0,U+3042,あ\n", r"its first line is not the header index,codepoint,char"),
    ("k49_classmap.csv", "index,codepoint,char\n0,U+3042,い\n", r":2: the character 'い' is not U\+3042 \('あ'\)"),
    ("k49_classmap.csv", "index,codepoint,char\n0,3042,あ\n", r":2: not `index,U\+CODE,character`"),
    ("k49_classmap.csv", "index,codepoint,char\n0,U+3042\n", r":2: not `index,U\+CODE,character`"),
    ("k49_classmap.csv", "index,codepoint,char\n-1,U+3042,あ\n", r":2: not `index,U\+CODE,character`"),
    ("k49_classmap.csv", "index,codepoint,char\n0,U+3042,あ\n\n1,U+3042,あ\n", r"the ids 0 and 1 are both named"),
    ("k49_classmap.csv", "index,codepoint,char\n", r"names no class"),
])
def test_maps_that_would_name_a_class_wrong_are_refused_naming_the_line(tmp_path: Path, name: str, text: str,
                                                                        error: str):
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(TableError, match=f"^{name}" + error if error.startswith(":") else error):
        class_maps.read(tmp_path / name)


def test_a_bad_map_rejects_the_images_it_names_and_a_map_past_the_bound_is_refused_unread(tmp_path: Path,
                                                                                          monkeypatch):
    src = write_mnist(tmp_path / "raw", small_photos(3, 28, "L"), np.array([0, 1, 2], np.uint8),
                      prefix="emnist-mnist-", test=1, gz=False)
    (src / "emnist-mnist-mapping.txt").write_bytes(b"0 48\n1 \xff\n")
    with pytest.raises(ConvertError, match=r"holds no images input to convert \(2 file\(s\) rejected: 2 x "
                                           r"emnist-mnist-mapping.txt: cannot be read as UTF-8 text"):
        convert_images(src, tmp_path / "out")
    assert sorted(r.source for r in discover_array_files(src, TableOptions()).rejected) == [
        f"emnist-mnist-{s}-images-idx3-ubyte" for s in ("test", "train")]
    (src / "emnist-mnist-mapping.txt").write_text("0 48\n")
    monkeypatch.setattr(class_maps, "MAX_BYTES", 4)
    with pytest.raises(TableError, match="a class map of more than 4 bytes"):
        class_maps.read(src / "emnist-mnist-mapping.txt")
    monkeypatch.setattr(class_maps, "MAX_BYTES", 5)
    assert class_maps.read(src / "emnist-mnist-mapping.txt") == ("0",)


def test_which_files_are_maps_and_whose(tmp_path: Path):
    assert class_maps.family(Path("EMNIST-Letters-Mapping.TXT")) == "emnist-letters"
    assert class_maps.family(Path("k49_classmap.csv")) == "k49"
    for other in ("emnist-mapping.txt", "mapping.txt", "classmap.csv", "k49_classmap.csv.gz", "k-49_classmap.csv"):
        assert class_maps.family(Path(other)) is None
    images = tmp_path / "emnist-letters-train-images-idx3-ubyte"
    assert class_maps.for_idx(images, "emnist-letters-train") is None  # none beside it
    (tmp_path / "EMNIST-LETTERS-MAPPING.TXT").write_text("1 65 97\n")  # another letter case
    assert class_maps.for_idx(images, "emnist-letters-train") == tmp_path / "EMNIST-LETTERS-MAPPING.TXT"
    (tmp_path / "emnist-train-mapping.txt").write_text("0 48\n")
    assert class_maps.for_idx(images, "emnist-train") is None  # EMNIST's name without a dataset's: no map of its own
    (tmp_path / "kmnist_classmap.csv").write_text(classmap(KMNIST), encoding="utf-8")
    assert class_maps.for_idx(tmp_path / "t10k-images-idx3-ubyte", "t10k") == tmp_path / "kmnist_classmap.csv"
    assert class_maps.for_idx(tmp_path / "x", "qmnist-train") is None
    assert class_maps.for_arrays(tmp_path / "kmnist-train-imgs.npz", "kmnist") == tmp_path / "kmnist_classmap.csv"
    (tmp_path / "_classmap.csv").write_text(classmap(KMNIST), encoding="utf-8")
    assert class_maps.for_arrays(tmp_path / "train-imgs.npz", "") is None  # no dataset's name: no map
    (tmp_path / "sub_classmap.csv").mkdir()
    assert class_maps.for_arrays(tmp_path / "sub-train-imgs.npz", "sub") is None  # a folder is no map
    assert class_maps.read(tmp_path / "EMNIST-LETTERS-MAPPING.TXT") == ("N/A", "a")
    (tmp_path / "k49_classmap.csv").write_text(classmap("あい"), encoding="utf-8-sig")  # as Excel saves a CSV
    assert class_maps.read(tmp_path / "k49_classmap.csv") == ("あ", "い")


def test_a_folder_named_as_images_is_no_images_for_a_map(tmp_path: Path):
    src = write_mnist(tmp_path / "raw", small_photos(3, 28, "L"), np.array([0, 1, 2], np.uint8),
                      prefix="emnist-mnist-", test=1, gz=False)
    (src / "emnist-digits-mapping.txt").write_text(emnist_mapping("digits"))
    (src / "emnist-digits-train-images-idx3-ubyte").mkdir()
    found = discover_array_files(src, TableOptions())
    assert [(r.source, r.reason) for r in found.rejected] == [
        ("emnist-digits-mapping.txt", "a class map without the images whose classes it names beside it: not read")]


def test_what_a_map_may_hold_at_its_bounds_is_read(tmp_path: Path):
    def read(name: str, text: str) -> tuple[str, ...]:
        (tmp_path / name).write_text(text, encoding="utf-8")
        return class_maps.read(tmp_path / name)

    many = read("emnist-byclass-mapping.txt", "".join(f"{i} {0x4E00 + i}\n" for i in range(class_maps.MAX_ID + 1)))
    assert len(many) == 10000 and many[-1] == chr(0x4E00 + 9999)  # the largest id a map may give
    edges = (0x21, 0xD7FF, 0xE000, 0x10FFFF)  # the first code after the space, those around the surrogates, the last
    assert read("emnist-digits-mapping.txt", "".join(f"{i} {c}\n\n" for i, c in enumerate(edges))) == tuple(
        map(chr, edges))  # (a blank line between lines is passed over)
    assert read("kmnist_classmap.csv", "index,codepoint,char\n0,U+304a,お\n1,U+10FFFF,\U0010ffff\n") == (
        "お", "\U0010ffff")  # a code point in lower case, one of six digits


@pytest.mark.parametrize(("name", "text", "error"), [
    ("emnist-digits-mapping.txt", "0 57343\n", r":1: the code 57343 is no character"),  # the last surrogate
    ("k49_classmap.csv", "index,codepoint,char\n\u0661,U+3042,あ\n", r":2: not `index,U\+CODE,character`"),  # not
    # an ASCII digit
    ("k49_classmap.csv", "", r": its first line is not the header"),  # an empty file
    ("k49_classmap.csv", "index,codepoint,char\n0,U+3042,あ,\n", r":2: not `index,U\+CODE,character`"),
])
def test_more_maps_refused(tmp_path: Path, name: str, text: str, error: str):
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(TableError, match=f"^{name}{error}"):
        class_maps.read(tmp_path / name)
