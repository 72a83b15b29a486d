"""Intensity normalisation and 3D augmentation of patch batches, on the batch's device.

Augmentation uses kornia's 3D augmentations (random crop, flips on each axis, affine rotation and
scaling) plus two of our own that kornia lacks: random 90-degree rotations in the (H, W) plane and
an elastic deformation (a smooth random displacement field applied with `grid_sample`). Callers
seed torch's RNG per batch (see loader.py), which makes the augmentation reproducible.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from fastdata.errors import require
from fastdata.volumes.channel_values import bounds
from fastdata.volumes.options import VolumeLoaderOptions


def normalise(x: torch.Tensor, opts: VolumeLoaderOptions) -> torch.Tensor:
    """HU -> [0, 1] with `window`, or z-score (per patch or with a fixed mean/std, after `clip`), else raw HU; a
    window, clip or (mean, std) applies to every channel, or is given per channel (channel_values.py).
    zscore="foreground" has been resolved to a clip and a (mean, std) by the loader (intensity.py)."""
    if opts.window is not None:
        lo, hi = bounds(opts.window, x)  # one (lo, hi), or one per channel
        return ((x - lo) / (hi - lo)).clamp_(0.0, 1.0)
    if opts.clip is not None:
        x = x.clamp(*bounds(opts.clip, x))
    if opts.zscore is True:  # per patch and per channel
        dims = tuple(range(2, x.ndim))
        mean = x.mean(dim=dims, keepdim=True)
        std = x.std(dim=dims, keepdim=True).clamp_min(1e-6)
        return (x - mean) / std
    if opts.zscore:
        mean, std = bounds(opts.zscore, x)
        return (x - mean) / std
    return x


def rot90_hw(x: torch.Tensor, masks: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Rotate each sample of [B, C, D, H, W] (and its mask) by a random multiple of 90 degrees in the (H, W) plane."""
    k = torch.randint(0, 4, (x.shape[0],), device="cpu").tolist()
    turned = [torch.stack([torch.rot90(t[i], k[i], dims=(-2, -1)) for i in range(t.shape[0])])
              for t in (x, *([] if masks is None else [masks]))]
    return turned[0], (turned[1] if masks is not None else None)


def elastic(x: torch.Tensor, masks: torch.Tensor | None = None, *, prob: float, grid: int,
            magnitude: float) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Warp samples (with probability `prob`) by a smooth random displacement field: Gaussian
    displacements (std `magnitude` voxels) on a grid^3 lattice, trilinearly upsampled. A mask follows its sample's
    field with nearest-neighbour sampling (label values are never blended)."""
    b, _, d, h, w = x.shape
    apply = (torch.rand(b, device=x.device) < prob).to(x.dtype)
    if magnitude == 0 or not bool(apply.any()):
        return x, masks
    coarse = torch.randn(b, 3, grid, grid, grid, device=x.device, dtype=x.dtype) * magnitude
    disp = F.interpolate(coarse, size=(d, h, w), mode="trilinear", align_corners=True)
    disp = disp * apply.view(b, 1, 1, 1, 1)
    # voxels -> normalised coordinates; grid_sample wants (x, y, z) = (W, H, D) order in the last dim
    scale = torch.tensor([2.0 / max(w - 1, 1), 2.0 / max(h - 1, 1), 2.0 / max(d - 1, 1)], device=x.device,
                         dtype=x.dtype)
    disp = disp.flip(1).permute(0, 2, 3, 4, 1) * scale
    theta = torch.eye(3, 4, device=x.device, dtype=x.dtype).expand(b, 3, 4)
    field = F.affine_grid(theta, [b, 1, d, h, w], align_corners=True) + disp
    warped = F.grid_sample(x, field, mode="bilinear", padding_mode="border", align_corners=True)
    if masks is not None:
        masks = F.grid_sample(masks, field, mode="nearest", padding_mode="border", align_corners=True)
    return warped, masks


class VolumeAugment(torch.nn.Module):
    """The training augmentation of a [B, 1, D', H', W'] batch -> [B, 1, *patch_size], same dtype; a batch of masks
    of the same shape (label values as floats) gets the same crops, flips, rotations and warps, sampled nearest."""

    def __init__(self, opts: VolumeLoaderOptions) -> None:
        super().__init__()
        K = require("kornia.augmentation", "kornia")
        self.opts = opts
        steps: list[torch.nn.Module] = []
        if opts.cut_size != opts.patch_size:
            steps.append(K.RandomCrop3D(opts.patch_size, p=1.0))
        if opts.flip_prob > 0:
            steps += [K.RandomDepthicalFlip3D(p=opts.flip_prob), K.RandomVerticalFlip3D(p=opts.flip_prob),
                      K.RandomHorizontalFlip3D(p=opts.flip_prob)]
        self.kornia = torch.nn.Sequential(*steps)  # crops and flips: exact for masks as an extra channel
        self.affine = None
        if opts.affine_prob > 0 and (opts.rotate_degrees > 0 or opts.scale is not None):
            self.affine = K.RandomAffine3D(degrees=opts.rotate_degrees, scale=opts.scale, p=opts.affine_prob)
            self._warp = require("kornia.geometry.transform", "kornia").warp_affine3d  # moves masks alike

    def forward(self, x: torch.Tensor, masks: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        if len(self.kornia):
            both = self.kornia(x if masks is None else torch.cat([x, masks], dim=1))
            x, masks = (both, None) if masks is None else (both[:, :x.shape[1]], both[:, x.shape[1]:])
        if self.affine is not None:
            x = self.affine(x)
            if masks is not None:
                masks = self._warp_nearest(masks, self.affine.transform_matrix)
        if self.opts.rot90 and x.shape[-1] == x.shape[-2]:
            x, masks = rot90_hw(x, masks)
        if self.opts.elastic_prob > 0:
            x, masks = elastic(x, masks, prob=self.opts.elastic_prob, grid=self.opts.elastic_grid,
                               magnitude=self.opts.elastic_magnitude)
        return x, masks

    def _warp_nearest(self, masks: torch.Tensor, matrix: torch.Tensor) -> torch.Tensor:
        """The masks moved by the affine just drawn for their samples (kornia's warp, nearest-neighbour)."""
        return self._warp(masks, matrix[:, :3, :].to(masks.dtype), tuple(masks.shape[-3:]), "nearest",
                    align_corners=self.affine.flags["align_corners"])  # type: ignore[union-attr]
