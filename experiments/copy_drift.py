"""Whether the device copy (test_copy_bandwidth) times faster late in a night, as it read 0.4-0.9% faster in
reverse-order nights (docs/findings.md, 2026-12-06, late night): one process times the benchmark's own 4 GiB
copy in blocks, cold, after a minute of GEMM heat, after allocator churn, on buffers allocated before and
after each, and after idling, with the GPU's clocks, temperature and power beside every block. Each block's
line lands in OUT as it finishes.

    python experiments/copy_drift.py OUT.jsonl [HEAT_S]
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from perfkit.measure import ceilings, timing
from perfkit.measure.nvml import device_handle, nvml_open

GiB = 2**30
BLOCKS, CALLS = 8, 25


def _state(nvml, handle) -> dict[str, float]:
    """The GPU's clocks (MHz), temperature (C) and power (W) now."""
    return {"sm_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
            "mem_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
            "temp_c": nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
            "power_w": nvml.nvmlDeviceGetPowerUsage(handle) / 1e3}


def time_copy(work: ceilings.Operation) -> float:
    """The median over BLOCKS blocks of the copy's seconds per call, CALLS back to back per block (events)."""
    return timing.time_cuda_events(work.run, BLOCKS, 0, mode="batched", batch=CALLS).median


def main(out: Path, heat_s: float) -> None:
    device = torch.device("cuda")
    t0 = time.perf_counter()
    with nvml_open() as nvml, out.open("a") as sink:
        handle = device_handle(nvml, 0)

        def block(phase: str, work: ceilings.Operation) -> None:
            before = _state(nvml, handle)
            seconds = time_copy(work)
            line = {"phase": phase, "t_s": round(time.perf_counter() - t0, 1), "copy_ms": seconds * 1e3,
                    "before": before, "after": _state(nvml, handle)}
            sink.write(json.dumps(line) + "\n")
            sink.flush()
            print(f"{phase:28s} {seconds * 1e3:.4f} ms  {line['after']}", flush=True)

        first = ceilings.copy_workload(device, 4 * GiB)
        block("cold, no warm-up", first)
        timing.warm_for(first.run)
        block("after the bench's 0.5 s warm", first)
        block("again", first)
        gemm = ceilings.matmul_workload(device, 8192, "bf16")
        timing.warm_for(gemm.run, heat_s)
        block("after GEMM heat, same buffers", first)
        fresh = ceilings.copy_workload(device, 4 * GiB)
        block("after GEMM heat, new buffers", fresh)
        del gemm, fresh
        churn = [torch.empty(GiB // 4, dtype=torch.float32, device=device) for _ in range(40)]
        del churn
        block("after churn, same buffers", first)
        after_churn = ceilings.copy_workload(device, 4 * GiB)
        block("after churn, new buffers", after_churn)
        del after_churn
        torch.cuda.empty_cache()
        emptied = ceilings.copy_workload(device, 4 * GiB)
        block("after empty_cache, new", emptied)
        del emptied
        time.sleep(20)
        block("after 20 s idle, no warm", first)
        timing.warm_for(first.run)
        block("after 20 s idle, warmed", first)


if __name__ == "__main__":
    from script_line import run

    run(__doc__, lambda args: main(Path(args[0]), float(args[1]) if len(args) > 1 else 60.0), least=1, most=2,
        gpu=True)
