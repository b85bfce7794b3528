"""DRAM bytes of a forward pass measured by Nsight Compute, for the roofline's measured intensity.

The counters ``dram__bytes_read.sum + dram__bytes_write.sum`` are read over one region: ncu runs
this module as a child process (``python -m perfkit.measure.ncu MODEL N,C,H,W``, a :class:`Region` on
both sides of the process boundary) that wraps one forward pass in an NVTX range, so only that
region's kernels are profiled.
"""
from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.errors import HardwareError, MeasurementError

NCU_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
NVTX_RANGE = "perfkit-region"
NCU_TIMEOUT_S = 300


@dataclass(frozen=True)
class Region:
    """What the profiled child runs: one forward pass of ``model`` on a random input of ``input_shape``."""

    model: str
    input_shape: tuple[int, ...]

    def argv(self) -> list[str]:
        return ["-m", "perfkit.measure.ncu", self.model, ",".join(map(str, self.input_shape))]

    @classmethod
    def from_argv(cls, argv: Sequence[str]) -> Region:
        from perfkit.workloads import models  # the child imports torch anyway

        model, shape = argv
        return cls(model, models.parse_shape(shape, 4))


def ncu_unavailable_reason() -> str | None:
    """Why ncu cannot measure DRAM bytes here, or None when it is on the PATH."""
    if shutil.which("ncu") is None:
        return "Nsight Compute (ncu) is not on the PATH; DRAM bytes use the analytic minimum only"
    return None


def parse_ncu_csv(text: str) -> int:
    """Sum of the DRAM read and write bytes over every kernel of an ``ncu --csv --print-units base``
    report."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    total, seen = 0.0, 0
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if row.get("Metric Name") in NCU_METRICS:
            unit = row.get("Metric Unit", "byte")
            if unit not in ("byte", "bytes"):
                raise MeasurementError(
                    f"ncu reported {row['Metric Name']} in {unit!r}; run it with --print-units base"
                )
            total += float(row["Metric Value"].replace(",", ""))
            seen += 1
    if not seen:
        raise MeasurementError("ncu's report holds no DRAM byte counts (no kernel in the profiled range?)")
    return int(total)


def measure_dram_bytes(region: Region, timeout_s: float = NCU_TIMEOUT_S) -> int:
    """DRAM bytes of one forward pass of ``region``, measured by Nsight Compute in a child process."""
    reason = ncu_unavailable_reason()
    if reason:
        raise HardwareError(reason)
    command = ["ncu", "--csv", "--print-units", "base", "--metrics", ",".join(NCU_METRICS),
               "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/",
               sys.executable, *region.argv()]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise MeasurementError(
            f"ncu did not finish profiling {region.model} within {timeout_s:.0f} s"
        ) from None
    output = done.stdout + done.stderr
    if "ERR_NVGPUCTRPERM" in output:
        raise HardwareError("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM: "
                            "profiling is restricted to admin users)")
    if done.returncode != 0:
        tail = " | ".join(output.strip().splitlines()[-3:])
        raise MeasurementError(f"ncu failed (exit {done.returncode}): {tail}")
    return parse_ncu_csv(done.stdout)


def _profiled_region(region: Region) -> None:
    """The child process ncu runs: warm up, then one forward pass inside the NVTX range."""
    import torch

    from perfkit.workloads import models

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
