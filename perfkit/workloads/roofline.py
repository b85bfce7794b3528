"""The roofline: arithmetic intensity, attained FLOP/s, and which roof bounds a model or layer.

Intensity is FLOPs over bytes moved: an analytic minimum (inputs, weights and outputs once, as
perfkit.workloads.paleo counts them) and, where Nsight Compute can read the counters, the measured DRAM
traffic ``dram__bytes_read.sum + dram__bytes_write.sum`` of the region. The ncu path runs this
module as a child process (``python -m perfkit.workloads.roofline MODEL N,C,H,W``) that wraps one forward pass
in an NVTX range, so only that region's kernels are profiled.
"""
from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
from dataclasses import dataclass

from perfkit.errors import HardwareError, MeasurementError

NCU_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
NVTX_RANGE = "perfkit-region"
NCU_TIMEOUT_S = 300


@dataclass(frozen=True)
class Point:
    """One model or layer on the chart."""

    label: str
    flops: float
    bytes: float
    seconds: float
    precision: str
    bytes_source: str = "analytic minimum"

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def attained_tflops(self) -> float:
        return self.flops / self.seconds / 1e12


@dataclass(frozen=True)
class Placement:
    """Where a point sits under a roof: its bound and the fraction of the roof it attains."""

    bound: str
    roof_tflops: float
    of_roof: float
    ridge_intensity: float


def place(point: Point, peak_tflops: float, bandwidth_gbps: float) -> Placement:
    ridge = peak_tflops * 1e12 / (bandwidth_gbps * 1e9)
    roof = min(peak_tflops, point.intensity * bandwidth_gbps / 1e3)
    bound = "memory" if point.intensity < ridge else "compute"
    return Placement(bound, roof, point.attained_tflops / roof, ridge)


def ncu_unavailable_reason() -> str | None:
    """Why ncu cannot measure DRAM bytes here, or None when it is on the PATH."""
    if shutil.which("ncu") is None:
        return "Nsight Compute (ncu) is not on the PATH; DRAM bytes use the analytic minimum only"
    return None


def parse_ncu_csv(text: str) -> int:
    """Sum of the DRAM read and write bytes over every kernel of an ``ncu --csv --print-units base`` report."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    total, seen = 0.0, 0
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if row.get("Metric Name") in NCU_METRICS:
            unit = row.get("Metric Unit", "byte")
            if unit not in ("byte", "bytes"):
                raise MeasurementError(f"ncu reported {row['Metric Name']} in {unit!r}; run it with --print-units base")
            total += float(row["Metric Value"].replace(",", ""))
            seen += 1
    if not seen:
        raise MeasurementError("ncu's report holds no DRAM byte counts (no kernel in the profiled range?)")
    return int(total)


def measure_dram_bytes(model: str, input_shape: tuple[int, ...], timeout_s: float = NCU_TIMEOUT_S) -> int:
    """DRAM bytes of one forward pass of ``model``, measured by Nsight Compute in a child process."""
    reason = ncu_unavailable_reason()
    if reason:
        raise HardwareError(reason)
    command = ["ncu", "--csv", "--print-units", "base", "--metrics", ",".join(NCU_METRICS),
               "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/",
               sys.executable, "-m", "perfkit.workloads.roofline", model, ",".join(map(str, input_shape))]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise MeasurementError(f"ncu did not finish profiling {model} within {timeout_s:.0f} s") from None
    output = done.stdout + done.stderr
    if "ERR_NVGPUCTRPERM" in output:
        raise HardwareError("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM: "
                            "profiling is restricted to admin users)")
    if done.returncode != 0:
        tail = " | ".join(output.strip().splitlines()[-3:])
        raise MeasurementError(f"ncu failed (exit {done.returncode}): {tail}")
    return parse_ncu_csv(done.stdout)


def _profiled_region(model_name: str, shape_text: str) -> None:
    """The child process ncu runs: warm up, then one forward pass inside the NVTX range."""
    import torch

    from perfkit.workloads import models

    shape = models.parse_shape(shape_text, 4)
    model = models.build(model_name).cuda().eval()
    x = torch.randn(shape, device="cuda")
    with torch.no_grad():
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(NVTX_RANGE)
        model(x)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    _profiled_region(sys.argv[1], sys.argv[2])
