"""Every random number of a sample, drawn for a whole batch of samples at once: the train augmentation
(crop, flip, colour jitter), the `random` values of a dali_augment hook, the caption an epoch uses.

A sample's draws depend only on (seed, epoch, sample index) and what they are for (a stream), never on
the batch, rank or world size it is read in: a resumed, re-ranked or re-batched epoch gives every sample
the same crop, flip, jitter and caption. They come from a counter-based generator: number j of sample i
is SplitMix64's output number `i * count + j` from a start derived from (seed, epoch, stream). Computing
it is a few numpy operations over a batch's indices (one call per batch, no generator object per
sample), where seeding a numpy Generator for each sample cost 11 us of Python per sample.

A row of train draws holds `DRAWS` uniform numbers in [0, 1): the flip, the four colour-jitter factors,
then four per attempt of the random resized crop (area, log aspect ratio, top, left;
`geometry.random_resized_crop_box`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

CROP_ATTEMPTS = 10  # torchvision RandomResizedCrop's
DRAWS_PER_ATTEMPT = 4  # area, log aspect ratio, top, left
FLIP = 0
JITTER = slice(1, 5)
CROP = 5  # the crop's draws are the row's last CROP_ATTEMPTS * DRAWS_PER_ATTEMPT numbers
DRAWS = CROP + CROP_ATTEMPTS * DRAWS_PER_ATTEMPT

AUGMENT_STREAM = 0x41554721  # what the draws are for: each stream is another generator of the same (seed, epoch)
DALI_HOOK_STREAM = 0x44414C49  # "DALI"
CAPTION_STREAM = 0x43415054  # "CAPT"

_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment (the golden ratio in 64 bits)


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function on uint64 (wrapping arithmetic, element-wise)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _start(seed: int, epoch: int, stream: int) -> int:
    """The generator's start for (seed, epoch, stream): all mixed in, so nearby values start far apart."""
    z = np.array([seed & _MASK], dtype=np.uint64)
    for word in (epoch, stream):
        z = _mix(z + np.uint64(_GAMMA)) ^ np.uint64(word & _MASK)
    return int(_mix(z)[0])


class TrainParams(NamedTuple):
    """What a train sample's draws decided besides the crop: flip and colour-jitter factors."""

    flip: bool
    jitter: tuple[float, float, float, float] | None  # brightness, contrast, saturation, hue


def uniforms(seed: int, epoch: int, indices: np.ndarray, *, count: int, stream: int,
             dtype: type = np.float64) -> np.ndarray:
    """(len(indices), count) uniform numbers in [0, 1) of `dtype` (float64 or float32): `count` for each
    sample of `indices`, from the generator of `stream`."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1).astype(np.uint64)
    counters = idx[:, None] * np.uint64(count) + np.arange(count, dtype=np.uint64)
    bits = _mix(counters * np.uint64(_GAMMA) + np.uint64(_start(seed, epoch, stream)))
    mantissa = 53 if np.dtype(dtype) == np.float64 else 24  # the top bits, exact in the type: never 1.0
    return (bits >> np.uint64(64 - mantissa)).astype(dtype) * dtype(1.0 / (1 << mantissa))


def sample_draws(seed: int, epoch: int, indices: np.ndarray) -> np.ndarray:
    """float64 (len(indices), DRAWS): the train augmentation's uniform numbers of each sample of `indices`."""
    return uniforms(seed, epoch, indices, count=DRAWS, stream=AUGMENT_STREAM)


def integer_below(u: float, n: int) -> int:
    """A uniform integer in [0, n) from a draw u in [0, 1) (n < 2**53: even the largest draw, 1 - 2**-53,
    times n rounds to below n)."""
    return int(u * n)


def train_params(row: list[float], color_jitter: tuple[float, float, float, float] | None,
                 hflip: bool) -> TrainParams:
    """Flip and jitter factors from a sample's row of draws (torchvision ColorJitter's ranges)."""
    flip = hflip and row[FLIP] < 0.5
    jitter = None
    if color_jitter is not None:
        b, c, s, h = color_jitter
        ub, uc, us, uh = row[JITTER]
        jitter = (_between(ub, max(0.0, 1 - b), 1 + b), _between(uc, max(0.0, 1 - c), 1 + c),
                  _between(us, max(0.0, 1 - s), 1 + s), _between(uh, -h, h))
    return TrainParams(flip=flip, jitter=jitter)


def _between(u: float, lo: float, hi: float) -> float:
    return lo + (hi - lo) * u
