"""The `fastdata` command's surface: `--version`, a missing subcommand, an interrupted command, and the options of
`fastdata convert`, `info` and `verify` with the defaults docs/converting.md and the README give (parsed, not
run: what each run does with them is tested with the conversions)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import fastdata
from fastdata.cli import build_parser, main
from fastdata.cpus import usable_cpus


def test_version(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0 and capsys.readouterr().out == f"fastdata {fastdata.__version__}\n"


HEAVY = ("torch", "nvidia.dali", "kornia", "pydicom", "nibabel", "scipy", "ray", "boto3", "tokenizers", "highdicom")


def test_the_parser_is_built_without_the_heavy_libraries() -> None:
    """Every `fastdata` command builds the whole parser first; a library imported there (torch: 4 s on 2 cores) is
    paid by `fastdata --help`, by each converter's pool worker and by every command the docs walk runs."""
    probe = ("import sys\nfrom fastdata.cli import build_parser\nbuild_parser()\n"
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == []


def test_a_missing_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as caught:
        main([])
    err = capsys.readouterr().err
    assert caught.value.code == 2
    assert err.startswith("usage: fastdata [-h] [--version] [-v] COMMAND ...\n")
    assert err.endswith("fastdata: error: the following arguments are required: COMMAND\n")


def test_an_interrupted_command_exits_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    import fastdata.cli.info

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(fastdata.cli.info, "run", interrupted)
    assert main(["info", "somewhere"]) == 130
    captured = capsys.readouterr()
    assert captured.err == "interrupted\n" and captured.out == ""


def _options(*argv: str) -> dict:
    return vars(build_parser().parse_args(list(argv)))


CONVERT_DEFAULTS = {
    "command": "convert", "verbose": 0, "src": "SRC", "dst": "DST", "merge": None, "kind": "auto", "format": None,
    "shard_size": 256_000_000, "samples_per_shard": None, "seed": 0, "jobs": usable_cpus(), "strict": False,
    "num_parts": 1, "part": 0, "no_progress": False, "no_follow_symlinks": False, "private_report": None,
    "executor": "local", "address": None, "retries": 3, "task_cpus": 1.0, "task_memory": None, "staging": None,
}


def test_convert_defaults() -> None:
    options = _options("convert", "SRC", "DST")
    assert {k: options[k] for k in CONVERT_DEFAULTS} == CONVERT_DEFAULTS
    assert _options("convert")["src"] is None and _options("convert", "--merge", "D")["merge"] == "D"


def test_convert_options_parse_to_their_types() -> None:
    options = _options("convert", "S", "D", "--kind", "text", "--format", "arrow", "--shard-size", "64MiB",
                       "--samples-per-shard", "7", "--seed", "5", "-j", "3", "--strict", "--num-parts", "4",
                       "--part", "2", "--no-progress", "--no-follow-symlinks", "--private-report", "r.jsonl",
                       "--executor", "ray", "--address", "auto", "--retries", "1", "--task-cpus", "0.5",
                       "--task-memory", "2GB", "--staging", "st")
    expected = {"kind": "text", "format": "arrow", "shard_size": 64 * 2**20, "samples_per_shard": 7, "seed": 5,
                "jobs": 3, "strict": True, "num_parts": 4, "part": 2, "no_progress": True, "no_follow_symlinks": True,
                "private_report": "r.jsonl", "executor": "ray", "address": "auto", "retries": 1, "task_cpus": 0.5,
                "task_memory": 2 * 10**9, "staging": "st"}
    assert {k: options[k] for k in expected} == expected
    assert _options("convert", "S", "D", "--executor", "local")["executor"] == "local"
    assert _options("convert", "S", "D", "--kind", "auto")["kind"] == "auto"
    assert _options("convert", "S", "D", "--format", "wds")["format"] == "wds"


@pytest.mark.parametrize("argv", [["--executor", "slurm"], ["--kind", "audio"], ["--format", "parquet"],
                                  ["--retries", "x"], ["--shard-size", "lots"]])
def test_convert_refuses_values_outside_its_choices(argv: list[str], capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["convert", "S", "D", *argv])
    assert caught.value.code == 2 and f"argument {argv[0]}" in capsys.readouterr().err


def test_info_and_verify_options() -> None:
    assert _options("info", "ds") == {"command": "info", "verbose": 0, "dataset": "ds", "json": False,
                                      "rejected": False}
    assert _options("-vv", "info", "ds", "--json", "--rejected") == {"command": "info", "verbose": 2, "dataset": "ds",
                                                                     "json": True, "rejected": True}
    assert _options("verify", "ds") == {"command": "verify", "verbose": 0, "dataset": "ds", "decode": False,
                                        "no_progress": False}
    assert _options("verify", "ds", "--decode")["decode"] is True
    assert _options("verify", "ds", "--no-progress")["no_progress"] is True


@pytest.mark.parametrize(("argv", "level"), [([], "WARNING"), (["-v"], "INFO"), (["-vv"], "DEBUG"),
                                             (["-vvv"], "DEBUG")])
def test_verbosity_sets_the_log_level(monkeypatch: pytest.MonkeyPatch, argv: list[str], level: str) -> None:
    import logging

    import fastdata.cli.info

    configured = []
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: configured.append(kwargs))
    monkeypatch.setattr(fastdata.cli.info, "run", lambda args: 0)
    assert main([*argv, "info", "ds"]) == 0
    assert configured == [{"level": getattr(logging, level), "format": "%(levelname)s %(name)s: %(message)s"}]


@pytest.mark.parametrize(("error", "line"), [
    (FileNotFoundError(2, "No such file or directory", "/data/x.tar"),
     "fastdata info: error: No such file or directory (/data/x.tar)\n"),
    (OSError(28, "No space left on device"), "fastdata info: error: No space left on device\n"),
    (OSError("the disk went away"), "fastdata info: error: the disk went away\n"),
    (ValueError("--part 3 is not below --num-parts 2"), "fastdata info: error: --part 3 is not below --num-parts 2\n"),
])
def test_errors_are_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
                                        error: Exception, line: str) -> None:
    import fastdata.cli.info

    def fail(args):
        raise error

    monkeypatch.setattr(fastdata.cli.info, "run", fail)
    assert main(["info", "ds"]) == 2
    assert capsys.readouterr().err == line


def test_every_option_has_help_and_is_documented() -> None:
    import argparse
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    docs = "".join(p.read_text(encoding="utf-8") for p in sorted((root / "docs").glob("*.md")))
    docs += (root / "README.md").read_text(encoding="utf-8")
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert parser.description == "Pack datasets into shards and load them fast."
    missing = []
    for name, sub in [("fastdata", parser), *commands.choices.items()]:
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            if not action.help:
                missing.append(f"{name} {action.dest}: no help")
            missing += [f"{name} {opt}: not in README.md or docs/" for opt in action.option_strings
                        if opt.startswith("--") and not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", docs)]
    assert missing == []
    assert sorted(commands.choices) == ["bench", "convert", "doctor", "index", "info", "verify"]
    helps = {a.dest: a.help for a in commands._choices_actions}
    assert all(helps[name] for name in commands.choices)  # each command says what it does in `fastdata --help`


KIND_FLAGS = ["--short-side", "128", "--quality", "80", "--max-pixels", "1000", "--split", "val", "--keep-metadata",
              "--tokenizer", "tok.json", "--separator=---", "--text-field", "body", "--max-length", "64", "--overflow",
              "split", "--max-document-bytes", "1MiB", "--spacing", "1", "2", "3", "--keep-phi", "--salt", "s",
              "--allow-burned-in", "--max-voxels", "99", "--captions", "c.csv", "--image-field", "img", "--label-field",
              "fine_label", "--caption-field", "alt"]


def test_each_kind_takes_its_options_from_every_flag_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """`fastdata convert` hands the parsed flags to the kind's options_from_args (parsed, not run)."""
    from converters import get_kind
    from converters.dicom import DEFAULT_SALT_ENV
    from converters.dicom.options import DicomOptions
    from converters.image_text.process import ImageTextOptions
    from converters.images.encode import ImageOptions
    from converters.nifti import NiftiOptions
    from converters.text.options import TextOptions

    def options(kind: str, *argv: str):
        return get_kind(kind).options_from_args(build_parser().parse_args(["convert", "S", "D", *argv]))

    assert options("images", *KIND_FLAGS, "--labels", "l.csv") == ImageOptions(
        short_side=128, quality=80, max_pixels=1000, labels="l.csv", split="val", unlabeled=False, keep_metadata=True,
        image_field="img", label_field="fine_label")
    assert options("images", "--unlabeled") == ImageOptions(unlabeled=True)
    assert options("images", "--label-pattern", r"^(\w+)\.") == ImageOptions(label_pattern=r"^(\w+)\.")
    assert options("images", "--split-list", "test=t.txt", "--split-list", "val=v.txt") == ImageOptions(
        split_lists=("test=t.txt", "val=v.txt"))
    assert options("images", "--classes", "c.txt") == ImageOptions(classes="c.txt")
    assert options("images", "--val-fraction", "0.1") == ImageOptions(val_fraction=0.1)
    assert options("text", *KIND_FLAGS) == TextOptions(
        tokenizer="tok.json", per_line=False, separator="---", text_field="body", max_length=64, overflow="split",
        split="val", max_document_bytes=2**20, label_field="fine_label")
    assert options("text", "--per-line", "--tokenizer", "t.json").per_line is True
    assert options("text", "--unlabeled", "--tokenizer", "t.json").unlabeled is True
    assert options("dicom", *KIND_FLAGS) == DicomOptions(spacing=(1.0, 2.0, 3.0), salt="s", keep_phi=True, split="val",
                                                         allow_burned_in=True, max_voxels=99)
    assert options("dicom", "--structures", " GTV-1 ,Heart").structures == ("GTV-1", "Heart")
    assert options("dicom", "--suv", "--overlap", "later") == DicomOptions(suv=True, overlap="later")
    assert options("dicom", "--suv", "lbm").suv == "lbm" and options("dicom").suv is False
    assert options("dicom", "--channel", "ct, pt") == DicomOptions(channels=("CT", "PT"))  # the nifti kind's flag
    assert options("nifti", "--channel", "CTres, SUV").channel == "CTres,SUV"
    with pytest.raises(ValueError, match="dicom: --channel stacks the series of two or more modalities"):
        options("dicom", "--channel", "all")
    assert options("nifti", "--structures", "liver, spleen | milz", "--overlap", "later") == NiftiOptions(
        structures=("liver", "spleen|milz"), overlap="later")
    monkeypatch.delenv(DEFAULT_SALT_ENV, raising=False)
    assert options("dicom").salt == ""  # no --salt and no variable: the run draws one (docs/volumes.md)
    monkeypatch.setenv(DEFAULT_SALT_ENV, "from-env")
    assert options("dicom").salt == "from-env" and options("dicom", "--salt", "s").salt == "s"
    assert options("nifti", *KIND_FLAGS, "--channel", "flair", "--modality", "T2") == NiftiOptions(
        spacing=(1.0, 2.0, 3.0), salt="s", keep_phi=True, split="val", max_voxels=99, channel="flair", modality="T2")
    assert options("nifti", "--channel", "2").channel == 2 and options("nifti").channel is None
    assert options("nifti", "--channel", "CTres, SUV").channel == "CTres,SUV"
    assert options("nifti").salt == "from-env"  # the dicom kind's variable: the same pseudonyms for both kinds
    monkeypatch.delenv(DEFAULT_SALT_ENV)
    assert options("nifti").salt == ""
    assert options("image_text", *KIND_FLAGS) == ImageTextOptions(
        captions="c.csv", tokenizer="tok.json", max_length=64, short_side=128, quality=80, max_pixels=1000,
        split="val", keep_metadata=True, image_field="img", caption_field="alt")
