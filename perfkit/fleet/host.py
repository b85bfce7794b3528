"""A fleet on one host: N one-device runners at once, each replicate a process of its own, on one GPU
(``CUDA_VISIBLE_DEVICES``, by UUID) pinned to the CPUs of that GPU's NUMA node (NVML's affinity); on a host
without a GPU, each on its share of the cores. Replicates beyond N wait for a runner to free.

The benchmarks whose figures a neighbour would disturb (``SERIAL``, or the caller's expression) are left out
of the concurrent runs and run afterwards, one replicate at a time, with the whole host, as the baselines
were measured."""
from __future__ import annotations

import contextlib
import itertools
import os
import queue
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from perfkit import cpus as host_cpus
from perfkit import stopping
from perfkit.errors import HardwareError, UsageError
from perfkit.fleet.job import NOTHING_SELECTED, JobOutcome, pytest_command, run_selection

#: What runs alone after the concurrent replicates, a pytest -k expression: the vector add's CPU references
#: time every core of their affinity in turn against the host's own copy, so a neighbour's load is in their
#: figure; the managed first launches migrate their pages through the host, and two replicates at once read
#: the 100 M-element ones 21-41% slower than single-process runs of the same two-H200 host (docs/fleet.md)
SERIAL = "test_cpu_loop or test_cpu_numpy or (test_gpu_managed and first)"
#: Where the NVIDIA driver shows itself: a host with it has GPUs, and NVML must answer for them
NVIDIA_DRIVER = Path("/proc/driver/nvidia")
#: One GPU of the host as NVML lists it: its UUID and the CPUs of its NUMA node this process may use
Gpu = tuple[str, tuple[int, ...]]


@dataclass(frozen=True)
class Runner:
    """One place a replicate runs: a GPU (its UUID) and the CPUs near it, or a share of a CPU host's cores."""

    name: str
    cpus: tuple[int, ...]
    gpu: str | None = None  # the GPU's UUID, for CUDA_VISIBLE_DEVICES

    def env(self) -> dict[str, str]:
        return {**os.environ, **({"CUDA_VISIBLE_DEVICES": self.gpu} if self.gpu else {})}


@dataclass
class HostReplicate:
    """One replicate's concurrent run and its serial one: what each left, or why it failed."""

    index: int
    outcomes: list[JobOutcome]
    failures: list[str]

    @property
    def label(self) -> str:
        return f"this host's replicate {self.index + 1}"

    @property
    def results(self) -> list[Path]:
        return [o.results for o in self.outcomes if o.results is not None]


def runners(count: int, every: Sequence[Gpu] | None = None) -> list[Runner]:
    """``count`` runners of this host: its first ``count`` GPUs with their NUMA nodes' CPUs (``every``: what
    :func:`gpus` found, asked again where not given), or on a host without a GPU its usable cores split into
    ``count`` contiguous shares."""
    if count < 1:
        raise UsageError(f"--on-host takes how many replicates run at once (1 or more), not {count}")
    if shutil.which("taskset") is None:
        raise UsageError("--on-host pins each replicate with taskset (util-linux), which is not on PATH")
    mine = host_cpus.affinity()
    if NVIDIA_DRIVER.exists():
        every = gpus() if every is None else every
        usable = [every[i] for i in visible_to_cuda([uuid for uuid, _ in every],
                                                    os.environ.get("CUDA_VISIBLE_DEVICES"))]
        if count > len(usable):
            raise UsageError(f"--on-host {count}: this host lets perfkit use {len(usable)} GPU(s) "
                             f"(of {len(every)}; CUDA_VISIBLE_DEVICES chooses); one replicate per GPU")
        return [Runner(f"GPU {i} (CPUs {_cpu_list(cpus)})", cpus, uuid)
                for i, (uuid, cpus) in enumerate(usable[:count])]
    if count > len(mine):
        raise UsageError(f"--on-host {count}: this host lets perfkit use {len(mine)} CPU(s) and has no GPU; "
                         "one replicate per core at most")
    share, extra = divmod(len(mine), count)
    starts = [i * share + min(i, extra) for i in range(count + 1)]
    return [Runner(f"CPUs {_cpu_list(mine[a:b])}", tuple(mine[a:b])) for a, b in itertools.pairwise(starts)]


def gpus() -> list[Gpu]:
    """Every GPU of this host (whatever CUDA_VISIBLE_DEVICES says): its UUID and the CPUs of its NUMA node
    this process may use, in NVML's (PCI) order; none without the NVIDIA driver."""
    return _gpus(host_cpus.affinity()) if NVIDIA_DRIVER.exists() else []


def _gpus(allowed: Sequence[int]) -> list[Gpu]:
    """Each GPU's UUID and the CPUs of its NUMA node that this process may use (all it may use where NVML
    names none of them), in NVML's (PCI) order."""
    from perfkit.measure.nvml import nvml_open

    words = max(allowed or [0]) // 64 + 1
    found = []
    with nvml_open() as nvml:
        try:
            for i in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(i)
                uuid = nvml.nvmlDeviceGetUUID(handle)
                near = [c for c in mask_cpus(nvml.nvmlDeviceGetCpuAffinity(handle, words)) if c in allowed]
                found.append((uuid.decode() if isinstance(uuid, bytes) else uuid, tuple(near or allowed)))
        except nvml.NVMLError as exc:
            raise HardwareError(f"NVML could not list this host's GPUs and their CPUs ({exc})") from None
    return found


def visible_to_cuda(uuids: Sequence[str], setting: str | None) -> list[int]:
    """The GPUs (indices into NVML's ``uuids``) that CUDA_VISIBLE_DEVICES (``setting``) lets CUDA use, in its
    order; every one where it is unset. Like CUDA, an index or a unique UUID prefix each, up to the first
    entry that names none (a fleet started on GPUs 2 and 3 of a shared host runs its replicates there). An
    index counts in NVML's PCI order, which is CUDA's on a host of one GPU model."""
    if setting is None:
        return list(range(len(uuids)))
    chosen: list[int] = []
    for entry in (e.strip() for e in setting.split(",")):
        named = ([int(entry)] if entry.isdigit() and int(entry) < len(uuids)
                 else [i for i, uuid in enumerate(uuids) if entry and uuid.startswith(entry)])
        if len(named) != 1 or named[0] in chosen:
            break
        chosen += named
    return chosen


def mask_cpus(mask: Sequence[int], width: int = 64) -> list[int]:
    """The CPUs set in an affinity mask given as words of ``width`` bits, the lowest CPU first (NVML's)."""
    return [w * width + b for w, word in enumerate(mask) for b in range(width) if word >> b & 1]


def _cpu_list(cpus: Sequence[int]) -> str:
    """0-15,32-47 for a sorted set of CPUs."""
    spans: list[list[int]] = []
    for cpu in sorted(cpus):
        if spans and cpu == spans[-1][1] + 1:
            spans[-1][1] = cpu
        else:
            spans.append([cpu, cpu])
    return ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in spans)


def split(keyword: str | None, serial: str) -> tuple[str, str]:
    """The -k expressions of the concurrent part and of the serial part of a selection (``keyword``: the
    user's own, None for all)."""
    wanted = f"({keyword}) and " if keyword else ""
    return f"{wanted}not ({serial})", f"{wanted}({serial})"


def run(places: Sequence[Runner], replicas: int, checkout: Path, pytest_args: Sequence[str],
        keyword: str | None, serial: str, folder: Path, say: Callable[[str], None]) -> list[HostReplicate]:
    """``replicas`` replicates of the selection (``pytest_args`` and the -k ``keyword``), as many at once as
    there are runners, then the ``serial`` part of it (where it selects anything) one replicate at a time;
    each run's output in ``folder/logs``, its results in ``folder/results/host``. Interrupted (Ctrl-C, or
    SIGTERM under perfkit.stopping.interruptible), every pytest started is stopped and nothing new starts."""
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    (folder / "results" / "host").mkdir(parents=True, exist_ok=True)
    done = [HostReplicate(i, [], []) for i in range(replicas)]
    night = _HostNight(places, checkout, tuple(pytest_args), folder, say)
    concurrent, alone = split(keyword, serial)
    with ThreadPoolExecutor(len(places)) as pool:
        try:
            for future in [pool.submit(night.one, r, concurrent, "", None) for r in done]:
                future.result()
            if _selects(checkout, pytest_args, alone):
                for replicate in done:
                    night.one(replicate, alone, "-serial", places[0])
        except KeyboardInterrupt as exc:
            pool.shutdown(wait=False, cancel_futures=True)
            night.stop(stopping.signum_of(exc))
            raise
    return done


class _HostNight:
    """The runners free to take a replicate, the pytest processes started, and whether the night was
    stopped: shared by the threads that run the replicates."""

    def __init__(self, places: Sequence[Runner], checkout: Path, pytest_args: tuple[str, ...], folder: Path,
                 say: Callable[[str], None]) -> None:
        self.checkout, self.pytest_args, self.folder, self.say = checkout, pytest_args, folder, say
        self.free: queue.Queue[Runner] = queue.Queue()
        for place in places:
            self.free.put(place)
        self.lock = threading.Lock()
        self.children: list[subprocess.Popen[str]] = []
        self.stopped = threading.Event()

    def one(self, replicate: HostReplicate, expression: str, part: str, place: Runner | None) -> None:
        """One replicate's part, on ``place`` alone with the host, or on the next free runner."""
        runner = place or self._take()
        if runner is None:
            return
        stem = f"replicate-{replicate.index + 1}{part}"
        label = f"perfkit fleet: {replicate.label}{part and ' (serial part)'}"
        with self.lock:
            self.say(f"{label}: running {'alone on the host' if place else f'on {runner.name}'}")
        log = self.folder / "logs" / f"{stem}.log"
        try:
            with log.open("w") as written:
                outcome = run_selection(str(self.checkout), (*self.pytest_args, "-k", expression),
                                        str(self.folder / "results" / "host" / f"{stem}.json"), written,
                                        runner.env(), () if place else runner.cpus, self._track)
        finally:
            if place is None:
                self.free.put(runner)
        if not self.stopped.is_set():  # stopped midway: the fleet says so once
            with self.lock:
                self.say(f"{label}: {_record(replicate, outcome, log)}")

    def stop(self, signum: int) -> None:
        """Nothing new starts, and every pytest still running gets ``signum`` (then SIGKILL after a grace)."""
        with self.lock:
            self.stopped.set()
            running = [c for c in self.children if c.poll() is None]
        stopping.stop_all(running, signum, stopping.GRACE_S)

    def _take(self) -> Runner | None:
        while not self.stopped.is_set():
            with contextlib.suppress(queue.Empty):
                return self.free.get(timeout=0.2)
        return None

    def _track(self, child: subprocess.Popen[str]) -> None:
        with self.lock:
            self.children.append(child)
            late = self.stopped.is_set()
        if late:  # started just as the night was stopped
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGTERM)


def _selects(checkout: Path, pytest_args: Sequence[str], expression: str) -> bool:
    """Whether the -k ``expression`` selects any benchmark of the selection: collected once, rather than R
    replicates each starting pytest for nothing."""
    command = [*pytest_command((*pytest_args, "-k", expression), os.devnull), "--collect-only", "-q"]
    return stopping.run(command, checkout, os.environ).returncode != NOTHING_SELECTED


def _record(replicate: HostReplicate, outcome: JobOutcome, log: Path) -> str:
    """What the run left, kept on the replicate, as a line of progress."""
    if outcome.exit_code == NOTHING_SELECTED:
        return "nothing of the selection runs here"
    if outcome.results is None:
        replicate.failures.append(f"wrote no results (pytest exit {outcome.exit_code}); the end of "
                                  f"{log}:\n    " + "\n    ".join(outcome.tail.splitlines()))
        return f"failed\n  {replicate.failures[-1]}"
    replicate.outcomes.append(outcome)
    return f"done{outcome.exit_note}; results in {outcome.results}"
