"""The capacity search and the memory cap (perfkit.measure.capacity), on a CPU with synthetic budgets."""
from __future__ import annotations

import math
import os
import time
import weakref

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from perfkit import limits
from perfkit.errors import MeasurementError, UsageError
from perfkit.measure import capacity, fresh_process, hardware
from perfkit.measure.memory import SavedStorages
from perfkit.settings import Settings
from perfkit.verdict.judge import FINGERPRINT_FIELDS
from perfkit.workloads import layer_stack

CPU = [torch.device("cpu")]
ROOMY = capacity.Budget(CPU, host_bytes=2**60)


def boundary(largest: int):
    """A workload that fits up to ``largest`` and runs out of memory above it, as PyTorch says so."""
    def run(value: int) -> None:
        if value > largest:
            raise torch.OutOfMemoryError(f"Tried to allocate {value} B")
    return run


@settings(max_examples=100, deadline=None)
@given(largest=st.integers(1, 100_000), start=st.integers(1, 100_000))
def test_finds_the_exact_boundary_in_logarithmic_probes(largest, start):
    if start > largest:
        with pytest.raises(capacity.CapacityError, match="even the smallest size"):
            capacity.search(boundary(largest), ROOMY, start=start)
        return
    found = capacity.search(boundary(largest), ROOMY, start=start)
    assert found.largest == largest and found.stopped_by == "out of memory"
    assert (
        len(found.probes) <= 2 * math.ceil(math.log2(largest + 1)) + 2
    )  # growth, then bisection of its last step
    assert len({p.value for p in found.probes}) == len(found.probes)  # no size tried twice


@given(largest=st.integers(1, 10_000), limit=st.integers(1, 10_000))
def test_the_knobs_own_limit_ends_the_search(largest, limit):
    found = capacity.search(boundary(largest), ROOMY, limit=limit)
    assert found.largest == min(largest, limit)
    assert found.stopped_by == ("limit" if limit <= largest else "out of memory")


@settings(max_examples=15, deadline=None)
@given(budget_bytes=st.integers(250_000, 1_500_000))
def test_a_synthetic_budget_finds_the_deepest_stack_a_linear_walk_finds(budget_bytes):
    shape = layer_stack.QUICK_INPUT
    budget = capacity.Budget(CPU, host_bytes=budget_bytes)
    outputs: list[weakref.ref] = []

    def forward(n: int) -> None:
        outputs.append(weakref.ref(layer_stack.build(n, n, shape)(torch.randn(*shape))))

    def fits(n: int) -> bool:
        with SavedStorages().watch() as saved:
            layer_stack.build(n, n, shape)(torch.randn(*shape))
        return saved.peak <= budget_bytes

    walked = next(n for n in range(1, 100) if not fits(n + 1))
    found = capacity.search(forward, budget)
    assert found.largest == walked
    assert found.first_failure is not None and found.first_failure.value == walked + 1
    assert all(ref() is None for ref in outputs)  # no probe's activations outlive it (no reference cycle)


def test_a_failed_probe_frees_what_it_held():
    held: list[weakref.ref] = []

    def run(_: int) -> None:
        big = torch.empty(1000)
        held.append(weakref.ref(big))
        raise torch.OutOfMemoryError("Tried to allocate 2.00 GiB")

    found = capacity.probe(run, 8, ROOMY)
    assert not found.fits and "Tried to allocate" in found.failure
    assert held[0]() is None  # the exception's frames no longer keep the tensor alive


class LeakyBudget(capacity.Budget):
    """A CPU budget whose allocator count is what the workload appends to ``kept``."""

    def __init__(self) -> None:
        super().__init__(CPU, host_bytes=2**60)
        self.kept: list[int] = []

    def allocated(self) -> int:
        return sum(self.kept)


def test_a_probe_that_keeps_memory_stops_the_search():
    budget = LeakyBudget()
    with pytest.raises(MeasurementError, match="left 100 bytes allocated"):
        capacity.search(lambda n: budget.kept.append(100), budget)


def test_never_fitting_says_what_the_smallest_size_needs():
    with pytest.raises(
        capacity.CapacityError, match=r"needs more than 2\.00 GiB, with 1 MiB synthetic budget"
    ):
        capacity.search(lambda n: (_ for _ in ()).throw(torch.OutOfMemoryError("Tried to allocate 2.00 GiB")),
                        capacity.Budget(CPU, host_bytes=2**20))


def test_a_cpu_search_without_budget_or_limit_is_refused():
    with pytest.raises(UsageError, match="synthetic budget or a limit"):
        capacity.search(boundary(3), capacity.Budget(CPU))


def test_the_gpu_that_ran_out_is_read_from_pytorchs_message():
    probe = capacity.Probe(
        4,
        False,
        (1, 2),
        0,
        0.1,
        "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a total capacity of 139.8 GiB",
    )
    assert probe.failed_gpu == 1


@pytest.mark.parametrize(("text", "nbytes"), [("10.91GiB", int(10.91 * 2**30)), ("16 GB", 16 * 10**9),
                                              ("512MiB", 512 * 2**20), ("4096", 4096)])
def test_sizes_parse(text, nbytes):
    assert capacity.parse_bytes(text) == nbytes


@pytest.mark.parametrize("text", ["", "abc", "-1GiB", "0", "10 parsecs", "1.2.3GB"])
def test_a_malformed_size_says_how_to_write_one(text):
    with pytest.raises(UsageError, match="e.g. 10.91GiB"):
        capacity.parse_bytes(text)


def test_a_cap_on_a_cpu_run_or_a_malformed_cap_is_a_usage_error():
    with pytest.raises(UsageError, match="this run is on the CPU"):
        Settings.detect(device="cpu", memory_cap="10.91GiB")
    with pytest.raises(UsageError, match="not understood"):
        Settings.detect(device="cpu", memory_cap="lots")


def test_the_cap_is_part_of_the_fingerprint_a_comparison_shows():
    assert hardware.fingerprint("cpu", int(10.91 * 2**30)).memory_cap_gib == 10.91
    assert hardware.fingerprint("cpu").memory_cap_gib is None
    assert "memory_cap_gib" in FINGERPRINT_FIELDS


def test_the_memory_cap_option_is_refused_on_a_cpu_run(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest(
        "-p", "perfkit.plugin", "--perfkit-device=cpu", "--perfkit-memory-cap=10.91GiB"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--perfkit-memory-cap caps the CUDA allocator; this run is on the CPU*"])


def test_a_cap_larger_than_the_card_is_a_usage_error(monkeypatch):
    monkeypatch.setattr(capacity, "_total_memory", lambda device: 8 * 2**30)
    with pytest.raises(UsageError, match=r"memory cap 10\.91 GiB is more than cuda:0 has \(8\.00 GiB\)"):
        capacity.check_cap(capacity.parse_bytes("10.91GiB"), torch.device("cuda", 0))


def test_a_region_cap_is_applied_to_every_gpu_and_the_runs_own_cap_restored(monkeypatch):
    calls: list[tuple[float, int]] = []
    monkeypatch.setattr(capacity, "_total_memory", lambda device: 100 * 2**30)
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction", lambda f, i: calls.append((f, i)))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(capacity.timing, "synchronize", lambda: None)
    gpus = [torch.device("cuda"), torch.device("cuda", 1)]
    with capacity.memory_cap(10 * 2**30, gpus, restore=50 * 2**30):
        assert calls == [(0.1, 0), (0.1, 1)]  # "cuda" alone is the current device
    assert calls[2:] == [(0.5, 0), (0.5, 1)]
    with pytest.raises(RuntimeError), capacity.memory_cap(10 * 2**30, gpus, restore=None):
        raise RuntimeError("the region failed")
    assert calls[-2:] == [(1.0, 0), (1.0, 1)]


def test_only_out_of_memory_is_an_answer_other_errors_propagate():
    def broken(_: int) -> None:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    with pytest.raises(RuntimeError, match="shapes"):
        capacity.search(broken, ROOMY)

    def cublas(value: int) -> None:
        if value > 3:
            raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")

    assert capacity.search(cublas, ROOMY).largest == 3


@pytest.mark.gpu
def test_a_real_out_of_memory_under_a_cap_leaves_the_gpu_as_it_was():
    gpu = torch.device("cuda", torch.cuda.current_device())
    before = torch.cuda.memory_allocated(gpu)
    with capacity.memory_cap(2**30, [gpu], restore=None):
        found = capacity.search(lambda mib: torch.empty(mib * 2**20, dtype=torch.uint8, device=gpu),
                                capacity.Budget([gpu], cap_bytes=2**30))
    assert 512 <= found.largest < 1024 and found.stopped_by == "out of memory"
    assert all(p.leaked_bytes == 0 for p in found.probes)
    assert torch.cuda.memory_allocated(gpu) == before
    assert torch.empty(2 * 2**30, dtype=torch.uint8, device=gpu).numel()  # the cap is gone again


def test_a_search_in_a_fresh_process_answers_as_one_here():
    budget = capacity.Budget(CPU, host_bytes=600_000)
    here = layer_stack.largest_stack("conv", layer_stack.QUICK_INPUT, CPU[0], budget)
    there = capacity.in_fresh_process(
        layer_stack.largest_stack, budget, "conv", layer_stack.QUICK_INPUT, CPU[0]
    )
    assert there[:2] == here[:2] and there[2].largest == here[2].largest
    assert [(p.value, p.fits) for p in there[2].probes] == [(p.value, p.fits) for p in here[2].probes]
    num_conv, num_fc, found = here
    assert (
        num_conv == found.largest >= num_fc
    )  # the conv search starts at the balanced answer, fc fixed at it


def _never_fits(budget: capacity.Budget) -> None:
    capacity.search(boundary(0), budget)


def test_a_fresh_process_raises_the_measurements_own_error():
    with pytest.raises(capacity.CapacityError, match="even the smallest size"):
        capacity.in_fresh_process(_never_fits, ROOMY)


def test_a_fresh_process_that_dies_says_so_in_a_sentence():
    with pytest.raises(
        MeasurementError, match="the fresh process running the search died before it answered"
    ):
        fresh_process.run(os._exit, 3, label="the search")


@pytest.mark.slow
def test_a_timeout_while_a_fresh_process_measures_kills_it_at_once():
    start = time.perf_counter()
    with pytest.raises(limits.BenchmarkTimeout), limits.time_limit(2, "the search ran past 2 s"):
        fresh_process.run(time.sleep, 60)
    assert time.perf_counter() - start < 15  # not the child's 60 s: it was killed, not waited for


def test_a_budget_the_code_sets_decides_the_answer_and_the_whole_card_does_not():
    assert ROOMY.fixed and capacity.Budget(CPU, cap_bytes=2**30).fixed
    assert not capacity.Budget(CPU).fixed  # the card's free memory: 1412 or 1415 layers on two H200s
