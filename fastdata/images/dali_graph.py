"""The DALI graph of the image loader: it executes a batch that fastdata planned and prepared.

fastdata reads the encoded images (local shards or the node-local cache of remote ones) in the plan's
order and draws each sample's augmentation (`samples.py`); the graph takes them through named external
sources and does the pixel work: decode only the crop window (`decoders.image_slice`, nvJPEG with the
hardware decoder on GPU), resize, colour jitter, mirror, normalise into the final dtype and layout.

`graph_args` is plain data (no DALI import): which device each stage runs on and with which arguments,
so the GPU variant (`device="mixed"` decode, GPU resize/normalise) is tested on machines without a GPU.
`feeds` turns a batch of `Prepared` samples into the arrays the external sources take.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fastdata.images.draws import DALI_HOOK_STREAM, uniforms
from fastdata.images.options import ImageLoaderOptions
from fastdata.images.samples import Prepared

GPU_DECODE_PADDING = 211_025_920  # bytes; nvJPEG device buffer growth step (mixed decode only)
HOST_DECODE_PADDING = 140_544_512  # bytes; nvJPEG pinned host buffer growth step
INPUTS_TRAIN = ("encoded", "anchor", "shape", "flip")
INPUTS_JITTER = ("brightness", "contrast", "saturation", "hue")
INPUTS_EVAL = ("encoded", "resize_y", "resize_x", "crop_y", "crop_x", "resized")


@dataclass(frozen=True)
class GraphArgs:
    """Device placement and keyword arguments of every operator of the graph."""

    device_id: int | None  # None: CPU-only pipeline
    decode_device: str  # "cpu" or "mixed"
    train: bool
    decode: dict[str, Any]
    resize: dict[str, Any]
    normalize: dict[str, Any]
    color_jitter: bool
    out_dtype: str  # dtype DALI produces; the backend converts to opts.dtype if they differ
    layout: str  # "HWC" (permuted to channels_last NCHW in torch) or "CHW"
    user_augment: Any = None  # the dali_augment hook: fn(images) or fn(images, random) -> images
    user_random: bool = False  # it takes `random`: per-sample uniform draws fed by fastdata

    @property
    def inputs(self) -> tuple[str, ...]:
        """The names of the graph's external sources, in the order `feeds` returns their arrays."""
        extra = ("random",) if self.user_random else ()
        if not self.train:
            return INPUTS_EVAL + extra
        return INPUTS_TRAIN + (INPUTS_JITTER if self.color_jitter else ()) + extra


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


def graph_args(opts: ImageLoaderOptions) -> GraphArgs:
    """The operator arguments for these options, for either device."""
    device_id = device_id_of(opts.device)
    gpu = device_id is not None
    size = opts.image_size
    # EXIF orientation is not applied here: converted images are stored upright, and an adopted image whose
    # header says it is turned reaches the graph turned upright already (orientation.py), so the crop boxes drawn
    # on its width and height are the decoded image's.
    decode: dict[str, Any] = dict(device="mixed" if gpu else "cpu", output_type="RGB", adjust_orientation=False)
    if gpu:
        # nvJPEG: share of images for the hardware decoder (A100/H100); padding grows nvJPEG's buffers in large
        # steps so they stop reallocating early. Eval asks for libjpeg-style fancy chroma upsampling, so GPU and CPU
        # eval tensors agree (measured on an H200: within 3 grey levels, where plain nvJPEG differs by up to 56 at
        # colour edges). Train decodes only the crop window (ROI), for which nvJPEG before 13.2 refuses fancy
        # upsampling with a warning per decode thread and batch: it is not asked for there.
        decode.update(hw_decoder_load=opts.hw_decoder_load, device_memory_padding=GPU_DECODE_PADDING,
                      host_memory_padding=HOST_DECODE_PADDING)
        if not opts.train:
            decode["jpeg_fancy_upsampling"] = True
    resize: dict[str, Any] = dict(antialias=True, interp_type="linear")
    if opts.train:
        resize.update(resize_x=size, resize_y=size)
    else:
        resize.update(subpixel_scale=False)  # integer sizes, as torchvision's Resize
    if not gpu:
        # CPU resize splits the batch into minibatches, one per thread task: DALI's default (32) leaves
        # threads idle for batch_size < 32 * num_threads; ~4 tasks per thread balances uneven crops.
        resize["minibatch_size"] = max(1, min(32, opts.batch_size // (4 * opts.num_threads)))
    out_dtype = dali_dtype(opts.dtype)
    layout = "HWC" if opts.channels_last else "CHW"
    if opts.augment is not None:  # the torch hook takes float [0, 1] (in the output's layout); normalised after it
        out_dtype = "float32"
    normalize: dict[str, Any] = dict(crop=[size, size], dtype=out_dtype, output_layout=layout)
    if opts.augment is not None:
        normalize.update(mean=[0.0, 0.0, 0.0], std=[255.0, 255.0, 255.0])
    elif opts.dtype == "uint8":
        normalize.update(mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0])
    else:
        normalize.update(mean=[255.0 * m for m in opts.mean], std=[255.0 * s for s in opts.std])
    return GraphArgs(device_id=device_id, decode_device=decode["device"], train=opts.train, decode=decode,
                     resize=resize, normalize=normalize, color_jitter=opts.train and opts.color_jitter is not None,
                     out_dtype=out_dtype, layout=layout, user_augment=opts.dali_augment,
                     user_random=opts.dali_augment is not None and _takes_random(opts.dali_augment))


def _takes_random(fn: Any) -> bool:
    """Whether a dali_augment hook takes a second argument (the per-sample random draws)."""
    import inspect

    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    return len(params) >= 2


RANDOM_VALUES = 8  # uniform [0, 1) draws per sample handed to a dali_augment hook that takes `random`


def random_draws(seed: int, epoch: int, indices: np.ndarray) -> np.ndarray:
    """float32 (len(indices), RANDOM_VALUES): the `random` values of each sample for a dali_augment hook, a
    pure function of (seed, epoch, sample), apart from the sample's crop and flip draws (draws.py)."""
    return uniforms(seed, epoch, indices, count=RANDOM_VALUES, stream=DALI_HOOK_STREAM, dtype=np.float32)


def feeds(args: GraphArgs, batch: list[Prepared], *, resize_short: int, size: int, seed: int = 0,
          epoch: int = 0) -> list[list[np.ndarray] | np.ndarray]:
    """The data of one batch for the graph's external sources (in `args.inputs` order): the encoded bytes as a
    list of per-sample arrays, every other input as one array whose first dimension is the batch."""
    out = _feeds(args, batch, resize_short=resize_short, size=size)
    if args.user_random:
        out.append(random_draws(seed, epoch, np.array([p.index for p in batch], dtype=np.int64)))
    return out


def _feeds(args: GraphArgs, batch: list[Prepared], *, resize_short: int, size: int) -> list[list[np.ndarray] |
                                                                                           np.ndarray]:
    """One array per input, not one per sample: DALI converts a list of 128 scalars sample by sample in Python
    and a batch array at once (feeding a train batch took 3.2 ms with lists, 1.9 ms with arrays, on 2 cores)."""
    encoded = [np.frombuffer(p.raw.data, dtype=np.uint8) for p in batch]
    if not args.train:
        rows = np.array([(*p.eval_geometry(resize_short, size), p.height, p.width) for p in batch],
                        dtype=np.int64).reshape(-1, 6)
        new_h, new_w, top, left, height, width = rows.T
        return [encoded, new_h.astype(np.float32), new_w.astype(np.float32),
                _positions(top, new_h, size), _positions(left, new_w, size), (new_h != height) | (new_w != width)]
    boxes = np.array([(p.box.left, p.box.top, p.box.width, p.box.height) for p in batch], dtype=np.int32).reshape(-1, 4)
    flip = np.array([p.params.flip for p in batch], dtype=np.int32)
    out: list[list[np.ndarray] | np.ndarray] = [encoded, np.ascontiguousarray(boxes[:, :2]),
                                                np.ascontiguousarray(boxes[:, 2:]), flip]
    if args.color_jitter:
        jit = np.array([p.params.jitter for p in batch], dtype=np.float64).reshape(-1, 4)
        jit[:, 3] *= 360.0  # hue in degrees, in float64 and then rounded to float32 (DALI's argument type)
        out += [np.ascontiguousarray(jit[:, k], dtype=np.float32) for k in range(4)]
    return out


def _positions(offset: np.ndarray, size: np.ndarray, crop: int) -> np.ndarray:
    """DALI's crop position of each sample for its offset: offset / (size - crop) maps back to exactly that
    offset (0.5 where the crop is the whole side); float32."""
    span = size - crop
    return np.where(span > 0, offset / np.maximum(span, 1), 0.5).astype(np.float32)


def _types(args: dict[str, Any]) -> dict[str, Any]:
    """Replace the plain-data names of DALI enums by the enums."""
    import nvidia.dali.types as types

    enums = {"output_type": {"RGB": types.RGB}, "interp_type": {"linear": types.INTERP_LINEAR},
             "dtype": {"uint8": types.UINT8, "float16": types.FLOAT16, "float32": types.FLOAT}}
    return {k: enums[k][v] if k in enums else v for k, v in args.items()}


def define_pipeline(args: GraphArgs, *, batch_size: int, num_threads: int, seed: int) -> Any:
    """The pipeline, not yet built: `serialize()` checks every operator argument without a GPU."""
    from nvidia.dali import fn, pipeline_def

    # exec_dynamic: each output batch owns its memory until released by its last user, so the backend
    # hands CPU batches to torch without copying (dali_backend._convert).
    @pipeline_def(batch_size=batch_size, num_threads=num_threads, device_id=args.device_id, seed=seed,
                  prefetch_queue_depth=1, exec_dynamic=True, enable_conditionals=not args.train)
    def image_graph():  # type: ignore[no-untyped-def]
        src = sources(args)
        if args.train:
            images = fn.decoders.image_slice(src["encoded"], src["anchor"], src["shape"], axis_names="WH",
                                             normalized_anchor=False, normalized_shape=False,
                                             **_types(args.decode))
            images = fn.resize(images, **_types(args.resize))
            if args.color_jitter:
                images = fn.color_twist(images, brightness=src["brightness"], contrast=src["contrast"],
                                        saturation=src["saturation"], hue=src["hue"])
            images = _user(args, images, src)
            return fn.crop_mirror_normalize(images, mirror=src["flip"], crop_pos_x=0.5, crop_pos_y=0.5,
                                            **_types(args.normalize))
        images = fn.decoders.image(src["encoded"], **_types(args.decode))
        if src["resized"]:  # per sample (DALI conditionals): shards pre-resized to this size skip resampling
            images = fn.resize(images, resize_y=src["resize_y"], resize_x=src["resize_x"], **_types(args.resize))
        if args.user_augment is not None:  # the hook sees the centre crop, as it sees the train crop
            crop = args.normalize["crop"]
            images = _user(args, fn.crop(images, crop=crop, crop_pos_x=src["crop_x"], crop_pos_y=src["crop_y"]), src)
            return fn.crop_mirror_normalize(images, **_types(args.normalize))
        return fn.crop_mirror_normalize(images, crop_pos_x=src["crop_x"], crop_pos_y=src["crop_y"],
                                        **_types(args.normalize))

    return image_graph()


def sources(args: GraphArgs) -> dict[str, Any]:
    """The graph's inputs by name: one external source for each of `args.inputs` (benchmarks/dali_packed.py puts
    another way of feeding them in its place, to measure it)."""
    from nvidia.dali import fn

    return {name: fn.external_source(name=name, no_copy=False) for name in args.inputs}


def _user(args: GraphArgs, images: Any, src: dict[str, Any]) -> Any:
    """The dali_augment hook's operators on the decoded, cropped and resized images (HWC uint8)."""
    if args.user_augment is None:
        return images
    from fastdata.hooks import HookError

    try:
        out = args.user_augment(images, src["random"]) if args.user_random else args.user_augment(images)
    except Exception as exc:  # noqa: BLE001 - a user's code: reported with where it ran
        raise HookError(f"the dali_augment hook raised while the DALI graph was defined: {type(exc).__name__}: "
                        f"{exc}", hook="dali_augment", epoch=-1, batch=-1) from exc
    if out is None:
        raise HookError("the dali_augment hook returned None; it must return the images DataNode",
                        hook="dali_augment", epoch=-1, batch=-1)
    return out


def build_pipeline(args: GraphArgs, *, batch_size: int, num_threads: int, seed: int) -> Any:
    pipe = define_pipeline(args, batch_size=batch_size, num_threads=num_threads, seed=seed)
    pipe.build()
    return pipe
