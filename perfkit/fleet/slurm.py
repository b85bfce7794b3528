"""A selection submitted to Slurm through submitit, R replicates per target as one job array, watched until
every job has ended.

submitit submits, pickles the job's call and brings back its answer; the progress shown is Slurm's own queue
(``squeue --states=all``: queued and why, running and the node, and how a job ended), which works on a
cluster without accounting, where submitit's ``sacct`` reads nothing."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfkit.errors import PerfkitError, UsageError
from perfkit.fleet.job import TAIL_LINES, JobOutcome, run_selection

#: Seconds between two looks at the queue
POLL_S = 2.0
#: Seconds a job that has ended (or left the queue) may take to show its answer: it is written before the job
#: ends, but a shared filesystem's attribute cache can hide it for a while
ANSWER_GRACE_S = 60.0
#: Seconds a job may stay queued before the fleet cancels it and says why Slurm kept it (a night's worth)
QUEUE_LIMIT_S = 12 * 3600.0
#: Slurm's states of a job that has ended
ENDED = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
                   "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"})


@dataclass(frozen=True)
class Target:
    """Where one set of replicates runs: a partition, a generic resource (``--gres``, e.g. gpu:h100:1), or
    both."""

    partition: str | None = None
    gres: str | None = None

    @property
    def name(self) -> str:
        return "+".join(part for part in (self.partition, self.gres) if part)

    @property
    def slug(self) -> str:
        """The name as a folder name."""
        return re.sub(r"[^A-Za-z0-9._-]+", "-", self.name)

    def parameters(self) -> dict[str, str]:
        found = {"slurm_partition": self.partition, "slurm_gres": self.gres}
        return {key: value for key, value in found.items() if value}


@dataclass
class Replicate:
    """One job of the array: its target, its place, submitit's handle, where its results go, and what the
    queue last said of it."""

    target: Target
    index: int
    job: Any  # submitit.Job[JobOutcome]
    results: Path
    state: str = "queued"
    reason: str = ""  # why Slurm keeps it queued
    ended_at: float | None = None  # when it was first seen ended or gone, its answer not yet there
    queued_at: float = field(default_factory=time.monotonic)
    outcome: JobOutcome | None = None
    failure: str = ""

    @property
    def label(self) -> str:
        return f"{self.target.name} replicate {self.index + 1} (job {self.job.job_id})"


@dataclass
class Fleet:
    """Every replicate of a night, and the folder they write in."""

    folder: Path
    replicates: list[Replicate] = field(default_factory=list)

    @property
    def done(self) -> list[Replicate]:
        return [r for r in self.replicates if r.outcome is not None and r.outcome.results is not None]

    @property
    def failed(self) -> list[Replicate]:
        return [r for r in self.replicates if r.failure]


def submit(targets: Sequence[Target], replicas: int, checkout: Path, pytest_args: Sequence[str], folder: Path,
           timeout_min: int) -> Fleet:
    """One job array per target, ``replicas`` jobs each, every job alone on its node (replicates that share a
    node would measure each other), running the selection in ``checkout``. A submission that fails cancels
    what was submitted before it."""
    _check(targets)
    submitit = _submitit()
    fleet = Fleet(folder)
    try:
        for target in targets:
            executor = submitit.AutoExecutor(folder=folder / "slurm" / target.slug, cluster="slurm")
            executor.update_parameters(timeout_min=timeout_min, slurm_job_name=f"perfkit-{target.slug}",
                                       slurm_exclusive=True, **target.parameters())
            results = [folder / "results" / target.slug / f"replicate-{i + 1}.json" for i in range(replicas)]
            results[0].parent.mkdir(parents=True, exist_ok=True)
            with executor.batch():
                jobs = [executor.submit(run_selection, str(checkout), tuple(pytest_args), str(path))
                        for path in results]
            fleet.replicates += [Replicate(target, i, job, path)
                                 for i, (job, path) in enumerate(zip(jobs, results))]
    except KeyboardInterrupt:  # stopped while submitting: nothing submitted is left running
        cancel(fleet)
        raise
    except Exception as exc:  # noqa: BLE001 - sbatch refused: nothing half-submitted is left running
        cancel(fleet)
        raise PerfkitError(f"Slurm refused the fleet's jobs ({last_line(exc)}); "
                           f"{len(fleet.replicates)} job(s) submitted before were cancelled") from None
    return fleet


def _submitit() -> Any:
    try:
        import submitit
    except ImportError:
        raise UsageError("perfkit fleet submits through submitit: pip install -e '.[fleet]'") from None
    missing = [tool for tool in ("sbatch", "squeue", "scancel") if shutil.which(tool) is None]
    if missing:
        raise UsageError(f"perfkit fleet runs on a Slurm cluster: {', '.join(missing)} not found on PATH")
    return submitit


def _check(targets: Sequence[Target]) -> None:
    if not targets:
        raise UsageError("name where the fleet runs: --partition NAME or --gres KIND (several of either)")
    slugs = [t.slug for t in targets]
    twice = sorted({s for s in slugs if slugs.count(s) > 1})
    if twice:
        raise UsageError(f"the target {twice[0]} is named twice; each partition or gres once (--replicas "
                         "sets how many runs each gets)")


def watch(fleet: Fleet, say: Callable[[str], None], poll_s: float = POLL_S,
          grace_s: float = ANSWER_GRACE_S, queue_limit_s: float = QUEUE_LIMIT_S) -> Fleet:
    """Until every job has ended: each change of a job's state said once (queued and why, running on its
    node, done, failed with its log's last lines); a job still queued after ``queue_limit_s`` is cancelled
    and named with Slurm's reason (a partition down, a node that never frees). A queue that cannot be read is
    read again, never taken for an empty one."""
    for replicate in fleet.replicates:
        say(f"perfkit fleet: {replicate.label}: queued")
    open_jobs = list(fleet.replicates)
    while open_jobs:
        queue = queue_states([r.job.job_id for r in open_jobs])
        if queue is not None:
            ended = [r for r in open_jobs if _look(r, queue.get(r.job.job_id), say, grace_s, queue_limit_s)]
            open_jobs = [r for r in open_jobs if r not in ended]
        if open_jobs:
            time.sleep(poll_s)
    return fleet


def _look(replicate: Replicate, listed: tuple[str, str, str] | None, say: Callable[[str], None],
          grace_s: float, queue_limit_s: float) -> bool:
    """What the queue says of one job now, said where it changed; whether the job has ended."""
    state, node, reason = listed or ("", "", "")
    reason = "" if reason == "None" else reason  # squeue's word for a job not yet considered
    if state == "PENDING" and reason and reason != replicate.reason:
        replicate.reason = reason
        say(f"perfkit fleet: {replicate.label}: queued ({reason})")
    if state == "PENDING" and time.monotonic() - replicate.queued_at > queue_limit_s:
        replicate.job.cancel(check=False)
        why = replicate.reason or "no reason given"
        _failed(replicate, f"still queued after {queue_limit_s / 60:g} min ({why}): cancelled; "
                           "--queue-limit-min waits longer")
        say(f"perfkit fleet: {replicate.label}: {_ending(replicate)}")
        return True
    elif state == "RUNNING" and replicate.state != "running":
        replicate.state = "running"
        say(f"perfkit fleet: {replicate.label}: running on {node}")
    if state and state not in ENDED:
        return False
    if not replicate.job.done():  # ended (or gone from the queue): its answer may show a moment later
        replicate.ended_at = replicate.ended_at or time.monotonic()
        if time.monotonic() - replicate.ended_at < grace_s:
            return False
        _failed(replicate, f"it ended {state or 'and left the queue'} without an answer (cancelled, killed, "
                           "or past its time limit)")
    else:
        _answered(replicate)
    say(f"perfkit fleet: {replicate.label}: {_ending(replicate)}")
    return True


def cancel(fleet: Fleet) -> None:
    """Every job not yet ended, cancelled (the fleet was interrupted, or a later submission failed)."""
    for replicate in fleet.replicates:
        if replicate.outcome is None and not replicate.failure:
            replicate.job.cancel(check=False)


def queue_states(job_ids: Sequence[str]) -> dict[str, tuple[str, str, str]] | None:
    """Slurm's state, node and pending reason of each job it still lists (ended ones too, for a while);
    a pending array's jobs, which the queue lists as one line (``12_[0-3]``), read PENDING each; an array
    Slurm no longer knows (purged after MinJobAge) lists nothing. None where squeue failed otherwise (a
    controller busy or failing over): the caller looks again. The user's ``SQUEUE_*`` settings (a partition
    or user filter) are left out, so they hide no job."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SQUEUE_")}
    states: dict[str, tuple[str, str, str]] = {}
    for array in sorted({job_id.split("_")[0] for job_id in job_ids}):
        listed = subprocess.run(["squeue", "-h", "--states=all", "-o", "%i|%T|%N|%r", "-j", array],
                                capture_output=True, text=True, check=False, env=env)
        if listed.returncode != 0:
            if "invalid job id" in listed.stderr.lower():
                continue  # gone: its jobs' answers decide
            return None
        for line in listed.stdout.splitlines():
            job_id, state, node, reason = (line.split("|") + ["", "", ""])[:4]
            for one in _array_members(job_id.strip(), job_ids):
                states[one] = (state.strip(), node.strip(), reason.strip())
    return states


def _array_members(listed: str, job_ids: Sequence[str]) -> list[str]:
    """The jobs of ``job_ids`` that one line of the queue stands for: itself, or a range ``12_[0-3,5]``."""
    if "[" not in listed:
        return [listed] if listed in job_ids else []
    array, _, ranges = listed.partition("_[")
    members: set[int] = set()
    for part in ranges.rstrip("]").split("%")[0].split(","):
        first, _, last = part.partition("-")
        members.update(range(int(first), int(last or first) + 1))
    return [job_id for job_id in job_ids if job_id.startswith(f"{array}_") and
            int(job_id.split("_")[1]) in members]


def _answered(replicate: Replicate) -> None:
    """Its outcome, or why it has none: no results written, or the job's own exception."""
    try:
        outcome: JobOutcome = replicate.job.result()
    except Exception as exc:  # noqa: BLE001 - every way a job can end without results is said the same way
        _failed(replicate, last_line(exc))
        return
    replicate.outcome = outcome
    if outcome.results is None:  # pytest's own output, then the job's log (a job killed before pytest said
        # anything, as by scancel, has only the log to tell)
        output = "\n    ".join(outcome.tail.splitlines()) or "(none)"
        _failed(replicate, f"it wrote no results (pytest exit {outcome.exit_code}); the end of its output:"
                           f"\n    {output}")
    else:
        replicate.state = "done"


def last_line(exc: Exception) -> str:
    """An exception in one line: its type and the last line of its message (submitit's own failures carry the
    job's traceback, whose last line is the error)."""
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1].strip() if lines else ''}"


def _failed(replicate: Replicate, why: str) -> None:
    replicate.state = "failed"
    replicate.failure = why
    log = _log(replicate).strip().splitlines()[-TAIL_LINES:]
    if log:
        replicate.failure += "\n  last lines of its log:\n    " + "\n    ".join(log)


def _log(replicate: Replicate) -> str:
    parts = []
    for read in (replicate.job.stdout, replicate.job.stderr):
        try:
            parts.append(read() or "")
        except OSError:
            continue
    return "\n".join(parts)


def _ending(replicate: Replicate) -> str:
    outcome = replicate.outcome
    if replicate.failure or outcome is None:
        return f"failed\n  {replicate.failure}"
    return f"done on {outcome.node}{outcome.exit_note}; results in {outcome.results}"
