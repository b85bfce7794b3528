"""FLOP accounting. ``torch.utils.flop_counter.FlopCounterMode`` counts matmuls and convolutions with
FMA = 2 FLOPs (multiply-accumulates, torchvision's "GFLOPS", are half that) and nothing for
element-wise ops, pooling or normalisation.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.utils.flop_counter import FlopCounterMode


def count_flops(fn: Callable[[], Any]) -> int:
    """FLOPs (FMA = 2) of the matmuls and convolutions one call of ``fn`` runs, forward and backward."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())
