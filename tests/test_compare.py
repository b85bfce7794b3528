from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfkit import SCHEMA_VERSION
from perfkit.errors import UsageError
from perfkit.results.compare import compare, parse_threshold
from tests.conftest import slowed

COPY = "benches/test_ceilings.py::test_copy_bandwidth"
MATMUL = "benches/test_ceilings.py::test_matmul_flops[fp32]"


def _results(benches: dict[str, list[float]], hardware_id: str = "cpu-test", **extra: Any) -> dict[str, Any]:
    """A minimal perfkit result set: one benchmark per name with the given time samples."""
    out = []
    for name, data in benches.items():
        med = sorted(data)[len(data) // 2]
        out.append({"fullname": name, "name": name, "group": None, "extra_info": dict(extra.get(name, {})),
                    "stats": {"data": list(data), "median": med, "iqr": 0.0, "rounds": len(data)}})
    info = {"schema_version": SCHEMA_VERSION, "hardware_id": hardware_id, "fingerprint": {}, "ceilings": {}}
    return {"benchmarks": out, "machine_info": {"perfkit": info}}


def _verdict(cmp, bench: str, metric: str = "time") -> str:
    return next(r.verdict for r in cmp.rows if r.benchmark == bench and r.metric == metric)


def test_a_stored_run_compared_with_itself_has_no_regression(cpu_results):
    cmp = compare(cpu_results, copy.deepcopy(cpu_results))
    assert cmp.regressions == ()
    assert cmp.same_hardware
    assert cmp.geomean_time_ratio == pytest.approx(1.0)
    assert {r.verdict for r in cmp.rows} <= {"unchanged", "noisy"}


def test_a_benchmark_made_30_percent_slower_is_the_only_regression(cpu_results):
    cmp = compare(cpu_results, slowed(cpu_results, MATMUL, 1.3))
    assert {r.benchmark for r in cmp.regressions} == {MATMUL}
    row = next(r for r in cmp.regressions if r.metric == "time")
    assert row.change == pytest.approx(0.3)
    assert row.p_value is not None and row.p_value < 0.05
    assert cmp.geomean_time_ratio > 1.0


def test_a_one_percent_slowdown_is_within_tolerance(cpu_results):
    cmp = compare(cpu_results, slowed(cpu_results, MATMUL, 1.01))
    assert _verdict(cmp, MATMUL) == "unchanged"


samples = st.lists(st.floats(min_value=0.97, max_value=1.03), min_size=5, max_size=30)


@settings(max_examples=60, deadline=None)
@given(data=samples, scale=st.floats(min_value=1e-6, max_value=10.0))
def test_identical_inputs_never_regress(data, scale):
    run = _results({"b": [x * scale for x in data]})
    assert compare(run, copy.deepcopy(run)).regressions == ()


@settings(max_examples=60, deadline=None)
@given(data=samples)
def test_samples_scaled_by_1_3_are_flagged_and_by_1_01_are_not(data):
    base = _results({"b": data})
    assert _verdict(compare(base, _results({"b": [x * 1.3 for x in data]})), "b") == "regressed"
    assert _verdict(compare(base, _results({"b": [x * 1.01 for x in data]})), "b") == "unchanged"


def test_too_few_samples_are_unconfirmed_not_regressed():
    cmp = compare(_results({"b": [1.0, 1.0, 1.0]}), _results({"b": [2.0, 2.0, 2.0]}))
    row = cmp.rows[0]
    assert row.verdict == "unconfirmed" and "too few samples" in row.note
    assert cmp.regressions == ()


def test_noise_is_its_own_verdict_never_a_regression():
    noisy = [1.0, 1.5, 0.6, 1.4, 0.7, 1.3, 0.8]
    cmp = compare(_results({"b": noisy}), _results({"b": [x * 1.3 for x in noisy]}))
    assert cmp.rows[0].verdict == "noisy"
    assert cmp.regressions == ()


def test_improvement_is_reported():
    data = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98]
    assert compare(_results({"b": data}), _results({"b": [x * 0.7 for x in data]})).rows[0].verdict == "improved"


def test_new_and_missing_benchmarks():
    data = [1.0] * 5
    cmp = compare(_results({"old": data}), _results({"new": data}))
    assert {(r.benchmark, r.verdict) for r in cmp.rows} == {("old", "missing"), ("new", "new")}


def test_per_benchmark_tolerance_override():
    data = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0]
    loose = {"b": {"tolerance": 0.5}}
    cmp = compare(_results({"b": data}, **loose), _results({"b": [x * 1.3 for x in data]}, **loose))
    assert cmp.rows[0].verdict == "unchanged"


def _with_metric(value: float, better: str, samples: list[float] | None = None) -> dict[str, Any]:
    metric = {"value": value, "unit": "x", "better": better}
    if samples:
        metric["samples"] = samples
    return _results({"b": [1.0] * 5}, b={"metrics": {"m": metric}})


def test_a_higher_is_better_metric_that_drops_regresses():
    base = [100.0, 101.0, 99.0, 100.0, 100.5]
    cmp = compare(_with_metric(100, "higher", base), _with_metric(70, "higher", [x * 0.7 for x in base]))
    assert _verdict(cmp, "b", "m") == "regressed"


def test_a_single_valued_metric_is_judged_without_significance():
    row = next(r for r in compare(_with_metric(64, "higher"), _with_metric(32, "higher")).rows if r.metric == "m")
    assert row.verdict == "regressed" and "single values" in row.note


def test_a_count_that_moves_at_all_is_changed_and_a_ratio_only_beyond_tolerance():
    assert _verdict(compare(_with_metric(1000, "none"), _with_metric(1001, "none")), "b", "m") == "changed"
    assert _verdict(compare(_with_metric(1.00, "none"), _with_metric(1.02, "none")), "b", "m") == "unchanged"
    assert _verdict(compare(_with_metric(1.00, "none"), _with_metric(1.20, "none")), "b", "m") == "changed"


def test_fingerprint_differences_are_listed(cpu_results):
    current = copy.deepcopy(cpu_results)
    current["machine_info"]["perfkit"]["fingerprint"]["torch"] = "9.9.9"
    changes = compare(cpu_results, current).fingerprint_changes
    assert ("torch", cpu_results["machine_info"]["perfkit"]["fingerprint"]["torch"], "9.9.9") in changes


def test_across_hardware_speedups_sit_beside_the_ceiling_ratio(cpu_results, h200_results):
    cmp = compare(cpu_results, h200_results)
    assert not cmp.same_hardware
    row = next(h for h in cmp.hardware_rows if h.benchmark == COPY)
    cpu_bw = cpu_results["machine_info"]["perfkit"]["ceilings"]["copy_bandwidth_gbps"]
    gpu_bw = h200_results["machine_info"]["perfkit"]["ceilings"]["copy_bandwidth_gbps"]
    assert row.bound == "copy_bandwidth_gbps"
    assert row.expected == pytest.approx(gpu_bw / cpu_bw)
    assert row.speedup > 1


@pytest.mark.parametrize("text, value", [("5%", 0.05), ("0.05", 0.05), ("12.5%", 0.125), (" 0 ", 0.0)])
def test_threshold_forms(text, value):
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["five", "5", "-1%", "nan", "5%%"])
def test_malformed_thresholds_say_how_to_write_one(text):
    with pytest.raises(UsageError, match=r"5% or 0.05"):
        parse_threshold(text)
