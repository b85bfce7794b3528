"""Run a measurement on one process per GPU through torchrun, from inside a benchmark.

The launcher side (``launch``) starts ``python -m torch.distributed.run`` in its own session with a job spec
in a private folder, waits with a timeout, and collects the JSON that global rank 0 wrote (the ranks gather
their figures to it). A one-process job on this machine alone (a 1-GPU DDP reference) starts its worker
directly: torchrun's own interpreter and agent took 4-6 s of each such launch on an H100, a tenth of the
data-parallel family's nightly minute and a half, for a rendezvous of one. A failing rank's error text
becomes the benchmark's failure; on timeout or any exception every process is stopped: torchrun gets SIGTERM
(it stops its workers), then anything still alive, workers included, gets SIGKILL. Without rendezvous
arguments torchrun runs ``--standalone``, which takes a free port, so a busy 29500 does not matter; with
``--perfkit-torchrun-args`` the same benchmark spans several machines.

The worker side (``worker_main``) joins the process group (NCCL on GPUs, gloo on CPU), runs the
job and writes its result or its error where the launcher looks.
"""
from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from perfkit import stopping
from perfkit.errors import PerfkitError, UsageError
from perfkit.parallel.records import RESULTS, Job, ScalingJob, job_to_json
from perfkit.resultfile.payloads import Record

DEFAULT_TIMEOUT_S = 900.0
#: How long torchrun gets to stop its workers after SIGTERM before everything is killed.
STOP_GRACE_S = 10.0
RESULT_FILE = "result.json"
#: What torchrun would tell the worker of a one-process job, which ``launch`` starts without it; no
#: MASTER_ADDR, so the worker joins a process group of one through an in-memory store (no port to take).
ALONE_ENV = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}
LOG_TAIL_LINES = 15
#: The launcher's clock when it started the job's processes, so a rank can say what its start-up cost.
LAUNCHED_AT_ENV = "PERFKIT_LAUNCHED_AT"


class DistributedError(PerfkitError):
    """A distributed job failed: a rank raised, a process died, or the job ran past its timeout."""


class NotRankZero(PerfkitError):
    """This machine ran only ranks other than 0; the node holding rank 0 reports the results."""


def parse_torchrun_args(text: str | None) -> tuple[str, ...]:
    """``--perfkit-torchrun-args`` split like a shell would; torchrun's own options only."""
    args = tuple(shlex.split(text or ""))
    if any(a in ("-m", "--module", "--no-python") or a.endswith(".py") for a in args):
        raise UsageError(
            "--perfkit-torchrun-args takes torchrun's rendezvous options (--nnodes, --rdzv-endpoint, "
            "--rdzv-id, --node-rank ...); the program to run is the benchmark's"
        )
    return args


def torchrun_command(entry: Sequence[str], nproc: int, torchrun_args: Sequence[str] = (),
                     log_dir: Path | None = None) -> list[str]:
    """The torchrun command line: ``--standalone`` unless rendezvous arguments are given; torch elastic's logs
    go to ``log_dir`` (without one it leaves a ``torchelastic_*`` folder in the temp dir at every launch)."""
    if nproc < 1:
        raise UsageError(f"a distributed job needs at least one process, not {nproc}")
    command = [sys.executable, "-m", "torch.distributed.run", *(torchrun_args or ("--standalone",))]
    given = {a.split("=")[0].replace("_", "-") for a in torchrun_args}
    if "--nproc-per-node" not in given:
        command += ["--nproc-per-node", str(nproc)]
    if log_dir is not None and "--log-dir" not in given:
        command += ["--log-dir", str(log_dir)]
    return command + list(entry)


def launch(module: str, job: Mapping[str, Any], nproc: int, *, torchrun_args: Sequence[str] = (),
           timeout_s: float = DEFAULT_TIMEOUT_S, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run ``python -m module SPEC OUTDIR`` on ``nproc`` local ranks and return rank 0's result."""
    with tempfile.TemporaryDirectory(prefix="perfkit-torchrun-") as folder:
        out = Path(folder)
        spec = out / "job.json"
        spec.write_text(json.dumps(dict(job)))
        entry = ["-m", module, str(spec), str(out)]
        alone = nproc == 1 and not torchrun_args
        command = [sys.executable, *entry] if alone else torchrun_command(entry, nproc, torchrun_args,
                                                                          out / "elastic")
        log_path = out / "torchrun.log"
        with (
            open(log_path, "w") as log,
            _running(command, log, _environment(env, alone), out) as process,
        ):
            try:
                code = process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise DistributedError(
                    f"{module} on {nproc} process(es) ran past {timeout_s:.0f} s and was stopped (all "
                    f"ranks killed); last output: {_tail(log_path)}"
                ) from None
        errors = sorted(
            (json.loads(p.read_text()) for p in out.glob("error.*.json")), key=lambda e: e["time"]
        )
        if errors:  # the earliest: ranks that fail later usually fail because their peer died
            first = errors[0]
            raise DistributedError(f"rank {first['rank']} of {first['world']} failed: {first['error']}"
                                   f" (at {first['where']})")
        result = out / RESULT_FILE
        if code != 0:
            launcher = "its worker" if alone else "torchrun"
            raise DistributedError(f"{launcher} exited with code {code} and no rank reported an error "
                                   f"(a rank crashed or was killed); last output: {_tail(log_path)}")
        if not result.exists():
            raise NotRankZero("this machine did not hold rank 0; the node that did records the results")
        payload: dict[str, Any] = json.loads(result.read_text())
        return payload


def _environment(env: Mapping[str, str] | None, alone: bool) -> dict[str, str]:
    """The job's environment: this process's with ``env`` on top; a worker started alone gets ALONE_ENV
    and no rendezvous address (one inherited from a cluster's job would make it wait for peers)."""
    out = {**os.environ, **(env or {}), LAUNCHED_AT_ENV: repr(time.time())}
    if alone:
        for name in ("MASTER_ADDR", "MASTER_PORT"):
            out.pop(name, None)
        out.update(ALONE_ENV)
    return out


def run(
    job: Job, nproc: int, *, torchrun_args: Sequence[str] = (), timeout_s: float = DEFAULT_TIMEOUT_S
) -> Record:
    """``job`` on ``nproc`` ranks (perfkit.parallel.jobs); rank 0's result, read as the job's result
    record."""
    env = job.environment() if isinstance(job, ScalingJob) else None
    raw = launch("perfkit.parallel.jobs", job_to_json(job), nproc, torchrun_args=torchrun_args,
                 timeout_s=timeout_s, env=env)
    return RESULTS[job.TAG].from_json(raw, f"rank 0's result of a {job.TAG} job")


@contextlib.contextmanager
def _running(
    command: list[str], log: Any, env: Mapping[str, str], out: Path
) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=dict(env),
                               start_new_session=True)
    try:
        yield process
    finally:
        _stop(process, out)


def _stop(process: subprocess.Popen[bytes], out: Path) -> None:
    """SIGTERM torchrun's session (torchrun then stops its workers), then SIGKILL whatever is left."""
    workers = [int(text) for p in out.glob("pid.*") if (text := p.read_text().strip()).isdigit()]
    if process.poll() is None:
        stopping.stop_session(process, signal.SIGTERM, STOP_GRACE_S)
    deadline = time.monotonic() + STOP_GRACE_S
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in filter(_alive, workers):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _tail(path: Path) -> str:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return " | ".join(lines[-LOG_TAIL_LINES:]) or "(none)"


@dataclass(frozen=True)
class Worker:
    """This process's place in the job: global rank, world size and the device it drives; ``launched_at``:
    when the launcher started it (time.time()), None where nothing launched it."""

    rank: int
    local_rank: int
    world: int
    device: torch.device
    launched_at: float | None = None

    def since_launch(self) -> float | None:
        """Seconds from the launch to now: the interpreter's start, its imports, the process group."""
        return None if self.launched_at is None else time.time() - self.launched_at


def worker_main(job: Callable[[Worker, dict[str, Any]], dict[str, Any] | None],
                argv: Sequence[str] | None = None) -> None:
    """Entry point of a worker module: ``python -m module SPEC OUTDIR`` under torchrun.

    Writes this process's pid (so the launcher can always kill it), joins the process group, runs
    ``job`` and has rank 0 write what ``job`` returned; any exception is written for the launcher.
    """
    spec_path, out_dir = (argv or sys.argv[1:])[:2]
    out = Path(out_dir)
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    (out / f"pid.{rank}").write_text(str(os.getpid()))
    try:
        spec = json.loads(Path(spec_path).read_text())
        device = _device(spec.get("device", "cuda"), local_rank)
        backend = "nccl" if device.type == "cuda" else "gloo"
        if device.type == "cuda":
            torch.cuda.set_device(device)
        device_id = device if device.type == "cuda" else None
        if world == 1 and "MASTER_ADDR" not in os.environ:  # started alone (ALONE_ENV), not by torchrun
            dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1,
                                    device_id=device_id)
        else:
            dist.init_process_group(backend, device_id=device_id)
        launched = os.environ.get(LAUNCHED_AT_ENV)
        result = job(Worker(rank, local_rank, world, device, float(launched) if launched else None), spec)
        if rank == 0 and result is not None:
            tmp = out / f"{RESULT_FILE}.tmp"
            tmp.write_text(json.dumps(result))
            tmp.replace(out / RESULT_FILE)
        dist.destroy_process_group()
    except BaseException as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f"{Path(frame.filename).name}:{frame.lineno}" if frame else "?"
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        record = {
            "rank": rank,
            "world": world,
            "time": time.time(),
            "error": f"{type(exc).__name__}: {message}",
            "where": where,
            "traceback": traceback.format_exc(),
        }
        (out / f"error.{rank}.json").write_text(json.dumps(record))
        raise
    # The job is done and its result is on disk. Leave without the interpreter's teardown: with gloo, a
    # background thread's C++ destructor sometimes aborts the exiting process ("terminate called without
    # an active exception"), which torchrun reports as a failed rank (seen on 1 of ~8 two-rank CPU jobs).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _device(kind: str, local_rank: int) -> torch.device:
    if kind == "cuda":
        if torch.cuda.device_count() <= local_rank:
            raise DistributedError(
                f"local rank {local_rank} has no GPU ({torch.cuda.device_count()} visible)"
            )
        return torch.device("cuda", local_rank)
    return torch.device("cpu")
