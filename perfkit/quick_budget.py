"""What each benchmark family of the quick profile may take on the machine CI runs it on: a quiet 2-core CPU
(the committed baseline's, ``baselines/cpu-amd-epyc-2cpu-quick.json``).

The quick profile exists so that a CPU box runs every benchmark's code path in minutes; its sizes are fixed
per family in the bench files (deterministic ids and work, no runtime timer), chosen so that each family
fits the seconds below, and ``tests/test_quick_budget.py`` holds those sizes to what this budget was set
for. A run of the quick profile whose bench family took longer than its budget says so in one line at its
end (:func:`over_budget`): a busy host, a slower CPU, or a size that grew without its budget.

The seconds are wall time of the family's tests (set-up and fresh processes included) on the quiet box,
with room of about a quarter over what it measured (2026-11-27); the benchmark command adds pytest's and
torch's start-up to their sum. A host whose other processes keep its CPUs busy stretches every family
alike (CI's loaded box ran the former quick sizes 2-8x slower than the quiet one).
"""
from __future__ import annotations

from collections.abc import Mapping

from perfkit.resultfile.model import ProfileName

#: family (bench file stem) -> wall seconds on a quiet 2-core CPU
BUDGET_S: dict[str, float] = {
    "test_batch_sweep": 24.0,  # 43 s before 2026-11-27 (256 images, 4 loader workers, a 47-image search)
    "test_capacity": 16.0,  # 12 fresh processes of about a second each: the searches' own work is under 3 s
    "test_ceilings": 1.0,
    "test_data_parallel": 0.5,  # GPU only: skips on a CPU
    "test_flops": 2.0,
    "test_large_batch": 0.5,  # GPU only
    "test_layers": 13.0,  # 12 s before 2026-11-27 with 5 warm-up rounds (2 since)
    "test_model_memory": 5.0,
    "test_ppp": 0.5,  # GPU only
    "test_time_to_accuracy": 9.0,
    "test_timer_fidelity": 5.0,
    "test_vector_add": 1.0,
    "test_vgg_swap": 6.0,
}
#: The benchmark command's own start-up (pytest, torch, collection) on the quiet box, beside the families.
START_UP_S = 5.0
#: The node ids of the benchmarks the budget is for (the tests of tests/ share some stems with them).
BENCH_DIR = "benches/"


def sizes_key(profile: ProfileName, device_type: str) -> str:
    """The key of a bench file's size tables: ``quick-cpu`` for the quick profile on a CPU (the sizes this
    budget is for), else the profile's name: a GPU's quick run keeps the sizes its baseline
    (nvidia-h200-x1-quick.json) was saved at, so one id measures one workload on a given device."""
    return "quick-cpu" if profile == "quick" and device_type != "cuda" else profile


def total_s() -> float:
    """The whole quick benchmark command on a quiet 2-core CPU, as budgeted."""
    return START_UP_S + sum(BUDGET_S.values())


def over_budget(seconds: Mapping[str, float]) -> list[str]:
    """``family seconds (budget N s)`` for each bench family of a quick run that took longer than its budget,
    the longest first; a family without a budget (a new bench file) is named with "no budget"."""
    return [f"{name} {_beyond(seconds[name], BUDGET_S.get(name, 0.0))}" for name in families_over(seconds)]


def families_over(seconds: Mapping[str, float]) -> list[str]:
    """The bench families of a quick run that took longer than their budget, the longest first."""
    over = [name for name, s in seconds.items() if s > BUDGET_S.get(name, 0.0)]
    return sorted(over, key=lambda name: -seconds[name])


def likely_reason(over: list[str], disturbed: set[str], busy: str, machine_change: str) -> str:
    """Why the families ``over`` their budget likely took longer: the busy host where it disturbed most of
    them (``disturbed``: the families with a benchmark run while others kept a quarter of the CPUs busy;
    ``busy``: the run's sentence for that), else another CPU than the budget's where the run knows it
    (``machine_change``: its fingerprint against the baseline's under one hardware id), else each cause that
    stretches every family. A newcomer's 8 families over on a slower CPU, 1 of them disturbed, read "the busy
    host is the likely reason"."""
    hit = disturbed & set(over)
    if busy and len(hit) * 2 > len(over):
        return f"the busy host is the likely reason ({busy})"
    why = (f"this CPU is not the budget's ({machine_change}), and a slower CPU stretches every family"
           if machine_change else "a busy host or a slower CPU stretches every family, a size that grew "
                                  "needs its budget")
    if hit and busy:
        return f"{why} ({busy}, in {len(hit)} of these {len(over)} families)"
    return f"{why} ({busy}, none of them in these families)" if busy else why


def _beyond(seconds: float, budget: float) -> str:
    """Seconds over a budget (0: none) beside it, both in as few decimals (up to two) as tell them apart and
    show the budget as it is ("13 s (budget 13 s)" read 13.09 s; a 0.5 s budget read "0 s")."""
    digits = next((d for d in range(3)
                   if round(budget, d) == budget and f"{seconds:.{d}f}" != f"{budget:.{d}f}"), None)
    if not budget:
        return f"{seconds:.{digits if digits is not None else 2}f} s (no budget)"
    if digits is None:
        return f"just over its budget of {budget:g} s"
    return f"{seconds:.{digits}f} s (budget {budget:.{digits}f} s)"
