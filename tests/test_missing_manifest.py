"""What a user is told when the folder or files they pass have no manifest.json (fastdata/dataset.py,
`missing_manifest_hint`): finish an interrupted conversion, adopt foreign shards, convert raw files, or pass the
folder fastdata wrote. The exact sentences are checked: they are the whole of what such a user sees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)

import fastdata
from fastdata.dataset import missing_manifest_hint
from fastdata.errors import ManifestError

GENERIC = "pass the folder `fastdata convert` or `fastdata index` wrote (the one holding manifest.json)"


def adopt_hint(what: str) -> str:
    return ("these look like WebDataset shards written by another tool: adopt them with "
            f"`fastdata index {what}` (or `fastdata index {what} DST/` to keep the shards read-only), "
            "then load that folder")


def convert_hint(folder: Path) -> str:
    return f"to pack raw files into shards run `fastdata convert {folder} DST/`, then load DST/"


def test_foreign_tar_shards_are_told_to_run_index_on_the_folder_or_on_the_pattern_given(tmp_path: Path):
    (tmp_path / "f-000000.tar").write_bytes(b"")
    assert missing_manifest_hint(tmp_path) == adopt_hint(str(tmp_path))
    pattern = str(tmp_path / "f-*.tar")
    assert missing_manifest_hint(tmp_path, [tmp_path / "f-000000.tar"], given=pattern) == adopt_hint(f"'{pattern}'")
    with pytest.raises(ManifestError) as info:
        fastdata.loader(pattern, batch_size=2)
    assert str(info.value) == f"no manifest.json beside {tmp_path / 'f-000000.tar'}: {adopt_hint(repr(pattern))}"


def test_foreign_tar_shards_named_in_a_list_are_told_to_run_index_on_their_folder(tmp_path: Path):
    """A list is no pattern to repeat in the advice: the folder is named."""
    shards = [tmp_path / f"f-00000{i}.tar" for i in range(2)]
    for shard in shards:
        shard.write_bytes(b"")
    with pytest.raises(ManifestError) as info:
        fastdata.loader([str(s) for s in shards], batch_size=2)
    assert str(info.value) == f"no manifest.json beside {shards[0]}: {adopt_hint(str(tmp_path))}"


def test_raw_files_or_class_folders_are_told_to_convert(tmp_path: Path):
    (tmp_path / "cat").mkdir()  # a class folder alone
    assert missing_manifest_hint(tmp_path) == convert_hint(tmp_path)
    (tmp_path / "cat").rmdir()
    (tmp_path / "a.JPG").write_bytes(b"")  # suffixes compare without case
    assert missing_manifest_hint(tmp_path) == convert_hint(tmp_path)
    with pytest.raises(ManifestError) as info:
        fastdata.loader(tmp_path, batch_size=2)
    assert str(info.value) == f"no manifest.json in {str(tmp_path)!r}: {convert_hint(tmp_path)}"


@pytest.mark.parametrize("name", ["pile-00.jsonl.zst", "docs.jsonl.gz", "c4.json.GZ", "train.csv", "dev.tsv",
                                  "photo.jpe"])
def test_a_folder_of_compressed_text_or_other_raw_files_is_told_to_convert(tmp_path: Path, name: str):
    (tmp_path / name).write_bytes(b"")
    assert missing_manifest_hint(tmp_path) == convert_hint(tmp_path)


def test_compressed_tars_are_told_to_be_decompressed_and_then_indexed(tmp_path: Path):
    """Before, `.tar.gz` shards were told to run `fastdata convert` (their last suffix is that of gzipped text)."""
    (tmp_path / "s-000000.tar.gz").write_bytes(b"")
    advice = ("s-000000.tar.gz is a compressed tar: DALI and fastdata read uncompressed tars, seeking to each sample: "
              "decompress (`gunzip -k`, `zstd -d`, `xz -dk`, `bunzip2 -k`, `lz4 -d`), then `fastdata index` their "
              "folder and load that")
    assert missing_manifest_hint(tmp_path) == advice
    with pytest.raises(ManifestError) as info:
        fastdata.loader(tmp_path / "s-000000.tar.gz", batch_size=2)
    assert str(info.value) == f"no manifest.json beside {tmp_path / 's-000000.tar.gz'}: {advice}"
    (tmp_path / "s-000001.tar.zst").write_bytes(b"")
    assert missing_manifest_hint(tmp_path).startswith("s-000000.tar.gz, s-000001.tar.zst are compressed tars: ")
    (tmp_path / "s-000003.tgz").write_bytes(b"")  # three: all named, nothing "more"
    assert missing_manifest_hint(tmp_path).startswith("s-000000.tar.gz, s-000001.tar.zst, s-000003.tgz are "
                                                      "compressed tars: DALI")
    (tmp_path / "s-000002.tar").write_bytes(b"")  # plain tars beside them: those are adopted (index records the rest)
    assert missing_manifest_hint(tmp_path) == adopt_hint(str(tmp_path))


def test_the_files_named_are_judged_rather_than_the_folder_they_lie_in(tmp_path: Path):
    (tmp_path / "f-000000.tar").write_bytes(b"")
    assert missing_manifest_hint(tmp_path, [tmp_path / "x.jpg"]) == convert_hint(tmp_path)
    assert missing_manifest_hint(tmp_path, [tmp_path / "notes.md"]) == GENERIC
    assert missing_manifest_hint(tmp_path, []) == GENERIC
    (tmp_path / "x.jpg").write_bytes(b"")  # and so they are when a loader is given them
    with pytest.raises(ManifestError) as info:
        fastdata.loader(str(tmp_path / "x.jpg"), batch_size=2)
    assert str(info.value) == f"no manifest.json beside {tmp_path / 'x.jpg'}: {convert_hint(tmp_path)}"


def test_an_unfinished_conversion_is_told_to_rerun_its_command(tmp_path: Path):
    (tmp_path / "f-000000.tar").write_bytes(b"")
    (tmp_path / ".partial").mkdir()  # what `fastdata convert` leaves until it finishes
    assert missing_manifest_hint(tmp_path) == (f"a conversion into {tmp_path} is unfinished: re-run the same "
                                               "`fastdata convert` command to finish it")


@pytest.mark.parametrize("left", ["scans", "remote"])
def test_an_unfinished_index_is_told_to_rerun_its_command(tmp_path: Path, left: str):
    """`fastdata index` keeps its scans in `.partial/scans` (local shards) or `.partial/remote` (downloaded ones)."""
    (tmp_path / ".partial" / left).mkdir(parents=True)
    assert missing_manifest_hint(tmp_path) == (f"an index into {tmp_path} is unfinished: re-run the same "
                                               "`fastdata index` command to finish it")


def test_a_folder_of_anything_else_gets_the_generic_advice(tmp_path: Path):
    assert missing_manifest_hint(tmp_path) == GENERIC  # empty
    (tmp_path / "README.md").write_text("hello")
    (tmp_path / "PARTIAL").mkdir()  # not the `.partial` marker: any folder reads as a class folder of raw files
    assert missing_manifest_hint(tmp_path) == convert_hint(tmp_path)
    (tmp_path / "PARTIAL").rmdir()
    assert missing_manifest_hint(tmp_path) == GENERIC


def test_only_the_first_2000_names_of_a_folder_are_looked_at(tmp_path: Path):
    for i in range(2000):
        (tmp_path / f"a{i:04d}.md").write_bytes(b"")
    (tmp_path / "z.tar").write_bytes(b"")  # 2001st in name order: a huge folder is not listed to its end
    assert missing_manifest_hint(tmp_path) == GENERIC
    os.remove(tmp_path / "a0000.md")
    assert missing_manifest_hint(tmp_path) == adopt_hint(str(tmp_path))


def test_a_folder_that_cannot_be_listed_gets_the_generic_advice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "f-000000.tar").write_bytes(b"")

    def refuse(path: object) -> list[str]:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "listdir", refuse)
    assert missing_manifest_hint(tmp_path) == GENERIC


def test_a_dataset_named_by_its_manifest_file_loads_and_the_cli_names_the_folder(fortunes_tokens: Path):
    """`fastdata.loader("tokens/manifest.json")` was refused as "['manifest.json'] are not listed in
    manifest.json"; it is the dataset of that folder. `fastdata info` and `verify` take the folder and say so."""
    from fastdata.cli import main as cli
    from fastdata.manifest import read_manifest

    by_manifest = fastdata.loader(fortunes_tokens / "manifest.json", max_tokens=2048, shuffle=False)
    by_folder = fastdata.loader(fortunes_tokens, max_tokens=2048, shuffle=False)
    assert [b["input_ids"].tolist() for b in by_manifest] == [b["input_ids"].tolist() for b in by_folder]
    path = str(fortunes_tokens / "manifest.json")
    with pytest.raises(ManifestError) as info:
        read_manifest(path)
    assert str(info.value) == f"{path!r} is the manifest; pass the folder that holds it, {str(fortunes_tokens)!r}"
    assert cli(["info", path]) == 2
