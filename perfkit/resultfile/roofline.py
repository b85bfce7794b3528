"""The roofline: which roof bounds a point of (arithmetic intensity, attained FLOP/s), and how close it gets.

Intensity is FLOPs over bytes moved (an analytic minimum, or DRAM bytes measured by ncu); the roofs are
a precision's peak FLOP/s and the copy bandwidth, measured on the machine.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    """Where a point sits under a roof: its bound and the fraction of the roof it attains."""

    bound: str
    roof_tflops: float
    share_of_roof: float
    ridge_intensity: float


def place(intensity: float, attained_tflops: float, peak_tflops: float, bandwidth_gbps: float) -> Placement:
    ridge = peak_tflops * 1e12 / (bandwidth_gbps * 1e9)
    roof = min(peak_tflops, intensity * bandwidth_gbps / 1e3)
    bound = "memory" if intensity < ridge else "compute"
    return Placement(bound, roof, attained_tflops / roof, ridge)
