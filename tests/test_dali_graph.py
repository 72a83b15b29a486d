"""The DALI graph as plain data: every operator argument `graph_args` gives for each device, dtype and hook, and
the arrays `feeds` hands the graph's external sources. The GPU variant is checked here, without a GPU, as data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fastdata.coerce import is_device_name
from fastdata.images.dali_graph import (
    GPU_DECODE_PADDING,
    HOST_DECODE_PADDING,
    _positions,
    dali_dtype,
    device_id_of,
    feeds,
    graph_args,
    random_draws,
)
from fastdata.images.draws import TrainParams
from fastdata.images.geometry import Box
from fastdata.images.options import IMAGENET_MEAN, IMAGENET_STD, ImageLoaderOptions
from fastdata.images.reader import RawSample
from fastdata.images.samples import Prepared

CPU_DECODE = {"device": "cpu", "output_type": "RGB", "adjust_orientation": False}
GPU_DECODE = {"device": "mixed", "output_type": "RGB", "adjust_orientation": False, "hw_decoder_load": 0.4,
              "device_memory_padding": GPU_DECODE_PADDING, "host_memory_padding": HOST_DECODE_PADDING}


def opts(**kw) -> ImageLoaderOptions:
    return ImageLoaderOptions(**{"batch_size": 4, "image_size": 224, "num_threads": 2, **kw})


def test_cpu_train_arguments_in_full() -> None:
    args = graph_args(opts(train=True, dtype="float32", channels_last=True, batch_size=128))
    assert args.device_id is None and args.decode_device == "cpu" and args.train and not args.color_jitter
    assert args.decode == CPU_DECODE
    assert args.resize == {"antialias": True, "interp_type": "linear", "resize_x": 224, "resize_y": 224,
                           "minibatch_size": 16}  # 128 samples, 2 threads: 4 tasks a thread
    assert args.normalize == {"crop": [224, 224], "dtype": "float32", "output_layout": "HWC",
                              "mean": [255.0 * m for m in IMAGENET_MEAN], "std": [255.0 * s for s in IMAGENET_STD]}
    assert args.out_dtype == "float32" and args.layout == "HWC" and args.user_augment is None
    assert args.inputs == ("encoded", "anchor", "shape", "flip")


def test_cpu_eval_uint8_arguments_in_full() -> None:
    args = graph_args(opts(train=False, dtype="uint8", channels_last=False, batch_size=40, num_threads=2))
    assert args.decode == CPU_DECODE and not args.train
    assert args.resize == {"antialias": True, "interp_type": "linear", "subpixel_scale": False, "minibatch_size": 5}
    assert args.normalize == {"crop": [224, 224], "dtype": "uint8", "output_layout": "CHW",
                              "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0]}
    assert args.inputs == ("encoded", "resize_y", "resize_x", "crop_y", "crop_x", "resized")


@pytest.mark.parametrize("batch_size,threads,minibatch", [(4, 2, 1), (7, 1, 1), (40, 2, 5), (96, 3, 8),
                                                         (255, 2, 31), (256, 2, 32), (1024, 2, 32), (4096, 1, 32)])
def test_cpu_resize_minibatches_are_a_quarter_of_a_threads_share_at_most_32(batch_size: int, threads: int,
                                                                            minibatch: int) -> None:
    args = graph_args(opts(batch_size=batch_size, num_threads=threads))
    assert args.resize["minibatch_size"] == minibatch and isinstance(args.resize["minibatch_size"], int)


@pytest.mark.parametrize("train", [True, False])
def test_gpu_arguments_in_full(train: bool) -> None:
    args = graph_args(opts(train=train, device="cuda:1", hw_decoder_load=0.4, dtype="float16"))
    assert args.device_id == 1 and args.decode_device == "mixed"
    assert args.decode == (GPU_DECODE if train else {**GPU_DECODE, "jpeg_fancy_upsampling": True})
    assert "minibatch_size" not in args.resize and args.out_dtype == "float16"
    assert args.normalize["dtype"] == "float16"


def test_a_torch_hook_gets_float_unit_range_in_the_outputs_layout() -> None:
    args = graph_args(opts(dtype="uint8", channels_last=True, augment=lambda x: x))
    assert args.out_dtype == "float32"
    assert args.normalize == {"crop": [224, 224], "dtype": "float32", "output_layout": "HWC",
                              "mean": [0.0, 0.0, 0.0], "std": [255.0, 255.0, 255.0]}


def test_dali_produces_every_dtype_it_has_and_float32_for_bfloat16() -> None:
    assert [dali_dtype(d) for d in ("uint8", "float16", "float32", "bfloat16")] == [
        "uint8", "float16", "float32", "float32"]
    assert graph_args(opts(dtype="bfloat16")).out_dtype == "float32"


def test_device_ids() -> None:
    assert device_id_of("cpu") is None and device_id_of("cuda:0") == 0 and device_id_of("cuda:12") == 12
    # without CUDA `cuda` is device 0 (graph_args is built on machines without a GPU in tests)
    import torch

    if not torch.cuda.is_available():
        assert device_id_of("cuda") == 0


@pytest.mark.parametrize("name", ["cuda:1:2", "cuda:x", "cuda:", "CUDA", "gpu", "", 0])
def test_a_device_name_that_is_not_cpu_cuda_or_cuda_n_is_refused(name) -> None:
    assert not is_device_name(name)
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or 'cuda:N'"):
        opts(device=name)


def raw(index: int, data: bytes = b"\xff\xd8jpeg") -> RawSample:
    return RawSample(data=data, label=index % 3, key=f"{index:08d}", shard=Path("train-000000.tar"), index=index)


def test_eval_feeds_in_full() -> None:
    args = graph_args(opts(train=False, image_size=32))
    batch = [Prepared(7, raw(7, b"\xff\xd8seven"), 1, 40, 60, None, None),  # resized to 36 x 54, crop at 2, 11
             Prepared(9, raw(9), 0, 36, 36, None, None),  # pre-resized to 36: no resampling, crop at 2, 2
             Prepared(3, raw(3), 2, 32, 90, None, None)]  # long side 36 * 90 / 32 truncated to 101
    encoded, resize_y, resize_x, crop_y, crop_x, resized = feeds(args, batch, resize_short=36, size=32)
    assert [e.tobytes() for e in encoded] == [b"\xff\xd8seven", b"\xff\xd8jpeg", b"\xff\xd8jpeg"]
    assert all(e.dtype == np.uint8 for e in encoded)
    assert resize_y.dtype == resize_x.dtype == np.float32
    assert resize_y.tolist() == [36.0, 36.0, 36.0] and resize_x.tolist() == [54.0, 36.0, 101.0]
    assert crop_y.dtype == crop_x.dtype == np.float32
    assert crop_y.tolist() == [0.5, 0.5, 0.5] and crop_x.tolist() == pytest.approx([11 / 22, 0.5, 34 / 69])
    assert resized.dtype == np.bool_ and resized.tolist() == [True, False, True]


def test_train_feeds_in_full_and_hue_in_degrees() -> None:
    args = graph_args(opts(train=True, color_jitter=(0.4, 0.4, 0.4, 0.1)))
    batch = [Prepared(5, raw(5), 2, 64, 48, Box(top=3, left=4, height=20, width=30),
                      TrainParams(flip=True, jitter=(1.1, 0.9, 1.2, 0.05))),
             Prepared(6, raw(6), 0, 64, 48, Box(top=0, left=1, height=64, width=47),
                      TrainParams(flip=False, jitter=(0.8, 1.3, 0.7, -0.1)))]
    out = feeds(args, batch, resize_short=256, size=224)
    assert len(out) == len(args.inputs) == 8
    _, anchor, shape, flip, brightness, contrast, saturation, hue = out
    assert anchor.dtype == shape.dtype == flip.dtype == np.int32
    assert anchor.tolist() == [[4, 3], [1, 0]] and shape.tolist() == [[30, 20], [47, 64]]  # (x, y): WH axes
    assert flip.tolist() == [1, 0]
    assert all(a.dtype == np.float32 for a in (brightness, contrast, saturation, hue))
    assert brightness.tolist() == pytest.approx([1.1, 0.8]) and contrast.tolist() == pytest.approx([0.9, 1.3])
    assert saturation.tolist() == pytest.approx([1.2, 0.7])
    assert hue.tolist() == pytest.approx([18.0, -36.0])  # DALI's color_twist takes degrees


def test_a_hook_that_takes_random_is_fed_the_draws_of_its_samples_and_epoch() -> None:
    args = graph_args(opts(train=False, dali_augment=lambda images, random: images))
    batch = [Prepared(i, raw(i), 0, 32, 32, None, None) for i in (11, 4)]
    assert args.inputs[-1] == "random"
    draws = feeds(args, batch, resize_short=32, size=32)[-1]  # seed 0 and epoch 0 unless told
    assert np.array_equal(draws, random_draws(0, 0, np.array([11, 4])))
    later = feeds(args, batch, resize_short=32, size=32, seed=5, epoch=2)[-1]
    assert np.array_equal(later, random_draws(5, 2, np.array([11, 4]))) and not np.array_equal(later, draws)
    one_arg = graph_args(opts(train=False, dali_augment=lambda images: images))
    assert "random" not in one_arg.inputs and len(feeds(one_arg, batch, resize_short=32, size=32)) == 6


def test_crop_positions_map_back_to_the_offsets() -> None:
    # DALI places a crop of `crop` pixels at round(pos * (size - crop)): pos = offset / (size - crop)
    offset, size = np.array([0, 1, 0, 3, 5, 0]), np.array([32, 33, 34, 38, 37, 30])
    pos = _positions(offset, size, 32)
    assert pos.dtype == np.float32
    assert pos.tolist() == pytest.approx([0.5, 1.0, 0.0, 0.5, 1.0, 0.5])  # 0.5 where there is no room to move
