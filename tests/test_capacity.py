"""The capacity search and the memory cap (perfkit.measure.capacity), on a CPU with synthetic budgets."""
from __future__ import annotations

import math
import weakref

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from perfkit.errors import MeasurementError, UsageError
from perfkit.measure import capacity, hardware
from perfkit.measure.memory import SavedStorages
from perfkit.results.compare import FINGERPRINT_FIELDS
from perfkit.session import Settings
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
    assert len(found.probes) <= 2 * math.ceil(math.log2(largest + 1)) + 2  # growth, then bisection of its last step
    assert len({p.value for p in found.probes}) == len(found.probes)  # no size tried twice


@given(largest=st.integers(1, 10_000), limit=st.integers(1, 10_000))
def test_the_knobs_own_limit_ends_the_search(largest, limit):
    found = capacity.search(boundary(largest), ROOMY, limit=limit)
    assert found.largest == min(largest, limit)
    assert found.stopped_by == ("limit" if limit <= largest else "out of memory")


def test_a_synthetic_budget_finds_the_deepest_stack_a_linear_walk_finds():
    shape = layer_stack.QUICK_INPUT
    budget = capacity.Budget(CPU, host_bytes=600_000)

    def forward(n: int) -> None:
        layer_stack.build(n, n, shape)(torch.randn(*shape))

    def fits(n: int) -> bool:
        with SavedStorages().watch() as saved:
            forward(n)
        return saved.peak <= budget.host_bytes

    walked = next(n for n in range(1, 100) if not fits(n + 1))
    found = capacity.search(forward, budget)
    assert found.largest == walked
    assert found.first_failure is not None and found.first_failure.value == walked + 1
    assert all(p.leaked_bytes == 0 for p in found.probes)


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
    with pytest.raises(capacity.CapacityError, match=r"needs more than 2\.00 GiB, with a 1 MiB synthetic budget"):
        capacity.search(lambda n: (_ for _ in ()).throw(torch.OutOfMemoryError("Tried to allocate 2.00 GiB")),
                        capacity.Budget(CPU, host_bytes=2**20))


def test_a_cpu_search_without_budget_or_limit_is_refused():
    with pytest.raises(UsageError, match="synthetic budget or a limit"):
        capacity.search(boundary(3), capacity.Budget(CPU))


def test_the_gpu_that_ran_out_is_read_from_pytorchs_message():
    probe = capacity.Probe(4, False, (1, 2), 0, 0.1, "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a "
                                                      "total capacity of 139.8 GiB")
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
    result = pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu", "--perfkit-memory-cap=10.91GiB")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--perfkit-memory-cap caps the CUDA allocator; this run is on the CPU*"])
