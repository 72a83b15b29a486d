"""`fastdata convert SRC --dry-run`: what a conversion would take and reject, said before hours of work, with
nothing written (DST may be left out)."""

from __future__ import annotations

from pathlib import Path

from conftest_text import FORTUNES, TOKENIZER
from helpers import make_image_tree

from fastdata.cli import main


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_a_dry_run_says_the_layout_splits_classes_and_rejections_and_writes_nothing(tmp_path, capsys):
    src = make_image_tree(tmp_path / "src", classes=2, per_class=3, splits=("train",))
    make_image_tree(tmp_path / "src", classes=1, per_class=2, splits=("val",))
    (src / "val" / "loose.jpg").write_bytes(b"x")
    (src / "train" / "class_1" / "notes.txt").write_text("x")
    assert main(["convert", str(src), str(tmp_path / "out"), "--dry-run"]) == 0
    assert _lines(capsys) == [
        f"dry run, nothing written. {src}: kind images, layout split/class",
        "  train            6 inputs",
        "  val              2 inputs",
        "  classes (2): class_0, class_1",
        "  inputs per class: 3 (class_1) to 5 (class_0)",
        "  rejected 2 input(s):",
        "         1  unsupported extension '.txt'; allowed",
        "         1  not inside a class folder"]
    assert not (tmp_path / "out").exists()
    assert main(["convert", str(src), "--dry-run", "--strict"]) == 1  # no DST needed; --strict counts rejections
    assert main(["convert", str(src), "--dry-run", "--split-list", "val=missing.txt"]) == 2  # options act as they do
    capsys.readouterr()
    assert main(["convert", str(src), "--dry-run", "--jobs", "0"]) == 2
    assert capsys.readouterr().err == "fastdata convert: error: --jobs must be >= 1, got 0\n"


def test_many_classes_are_named_ten_and_counted(tmp_path, capsys):
    src = make_image_tree(tmp_path / "src", classes=12, per_class=1)
    assert main(["convert", str(src), "--dry-run"]) == 0
    out = _lines(capsys)
    assert out[2] == ("  classes (12): class_0, class_1, class_10, class_11, class_2, class_3, class_4, class_5, "
                      "class_6, class_7 and 2 more")
    assert out[3] == "  inputs per class: 1 (class_0) to 1 (class_9)"


def test_a_source_with_nothing_to_convert_is_the_same_error_as_a_conversion(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("x")
    assert main(["convert", str(tmp_path / "src"), "--dry-run", "--kind", "images"]) == 2
    assert "holds no images input to convert (1 file(s) rejected" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "src"), "--kind", "images"]) == 2  # and without DST or --dry-run: usage
    assert "usage: fastdata convert SRC DST" in capsys.readouterr().err


def test_a_text_source_dry_run(tmp_path, capsys):
    src = tmp_path / "corpus"
    for f in sorted(FORTUNES.iterdir())[:2]:
        (src / f.name).mkdir(parents=True)
        (src / f.name / f"{f.name}.txt").write_bytes(f.read_bytes())
    assert main(["convert", str(src), "--dry-run", "--tokenizer", str(TOKENIZER), "--separator", "%"]) == 0
    out = _lines(capsys)
    assert out[0] == f"dry run, nothing written. {src}: kind text, layout class"
    assert out[2].startswith("  classes (2): ") and not any(Path(tmp_path).glob("*tokens*"))


def test_a_nifti_task_dry_run_names_the_mask_labels_without_counting_inputs_per_class(tmp_path, capsys):
    import pytest

    pytest.importorskip("nibabel")
    from conftest_nifti import decathlon

    decathlon(tmp_path / "Task03_Liver")
    assert main(["convert", str(tmp_path / "Task03_Liver"), "--dry-run"]) == 0
    assert _lines(capsys) == [f"dry run, nothing written. {tmp_path / 'Task03_Liver'}: kind nifti, layout decathlon",
                              "  test             1 inputs", "  train            3 inputs",
                              "  classes (3): background, liver, cancer"]


def test_class_names_holding_commas_are_quoted_so_each_ends_visibly(tmp_path, capsys):
    src = make_image_tree(tmp_path / "src", classes=2, per_class=1)
    (src / "class_0").rename(src / "tench, Tinca tinca")
    assert main(["convert", str(src), "--dry-run"]) == 0
    assert _lines(capsys)[2] == "  classes (2): 'class_1', 'tench, Tinca tinca'"
