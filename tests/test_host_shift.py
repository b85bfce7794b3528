"""A slower host and rounds that did not settle (perfkit.verdict.host_shift, .unsettled_rounds): a whole host
running slower makes its host-bound figures unknown, never a GPU-bound one or a CPU run, never a new software
stack, never a confirmation's own suspects; a slowdown whose rounds spread widely is unknown only where one of
them ran at the baseline's pace."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from perfkit import SCHEMA_VERSION
from perfkit.store import baselines
from perfkit.verdict.judge import FirstLook, Verdict, judge
from perfkit.verdict.noise import Noise
from tests.conftest import night, typed
from tests.test_noise import COPY_BOUND, _baseline, _draws, _run


def test_a_whole_host_running_slower_makes_its_host_bound_figures_unknown_not_regressed():
    """A fresh H100 read every host-bound figure 15-75% slower with no code change: the common shift is the
    host's, so the figures within it are unknown; a GPU-bound figure and a host-bound one far beyond it still
    regress."""
    rng = np.random.default_rng(3)
    sds = {**{f"gpu{i}": 0.01 for i in range(10)}, **{f"host{i}": 0.05 for i in range(12)}}
    baseline = _baseline(_draws(rng, sds, 6), within=sds)
    slow_host = {f"host{i}": 1.3 for i in range(12)}
    shifts = {**slow_host, "host0": 1.35, "host1": 1.3 * 4.0, "gpu0": 1.10}
    current = _run(_draws(rng, sds, 1, shift=shifts)[0], within=sds)
    comparison = judge(baseline, current, Noise.of(baseline))
    verdicts = comparison.benchmark_verdicts()
    assert verdicts["gpu0"] is Verdict.REGRESSED and verdicts["host1"] is Verdict.REGRESSED
    assert not [n for n, v in verdicts.items() if v is Verdict.REGRESSED and n not in ("gpu0", "host1")]
    host0 = next(r for r in comparison.rows if r.benchmark == "host0" and r.figure == "time")
    assert host0.verdict is Verdict.UNKNOWN
    assert any(s in host0.note for s in ("common host shift", "slower together"))
    # twice as slow on a host that kept its pace is a regression
    alone = _run(_draws(rng, sds, 1, shift={"host0": 2.0})[0], within=sds)
    assert judge(baseline, alone, Noise.of(baseline)).benchmark_verdicts()["host0"] is Verdict.REGRESSED
    # so is every host-bound figure twice as slow: that is not a slower host
    halved = _run(_draws(rng, sds, 1, shift={f"host{i}": 2.0 for i in range(12)})[0], within=sds)
    verdicts = judge(baseline, halved, Noise.of(baseline)).benchmark_verdicts()
    assert all(verdicts[f"host{i}"] is Verdict.REGRESSED for i in range(12))


def test_a_cpu_run_slower_throughout_is_not_excused_as_a_slower_host():
    rng = np.random.default_rng(4)
    sds = {f"host{i}": 0.03 for i in range(12)}
    draws = enumerate(_draws(rng, sds, 6))
    runs = [_run(d, when=night(i, "2026-11-20"), device="cpu", within=sds) for i, d in draws]
    baseline = baselines.from_runs(runs)
    slower = _run(_draws(rng, sds, 1, shift={n: 1.3 for n in sds})[0], device="cpu", within=sds)
    comparison = judge(baseline, slower, Noise.of(baseline))
    assert not any("slower together" in r.note for r in comparison.rows)
    assert comparison.benchmark_verdicts()["host0"] is Verdict.REGRESSED


def _slow_host_case() -> tuple[Any, Any, dict[str, float]]:
    rng = np.random.default_rng(8)
    sds = {**{f"gpu{i}": 0.01 for i in range(10)}, **{f"host{i}": 0.05 for i in range(12)}}
    baseline = _baseline(_draws(rng, sds, 6), within=sds)
    current = _run(_draws(rng, sds, 1, shift={f"host{i}": 1.35 for i in range(12)})[0], within=sds)
    return baseline, current, sds


def test_a_new_software_stack_is_not_excused_as_a_slower_host():
    baseline, current, _ = _slow_host_case()
    assert judge(baseline, current, Noise.of(baseline)).host is not None
    info = current.info
    upgraded = current.with_info(fingerprint=dataclasses.replace(info.fingerprint, torch="2.99"))
    old = baseline.with_info(fingerprint=dataclasses.replace(baseline.info.fingerprint, torch="2.11"))
    comparison = judge(old, upgraded, Noise.of(old))
    assert comparison.host is None and not any("slower together" in r.note for r in comparison.rows)


def test_a_confirmation_judges_its_few_re_runs_with_the_first_runs_host_shift():
    """Re-runs of three flagged host-bound benchmarks on the same slow host cannot show a common shift of
    their own (eight figures are needed) and were picked for being worse: the first run's shift holds."""
    baseline, current, _ = _slow_host_case()
    first = judge(baseline, current, Noise.of(baseline))
    names = ["host0", "host1", "host2"]
    rerun = current.with_benchmarks([b for b in current.benchmarks if b.fullname in names])
    alone = judge(baseline, rerun, Noise.of(baseline))
    kept = judge(baseline, rerun, Noise.of(baseline), first_look=FirstLook.of(first))
    assert alone.host is None and alone.regressions and kept.host == first.host
    assert not kept.regressions and kept.tests == first.tests
    assert all(kept.benchmark_verdicts()[n] is Verdict.UNKNOWN for n in names)


def test_a_confirmation_never_computes_a_host_shift_from_its_suspects():
    """Nine host-bound benchmarks 12% slower, re-run: the confirmation's own 'common host shift' of the very
    figures it re-ran excused them all as a slower host, and the nightly passed."""
    rng = np.random.default_rng(5)
    sds = {**{f"gpu{i}": 0.01 for i in range(10)}, **{f"host{i}": 0.01 for i in range(20)}}
    baseline = _baseline(_draws(rng, sds, 6), within=sds)
    slowed = {f"host{i}": 1.12 for i in range(9)}
    current = _run(_draws(rng, sds, 1, shift=slowed)[0], within=sds)
    first = judge(baseline, current, Noise.of(baseline))
    assert first.host is None and set(slowed) <= {r.benchmark for r in first.regressions}
    reruns = [_run(d, within=sds) for d in _draws(rng, sds, 3, shift=slowed)]
    rerun = baselines.from_runs([r.with_benchmarks([b for b in r.benchmarks if b.fullname in slowed])
                                 for r in reruns])
    second = judge(baseline, rerun, Noise.of(baseline), first_look=FirstLook.of(first))
    assert second.host is None and {r.benchmark for r in second.regressions} == set(slowed)


@pytest.mark.parametrize(("factor", "base_within", "within", "expected"), [
    (1.65, 0.01, 0.40, Verdict.UNKNOWN),  # worse, rounds spread ~40% against ~1%: did not settle
    (1.65, 0.0, 0.40, Verdict.UNKNOWN),  # against rounds that did not spread at all
    (1.65, 0.01, 0.01, Verdict.REGRESSED),  # the same slowdown, every round alike: the code
    (0.60, 0.01, 0.40, Verdict.IMPROVED),  # a figure that got better is not excused by its spread
    (1.65, 0.01, 0.15, Verdict.REGRESSED),  # ~15%: under unsettled_rounds.MIN_SPREAD, a slowdown
    (1.65, 0.06, 0.25, Verdict.REGRESSED),  # ~25% against ~6%: under FACTOR times the baseline's
    (1.65, 0.15, 0.90, Verdict.REGRESSED),  # a baseline whose rounds spread 15% did not settle either
    (1.06, 0.0005, 0.07, Verdict.UNKNOWN),  # 7% against 0.05%: a GPU-bound step's rounds that did not settle
    (1.65, 0.0005, 0.07, Verdict.REGRESSED),  # the same rounds 65% slower: beyond their spread, the whole run
    (1.65, 0.0005, 0.80, Verdict.UNKNOWN),  # a whole run that drifted as widely: the wider rule excuses it
    (1.65, 0.002, 0.035, Verdict.REGRESSED),  # 17 times the baseline's, but under TIGHT_MIN_SPREAD
    (1.65, 0.004, 0.07, Verdict.REGRESSED),  # 7% against 0.4%: under TIGHT_FACTOR times the baseline's
])
def test_a_slowdown_whose_rounds_did_not_settle_is_unknown(factor, base_within, within, expected):
    rng = np.random.default_rng(3)
    sds = {f"b{i}": 0.01 for i in range(20)}
    baseline = _baseline(_draws(rng, sds, 3), within={**sds, "b0": base_within})
    current = _run(_draws(rng, sds, 1, shift={"b0": factor})[0], within={**sds, "b0": within})
    comparison = judge(baseline, current, Noise.of(baseline))
    assert comparison.benchmark_verdicts()["b0"] is expected
    row = next(r for r in comparison.rows if r.benchmark == "b0" and r.gating)
    assert ("did not settle" in row.note) == (expected is Verdict.UNKNOWN)


def test_rounds_spread_tightly_excuse_a_slowdown_only_where_one_of_them_ran_at_the_baselines_pace():
    """A disturbance leaves some rounds at the baseline's pace (a DDP step's 33.0-46.1 ms against 33.0 ms);
    rounds that all moved beyond their spread moved as a whole run (a sleep twice as slow, spread 5%). A run
    to be appended is kept out on the spreads alone: either way it would widen the noise."""
    from perfkit.resultfile.model import BenchmarkEntry
    from perfkit.verdict.unsettled_rounds import unsettled, unsettled_gate

    def entry(rounds: list[float]) -> BenchmarkEntry:
        bench = {"fullname": "b", "name": "b", "extra_info": dict(COPY_BOUND),
                 "stats": {"median": sorted(rounds)[len(rounds) // 2], "data": rounds, "iqr": 0.0,
                           "rounds": len(rounds)}}
        info = {"schema_version": SCHEMA_VERSION, "hardware_id": "gpu-test", "device": "cuda"}
        return typed({"benchmarks": [bench], "machine_info": {"perfkit": info}}).benchmarks[0]

    base = entry([33.0, 33.01, 33.02, 33.0, 33.01])
    disturbed = [33.0, 36.0, 38.0, 40.0, 42.0, 44.0, 46.0]  # IQR 15% of the median, the median +21%
    assert unsettled(base, entry(disturbed), "time", 1) is not None
    slower = entry([1.2 * r for r in disturbed])
    assert unsettled(base, slower, "time", 1) is None  # none nearer than about +20%
    assert unsettled(base, entry(disturbed), "time", 3) is None  # fresh runs are judged without the excuse
    assert unsettled_gate(base, slower, {"time": [slower.median]}) is not None


def test_fresh_runs_that_keep_the_slowdown_regress_however_their_rounds_spread():
    # --perfkit-confirm judges its re-runs together: the single-run excuse does not apply to them
    rng = np.random.default_rng(3)
    sds = {f"b{i}": 0.01 for i in range(20)}
    baseline = _baseline(_draws(rng, sds, 3), within=sds)
    again = baselines.from_runs([_run(r, when=night(5 + i, "2026-11-20"), within={**sds, "b0": 0.40})
                                 for i, r in enumerate(_draws(rng, sds, 3, shift={"b0": 1.65}))])
    assert judge(baseline, again, Noise.of(baseline)).benchmark_verdicts()["b0"] is Verdict.REGRESSED
