"""The child process Nsight Compute profiles for a forward pass's DRAM bytes (perfkit.measure.ncu): one
forward pass of a registered model inside ncu's NVTX range, after a warm-up outside it, so only that pass's
kernels are counted. ``python -m perfkit.workloads.ncu_forward MODEL N,C,H,W``: a :class:`Region` on both
sides of the process boundary.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from perfkit.measure.ncu import NVTX_RANGE
from perfkit.workloads import models


@dataclass(frozen=True)
class Region:
    """What the profiled child runs: one forward pass of ``model`` on a random input of ``input_shape``."""

    model: str
    input_shape: tuple[int, ...]

    def argv(self) -> list[str]:
        return ["-m", "perfkit.workloads.ncu_forward", self.model, ",".join(map(str, self.input_shape))]

    @classmethod
    def from_argv(cls, argv: Sequence[str]) -> Region:
        model, shape = argv
        return cls(model, models.parse_shape(shape, 4))


def _profiled_region(region: Region) -> None:
    """Warm up, then one forward pass inside the NVTX range."""
    model = models.build(region.model).cuda().eval()
    x = torch.randn(region.input_shape, device="cuda")
    with torch.no_grad():
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(NVTX_RANGE)
        model(x)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    _profiled_region(Region.from_argv(sys.argv[1:3]))
