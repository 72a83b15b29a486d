"""`fastdata bench`: argument parsing and one tiny end-to-end run on CPU (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree

from fastdata.cli import build_parser, main
from fastdata.cli.bench import options_from_args


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bench")
    src = make_image_tree(root / "src", classes=2, per_class=6, size=(48, 40))
    convert_images(src, root / "ds", samples_per_shard=4)
    return root / "ds"


def test_options_from_args_single_values_are_fixed_settings():
    args = build_parser().parse_args(["bench", "ds", "--batch-size", "64", "--backend", "kornia", "--eval",
                                      "--threads", "3", "--prefetch", "1,2", "--no-channels-last"])
    opts = options_from_args(args)
    assert opts == {"batch_size": 64, "train": False, "image_size": 224, "dtype": "float32", "channels_last": False,
                    "backend": "kornia", "num_threads": 3}
    assert args.prefetch == [1, 2]


@pytest.mark.parametrize("bad", ["0", "a,b", ""])
def test_bad_thread_lists_are_refused(bad, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "ds", "--threads", bad])
    assert "--threads" in capsys.readouterr().err


def test_bench_runs_and_prints_the_best_settings(dataset, capsys):
    rc = main(["bench", str(dataset), "--batch-size", "4", "--image-size", "32", "--backend", "kornia",
               "--device", "cpu", "--threads", "1,2", "--prefetch", "1,2", "--batches", "2", "--warmup", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "(as given)" in out and "best: num_threads=" in out
    call = out.split("use it in Python:\n")[1].splitlines()[0].strip()
    assert call.startswith(f"fastdata.loader({str(dataset)!r}, batch_size=4") and "backend='kornia'" in call
    assert "fastdata bench " in out.split("re-check it:\n")[1]


def test_bench_json_without_search(dataset, capsys):
    rc = main(["bench", str(dataset), "--batch-size", "4", "--image-size", "32", "--backend", "kornia",
               "--device", "cpu", "--no-search", "--batches", "2", "--warmup", "0", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(data["measurements"]) == 1
    assert data["measurements"][0]["images_per_s"] > 0
    assert data["best"]["backend"] == "kornia"


def test_bench_reports_a_bad_dataset_clearly(tmp_path, capsys):
    rc = main(["bench", str(tmp_path / "missing"), "--backend", "kornia", "--device", "cpu", "--no-search"])
    assert rc == 2 and "fastdata bench: error:" in capsys.readouterr().err


def test_bench_identity_hooks_measures_both_and_prints_the_ratio(dataset, capsys, monkeypatch):
    from fastdata.cli import bench as bench_cli
    from fastdata.perf import loader_bench

    seen, warmups = [], []
    real = loader_bench.measure

    def spy(source, *, options, **kw):
        seen.append(options.get("augment") is not None)
        warmups.append(kw["warmup"])
        return real(source, options=options, **kw)

    monkeypatch.setattr(loader_bench, "measure", spy)
    rc = main(["bench", str(dataset), "--batch-size", "4", "--image-size", "32", "--backend", "kornia",
               "--device", "cpu", "--threads", "1", "--prefetch", "1", "--batches", "2", "--warmup", "1",
               "--identity-hooks"])
    out = capsys.readouterr().out
    assert rc == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("identity hooks: "))
    with_hooks, plain = float(line.split()[2]), float(line.split()[5])
    ratio = float(line.split("(")[1].split("x")[0])
    assert with_hooks > 0 and plain > 0 and abs(ratio - with_hooks / plain) < 0.001  # printed values are rounded
    assert seen[-8:] == [False, True, True, False] * 2  # four of each, the first of a pair changing every time
    assert warmups[:-8] == [1] and warmups[-8:] == [4] * 8  # --warmup 1, but both queues of prefetch 1 filled
    assert "one more pass" not in out  # kornia: no note on DALI's normalisation
    assert bench_cli.hooks_warmup(10, 2) == 10 and bench_cli.hooks_warmup(2, 3) == 8
    assert bench_cli._unchanged_pair(1, 2) == (1, 2) and bench_cli._unchanged(3) == 3


def test_bench_of_eval_speed_names_the_default_split_and_warns_of_nothing(tmp_path, capsys, caplog):
    """`fastdata bench DS --eval` measures speed, of whichever split: it names the default one, rather than have
    every trial's loader warn that an evaluation reads the train split (fastdata/loader.py)."""
    make_image_tree(tmp_path / "src", classes=2, per_class=4, size=(48, 40), splits=("train", "val"))
    convert_images(tmp_path / "src", tmp_path / "ds")
    with caplog.at_level("WARNING", logger="fastdata.loader"):
        rc = main(["bench", str(tmp_path / "ds"), "--eval", "--batch-size", "2", "--image-size", "16", "--backend",
                   "kornia", "--device", "cpu", "--no-search", "--batches", "1", "--warmup", "0"])
    assert rc == 0 and not [r for r in caplog.records if r.name == "fastdata.loader"]
    call = capsys.readouterr().out.split("use it in Python:\n")[1].splitlines()[0]
    assert "train=False" in call and "split='train'" in call
