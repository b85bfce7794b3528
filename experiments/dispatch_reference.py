"""Whether a host reference timed in the same process follows a launch-bound training step's pace between
fresh processes and machines (issue 44 part 6, issue 47 part 2's host term; docs/findings.md, 2026-12-01): in
one fresh process, bursts of ResNet-18 CIFAR batch-128 training steps (the step the 1-GPU DDP/DataParallel
benchmarks train, without their wrappers; paced by the host's dispatch) alternate with bursts of two
references, each pair sharing the host's moment:

- ``launch``: tiny in-place CUDA ops through PyTorch's dispatcher (the launch pace; a torch dispatch
  regression would move it with the step and so be hidden in a ratio over it);
- ``python``: pure-Python arithmetic (the core's single-thread pace, independent of the code under test).

One JSON line to stdout. On a GPU:

    for i in 1 2 3 4 5 6; do python experiments/dispatch_reference.py >> dispatch.jsonl; done
"""
from __future__ import annotations

import json
import os
import socket
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from perfkit.workloads import training

STEPS_PER_BURST, LAUNCHES_PER_BURST, CYCLES, WARM_STEPS = 8, 400, 40, 30


def _timed(burst: Callable[[], Any], per: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    burst()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / per


def _python_work() -> int:
    total = 0
    for i in range(100_000):
        total += i * i % 7
    return total


def main() -> None:
    torch.backends.cudnn.benchmark = False
    device = torch.device("cuda")
    _, step = training.model_step("resnet18", 128, (3, 32, 32), device)
    tiny = torch.zeros(1, device=device)

    def steps() -> None:
        for _ in range(STEPS_PER_BURST):
            step()

    def launches() -> None:
        for _ in range(LAUNCHES_PER_BURST):
            tiny.add_(1.0)

    for _ in range(WARM_STEPS):
        step()
    launches()
    rows = []
    for _ in range(CYCLES):
        rows.append((_timed(steps, STEPS_PER_BURST), _timed(launches, LAUNCHES_PER_BURST),
                     _timed(_python_work, 1)))
    step_s, launch_s, python_s = (statistics.median(col) for col in zip(*rows))
    out: dict[str, Any] = {
        "pid": os.getpid(), "host": socket.gethostname(), "step_ms": step_s * 1e3,
        "launch_us": launch_s * 1e6, "python_ms": python_s * 1e3,
        "step_over_launch": statistics.median(s / lo for s, lo, _ in rows),
        "step_over_python": statistics.median(s / p for s, _, p in rows),
        "step_min_ms": min(r[0] for r in rows) * 1e3,
        "cycles_ms": [[round(v * 1e3, 4) for v in r] for r in rows],
    }
    print(json.dumps(out))


if __name__ == "__main__":
    from script_line import run

    run(__doc__, lambda _: main(), most=0, gpu=True)
