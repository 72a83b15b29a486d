"""The DALI graph of the image loader: operator arguments per device, and the pipeline built from them.

`graph_args` is plain data (no DALI import): which device each stage runs on and with which
arguments, so the GPU variant (`device="mixed"` nvJPEG decode, GPU resize/normalise) is tested on
machines without a GPU. `build_pipeline` turns it into a DALI pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastdata.images.dali_plan import EpochPlan
from fastdata.images.options import ImageLoaderOptions

READER_NAME = "Reader"
GPU_DECODE_PADDING = 211_025_920  # bytes; nvJPEG device buffer growth step (mixed decode only)
HOST_DECODE_PADDING = 140_544_512  # bytes; nvJPEG pinned host buffer growth step


@dataclass(frozen=True)
class GraphArgs:
    """Device placement and keyword arguments of every operator of the graph."""

    device_id: int | None  # None: CPU-only pipeline
    decode_device: str  # "cpu" or "mixed"
    reader: dict[str, Any]
    decode: dict[str, Any]
    resize: dict[str, Any]
    normalize: dict[str, Any]
    flip: bool
    resize_shorter: int | None  # eval: shorter side before the centre crop; None in training
    color_jitter: tuple[float, float, float, float] | None
    out_dtype: str  # dtype DALI produces; the backend converts to opts.dtype if they differ
    layout: str  # "HWC" (permuted to channels_last NCHW in torch) or "CHW"
    labeled: bool = True  # the reader has a label output (unlabeled datasets: images only)


def device_id_of(device: str) -> int | None:
    """`cpu` -> None, `cuda:N` -> N, `cuda` -> torch's current device (the local rank's GPU under DDP)."""
    if device == "cpu":
        return None
    if ":" in device:
        return int(device.split(":", 1)[1])
    import torch

    return torch.cuda.current_device() if torch.cuda.is_available() else 0


def dali_dtype(dtype: str) -> str:
    """The dtype DALI produces for the loader's `dtype`: bfloat16, which DALI lacks, comes out as float32."""
    return dtype if dtype in ("uint8", "float16") else "float32"


def graph_args(opts: ImageLoaderOptions, plan: EpochPlan, *, image_members: tuple[str, ...] = ("jpg",),
               label_member: str | None = "cls") -> GraphArgs:
    """The operator arguments for these options and this epoch plan, for either device.

    `image_members` are the tar extensions that hold the image (one reader output, DALI's `;` set);
    `label_member` the one holding the label, or None for an unlabeled dataset (no label output)."""
    device_id = device_id_of(opts.device)
    gpu = device_id is not None
    size = opts.image_size
    reader = dict(
        paths=[str(s.path) for s in plan.shards],
        index_paths=[str(s.index_path) for s in plan.shards],
        ext=[";".join(image_members), *([label_member] if label_member else [])],
        missing_component_behavior="error",
        shard_id=plan.shard_id,
        num_shards=plan.num_shards,
        random_shuffle=plan.shuffle,
        initial_fill=plan.initial_fill,
        pad_last_batch=not plan.shuffle,
        stick_to_shard=True,
        name=READER_NAME,
    )
    decode: dict[str, Any] = dict(device="mixed" if gpu else "cpu", output_type="RGB")
    if gpu:
        # nvJPEG: share of images for the hardware decoder (A100/H100), libjpeg-style fancy
        # upsampling so GPU and CPU decodes agree.
        # Padding grows nvJPEG's host/device buffers in large steps, so they stop reallocating early.
        decode.update(hw_decoder_load=opts.hw_decoder_load, jpeg_fancy_upsampling=True,
                      device_memory_padding=GPU_DECODE_PADDING, host_memory_padding=HOST_DECODE_PADDING)
    if opts.train:
        decode.update(random_area=list(opts.scale), random_aspect_ratio=list(opts.ratio), num_attempts=10)
        resize = dict(resize_x=size, resize_y=size, antialias=True, interp_type="linear")
    else:
        # Sizes and crop offsets are computed per sample in the graph (`_eval_geometry`) to match
        # torchvision Resize(int) + CenterCrop exactly; subpixel_scale=False stretches to integer sizes
        # as torchvision does.
        resize = dict(antialias=True, interp_type="linear", subpixel_scale=False)
    if not gpu:
        # CPU resize splits the batch into minibatches, one per thread task: DALI's default (32) leaves
        # threads idle for batch_size < 32 * num_threads; ~4 tasks per thread balances uneven crops.
        resize["minibatch_size"] = max(1, min(32, opts.batch_size // (4 * opts.num_threads)))
    out_dtype = dali_dtype(opts.dtype)
    layout = "HWC" if opts.channels_last else "CHW"
    normalize: dict[str, Any] = dict(crop=[size, size], crop_pos_x=0.5, crop_pos_y=0.5, dtype=out_dtype,
                                     output_layout=layout)
    if opts.dtype == "uint8":
        normalize.update(mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0])
    else:
        normalize.update(mean=[255.0 * m for m in opts.mean], std=[255.0 * s for s in opts.std])
    return GraphArgs(device_id=device_id, decode_device=decode["device"], reader=reader, decode=decode,
                     resize=resize, normalize=normalize, flip=opts.train and opts.hflip,
                     resize_shorter=None if opts.train else opts.resize_short,
                     color_jitter=opts.color_jitter if opts.train else None, out_dtype=out_dtype, layout=layout,
                     labeled=label_member is not None)


def _types(args: dict[str, Any]) -> dict[str, Any]:
    """Replace the plain-data names of DALI enums by the enums."""
    import nvidia.dali.types as types

    enums = {"output_type": {"RGB": types.RGB}, "interp_type": {"linear": types.INTERP_LINEAR},
             "dtype": {"uint8": types.UINT8, "float16": types.FLOAT16, "float32": types.FLOAT}}
    return {k: enums[k][v] if k in enums else v for k, v in args.items()}


def _eval_geometry(jpegs: Any, short: int, crop: int) -> tuple[Any, Any, dict[str, Any], Any]:
    """Per-sample resize sizes and crop positions equal to torchvision's, from the JPEG header.

    torchvision Resize(short): the shorter side becomes `short`, the longer side
    int(short * long / shorter) (truncated). CenterCrop: offset int(round(d / 2)) for d = size - crop,
    Python's round (half to even), where DALI's crop_pos rounds half up; so the position is given as
    offset / d, which DALI maps back to exactly that offset. The last value is True for the samples
    whose size changes (torchvision returns the others unchanged, and so do we).
    """
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types

    shape = fn.peek_image_shape(jpegs, dtype=types.INT32)  # H, W, C; no decode
    h, w = shape[0], shape[1]
    landscape = h <= w
    new_h = landscape * short + (1 - landscape) * ((short * h) // w)
    new_w = landscape * ((short * w) // h) + (1 - landscape) * short

    def position(size: Any) -> Any:
        d = size - crop
        half = d // 2
        offset = half + (d - 2 * half) * (half - 2 * (half // 2))  # round(d / 2), half to even
        return offset / (d + (d == 0))

    as_float = {"dtype": types.FLOAT}
    return (fn.cast(new_h, **as_float), fn.cast(new_w, **as_float),
            {"crop_pos_y": position(new_h), "crop_pos_x": position(new_w)}, (new_h != h) | (new_w != w))


def build_pipeline(args: GraphArgs, plan: EpochPlan, *, batch_size: int, num_threads: int, prefetch: int,
                   checkpoint: str | None = None) -> Any:
    """A built DALI pipeline with outputs (images, raw label bytes, sample source info); unlabeled
    datasets have no label output: (images, source info)."""
    pipe = define_pipeline(args, plan, batch_size=batch_size, num_threads=num_threads, prefetch=prefetch,
                           checkpoint=checkpoint)
    pipe.build()
    return pipe


def define_pipeline(args: GraphArgs, plan: EpochPlan, *, batch_size: int, num_threads: int, prefetch: int,
                    checkpoint: str | None = None) -> Any:
    """The pipeline, not yet built: `serialize()` checks every operator argument without a GPU."""
    from nvidia.dali import fn, pipeline_def

    # exec_dynamic: each output batch owns its memory until released by its last user, so the backend
    # hands CPU batches to torch without copying (dali_backend._convert).
    @pipeline_def(batch_size=batch_size, num_threads=num_threads, device_id=args.device_id, seed=plan.seed,
                  prefetch_queue_depth=prefetch, enable_checkpointing=True, exec_dynamic=True,
                  enable_conditionals=args.resize_shorter is not None)
    def image_graph():  # type: ignore[no-untyped-def]
        read = fn.readers.webdataset(**args.reader)
        jpegs, labels = (read[0], read[1]) if args.labeled else (read[0] if isinstance(read, list) else read, None)
        info = fn.get_property(jpegs, key="source_info")
        if "random_area" in args.decode:
            images = fn.decoders.image_random_crop(jpegs, **_types(args.decode))
        else:
            images = fn.decoders.image(jpegs, **_types(args.decode))
        crop_pos: dict[str, Any] = {}
        if args.resize_shorter is None:
            images = fn.resize(images, **_types(args.resize))
        else:
            size_y, size_x, crop_pos, resize = _eval_geometry(jpegs, args.resize_shorter, args.normalize["crop"][0])
            if resize:  # per sample (DALI conditionals): shards pre-resized to this size skip the resampling
                images = fn.resize(images, resize_y=size_y, resize_x=size_x, **_types(args.resize))
        if args.color_jitter is not None:
            b, c, s, h = args.color_jitter
            images = fn.color_twist(
                images,
                brightness=fn.random.uniform(range=[max(0.0, 1 - b), 1 + b]),
                contrast=fn.random.uniform(range=[max(0.0, 1 - c), 1 + c]),
                saturation=fn.random.uniform(range=[max(0.0, 1 - s), 1 + s]),
                hue=fn.random.uniform(range=[-360.0 * h, 360.0 * h]),
            )
        mirror = fn.random.coin_flip(probability=0.5) if args.flip else 0
        images = fn.crop_mirror_normalize(images, mirror=mirror, **{**_types(args.normalize), **crop_pos})
        return (images, labels, info) if args.labeled else (images, info)

    return image_graph(checkpoint=checkpoint) if checkpoint else image_graph()
