"""The worker entry point torchrun starts (``python -m perfkit.parallel.jobs SPEC OUTDIR``): runs one job kind.

``scaling`` (perfkit.parallel.ddp), ``allreduce`` (perfkit.parallel.collectives), ``accuracy``
(perfkit.parallel.accuracy).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfkit.errors import UsageError
from perfkit.measure import capacity
from perfkit.parallel import accuracy, collectives, ddp
from perfkit.parallel.launch import Worker, worker_main

JOBS: dict[str, Callable[[Worker, dict[str, Any]], dict[str, Any]]] = {
    "scaling": ddp.scaling, "allreduce": collectives.allreduce_sweep, "accuracy": accuracy.train_to_accuracy}


def run_job(worker: Worker, spec: dict[str, Any]) -> dict[str, Any] | None:
    """Run the job ``spec`` names, under the run's memory cap (``spec["memory_cap"]``, bytes) if it has one."""
    if spec.get("kind") not in JOBS:
        raise UsageError(f"unknown job kind {spec.get('kind')!r}; one of {', '.join(JOBS)}")
    if spec.get("memory_cap") is not None and worker.device.type == "cuda":
        capacity.apply_cap(int(spec["memory_cap"]), [worker.device])
    return JOBS[spec["kind"]](worker, spec)


if __name__ == "__main__":
    worker_main(run_job)
