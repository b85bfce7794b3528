"""DRAM bytes of a forward pass measured by Nsight Compute, for the roofline's measured intensity.

The counters ``dram__bytes_read.sum + dram__bytes_write.sum`` are read over one region: ncu runs a child
process (perfkit.workloads.ncu_forward's, given as its command line) that wraps one forward pass in the
NVTX range ``NVTX_RANGE``, so only that region's kernels are profiled.
"""
from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
from collections.abc import Sequence

from perfkit.errors import HardwareError, MeasurementError

NCU_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
NVTX_RANGE = "perfkit-region"
NCU_TIMEOUT_S = 300


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


def measure_dram_bytes(child: Sequence[str], what: str, timeout_s: float = NCU_TIMEOUT_S) -> int:
    """DRAM bytes of the NVTX range ``NVTX_RANGE`` of the child process ``python *child`` (``what`` it
    profiles, for a message), measured by Nsight Compute."""
    reason = ncu_unavailable_reason()
    if reason:
        raise HardwareError(reason)
    command = ["ncu", "--csv", "--print-units", "base", "--metrics", ",".join(NCU_METRICS),
               "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/",
               sys.executable, *child]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise MeasurementError(
            f"ncu did not finish profiling {what} within {timeout_s:.0f} s"
        ) from None
    output = done.stdout + done.stderr
    if "ERR_NVGPUCTRPERM" in output:
        raise HardwareError("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM: "
                            "profiling is restricted to admin users)")
    if done.returncode != 0:
        tail = " | ".join(output.strip().splitlines()[-3:])
        raise MeasurementError(f"ncu failed (exit {done.returncode}): {tail}")
    return parse_ncu_csv(done.stdout)
