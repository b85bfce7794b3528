"""Figures that combine benchmarks, computed in one pure pass over a finished result set.

(Being written: speedups over the 1-GPU run, swapped/normal ratios, speedup over the CPU loop,
% of this run's measured ceilings.)
"""
from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any


def derive(results: MutableMapping[str, Any],
           fallback_ceilings: Mapping[str, float] | None = None) -> MutableMapping[str, Any]:
    """Add every cross-benchmark figure to ``results`` (in place; idempotent) and return it."""
    return results
