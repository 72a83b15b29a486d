"""`make demo`: convert the bundled real data (photos, fortunes text, pydicom's DICOM series, nibabel's MR brain),
verify and describe it, load it with every loader, print throughput, and end with a short side-by-side benchmark.

Run from the repository root inside the project environment (the Makefile does both).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "data"  # real data bundled in the repository (see its README)
OUT = ROOT / "demo-out"
CLASSES = ("indoor", "outdoor", "figures")
COPIES = 4  # each photo appears this many times (as distinct files) so the loaders run for a moment


def run_cli(*args: str) -> None:
    print(f"\n$ fastdata {' '.join(args)}", flush=True)
    subprocess.run([sys.executable, "-m", "fastdata", *args], check=True)


def build_photo_tree(dst: Path, copies: int = COPIES) -> Path:
    """Deal the real photos into train/val class folders (every 5th photo goes to val)."""
    photos = sorted((SAMPLES / "photos").glob("*.jpg"))
    if not photos:
        sys.exit(f"no photos found in {SAMPLES / 'photos'}")
    for copy in range(copies):
        for i, p in enumerate(photos):
            split = "val" if i % 5 == 4 else "train"
            target = dst / split / CLASSES[(i + copy) % len(CLASSES)] / f"{copy}_{p.name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
    return dst


def load_images(shards: Path) -> None:
    import torch

    import fastdata

    print("\n# loading the photos: 224x224 training batches, 2 epochs (the first warms up)")
    for backend in ("dali", "kornia"):
        loader = fastdata.loader(shards, split="train", batch_size=32, train=True, backend=backend,
                                 device="cpu", drop_last=False)
        for epoch in range(2):
            loader.set_epoch(epoch)
            start, n, last = time.perf_counter(), 0, None
            for batch in loader:
                last, n = batch[0], n + len(batch[1])
            rate = n / (time.perf_counter() - start)
        nhwc = last.is_contiguous(memory_format=torch.channels_last)
        print(f"  {backend:7s} {n} images/epoch  {rate:7.0f} images/s  batch {tuple(last.shape)} {last.dtype}, "
              f"channels_last={nhwc}")


def text_demo(out: Path) -> None:
    import fastdata

    src = out / "corpus"
    for f in sorted((SAMPLES / "text" / "fortunes").iterdir()):
        (src / f.name).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, src / f.name / f"{f.name}.txt")
    tokens = out / "tokens"
    fastdata_cmd = ("convert", str(src), str(tokens), "--tokenizer",
                    str(SAMPLES / "tokenizers" / "bert-base-uncased.json"), "--separator", "%")
    run_cli(*fastdata_cmd)
    run_cli("info", str(tokens))
    print("\n# token batches from the fortunes (max_tokens=1024, pad_to_multiple_of=8)")
    for kw in ({"bucketing": "none", "batch_size": 16}, {"bucketing": "length", "max_tokens": 1024},
               {"bucketing": "pack", "max_tokens": 1024, "block_size": 512}):
        loader = fastdata.loader(tokens, **kw)
        batches, real, slots = len(loader), 0, 0
        for batch in loader:
            real += int(batch["attention_mask"].sum())
            slots += batch["input_ids"].numel()
        print(f"  {kw['bucketing']:7s} {batches:4d} batches/epoch, padding {100 * (1 - real / slots):5.1f}% of tokens")


def dicom_demo(out: Path) -> None:
    from pydicom.data import get_testdata_file

    import fastdata

    # a study of two CT series: CT5N converts (a volume in Hounsfield units, so a CT window and -1024 HU padding
    # fit it); CT2N is rejected with its reason (slices of two orientations)
    study = Path(get_testdata_file("dicomdirtests/98892001/CT5N/2062", download=False)).parents[1]
    vols = out / "volumes"
    run_cli("convert", str(study), str(vols), "--kind", "dicom", "--spacing", "1.0", "-j", "1")
    run_cli("info", str(vols))
    loader = fastdata.loader(vols, batch_size=2, patches_per_volume=2, patch_size=(4, 8, 8), window=(-1000, 400),
                             device="cpu")
    patches, meta = next(iter(loader))
    print(f"\n# volume patches: {tuple(patches.shape)} {patches.dtype}, range "
          f"[{float(patches.min()):.2f}, {float(patches.max()):.2f}], {len(loader)} batches/epoch")


def nifti_demo(out: Path) -> None:
    from nifti_sample import brain_task

    import fastdata

    # nibabel's bundled real MR brain as a Decathlon task, with a mask: patches come with their masks in
    # meta["labels"], cut and augmented alike; MR values are no Hounsfield units, so pad with 0 and standardise
    task = brain_task(out / "Task01_Brain")
    brain = out / "brain"
    run_cli("convert", str(task), str(brain), "--spacing", "2.0", "-j", "1")
    loader = fastdata.loader(brain, batch_size=2, patches_per_volume=2, patch_size=16, pad_value=0.0, zscore=True,
                             sampling="foreground", device="cpu")
    patches, meta = next(iter(loader))
    labels = meta["labels"]
    print(f"\n# brain patches: {tuple(patches.shape)} {patches.dtype}, masks {tuple(labels.shape)} {labels.dtype}, "
          f"{100 * float(labels.float().mean()):.0f}% of voxels labelled {loader.classes[1]!r}")


def main(argv: list[str] | None = None) -> None:
    import argparse

    p = argparse.ArgumentParser(description="convert, verify, load and benchmark the bundled real data")
    p.add_argument("--out", type=Path, default=OUT, help="work folder (default demo-out/, replaced)")
    p.add_argument("--quick", action="store_true", help="each photo once and a tiny benchmark (the test suite's run)")
    args = p.parse_args(argv)
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    src = build_photo_tree(out / "photos", copies=1 if args.quick else COPIES)
    shards = out / "shards"
    run_cli("convert", str(src), str(shards), "--shard-size", "2MB")
    run_cli("verify", str(shards), "--decode")
    run_cli("info", str(shards))
    load_images(shards)
    text_demo(out)
    dicom_demo(out)
    nifti_demo(out)
    print("\n# side by side on the bundled photos (a short run; the full one: python benchmarks/images_per_sec.py)",
          flush=True)
    size = ["--images", "32", "--reps", "1", "--batch-size", "16"] if args.quick else \
        ["--images", "256", "--reps", "2", "--batch-size", "64"]
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "images_per_sec.py"), *size, "--variant", "train",
                    "--work-dir", str(out / "bench"), "--no-docs"], check=True)


if __name__ == "__main__":
    main()
