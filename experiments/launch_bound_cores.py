"""Whether a launch-bound training step's spread between fresh processes is its cores' (docs/findings.md, "The
H100 nightly's five minutes, launch-bound steps on each core"): in one fresh process, ResNet-18 training steps
timed as unpinned bursts, then as bursts on each core in turn with every thread of the process pinned to it
(perfkit.measure.cores.pinned), three passes; one JSON line to stdout. On a GPU:

    for i in 1 2 3 4; do python experiments/launch_bound_cores.py >> launch.jsonl; done
"""
from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from perfkit.measure import cores
from perfkit.workloads import training

STEPS_PER_BURST, PASSES, UNPINNED_BURSTS = 8, 3, 48
WORKLOADS = (("r18-cifar-b128", "resnet18", 128, (3, 32, 32)), ("r18-224-b32", "resnet18", 32, (3, 224, 224)))


def _burst(step: Callable[[], Any]) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(STEPS_PER_BURST):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / STEPS_PER_BURST


def workload(name: str, batch: int, shape: tuple[int, ...], device: torch.device) -> dict[str, Any]:
    """Seconds a step: the unpinned bursts' mean, each core's fastest (median and fastest over the cores)."""
    _, step = training.model_step(name, batch, shape, device)
    for _ in range(30):
        step()
    unpinned = [_burst(step) for _ in range(UNPINNED_BURSTS)]
    fastest: dict[int, float] = {}
    for _ in range(PASSES):
        for core in cores.swept(cores.usable()):
            with cores.pinned(core, whole_process=True):
                fastest[core] = min(fastest.get(core, 1e9), _burst(step))
    return {"unpinned_mean": statistics.mean(unpinned), "unpinned_min": min(unpinned),
            "core_median": statistics.median(fastest.values()), "core_min": min(fastest.values()),
            "per_core_ms": {str(c): round(v * 1e3, 3) for c, v in fastest.items()}}


def main() -> None:
    torch.backends.cudnn.benchmark = False
    device = torch.device("cuda")
    out: dict[str, Any] = {"pid": os.getpid()}
    for label, name, batch, shape in WORKLOADS:
        out[label] = workload(name, batch, shape, device)
    print(json.dumps(out))


if __name__ == "__main__":
    from script_line import run

    run(__doc__, lambda _: main(), most=0, gpu=True)
