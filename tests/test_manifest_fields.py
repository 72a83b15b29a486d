"""Every field of a manifest, checked by `Manifest.from_dict` before anything uses it: what it accepts at the
edges, and for what it refuses, a message naming the file, the field, the value as read and what is allowed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fastdata.errors import ManifestError
from fastdata.manifest import Manifest, ShardInfo, SplitInfo, plain_file_name

WHERE = "ds/manifest.json"
SHA = "ab" * 32
REMEDY = "the manifest was edited or damaged: restore it or re-run the command that wrote it"


def valid() -> dict[str, Any]:
    shard = ShardInfo(name="train-000000.tar", samples=2, bytes=4096, sha256=SHA, index="train-000000.idx",
                      index_sha256=SHA)
    extra = {"members": ["jpg", "cls"], "image_members": ["jpg"], "label_member": "cls", "layout": "wds",
             "tokenizer": {"pad_id": 0, "bos_id": 1, "eos_id": 2, "vocab_size": 30522, "ids_dtype": "uint16"}}
    return Manifest(kind="images", shard_format="wds", classes=("a", "b"),
                    splits={"train": SplitInfo(name="train", shards=(shard,), class_counts=(1, 1))},
                    preprocessing={}, extra=extra).to_dict()


def read(change) -> Manifest:
    d = valid()
    change(d)
    return Manifest.from_dict(d, where=WHERE)


def refusal(change) -> str:
    with pytest.raises(ManifestError) as info:
        read(change)
    return str(info.value)


def expect(field: str, value: object, allowed: str) -> str:
    return f"{WHERE}: {field} is {str(value)[:80]!r}, it must be {allowed}; {REMEDY}"


def shard(d: dict) -> dict:
    return d["splits"]["train"]["shards"][0]


def test_the_valid_manifest_reads_back_as_written():
    m = Manifest.from_dict(copy.deepcopy(valid()), where=WHERE)
    assert m.to_dict() == valid()


@pytest.mark.parametrize("name", ["a", "X-000.tar", "..a", "a..", "n" * 255, "é.tar"])
def test_plain_file_names_at_the_edges_are_accepted(name):
    assert plain_file_name(name)
    assert read(lambda d: shard(d).__setitem__("name", name)).splits["train"].shards[0].name == name


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", "a\0b", " a", "a ", "a\n", "n" * 256, 7, None])
def test_names_that_could_leave_the_dataset_are_refused(name):
    assert not plain_file_name(name)
    assert refusal(lambda d: shard(d).__setitem__("name", name)) == expect(
        "shard name in split 'train'", name, "a plain file name (no folder, no '..')")
    if name is not None:  # an index of None is a shard without one
        assert refusal(lambda d: shard(d).__setitem__("index", name)) == expect(
            "index of shard train-000000.tar", name, "a plain file name (no folder, no '..')")


def test_a_shard_that_is_not_an_object_is_refused_naming_its_split():
    assert refusal(lambda d: d["splits"]["train"]["shards"].__setitem__(0, ["x"])) == expect(
        "a shard of split 'train'", ["x"], "an object")


@pytest.mark.parametrize(("field", "value"), [("sha256", "AB" * 32), ("sha256", "ab" * 31), ("sha256", None),
                                              ("index_sha256", "g" * 64), ("index_sha256", 5)])
def test_digests_are_64_lower_case_hex_digits(field, value):
    assert refusal(lambda d: shard(d).__setitem__(field, value)) == expect(
        f"{field} of shard train-000000.tar", value, "64 lower-case hex digits")


def test_a_shard_without_an_index_needs_no_index_digest():
    def drop(d):
        del shard(d)["index"]
        shard(d)["index_sha256"] = "not hex"
    info = read(drop).splits["train"].shards[0]
    assert info.index is None and info.index_sha256 is None


def test_more_samples_than_the_shard_bytes_can_hold_are_refused():
    assert read(lambda d: shard(d).update(samples=256, bytes=4096)).splits["train"].samples == 256
    assert refusal(lambda d: shard(d).update(samples=257, bytes=4096)) == expect(
        "samples of shard train-000000.tar", 257, "at most one per 16 bytes of the shard's 4096 bytes")


@pytest.mark.parametrize("key", ["members", "image_members", "columns", "phi_removed"])
@pytest.mark.parametrize("value", ["jpg", ["jpg", 3], {"a": 1}])
def test_name_lists_in_extra_must_be_lists_of_strings(key, value):
    assert refusal(lambda d: d["extra"].__setitem__(key, value)) == expect(
        f"extra.{key}", value, "a list of names (strings)")


@pytest.mark.parametrize("key", ["label_member", "layout", "text_member", "ids_member"])
def test_single_names_in_extra_must_be_strings(key):
    assert refusal(lambda d: d["extra"].__setitem__(key, ["cls"])) == expect(f"extra.{key}", ["cls"], "a string")


def test_the_tokenizer_must_be_an_object():
    assert refusal(lambda d: d["extra"].__setitem__("tokenizer", "bert")) == expect(
        "extra.tokenizer", "bert", "an object describing the tokenizer")


@pytest.mark.parametrize(("key", "value", "minimum"), [("pad_id", -1, 0), ("bos_id", "1", 0), ("eos_id", 1.5, 0),
                                                      ("vocab_size", 0, 1), ("vocab_size", True, 1)])
def test_token_ids_and_the_vocabulary_size_are_counts(key, value, minimum):
    assert refusal(lambda d: d["extra"]["tokenizer"].__setitem__(key, value)) == expect(
        f"extra.tokenizer.{key}", value, f"an integer >= {minimum}")


@pytest.mark.parametrize("dtype", [None, "uint16", "int32"])
def test_ids_are_stored_as_uint16_or_int32(dtype):
    assert read(lambda d: d["extra"]["tokenizer"].__setitem__("ids_dtype", dtype)).extra["tokenizer"]["ids_dtype"] \
        == dtype
    assert refusal(lambda d: d["extra"]["tokenizer"].__setitem__("ids_dtype", "float32")) == expect(
        "extra.tokenizer.ids_dtype", "float32", "'uint16' or 'int32'")


def test_an_unknown_split_names_the_splits_there_are():
    def add_val(d):
        d["splits"]["val"] = copy.deepcopy(d["splits"]["train"])
        d["splits"]["val"]["shards"][0].update(name="val-0.tar", index="val-0.idx")

    m = read(add_val)
    with pytest.raises(ManifestError) as info:
        m.split("test")
    assert str(info.value) == "unknown split 'test'; this dataset has splits ['train', 'val']"


def test_unknown_shard_fields_are_named():
    assert refusal(lambda d: shard(d).update(zz=1, aa=2)) == expect(
        "shard train-000000.tar", ["aa", "zz"], "free of unknown fields")


@pytest.mark.parametrize(("field", "value", "minimum"), [("samples", 0, 1), ("bytes", -1, 0), ("bytes", "4096", 0)])
def test_sample_and_byte_counts_are_integers(field, value, minimum):
    assert refusal(lambda d: shard(d).__setitem__(field, value)) == expect(
        f"{field} of shard train-000000.tar", value, f"an integer >= {minimum}")


def test_splits_must_be_a_non_empty_object():
    assert refusal(lambda d: d.__setitem__("splits", {})) == expect("splits", {}, "at least one split")
    assert refusal(lambda d: d.__setitem__("splits", [])) == expect("splits", [], "an object")


@pytest.mark.parametrize("name", ["../x", "a b", "", "tr/ain"])
def test_a_split_name_is_letters_digits_underscore_or_dash(name):
    assert refusal(lambda d: d["splits"].__setitem__(name, d["splits"].pop("train"))) == expect(
        "split name", name, "letters, digits, '_' or '-'")


@pytest.mark.parametrize("value", [[], {"shards": "x"}, {"samples": 2}])
def test_a_split_is_an_object_with_a_list_of_shards(value):
    assert refusal(lambda d: d["splits"].__setitem__("train", value)) == expect(
        "split 'train'", value, "an object with a list of shards")


@pytest.mark.parametrize("counts", [[1, -1], [True, 1], [1.0], "1,1", None])
def test_class_counts_are_integers_of_zero_or_more(counts):
    assert refusal(lambda d: d["splits"]["train"].__setitem__("class_counts", counts)) == expect(
        "class_counts of split 'train'", counts, "a list of integers >= 0")


def test_a_split_keeps_its_name_counts_and_stats_and_may_leave_them_out():
    m = read(lambda d: d["splits"]["train"].update(class_counts=[0, 2], stats={"mean_bytes": 5}))
    split = m.split("train")
    assert (split.name, split.class_counts, split.stats) == ("train", (0, 2), {"mean_bytes": 5})

    def bare(d):
        del d["splits"]["train"]["class_counts"], d["splits"]["train"]["stats"]
    split = read(bare).split("train")
    assert (split.class_counts, split.stats) == ((), {})
    assert refusal(lambda d: d["splits"]["train"].__setitem__("stats", [1])) == expect(
        "stats of split 'train'", [1], "an object")


@pytest.mark.parametrize("root", ["", 3, "a\0b"])
def test_shard_root_is_a_folder_path(root):
    assert refusal(lambda d: d.__setitem__("shard_root", root)) == expect(
        "shard_root", root, "a folder path (absolute or relative to the manifest)")
    assert read(lambda d: d.__setitem__("shard_root", "../shards")).shard_root == "../shards"


@pytest.mark.parametrize("kind", ["", None, 3])
def test_kind_is_a_name(kind):
    assert refusal(lambda d: d.__setitem__("kind", kind)) == expect(
        "kind", kind, "a kind name such as 'images', 'text' or 'dicom'")


def test_a_file_listed_twice_is_named_whether_shard_or_index():
    assert refusal(lambda d: shard(d).__setitem__("index", "train-000000.tar")) == (
        f"{WHERE} lists the file(s) ['train-000000.tar'] more than once; each shard and index file belongs to one "
        "place of one split")

    def six_twice(d):
        shards = d["splits"]["train"]["shards"]
        shards.extend(dict(shards[0], name=f"s{i}.tar", index=f"s{i}.idx") for i in range(6))
        shards.extend(dict(shards[0], name=f"t{i}.tar", index=f"s{i}.idx") for i in range(6))
    assert f"{['s0.idx', 's1.idx', 's2.idx', 's3.idx', 's4.idx']} more than once" in refusal(six_twice)


@pytest.mark.parametrize("data", [[], {"format": "other"}, {"splits": {}}])
def test_what_is_not_a_fastdata_manifest_says_so(data):
    with pytest.raises(ManifestError) as info:
        Manifest.from_dict(data, where=WHERE)
    assert str(info.value) == f'{WHERE} is not a fastdata manifest (missing "format": "fastdata")'


def test_another_format_version_says_which_and_what_to_do():
    with pytest.raises(ManifestError) as info:
        Manifest.from_dict(dict(valid(), format_version=2), where=WHERE)
    assert str(info.value) == (f"{WHERE} has format_version 2, this fastdata reads version 1; re-run `fastdata "
                               "convert` with this version, or install the fastdata that wrote it")


def test_preprocessing_is_required_and_extra_may_be_left_out():
    assert refusal(lambda d: d.pop("preprocessing")) == expect("preprocessing", None, "an object")
    assert refusal(lambda d: d.__setitem__("extra", [])) == expect("extra", [], "an object")
    assert read(lambda d: d.pop("extra")).extra == {}


def test_optional_fields_left_out_read_as_empty_and_given_ones_are_kept():
    def bare(d):
        for key in ("fingerprint", "tool_version", "rejected"):
            d.pop(key)
    m = read(bare)
    assert (m.fingerprint, m.tool_version, m.rejected) == ("", "", ())
    record = {"split": "train", "source": "a/b.jpg", "reason": "corrupt JPEG"}
    m = read(lambda d: d.update(fingerprint="f00d", tool_version="0.1.0", rejected=[record]))
    assert (m.fingerprint, m.tool_version, m.rejected) == ("f00d", "0.1.0", (record,))


@pytest.mark.parametrize(("field", "value", "allowed"), [
    ("classes", "a,b", "a list of class names (strings)"), ("classes", ["a", 1], "a list of class names (strings)"),
    ("rejected", {"split": "train"}, "a list of {split, source, reason} records"),
    ("rejected", ["corrupt"], "a list of {split, source, reason} records"),
    ("shard_format", "zip", "one of ['wds', 'arrow']"), ("shard_format", None, "one of ['wds', 'arrow']"),
])
def test_top_level_fields_of_the_wrong_kind_are_named(field, value, allowed):
    assert refusal(lambda d: d.__setitem__(field, value)) == expect(field, value, allowed)


def test_two_shards_of_one_name_are_refused_even_with_their_own_indexes():
    def twice(d):
        shards = d["splits"]["train"]["shards"]
        shards.append(dict(shards[0], index="other.idx"))
    assert "lists the file(s) ['train-000000.tar'] more than once" in refusal(twice)


def test_a_manifest_whose_structure_breaks_the_checks_is_malformed_not_a_crash():
    def number_key(d):
        d["splits"][1] = d["splits"].pop("train")  # only a dict built in Python can have a non-string key
    assert refusal(number_key).startswith(f"{WHERE} is malformed: TypeError(")


def test_a_manifest_read_from_no_file_is_called_the_manifest():
    with pytest.raises(ManifestError, match='^manifest is not a fastdata manifest'):
        Manifest.from_dict({})
