"""The rotation over fresh placements (perfkit.measure.placements) that the vector add's CPU references and
managed first launches are timed with."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from perfkit.measure import cores, placements
from perfkit.resultfile import figures
from perfkit.resultfile.metrics import METHODS_KEY
from perfkit.workloads.kernels import elements
from tests.conftest import bench_module

ROOT = Path(__file__).resolve().parents[1]


def test_a_huge_page_copy_holds_the_same_values_in_fresh_memory_aligned_to_a_huge_page():
    like = np.arange(3 * placements.HUGE_PAGE // 4 + 7, dtype=np.float32)
    copy = placements.huge_page_array(like)
    assert np.array_equal(copy, like) and copy.dtype == like.dtype and copy.shape == like.shape
    assert copy.ctypes.data % placements.HUGE_PAGE == 0
    copy[0] = -1.0
    assert like[0] == 0.0  # its own memory, not a view of the original


@pytest.mark.parametrize("per, warm", [(placements.ROUNDS_PER_PLACEMENT, placements.WARM_ROUNDS), (3, 1)])
def test_each_placement_is_warmed_untimed_then_timed_in_turn(per, warm):
    calls: list[tuple[str, int]] = []
    rotation = placements.Rotation(
        placements=[0, 1, 2],
        arguments=lambda p: ((p,), {}),
        target=lambda p: calls.append(("timed", p)),
        warm=lambda p: calls.append(("warm", p)),
        rounds_per=per,
        warm_rounds=warm,
    )
    setup = rotation._setup()
    for _ in range(rotation.rounds):  # what pytest-benchmark's pedantic mode does: setup, then the target
        args, kwargs = setup()
        rotation.target(*args, **kwargs)
    assert calls == [call for p in range(3) for call in [("warm", p)] * warm + [("timed", p)] * per]
    assert rotation.rounds == 3 * per
    assert setup() == ((2,), {}) and len(calls) == 3 * (per + warm)  # --benchmark-cprofile's extra round


def test_a_reference_beside_runs_once_before_each_timed_round_and_never_in_the_warm_ones():
    """A first touch beside a first launch: each timed round's reference comes right before its setup's
    arguments, on the same placement, so the two pair round by round (as many references as timed rounds)."""
    calls: list[tuple[str, int]] = []
    rotation = placements.Rotation(
        placements=[0, 1],
        arguments=lambda p: (calls.append(("setup", p)), ((p,), {}))[1],
        target=lambda p: calls.append(("timed", p)),
        warm=lambda p: calls.append(("warm", p)),
        rounds_per=2,
        warm_rounds=1,
        beside=lambda p: calls.append(("beside", p)),
    )
    setup = rotation._setup()
    for _ in range(rotation.rounds):
        args, kwargs = setup()
        rotation.target(*args, **kwargs)
    timed_round = [("beside", 0), ("setup", 0), ("timed", 0)]
    assert calls[:8] == [("setup", 0), ("warm", 0), *timed_round, *timed_round]
    assert calls.count(("beside", 0)) == calls.count(("timed", 0)) == 2
    assert calls.count(("beside", 1)) == calls.count(("timed", 1)) == 2


@pytest.mark.parametrize("k, scenario, beside", [
    (1, "grid", True), (1, "tuned", True), (100, "grid", True), (100, "tuned", True),
    (1, "one_block", True), (100, "one_block", True), (1, "one_thread", False),
    (5, "grid", False), (10, "tuned", False), (50, "grid", False), (5, "one_block", False)])
def test_the_nightlys_first_launches_but_one_threads_are_timed_beside_a_first_touch(k, scenario, beside):
    """The lever measured on fresh H200s (docs/findings.md) where it was measured: the weekly middle sizes and
    one thread's launches (the thread's pace) keep their time as the gate."""
    assert bench_module("test_vector_add")._touch_beside(scenario, elements(k)) is beside


@pytest.mark.parametrize("k, scenario, prefetched", [
    (100, "grid", True), (100, "tuned", True), (100, "one_block", False), (1, "grid", False),
    (1, "tuned", False), (50, "grid", False), (10, "tuned", False), (100, "one_thread", False)])
def test_only_the_nightlys_large_grid_and_tuned_first_launches_send_their_pages_back_by_prefetch(k, scenario,
                                                                                                 prefetched):
    """Measured on one H200 (docs/findings.md, 2026-12-04, afternoon): at 100 M the prefetch let twelve
    rounds a placement cost what three after the host's write did, and the ratio moved 0.6-0.9% between
    processes; the 1 M launches' writes are cheap, the weekly sizes are not timed beside a touch, and one
    block's keeps the write it was measured with."""
    assert bench_module("test_vector_add")._prefetched(scenario, elements(k)) is prefetched


@pytest.mark.parametrize("k, scenario, beside", [
    (1, "one_block", True), (100, "one_block", True), (1, "one_thread", False), (1, "grid", False),
    (100, "tuned", False), (5, "one_block", False), (10, "one_block", False), (50, "one_block", False)])
def test_the_nightlys_one_block_launches_are_timed_beside_one_multiprocessors_copy(k, scenario, beside):
    """The lever measured on two fresh H200s (docs/findings.md, 2026-12-03) where it was measured: the weekly
    middle sizes and the other shapes keep their kernel's time as the gate."""
    assert bench_module("test_vector_add")._copy_beside(scenario, elements(k)) is beside


def test_a_zeroed_huge_page_array_holds_zeros_of_the_shape_asked():
    like = np.arange(1000, dtype=np.float32) + 1
    empty = placements.huge_page_array(like, copy=False)
    assert empty.shape == like.shape and empty.dtype == like.dtype and not empty.any()


def _cpu_references(pytester, option: str) -> None:
    """A real run of the vector add's CPU references with ``option``, both passing."""
    pytester.makepyfile(test_vector_add=(ROOT / "benches" / "test_vector_add.py").read_text())
    result = pytester.runpytest_subprocess("-p", "perfkit.plugin", "--perfkit-baseline=none", "-k", "cpu",
                                           option)
    result.assert_outcomes(passed=2)


@pytest.mark.slow
def test_with_benchmarks_disabled_every_placement_still_computes_its_answer(pytester):
    """--benchmark-disable sweeps no core: each placement runs once, unpinned, so every sum checked is one."""
    _cpu_references(pytester, "--benchmark-disable")


@pytest.mark.slow
def test_the_vector_adds_cpu_references_are_timed_on_every_core_as_method_3(pytester):
    """A real run of the CPU references: one round per core swept (each core's fastest pass), how the cores
    were swept kept beside it, its method version 3, and the host's copy timed beside each core's bursts."""
    _cpu_references(pytester, "--benchmark-json=out.json")
    benches = json.loads((pytester.path / "out.json").read_text())["benchmarks"]
    assert {b["name"] for b in benches} == {"test_cpu_loop[K1]", "test_cpu_numpy[K1]"}
    swept = len(cores.swept(cores.usable())) or 1
    for bench in benches:
        assert bench["stats"]["rounds"] == swept
        assert bench["extra_info"]["core_sweep"] == {
            "cores": swept, "passes": cores.PASSES,
            "burst": 20 * max(1, -(-cores.BURSTS // (cores.PASSES * swept)))}
        assert bench["extra_info"][METHODS_KEY] == dict.fromkeys(figures.HOST_FASTEST_CORE.figures, 3)
        # the host's copy of the same bytes, core by core, and the verdict resting on the add over it
        metrics = bench["extra_info"]["metrics"]
        copies, ratios = (metrics[f.name]["samples"] for f in (figures.HOST_COPY_S, figures.OVER_HOST_COPY))
        assert len(copies) == len(ratios) == swept
        assert all(c > 0 and r > 0 for c, r in zip(copies, ratios))
        assert bench["extra_info"]["gate"] == figures.OVER_HOST_COPY.name
