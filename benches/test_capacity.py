"""Capacity (seed 000, Task 1): how many layers of the course's stack fit before out-of-memory, on one GPU
and split across two, on the whole card and capped at the course's GTX 1080 Ti (10.91 GiB).

The stack and its exact layer shapes: perfkit.workloads.layer_stack. The search: perfkit.measure.capacity
(×2 growth, then bisection; every probe cleaned up and checked). ``balanced`` searches num_conv = num_fc = n
(the seed's table: 61 + 62 fit, 62 + 62 do not); ``conv`` then grows num_conv with num_fc fixed at that n,
``fc`` the reverse. ``split`` puts the first layers on GPU 0 and the rest on GPU 1 at the point that
balances what each keeps, and searches the largest n across both. Each test's searches run in a freshly
spawned process (perfkit.measure.capacity.in_fresh_process): a probe that runs out of memory inside cuDNN
leaves a slower convolution plan cached for the rest of its process, which made the timed forward 1.6×
slower on an H200. The forward is timed in another fresh process, under the same cap: one that never ran out
of memory and holds nothing of the benchmarks before it (timed in the pytest process, it ran out of memory
under the 10.91 GiB cap after other GPU benchmarks had left 1.6 GiB reserved there; in file order it passed).

Headline: the forward at the largest size that fits (the seed's 5 warm-ups and mean of 10; pytest-benchmark's
full statistics beside it). The capacity itself gates too (``largest_layers``, higher is better), so a
change in memory use is caught. Nightly: the capped balanced search (seconds); the rest runs weekly.
On a CPU (quick profile) each cap becomes a small synthetic budget over what autograd keeps.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

from perfkit.measure import capacity, memory, record
from perfkit.pbench import inject_samples
from perfkit.resultfile import figures
from perfkit.resultfile.payloads import LayerCapacity
from perfkit.workloads import layer_stack

COURSE_CARD = "10.91GiB"  # seed 000's GTX 1080 Ti
CAPS = {"cap10.91GiB": COURSE_CARD, "nocap": None}
QUICK_BUDGETS = {"cap10.91GiB": 2 * memory.MiB, "nocap": 8 * memory.MiB}
WARMUP, ROUNDS = 5, 10  # the seed's
KNOBS = ("balanced", "conv", "fc")
NIGHTLY = {("cap10.91GiB", "balanced")}


def _case(cap: str, knob: str) -> object:
    return pytest.param(
        (cap, knob), id=f"{cap}-{knob}", marks=[] if (cap, knob) in NIGHTLY else [pytest.mark.weekly]
    )


@contextmanager
def budget_for(cap_name: str, devices: list[torch.device], profile: str,
               session_cap: int | None) -> Iterator[capacity.Budget]:
    """The memory the searches may use: the case's cap on every device (or ``--perfkit-memory-cap`` where that
    is smaller; the run's own cap restored after), the whole card, or in the quick profile a synthetic budget
    (its small layers would make stacks of a million layers on a real card)."""
    if profile == "quick":
        yield capacity.Budget(devices, host_bytes=QUICK_BUDGETS[cap_name])
        return
    if devices[0].type != "cuda":
        pytest.skip(
            "the course's sizes need a GPU; the quick profile runs the search with a synthetic budget"
        )
    text = CAPS[cap_name]
    if text is None:
        yield capacity.Budget(devices, cap_bytes=session_cap)
        return
    cap = min(capacity.parse_bytes(text), session_cap or capacity.parse_bytes(text))
    with capacity.memory_cap(cap, devices, restore=session_cap):
        yield capacity.Budget(devices, cap_bytes=cap)


def _cap_gib(budget: capacity.Budget) -> float | None:
    return None if budget.cap_bytes is None else round(budget.cap_bytes / capacity.GiB, 2)


@pytest.mark.parametrize("case", [_case(cap, knob) for cap in CAPS for knob in KNOBS])
def test_layer_stack_capacity(
    benchmark, case, perfkit_device, perfkit_profile, perfkit_metrics, perfkit_memory_cap
):
    cap_name, knob = case
    shape = perfkit_profile.pick(quick=layer_stack.QUICK_INPUT, full=layer_stack.FULL_INPUT)
    with budget_for(cap_name, [perfkit_device], perfkit_profile.name, perfkit_memory_cap) as budget:
        num_conv, num_fc, found = capacity.in_fresh_process(layer_stack.largest_stack, budget, knob, shape,
                                                            perfkit_device)
        times = capacity.in_fresh_process(layer_stack.time_stack, budget, num_conv, num_fc, tuple(shape),
                                          perfkit_device, WARMUP, ROUNDS)
    inject_samples(benchmark, times)
    if perfkit_device.type == "cuda":
        perfkit_metrics.gpu_bound()  # a forward of a stack filling the GPU (0.4% between H200 runs)

    kept = layer_stack.kept_bytes_per_layer(shape)
    record.record_capacity(perfkit_metrics, found, figures.LARGEST_LAYERS, num_conv + num_fc, budget.fixed)
    perfkit_metrics.record(figures.NUM_CONV, num_conv, exact=budget.fixed)
    perfkit_metrics.record(figures.NUM_FC, num_fc, exact=budget.fixed)
    perfkit_metrics.record(figures.FORWARD_MEAN_MS, sum(times) / len(times) * 1e3)  # the seed's figure
    perfkit_metrics.payload(
        LayerCapacity(
            knob,
            tuple(shape),
            _cap_gib(budget),
            num_conv,
            num_fc,
            found.stopped_by,
            kept["conv"] / memory.MiB,
            capacity.probe_records(found),
            room=budget.room(),
        )
    )


@pytest.mark.gpus(2)
@pytest.mark.parametrize("cap_name", [pytest.param(c, id=c, marks=pytest.mark.weekly) for c in CAPS])
def test_layer_stack_split(benchmark, cap_name, perfkit_profile, perfkit_metrics, perfkit_memory_cap):
    devices = (torch.device("cuda", 0), torch.device("cuda", 1))
    shape = perfkit_profile.pick(quick=layer_stack.QUICK_INPUT, full=layer_stack.FULL_INPUT)
    with budget_for(cap_name, list(devices), perfkit_profile.name, perfkit_memory_cap) as budget:
        found = capacity.in_fresh_process(layer_stack.largest_split, budget, shape, devices)
        n = found.largest
        at = layer_stack.split_point(n, shape)
        parts = capacity.in_fresh_process(
            layer_stack.time_split, budget, n, n, at, tuple(shape), devices, WARMUP, ROUNDS
        )
    inject_samples(benchmark, [p.total for p in parts])

    record.record_capacity(perfkit_metrics, found, figures.LARGEST_LAYERS, 2 * n, budget.fixed)
    for spec, values in ((figures.GPU0_FORWARD_MS, [t.first for t in parts]),
                         (figures.TRANSFER_MS, [t.transfer for t in parts]),
                         (figures.GPU1_FORWARD_MS, [t.second for t in parts])):
        perfkit_metrics.record(spec, samples=[v * 1e3 for v in values])
    at_largest = next(p for p in found.probes if p.value == n)
    for gpu, peak in enumerate(at_largest.peaks):
        perfkit_metrics.record(figures.gpu_peak(gpu), peak / memory.MiB)
    failure = found.first_failure
    perfkit_metrics.info(
        "ran_out_first",
        f"GPU {failure.failed_gpu}" if failure and failure.failed_gpu is not None else "unknown",
    )
    perfkit_metrics.payload(
        LayerCapacity(
            "split",
            tuple(shape),
            _cap_gib(budget),
            n,
            n,
            found.stopped_by,
            layer_stack.kept_bytes_per_layer(shape)["conv"] / memory.MiB,
            capacity.probe_records(found),
            split_at=at,
            peak_mib_per_device=tuple(p / memory.MiB for p in at_largest.peaks),
            failed_gpu=failure.failed_gpu if failure else None,
            room=budget.room(),
        )
    )
