"""The quick profile's sizes are the ones its per-family budget (perfkit.quick_budget) was set for, and a
quick run that overruns a budget says so. Structural: nothing here times anything."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from perfkit import quick_budget
from perfkit.cpus import usable_cpus
from perfkit.measure.hardware import Fingerprint
from perfkit.options import RunOptions
from perfkit.session import Session
from perfkit.settings import Profile, Settings
from perfkit.store.baselines import BaselineStore
from perfkit.workloads import batch_sweep
from tests.conftest import ROOT, bench_module

BENCHES = ROOT / "benches"
#: The box the budget is for: the committed CPU baseline's 2 cores.
BUDGET_CPUS = 2


def test_every_bench_family_has_a_budget_and_every_budget_a_family():
    assert set(quick_budget.BUDGET_S) == {p.stem for p in BENCHES.glob("test_*.py")}
    assert quick_budget.total_s() <= 90  # the README's benchmark command on a quiet 2-core CPU


def test_the_quick_batch_sweep_trains_128_images_at_batch_32_and_128_with_a_worker_a_core():
    sweep = bench_module("test_batch_sweep")
    size = sweep.SIZES["quick-cpu"]
    assert size == 128
    assert [b for b in batch_sweep.series(size) if b <= size] == [32, 128]  # the ids as before: b32, b128
    assert list(sweep.variants("quick-cpu")) == ["resident", "loader-w2-pinned"]
    assert sweep.variants("quick-cpu")["loader-w2-pinned"].workers <= BUDGET_CPUS
    for sizes in ("full", "quick"):  # the course's, and a GPU's quick run: as their baselines were saved
        assert list(sweep.variants(sizes)) == ["resident", "loader-w4-pinned"]
    # two variants x two batches x a warm-up and a timed epoch of 128 images: 1,024 images through ResNet-18
    # (2,048 at the former 256), and the largest batch's 2 + 5 steps (15 before)
    assert 2 * 2 * 2 * size == 1024 and sum(sweep.STEPS["quick-cpu"]) == 7
    # its search: from batch 8 under 96 MiB (11 images fit on the CPU) rather than from 32 under 256 MiB (47)
    assert sweep.FIRST["quick-cpu"] == 8 and sweep.QUICK_BUDGET == 96 * 2**20
    assert sweep.SIZES["full"] == 50_000 and sweep.SIZES["quick"] == 256
    assert sweep.STEPS["full"] == sweep.STEPS["quick"] == (5, 10)
    assert sweep.FIRST["full"] == sweep.FIRST["quick"] == batch_sweep.FIRST_BATCH == 32


def test_the_quick_layers_on_a_cpu_warm_up_2_rounds_at_the_gpus_quick_batch():
    layers = bench_module("test_layers")
    # batch 8 on both, so a CPU's quick layers compare with a GPU's (a layer's speedup is its time ratio)
    assert layers.QUICK_BATCH == 8
    assert layers.ROUNDS == {"full": (5, 20), "quick": (5, 10), "quick-cpu": (2, 10)}


SIZES_KEYS = [("quick", "cpu", "quick-cpu"), ("quick", "cuda", "quick"), ("full", "cpu", "full"),
              ("full", "cuda", "full")]


@pytest.mark.parametrize(("profile", "device", "key"), SIZES_KEYS)
def test_only_a_cpus_quick_run_takes_the_budgeted_sizes(profile, device, key):
    assert quick_budget.sizes_key(profile, device) == key


def test_an_overrun_is_named_with_its_budget_longest_first(monkeypatch):
    budget = quick_budget.BUDGET_S
    sweep, layers = budget["test_batch_sweep"], budget["test_layers"]
    seconds = {"test_layers": layers + 5, "test_batch_sweep": sweep + 30, "test_flops": 0.5, "test_new": 1.0}
    assert quick_budget.over_budget(seconds) == [
        f"test_batch_sweep {sweep + 30:.0f} s (budget {sweep:.0f} s)",
        f"test_layers {layers + 5:.0f} s (budget {layers:.0f} s)",
        "test_new 1 s (no budget)",
    ]
    assert quick_budget.over_budget({"test_flops": 0.5}) == []
    # as few decimals as tell the two apart and show the budget as it is (a newcomer read "13 s (budget
    # 13 s)"; a 0.5 s budget read "0 s")
    monkeypatch.setitem(budget, "test_tiny", 0.5)
    assert quick_budget.over_budget({"test_layers": layers + 0.09, "test_tiny": 0.55,
                                     "test_batch_sweep": sweep + 0.04}) == [
        f"test_batch_sweep {sweep + 0.04:.2f} s (budget {sweep:.2f} s)",
        f"test_layers {layers + 0.09:.1f} s (budget {layers:.1f} s)",
        "test_tiny 0.6 s (budget 0.5 s)"]
    assert quick_budget.over_budget({"test_new": 0.3, "test_layers": layers + 1e-6}) == [
        f"test_layers just over its budget of {layers:g} s", "test_new 0.3 s (no budget)"]


def _session(tmp_path: Path, profile: str) -> Session:
    fingerprint = Fingerprint(hardware_id="cpu-test", device="cpu", gpu_name=None, gpu_count=0,
                              gpu_memory_gib=None, compute_capability=None, datasheet_key=None, driver=None,
                              cuda=None, cudnn=None, torch="2", torchvision=None, numba=None, numba_cuda=None,
                              python="3.11", cpu_model="test", cpu_count=usable_cpus())
    return Session(Settings(torch.device("cpu"), Profile(profile), 0, fingerprint),
                   BaselineStore(tmp_path / "baselines"), RunOptions(baseline="none"))


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_a_quick_run_over_a_bench_familys_budget_says_so_in_one_line(tmp_path, profile):
    session = _session(tmp_path, profile)
    session.add_wall_time("benches/test_batch_sweep.py::test_largest_batch", 90.0)
    session.add_wall_time("tests/test_layers.py::test_the_course_shapes", 60.0)  # a test, not the bench
    lines = [line for line in session.summary_lines() if "budget" in line]
    if profile == "full":
        assert lines == []
        return
    said = ("perfkit: over the quick profile's budget for a quiet 2-core CPU: test_batch_sweep 90 s (budget "
            "24 s); a busy host or a slower CPU stretches every family, a size that grew needs its budget")
    assert lines == [said]


def test_a_quick_run_over_budget_on_a_host_the_summary_calls_busy_names_the_load_as_the_likely_reason(
        tmp_path, cpu_results):
    """On a host whose other processes kept its CPUs busy (ResultSet.busy_host, said by the summary's other
    lines), the budget line advised as on a quiet machine: a size that grew needs its budget."""
    for bench in cpu_results["benchmarks"]:
        if "test_ceilings.py" in bench["fullname"]:  # busy while that family ran, quiet elsewhere
            bench["extra_info"]["host_load"] = {"other_cpus": 1.5, "cpus": 2, "version": 1}
    session = _session(tmp_path, "quick")
    busy = session.derive(cpu_results).busy_host()
    session.add_wall_time("benches/test_ceilings.py::test_matmul_flops[fp32]", 90.0)
    said = ("perfkit: over the quick profile's budget for a quiet 2-core CPU: test_ceilings 90 s (budget "
            f"1 s); the busy host is the likely reason ({busy})")
    assert [line for line in session.summary_lines() if "budget" in line] == [said]
    ceilings = [b["name"] for b in cpu_results["benchmarks"] if "test_ceilings.py" in b["fullname"]]
    assert busy == (f"2 of its {len(cpu_results['benchmarks'])} benchmarks ({', '.join(ceilings)}) ran while "
                    "other processes kept up to 1.5 of 2 CPUs busy")  # which ones, named
    # a family that ran on a quiet host is not excused by another's busy neighbour
    session = _session(tmp_path, "quick")
    session.derive(cpu_results)
    session.add_wall_time("benches/test_layers.py::test_layer[conv-forward]", 500.0)
    line = next(line for line in session.summary_lines() if "budget" in line)
    assert line.endswith(f"a size that grew needs its budget ({busy}, none of them in these families)"), line
    for i, bench in enumerate(cpu_results["benchmarks"]):
        bench["extra_info"]["host_load"] = {"other_cpus": 1.5 if i else 0.0, "cpus": 2, "version": 1}
    names = [b["name"] for b in cpu_results["benchmarks"][1:]]
    assert session.derive(cpu_results).busy_host().startswith(
        f"4 of its 5 benchmarks ({', '.join(names[:3])} and 1 more) ran")
    for bench in cpu_results["benchmarks"]:
        bench["extra_info"]["host_load"] = {"other_cpus": 1.5, "cpus": 2, "version": 1}
    assert session.derive(cpu_results).busy_host().startswith("5 of its 5 benchmarks ran")  # all: none named


def test_the_busy_host_is_blamed_only_where_it_disturbed_most_families_over_budget_and_another_cpu_is_named():
    """A newcomer's run on another CPU (1.22x slower) had 8 families over budget, one benchmark of one of
    them disturbed, and read "the busy host is the likely reason"."""
    over = ["test_batch_sweep", "test_capacity", "test_layers", "test_flops"]
    busy = "1 of its 40 benchmarks ran while other processes kept up to 0.7 of 2 CPUs busy"
    change = "cpu_signature family 26 model 2 -> family 25 model 17"
    assert quick_budget.likely_reason(over, {"test_layers"}, busy, change) == (
        f"this CPU is not the budget's ({change}), and a slower CPU stretches every family ({busy}, in 1 of "
        "these 4 families)")
    assert quick_budget.likely_reason(over, {"test_layers"}, busy, "") == (
        "a busy host or a slower CPU stretches every family, a size that grew needs its budget "
        f"({busy}, in 1 of these 4 families)")
    assert quick_budget.likely_reason(over, set(over[:3]), busy, change) == (
        f"the busy host is the likely reason ({busy})")
    assert quick_budget.likely_reason(over, set(), "", change) == (
        f"this CPU is not the budget's ({change}), and a slower CPU stretches every family")
