"""Capacity: the largest value of an integer knob (layers, batch size) whose workload runs without
running out of memory, and the memory cap that lets a large GPU stand in for a small one.

The search grows the knob ×2 until a probe runs out of memory (or the knob's own limit is reached),
then bisects between the last size that fitted and the first that did not: O(log n) probes, never a
linear walk. A probe that runs out of memory leaves nothing behind: its exception frames are cleared,
the garbage collected and the allocator's cache emptied, and the memory still allocated afterwards is
checked against the level before the probe (``Probe.leaked_bytes``; a leak is an error, because the
next probe, and the next benchmark in this process, would measure less room than there is).
"""
from __future__ import annotations

import gc
import logging
import re
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from perfkit.errors import MeasurementError, UsageError
from perfkit.measure import fresh_process, timing
from perfkit.measure.memory import SavedStorages
from perfkit.resultfile import payloads

GiB = 2**30
_UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$")
_TRIED = re.compile(r"Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB)")
_GPU = re.compile(r"\bGPU (\d+)\b")
#: Out-of-memory failures PyTorch raises as a plain RuntimeError (a library's own allocation, a lazy module
#: load).
_OTHER_OOM = re.compile(r"CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED")
log = logging.getLogger("perfkit.capacity")
T = TypeVar("T")


def parse_bytes(text: str) -> int:
    """'10.91GiB', '11 GB', '512MiB' or a plain number of bytes, as bytes; anything else is a usage error."""
    match = _SIZE.match(str(text))
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS or float(match.group(1)) <= 0:
        raise UsageError(f"memory size {text!r} is not understood: write a positive number with a unit, "
                         "e.g. 10.91GiB (the course's GTX 1080 Ti), 16GB or 512MiB")
    return int(float(match.group(1)) * _UNITS[unit])


def size_text(nbytes: float) -> str:
    """Bytes as GiB (two decimals, as nvidia-smi and the seeds write them), or MiB below one GiB."""
    return f"{nbytes / GiB:.2f} GiB" if nbytes >= GiB else f"{nbytes / 2**20:.3g} MiB"


def _total_memory(device: torch.device) -> int:
    return int(torch.cuda.get_device_properties(device).total_memory)


def check_cap(cap_bytes: int, device: torch.device) -> float:
    """The per-process memory fraction that caps ``device`` at ``cap_bytes``; a cap above the card is a usage
    error."""
    total = _total_memory(device)
    if cap_bytes > total:
        raise UsageError(f"memory cap {size_text(cap_bytes)} is more than {device} has ({size_text(total)}); "
                         "give a smaller cap or none")
    return cap_bytes / total


def apply_cap(cap_bytes: int | None, devices: list[torch.device]) -> None:
    """Cap the caching allocator on every device (None: the whole card) through the per-process memory
    fraction.

    The fraction limits what PyTorch's allocator may reserve. The CUDA context (a few hundred MiB) lives
    outside it, where a real card of that size holds it too: a capped card fits a little more than the real
    one.
    """
    for device in devices:
        fraction = 1.0 if cap_bytes is None else check_cap(cap_bytes, device)
        # the fraction wants an index: "cuda" alone (the run's device) means the current one
        index = device.index if device.index is not None else torch.cuda.current_device()
        torch.cuda.set_per_process_memory_fraction(fraction, index)


@contextmanager
def memory_cap(cap_bytes: int, devices: list[torch.device], restore: int | None) -> Iterator[None]:
    """A cap for one region (the nightly capped check), then back to ``restore`` (the run's own cap, or
    None)."""
    timing.synchronize()
    torch.cuda.empty_cache()  # segments cached by earlier benchmarks would count against the cap
    apply_cap(cap_bytes, devices)
    try:
        yield
    finally:
        apply_cap(restore, devices)


@dataclass(frozen=True)
class Probe:
    """One try of the knob: whether it fitted, the allocator peak it reached on each device, what it left
    allocated."""

    value: int
    fits: bool
    peaks: tuple[int, ...]
    leaked_bytes: int
    seconds: float
    failure: str = ""  # the first line of the out-of-memory message
    before_bytes: int = 0  # allocated when the probe started (what the peaks include from earlier)

    @property
    def failed_gpu(self) -> int | None:
        """Which GPU ran out (PyTorch's message names it), or None."""
        found = _GPU.search(self.failure)
        return int(found.group(1)) if found else None


@dataclass(frozen=True)
class Capacity:
    """The search's answer: the largest value that fitted and why the search stopped there."""

    largest: int
    stopped_by: str  # "out of memory" or "limit" (the knob's own ceiling, e.g. the dataset size)
    probes: tuple[Probe, ...]

    @property
    def first_failure(self) -> Probe | None:
        """The smallest value that ran out of memory (None if the search stopped at the limit)."""
        failed = [p for p in self.probes if not p.fits]
        return min(failed, key=lambda p: p.value) if failed else None


class Budget:
    """Where a probe's memory is counted: the CUDA allocator of each device, or a synthetic budget over the
    tensors autograd keeps for backward (:class:`~perfkit.measure.memory.SavedStorages`: what grows with depth
    and batch) that raises PyTorch's own out-of-memory error when exceeded, so the same search runs on a CPU,
    in the quick profile and in tests."""

    def __init__(self, devices: Sequence[torch.device], host_bytes: int | None = None,
                 cap_bytes: int | None = None) -> None:
        """``host_bytes``: a synthetic budget (any device); ``cap_bytes``: the GPUs' cap, if any (for
        messages)."""
        self.devices = tuple(devices)
        self.on_gpu = all(d.type == "cuda" for d in self.devices)
        self.host_bytes, self.cap_bytes = host_bytes, cap_bytes
        self.peaks: tuple[int, ...] = ()

    def allocated(self) -> int:
        """Bytes in live tensors now (the CUDA allocators' count; 0 on a CPU, whose allocator is not
        watched)."""
        return sum(torch.cuda.memory_allocated(d) for d in self.devices) if self.on_gpu else 0

    @property
    def fixed(self) -> bool:
        """The code sets the budget (a cap, a synthetic budget), so the search's answer is the code's alone;
        else it is the card's free memory, which differs a little between machines (1412 and 1415 layers of
        the stack on two H200s)."""
        return self.host_bytes is not None or self.cap_bytes is not None

    def room(self) -> str:
        """The memory a probe may use, in words, for messages."""
        if self.host_bytes is not None:
            return f"{size_text(self.host_bytes)} synthetic budget"
        if not self.on_gpu:
            return "host memory"
        each = self.cap_bytes if self.cap_bytes is not None else _total_memory(self.devices[0])
        return f"{size_text(each)} per GPU" + (" (capped)" if self.cap_bytes is not None else "")

    @contextmanager
    def region(self) -> Iterator[None]:
        """Count one try: against the synthetic budget if there is one, else the allocators' peaks on GPUs."""
        if self.host_bytes is not None:
            saved = SavedStorages(limit=self.host_bytes)
            try:
                with saved.watch():
                    yield
            finally:
                self.peaks = (saved.peak,)
            return
        if not self.on_gpu:
            yield
            return
        for device in self.devices:
            torch.cuda.reset_peak_memory_stats(device)
        try:
            yield
            for device in self.devices:
                torch.cuda.synchronize(device)  # the probe's time includes its kernels
        finally:
            self.peaks = tuple(torch.cuda.max_memory_allocated(d) for d in self.devices)


def attempt(run: Callable[[], T], budget: Budget) -> tuple[T | None, str]:
    """``run()`` and its result, or None and the first line of the out-of-memory message it raised. Either
    way, what it allocated (and did not return) is released before this returns."""
    _release(budget)
    result, failure = None, ""
    try:
        with budget.region():
            result = run()
    except (torch.OutOfMemoryError, RuntimeError) as exc:
        if not isinstance(exc, torch.OutOfMemoryError) and not _OTHER_OOM.search(str(exc)):
            raise
        failure = str(exc).strip().splitlines()[0] if str(exc).strip() else "out of memory"
        traceback.clear_frames(exc.__traceback__)  # the frames hold the tensors of the failed try
        del exc
    _release(budget)
    return result, failure


def probe(run: Callable[[int], Any], value: int, budget: Budget) -> Probe:
    """Run the workload at ``value`` once; out of memory is an answer, not an error. Whatever the
    probe allocated is released before this returns, and what was not is reported."""
    before = budget.allocated()
    start = time.perf_counter()

    def call() -> None:  # the workload's return value is dropped, so only what it kept elsewhere counts
        run(value)

    _, failure = attempt(call, budget)
    found = Probe(value, not failure, budget.peaks, max(0, budget.allocated() - before),
                  time.perf_counter() - start, failure, before)
    log.info(
        "capacity probe %d: %s (%.1f s)", value, "fits" if found.fits else "out of memory", found.seconds
    )
    return found


def _release(budget: Budget) -> None:
    if budget.on_gpu:
        gc.collect()  # reference cycles a failed try left would hold device memory
        for device in budget.devices:
            torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


def search(run: Callable[[int], Any], budget: Budget, start: int = 1, limit: int | None = None,
           grow: int = 2) -> Capacity:
    """The largest knob value in [start, limit] for which ``run`` fits (see the module's docstring).

    ``start`` runs once untracked first: the first matmul allocates a cuBLAS workspace through the caching
    allocator that stays for the process, and would otherwise count as the first probe's leak.

    Raises :class:`CapacityError` when ``start`` itself does not fit, with the memory it needed, and
    :class:`~perfkit.errors.MeasurementError` when a probe leaks memory.
    """
    if start < 1 or (limit is not None and limit < start):
        raise UsageError(f"a capacity search needs 1 <= start <= limit, not start={start}, limit={limit}")
    if not budget.on_gpu and budget.host_bytes is None and limit is None:
        raise UsageError(
            "a capacity search on a CPU needs a synthetic budget or a limit: without either it would "
            "grow until the host's memory ran out"
        )
    probes: list[Probe] = []

    def fits(value: int) -> bool:
        found = probe(run, value, budget)
        probes.append(found)
        if found.leaked_bytes:
            raise MeasurementError(f"the probe at {value} left {found.leaked_bytes} bytes allocated after it "
                                   "finished; the workload keeps references to its tensors")
        return found.fits

    attempt(lambda: run(start), budget)  # first use creates library state PyTorch keeps (cuBLAS workspaces)
    if not fits(start):
        raise CapacityError.never_fits(start, probes[-1], budget)
    good, bad = start, None
    while bad is None:
        if limit is not None and good >= limit:
            return Capacity(good, "limit", tuple(probes))
        nxt = good * grow if limit is None else min(good * grow, limit)
        if fits(nxt):
            good = nxt
        else:
            bad = nxt
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return Capacity(good, "out of memory", tuple(probes))


def in_fresh_process(measure: Callable[..., T], budget: Budget, *args: Any) -> T:
    """``measure(*args, budget)``, searches and all, in a spawned process under the budget's cap.

    A probe that runs out of memory inside cuDNN leaves the process with a slower convolution plan cached
    (perfkit.measure.fresh_process says how), so the searches run apart and the process that times the
    workload afterwards has never run out of memory. The spawned process's own CUDA context (a few
    hundred MiB) sits beside this one's, outside any cap: uncapped, a search finds that much less room.
    """
    if budget.on_gpu:
        torch.cuda.empty_cache()  # this process's cached segments would take the search's room
    return fresh_process.run(_under_cap, measure, budget, *args, label=measure.__name__)


def _under_cap(measure: Callable[..., T], budget: Budget, *args: Any) -> T:
    if budget.on_gpu and budget.cap_bytes is not None:
        apply_cap(budget.cap_bytes, list(budget.devices))
    return measure(*args, budget)


class CapacityError(MeasurementError):
    """Even the smallest size of the knob does not fit in the memory there is."""

    @classmethod
    def never_fits(cls, value: int, failed: Probe, budget: Budget) -> CapacityError:
        tried = _TRIED.search(failed.failure)
        own = max(failed.peaks, default=0) - (failed.before_bytes if budget.host_bytes is None else 0)
        need = max(own, 0) + (int(float(tried.group(1)) * _UNITS[tried.group(2).lower()]) if tried else 0)
        return cls(
            f"even the smallest size ({value}) runs out of memory: it needs more than {size_text(need)}, "
            f"with {budget.room()}; raise --perfkit-memory-cap (or drop it), or choose a smaller workload"
        )


def probe_records(found: Capacity) -> tuple[payloads.CapacityProbe, ...]:
    """The search's probes as the family records store them."""
    return tuple(payloads.CapacityProbe(p.value, p.fits, tuple(b / 2**20 for b in p.peaks), p.seconds,
                                        p.leaked_bytes / 2**20) for p in found.probes)
