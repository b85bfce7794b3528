"""Whether the layers' NVML power loop can be shorter (docs/findings.md, "The H100 nightly's five minutes"):
on one GPU, each layer runs 1.25 s back to back (standing for its timing), then each lead-in + window protocol
in turn, three times; the mean power each read (energy counter over the window):

    python experiments/power_window.py
"""
from __future__ import annotations

import statistics
import time

import torch

from perfkit.measure import power, timing
from perfkit.workloads import layers

PROTOCOLS = {"1 s + 2 s (kept)": (1.0, 2.0), "0.25 s + 1 s": (0.25, 1.0), "1 s + 1 s": (1.0, 1.0)}
CASES = (("conv", "forward"), ("linear", "forward"), ("relu", "forward"), ("conv", "forward_backward"))


def main() -> None:
    device = torch.device("cuda")
    for name, pass_ in CASES:
        case = layers.by_name(name)
        run = layers.LayerRun(case, case.full_input, device, pass_)
        per_call = timing.warm_for(run, 0.5)
        read: dict[str, list[float]] = {label: [] for label in PROTOCOLS}
        for _ in range(3):
            for label, (lead_in, window) in PROTOCOLS.items():
                timing.run_for(run, 1.25, per_call)
                time.sleep(0.05)  # its memory peak and bookkeeping
                timing.run_for(run, lead_in, per_call)
                with power.PowerSampler(device.index or 0) as sampler:
                    timing.run_for(run, window, per_call)
                read[label].append(sampler.trace.avg_power_w)
        print(name, pass_, " | ".join(f"{label}: {statistics.mean(v):.1f} W ({min(v):.1f}-{max(v):.1f})"
                                      for label, v in read.items()), flush=True)


if __name__ == "__main__":
    from script_line import run

    run(__doc__, lambda _: main(), most=0, gpu=True)
