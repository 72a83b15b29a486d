"""3D patches per second, side by side: the volume loader against the loop a user would write.

    python benchmarks/volumes.py                                  # synthetic CT series, default sizes
    python benchmarks/volumes.py --series 4 --slices 48 --size 96 --patch 32 --batches 4 --reps 2  # short

Both candidates produce the same batches: [B, 1, P, P, P] float32 patches cut at random from CT
volumes resampled to --spacing, windowed to [0, 1], with random flips on each axis and a random
90-degree rotation in-plane, one patch per volume read.
- baseline: a torch Dataset that reads the series with pydicom on every access, sorts slices by
  position, applies slope/intercept, resamples with scipy.ndimage.zoom (order 1) and augments in
  numpy, inside a DataLoader with --workers processes;
- fastdata: the series converted once (`fastdata convert --kind dicom`, timed separately), then
  `fastdata.loader(...)` with --workers reader threads, augmentation on the device.
A third row, fastdata-full, adds the default affine, random-crop and elastic augmentation.
Results: JSON rows and the volumes section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks.common import (  # noqa: E402
    DOCS,
    environment,
    environment_markdown,
    interleaved,
    publish,
    summarize,
    write_json,
)

WINDOW = (-1000.0, 400.0)
CANDIDATES = ("baseline", "fastdata", "fastdata-full")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    cores = os.cpu_count() or 1
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work-dir", type=Path, default=Path("bench-out/volumes"))
    p.add_argument("--series", type=int, default=8, help="synthetic CT series (default 8)")
    p.add_argument("--slices", type=int, default=96, help="slices per series (default 96)")
    p.add_argument("--size", type=int, default=192, help="rows = columns per slice (default 192)")
    p.add_argument("--spacing", type=float, default=1.0, help="isotropic target spacing in mm (default 1.0)")
    p.add_argument("--patch", type=int, default=64, help="patch edge in voxels (default 64)")
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--batches", type=int, default=8, help="timed batches per repetition (default 8)")
    p.add_argument("--reps", type=int, default=3, help="timed repetitions per candidate (default 3)")
    p.add_argument("--workers", type=int, default=cores, help=f"DataLoader workers / reader threads ({cores})")
    p.add_argument("--device", default="cpu", help="device of the fastdata batches (cpu or cuda)")
    p.add_argument("--candidates", default=",".join(CANDIDATES), help=f"comma list from {list(CANDIDATES)}")
    p.add_argument("--json", type=Path, help="results file (default WORK_DIR/volumes.json)")
    p.add_argument("--docs", type=Path, default=DOCS, help="markdown file whose volumes section is rewritten")
    p.add_argument("--no-docs", action="store_true", help="do not touch the markdown file")
    args = p.parse_args(argv)
    args.candidates = [c.strip() for c in args.candidates.split(",") if c.strip()]
    if not args.candidates or set(args.candidates) - set(CANDIDATES):
        p.error(f"--candidates takes names from {list(CANDIDATES)}, got {args.candidates}")
    for name in ("series", "slices", "size", "patch", "batch_size", "batches", "reps", "workers"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


# ---- data ------------------------------------------------------------------------------------------
def write_series(folder: Path, index: int, *, slices: int, size: int) -> list[Path]:
    """One CT series: body ellipse of soft tissue with a few bright spheres, 2.5 mm slices, 0.7 mm pixels."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, generate_uid

    rng = np.random.default_rng(index)
    z, y, x = np.ogrid[:slices, :size, :size]
    body = ((y - size / 2) / (0.45 * size)) ** 2 + ((x - size / 2) / (0.4 * size)) ** 2 <= 1
    hu = np.where(body, 40, -1000).astype(np.float32) + rng.normal(0, 20, (slices, size, size)).astype(np.float32)
    for _ in range(4):
        c = rng.uniform(0.25, 0.75, 3) * (slices, size, size)
        hu[((z - c[0]) * 3.5) ** 2 + (y - c[1]) ** 2 + (x - c[2]) ** 2 <= (size / 12) ** 2] = 700
    stored = np.clip(np.rint(hu + 1024), 0, 4095).astype(np.uint16)
    series_uid = generate_uid(entropy_srcs=[f"bench-series-{index}"])
    paths = []
    for k in rng.permutation(slices):
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = CTImageStorage
        meta.MediaStorageSOPInstanceUID = generate_uid(entropy_srcs=[series_uid, str(k)])
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds = Dataset()
        ds.file_meta = meta
        ds.SOPClassUID, ds.SOPInstanceUID = CTImageStorage, meta.MediaStorageSOPInstanceUID
        ds.SeriesInstanceUID, ds.Modality, ds.InstanceNumber = series_uid, "CT", int(k) + 1
        ds.ImagePositionPatient = [-100, -100, f"{2.5 * k:.2f}"]
        ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
        ds.PixelSpacing = ["0.7", "0.7"]
        ds.RescaleSlope, ds.RescaleIntercept = 1, -1024
        ds.Rows = ds.Columns = size
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
        ds.PixelData = stored[k].tobytes()
        path = folder / f"IM{int(k):04d}"
        ds.save_as(path, enforce_file_format=True)
        paths.append(path)
    return sorted(paths)


def make_source(args: argparse.Namespace) -> tuple[Path, list[list[Path]]]:
    src = args.work_dir / f"dicom-{args.series}x{args.slices}x{args.size}"
    series = []
    for i in range(args.series):
        folder = src / f"series{i:03d}"
        if folder.is_dir() and len(list(folder.iterdir())) == args.slices:
            series.append(sorted(folder.iterdir()))
        else:
            folder.mkdir(parents=True, exist_ok=True)
            series.append(write_series(folder, i, slices=args.slices, size=args.size))
    return src, series


def convert(args: argparse.Namespace, src: Path) -> tuple[Path, float]:
    from converters import get_kind
    from converters.dicom import DicomOptions
    from converters.engine import ConvertConfig
    from converters.engine import convert as run_convert

    dst = args.work_dir / f"shards-{src.name}-{args.spacing:g}mm"
    start = time.perf_counter()
    run_convert(get_kind("dicom"), src, dst, options=DicomOptions(spacing=(args.spacing,) * 3, salt="bench"),
                config=ConvertConfig(jobs=args.workers, samples_per_shard=4))
    return dst, time.perf_counter() - start


# ---- baseline ----------------------------------------------------------------------------------------
class DicomPatches:
    """What a user writes first: every access re-reads and resamples the whole series."""

    def __init__(self, series: list[list[Path]], *, patch: int, spacing: float, length: int) -> None:
        self.series, self.patch, self.spacing, self.length = series, patch, spacing, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int):
        import pydicom
        import torch
        from scipy import ndimage

        files = [pydicom.dcmread(p) for p in self.series[i % len(self.series)]]
        files.sort(key=lambda d: float(d.ImagePositionPatient[2]))
        vol = np.stack([d.pixel_array.astype(np.float32) * float(d.RescaleSlope) + float(d.RescaleIntercept)
                        for d in files])
        dz = float(files[1].ImagePositionPatient[2]) - float(files[0].ImagePositionPatient[2])
        dy, dx = (float(v) for v in files[0].PixelSpacing)
        vol = ndimage.zoom(vol, (dz / self.spacing, dy / self.spacing, dx / self.spacing), order=1)
        rng = np.random.default_rng()
        p = self.patch
        pad = [(0, max(0, p - n)) for n in vol.shape]
        vol = np.pad(vol, pad, constant_values=-1024.0)
        start = [rng.integers(0, n - p + 1) for n in vol.shape]
        out = vol[start[0]:start[0] + p, start[1]:start[1] + p, start[2]:start[2] + p]
        out = np.clip((out - WINDOW[0]) / (WINDOW[1] - WINDOW[0]), 0, 1)
        for axis in range(3):
            if rng.random() < 0.5:
                out = np.flip(out, axis)
        out = np.rot90(out, int(rng.integers(4)), axes=(1, 2))
        return torch.from_numpy(np.ascontiguousarray(out, dtype=np.float32))[None]


def baseline_loader(args, series):
    import torch

    ds = DicomPatches(series, patch=args.patch, spacing=args.spacing, length=args.batches * args.batch_size * 4)
    return torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                       persistent_workers=False)


def fastdata_loader(args, dst, *, full: bool):
    import fastdata

    simple = {} if full else {"affine_prob": 0.0, "elastic_prob": 0.0, "crop_margin": 0}
    return fastdata.loader(dst, batch_size=args.batch_size, patch_size=(args.patch,) * 3, window=WINDOW,
                           num_workers=args.workers, device=args.device, **simple)


def time_batches(loader, n: int) -> tuple[float, tuple[int, ...]]:
    """Seconds for n batches after one untimed warm-up batch (iterates over epochs as needed)."""
    from fastdata.perf.throughput import epochs
    from fastdata.perf.throughput import time_batches as timed

    shapes: list[tuple[int, ...]] = []

    def shape_of_first(batch) -> None:
        if not shapes:
            shapes.append(tuple((batch[0] if isinstance(batch, tuple | list) else batch).shape))

    tp = timed(lambda: epochs(loader), max_batches=n, warmup_batches=1, on_batch=shape_of_first)
    return tp.seconds, shapes[0]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    env = environment()
    src, series = make_source(args)
    dst, convert_s = convert(args, src)
    print(f"converted {args.series} series in {convert_s:.1f} s -> {dst}")
    rows = []
    for rep, name in interleaved(args.candidates, args.reps):
        if name == "baseline":
            loader = baseline_loader(args, series)
        else:
            loader = fastdata_loader(args, dst, full=name == "fastdata-full")
        seconds, shape = time_batches(loader, args.batches)
        patches = args.batches * args.batch_size
        rows.append({"candidate": name, "rep": rep, "seconds": seconds, "patches": patches,
                     "patches_per_s": patches / seconds, "batch_shape": list(shape)})
        print(f"rep {rep} {name:14s} {patches / seconds:8.2f} patches/s  batch {list(shape)}")
    summary = {c: summarize([r["patches_per_s"] for r in rows if r["candidate"] == c]) for c in args.candidates}
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    out = write_json(args.json or args.work_dir / "volumes.json",
                     {"environment": env, "config": config, "convert_seconds": convert_s, "rows": rows,
                      "summary": summary})
    print(f"results: {out}")
    publish(markdown(args, env, summary, convert_s), docs=args.docs, name="volumes", write=not args.no_docs)
    return 0


def markdown(args, env, summary, convert_s) -> str:
    base = summary.get("baseline", {}).get("median")
    lines = ["## Volumes: 3D patches per second", "",
             f"{args.series} synthetic CT series of {args.slices} x {args.size} x {args.size} voxels "
             f"(2.5 x 0.7 x 0.7 mm), resampled to {args.spacing:g} mm; batches of {args.batch_size} patches of "
             f"{args.patch}^3, windowed to [0, 1], random flips + 90-degree rotation; {args.workers} workers; "
             f"{args.batches} timed batches x {args.reps} repetitions (median). One-off conversion: "
             f"{convert_s:.1f} s.", "",
             "| candidate | patches/s (median) | min | max | vs baseline |", "|---|---:|---:|---:|---:|"]
    for name, s in summary.items():
        ratio = f"{s['median'] / base:.1f}x" if base else "-"
        lines.append(f"| {name} | {s['median']:.1f} | {s['min']:.1f} | {s['max']:.1f} | {ratio} |")
    lines += ["", "fastdata-full adds the default affine (rotation/scale), random crop and elastic deformation.", "",
              environment_markdown(env)]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
