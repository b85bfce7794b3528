"""The worker entry point torchrun starts (``python -m perfkit.parallel.jobs SPEC OUTDIR``): runs one job
kind.

``scaling`` (perfkit.parallel.ddp), ``allreduce`` (perfkit.parallel.collectives), ``accuracy``
(perfkit.parallel.accuracy).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfkit.measure import capacity
from perfkit.parallel import accuracy, collectives, ddp
from perfkit.parallel.launch import Worker, worker_main
from perfkit.parallel.records import AccuracyJob, AllreduceJob, ScalingJob, job_from_json

RUNNERS: dict[str, Callable[[Worker, Any], Any]] = {
    ScalingJob.TAG: ddp.scaling, AllreduceJob.TAG: collectives.allreduce_sweep,
    AccuracyJob.TAG: accuracy.train_to_accuracy}


def run_job(worker: Worker, spec: dict[str, Any]) -> dict[str, Any] | None:
    """Run the job ``spec`` describes (perfkit.parallel.records), under the run's memory cap if it has one."""
    job = job_from_json(spec)
    cap = getattr(job, "memory_cap", None)
    if cap is not None and worker.device.type == "cuda":
        capacity.apply_cap(int(cap), [worker.device])
    return RUNNERS[job.TAG](worker, job).to_json()


if __name__ == "__main__":
    worker_main(run_job)
