"""A loader given relative paths keeps reading the same files after the process changes its working directory
(Hydra's `hydra.job.chdir`, a script that moves into its run folder to write checkpoints): the dataset's folder,
and a remote dataset's node cache, are fixed when the loader is made."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest_kinds import IMAGES, KINDS, kinds_data_fixture, make_loader  # noqa: F401  (the kinds_data fixture)
from conftest_remote import upload_folder
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)

import fastdata
from fastdata.dataset import open_dataset


def _relative(path: Path) -> Path:
    return Path(os.path.relpath(path, Path.cwd()))


@pytest.mark.parametrize("kind", KINDS)
def test_a_loader_of_relative_paths_reads_on_after_a_change_of_directory(kind, kinds_data, fortunes_tokens, tmp_path,
                                                                        monkeypatch) -> None:
    loader, ident = make_loader(kind, kinds_data, fortunes_tokens)
    want = [ident(b) for b in loader]
    monkeypatch.chdir(kinds_data["wds"].parent.parent)
    relative = {k: _relative(v) for k, v in kinds_data.items()}
    assert not relative["wds"].is_absolute()
    moved, _ = make_loader(kind, relative, _relative(fortunes_tokens))
    monkeypatch.chdir(tmp_path)
    assert [ident(b) for b in moved] == want


def test_the_dali_backend_reads_on_after_a_change_of_directory(kinds_data, tmp_path, monkeypatch) -> None:
    pytest.importorskip("nvidia.dali")
    options = {**IMAGES, "backend": "dali", "train": False}
    want = [y.tolist() for _, y in fastdata.loader(kinds_data["wds"], **options)]
    monkeypatch.chdir(kinds_data["wds"].parent)
    loader = fastdata.loader(f"{kinds_data['wds'].name}/train-*.tar", **options)
    monkeypatch.chdir(tmp_path)
    assert [y.tolist() for _, y in loader] == want


def test_a_view_names_its_folder_whole_and_errors_name_what_was_given(kinds_data, monkeypatch) -> None:
    monkeypatch.chdir(kinds_data["wds"].parent)
    view = open_dataset(kinds_data["wds"].name)
    assert view.root == kinds_data["wds"] and all(ref.path.is_absolute() and ref.index_path.is_absolute()
                                                  for ref in view.shards)
    with pytest.raises(fastdata.ManifestError, match="^'nowhere' does not exist; pass a dataset folder"):
        open_dataset("nowhere")


def test_a_relative_cache_dir_stays_where_it_was_given(kinds_data, s3, tmp_path, monkeypatch) -> None:
    url = upload_folder(kinds_data["wds"], f"{s3}/wd")
    options = {**IMAGES, "train": False}
    want = [y.tolist() for _, y in fastdata.loader(kinds_data["wds"], **options)]
    monkeypatch.chdir(tmp_path)
    loader = fastdata.loader(url, cache_dir="cache", **options)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert [y.tolist() for _, y in loader] == want
    assert list((tmp_path / "cache").rglob("*.tar")) and not (tmp_path / "elsewhere" / "cache").exists()
