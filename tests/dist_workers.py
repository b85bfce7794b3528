"""Jobs for tests/test_distributed.py, run under torchrun as ``python -m tests.dist_workers SPEC OUT``."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from perfkit.parallel import ddp
from perfkit.parallel.launch import Worker, worker_main


def tiny() -> nn.Module:
    """A four-layer CNN that trains in milliseconds on CIFAR-shaped input."""
    return nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)
    )


def job(worker: Worker, spec: dict[str, Any]) -> dict[str, Any] | None:
    action = spec["action"]
    if "pid_dir" in spec:
        (Path(spec["pid_dir"]) / f"{worker.rank}.pid").write_text(str(os.getpid()))
    if action == "crash" and worker.rank == spec.get("crash_rank", 1):
        raise ValueError(f"boom on rank {worker.rank}")
    if action == "hang":
        time.sleep(3600)
    if action == "perturb":
        torch.manual_seed(0)
        model = tiny()
        if worker.rank == 1:
            with torch.no_grad():
                next(model.parameters())[0].add_(0.25)
        return {"difference": ddp.replica_difference(model)}
    if action == "launcher":
        return {"world": worker.world, "torchrun": "TORCHELASTIC_RUN_ID" in os.environ}
    return {"world": worker.world}


if __name__ == "__main__":
    worker_main(job)
