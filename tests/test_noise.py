"""The noise model: the empirical-Bayes fit recovers known variances, identical runs never regress, a real
shift is seen by one run, and the between-machine term applies only across machines."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfkit import SCHEMA_VERSION, confirm
from perfkit.render import verdicts
from perfkit.store import baselines
from perfkit.store.kept_noise import for_judging
from perfkit.verdict import stats
from perfkit.verdict.judge import Policy, Verdict, judge
from perfkit.verdict.noise import (
    GPU_KIND,
    HOST_TAIL_DF,
    TAIL_RUNS,
    UNMEASURED_BETWEEN_RATIO,
    Noise,
    machine_shares,
    noise_kind,
)
from perfkit.verdict.prior import MAX_PRIOR_DF, fit_prior, moderate
from tests.conftest import night, typed

COPY_BOUND = {"bound": "copy_bandwidth_gbps"}


def _run(times: dict[str, float], machine: str = "m1", device: str = "cuda", when: str = "2026-11-23",
         within: dict[str, float] | None = None) -> Any:
    """One run: each benchmark's median time ``times[name]`` over five rounds that spread ``within[name]``
    (log scale; a benchmark's rounds spread about as its runs do), a GPU-bound benchmark unless its name
    starts with ``host``."""
    def rounds(name: str, t: float) -> list[float]:
        sd = (within or {}).get(name, 0.0)
        return [t * math.exp(sd * z) for z in (-1.0, -0.5, 0.0, 0.5, 1.0)]

    benches = [
        {
            "fullname": n,
            "name": n,
            "extra_info": {} if n.startswith("host") else dict(COPY_BOUND),
            "stats": {"median": t, "data": rounds(n, t), "iqr": 0.0, "rounds": 5},
        }
        for n, t in times.items()
    ]
    info = {"schema_version": SCHEMA_VERSION, "hardware_id": "gpu-test", "device": device,
            "fingerprint": {"machine": machine}}
    return typed({"benchmarks": benches, "machine_info": {"perfkit": info}, "datetime": when})


def _baseline(runs: list[dict[str, float]], machines: list[str] | None = None,
              within: dict[str, float] | None = None) -> Any:
    machines = machines or ["m1"] * len(runs)
    return baselines.from_runs([_run(r, m, when=night(i, "2026-11-20"), within=within)
                                for i, (r, m) in enumerate(zip(runs, machines))])


def _draws(rng: np.random.Generator, sds: dict[str, float], runs: int, shift: dict[str, float] | None = None,
           level: float = 1e-3) -> list[dict[str, float]]:
    """``runs`` runs of every benchmark, log-normal around ``level`` with its own SD (times ``shift``)."""
    return [{n: level * (shift or {}).get(n, 1.0) * math.exp(rng.normal(0, sd)) for n, sd in sds.items()}
            for _ in range(runs)]


def test_the_empirical_bayes_fit_recovers_the_prior_it_was_drawn_from():
    rng = np.random.default_rng(7)
    s0_2, d0, d = 0.01**2, 8.0, 2
    true = s0_2 * d0 / rng.chisquare(d0, size=4000)  # each figure's own variance, scattered around s0²
    observed = true * rng.chisquare(d, size=true.size) / d  # what three runs each show of it
    prior = fit_prior(list(observed), [d] * observed.size)
    assert prior is not None and prior.s2(None) == pytest.approx(s0_2, rel=0.15)
    assert prior.df == pytest.approx(d0, rel=0.3)
    moderated = np.array([moderate(v, d, prior.s2(None), prior.df)[0] for v in observed])
    assert np.mean((np.log(moderated) - np.log(true)) ** 2) < 0.5 * np.mean(
        (np.log(observed) - np.log(true)) ** 2
    )


def test_figures_that_share_one_variance_get_the_largest_finite_prior_degrees_of_freedom():
    """An infinite d0 would drop each figure's own variance and give every test normal tails."""
    rng = np.random.default_rng(3)
    observed = 0.02**2 * rng.chisquare(4, size=3000) / 4
    prior = fit_prior(list(observed), [4] * observed.size)
    assert prior is not None and prior.df == MAX_PRIOR_DF
    assert prior.s2(None) == pytest.approx(0.02**2, rel=0.05)


def test_the_prior_follows_the_within_run_dispersion_and_keeps_a_wild_figure_apart():
    rng = np.random.default_rng(13)
    sds = {f"b{i}": 0.002 * 1.1**i for i in range(40)}  # 0.2% to 9%: a machine's figures are far from alike
    sds["wild"] = 0.2  # its rounds agree like a 1% figure's, its runs do not: a different physical GPU
    within = {**sds, "wild": 0.01}
    baseline = _baseline(_draws(rng, sds, 4), within=within)
    noise = Noise.of(baseline)
    prior = noise.priors["timed-gpu"]
    assert 1.6 < prior.slope < 2.4  # variance grows as the within-run dispersion squared
    # once the trend is taken out, the figures agree: much is pooled (40 figures of 3 df each)
    assert prior.df > 3
    assert ("wild", "time") in noise.outliers
    wild = noise.of_figure("wild", "time")
    assert wild is not None and wild.df == 3 and wild.sd > 0.1  # its own noise, not the prior's precision


def test_one_nightly_run_sees_a_ten_percent_slowdown_of_a_stable_figure():
    # three baseline runs of 40 GPU-bound benchmarks at 1% noise: alone, df = 2 leaves the MDE near 40%
    rng = np.random.default_rng(11)
    sds = {f"b{i}": 0.01 for i in range(40)}
    baseline = _baseline(_draws(rng, sds, 3), within=sds)
    current = _run(_draws(rng, sds, 1, shift={"b0": 1.10})[0], within=sds)
    comparison = judge(baseline, current, Noise.of(baseline))
    verdicts = comparison.benchmark_verdicts()
    assert verdicts["b0"] is Verdict.REGRESSED
    assert not [n for n, v in verdicts.items() if n != "b0" and v is Verdict.REGRESSED]
    # the MDE at 80% power: about 4 standard errors at the corrected level, not the 50% point's 3.3
    assert max(r.mde or 1 for r in comparison.rows if r.gating) <= 0.06


def test_a_twofold_slowdown_of_a_noisy_figure_regresses():
    # 8% between runs: host work's tests read t with at most 5 degrees of freedom (its heavy tails), so a
    # 2x slowdown at 12% noise and three baseline runs (t = 5.0) no longer clears the corrected quantile
    rng = np.random.default_rng(5)
    sds = {**{f"gpu{i}": 0.01 for i in range(20)}, **{f"host{i}": 0.08 for i in range(20)}}
    baseline = _baseline(_draws(rng, sds, 3), within=sds)
    current = _run(_draws(rng, sds, 1, shift={"host0": 2.0})[0], within=sds)
    verdicts = judge(baseline, current, Noise.of(baseline)).benchmark_verdicts()
    assert verdicts["host0"] is Verdict.REGRESSED


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), figures=st.integers(5, 60), runs=st.integers(2, 6),
       sd=st.floats(0.001, 0.2))
def test_identical_runs_never_regress_under_the_pooled_model(seed, figures, runs, sd):
    rng = np.random.default_rng(seed)
    sds = {f"b{i}": sd * float(rng.uniform(0.5, 2.0)) for i in range(figures)}
    draws = _draws(rng, sds, runs)
    baseline = _baseline(draws, within=sds)
    for current in (baseline, _run(draws[-1], within=sds)):  # the baseline itself, and one of its own runs
        assert not judge(baseline, current, Noise.of(baseline)).regressions


def test_a_a_runs_drawn_from_the_same_noise_flag_nothing_at_the_family_wise_rate():
    rng = np.random.default_rng(2024)
    sds = {**{f"gpu{i}": 0.01 for i in range(40)}, **{f"host{i}": 0.08 for i in range(27)}}
    flagged = 0
    for _ in range(60):
        baseline = _baseline(_draws(rng, sds, 3), within=sds)
        current = _run(_draws(rng, sds, 1)[0], within=sds)
        flagged += bool(judge(baseline, current, Noise.of(baseline)).regressions)
    assert flagged <= 6  # 5% family-wise: about 3 of 60 nights; more would be a wolf cried


def test_the_between_machine_term_widens_the_interval_by_the_machines_of_both_sides():
    rng = np.random.default_rng(9)
    sds = {f"b{i}": 0.01 for i in range(20)}
    offsets = {"m1": 1.0, "m2": 1.06, "m3": 0.95}  # host-bound steps shift 5-15% between machines of one kind
    machines = ["m1", "m1", "m2", "m2", "m3", "m3"]
    runs = [{n: v * offsets[m] for n, v in draw.items()} for draw, m in zip(_draws(rng, sds, 6), machines)]
    baseline = _baseline(runs, machines)
    noise = Noise.of(baseline)
    same = noise.of_figure("b0", "time", current_machine="m1")
    other = noise.of_figure("b0", "time", current_machine="m9")
    assert same is not None and other is not None and 0.02 < other.between_sd < 0.1
    # the baseline's mean holds m2's and m3's shifts too: m1's own differs from it by 2/3 of a machine's
    # variance, another machine's by 1 + 1/3
    assert same.between_sd == pytest.approx(other.between_sd * math.sqrt(0.5))
    one_machine = Noise.of(_baseline(runs[:2], machines[:2])).of_figure("b0", "time", current_machine="m1")
    assert one_machine is not None and one_machine.between_sd == 0
    shifted = _run({n: v * 1.08 for n, v in _draws(rng, sds, 1)[0].items()}, machine="m9")
    assert not judge(baseline, shifted, noise).regressions  # 8% is within what another machine may show
    # estimated on the times, it widens every timed figure of the benchmark (a kernel time, a ratio of times
    # that gates or should stay put), never an allocator peak
    other_figures = dataclasses.replace(
        noise,
        runs={**noise.runs, ("b0", "kernel_s"): noise.runs["b0", "time"], ("b0", "peak"): (1.0, 1.0, 1.1)},
        kinds={**noise.kinds, ("b0", "kernel_s"): "timed-gpu", ("b0", "peak"): "memory"},
        run_to_run={**noise.run_to_run, ("b0", "kernel_s"): noise.run_to_run["b0", "time"]},
    )
    kernel = other_figures.of_figure("b0", "kernel_s", current_machine="m9")
    peak = other_figures.of_figure("b0", "peak", current_machine="m9")
    assert kernel is not None and kernel.between_sd == other.between_sd and peak is not None
    assert peak.between_sd == 0


def test_a_benchmark_that_gates_on_another_figure_is_gpu_bound_in_that_figure_only():
    """PPP at batch 1 gates on its CUDA-graph replay and declares it GPU-bound; its eager time and its
    layers-over-model ratio follow the host's launches and pool with the host's figures."""
    declared = (("model_graph_s", "s", "lower"), ("layers_over_model", "ratio", "none"))
    metrics = {name: {"value": 1.25, "unit": unit, "better": better} for name, unit, better in declared}
    entry = typed({"benchmarks": [{"fullname": "b1", "name": "b1", "stats": {"median": 1e-3},
                                   "extra_info": {"gate": "model_graph_s", "gpu_bound": True,
                                                  "metrics": metrics}}],
                   "machine_info": {"perfkit": {"schema_version": SCHEMA_VERSION, "hardware_id": "gpu-test",
                                                "device": "cuda"}},
                   "datetime": "2026-11-24"}).benchmarks[0]
    assert noise_kind(entry, "model_graph_s") == "timed-gpu"
    assert noise_kind(entry, "layers_over_model") == noise_kind(entry, "time") == "timed-host"
    plain = dataclasses.replace(entry, context=dataclasses.replace(entry.context, gate=None))
    assert noise_kind(plain, "time") == noise_kind(plain, "layers_over_model") == "timed-gpu"
    # a GEMM follows its ceiling and gates on its SM cycles: its time is GPU work too, judged as such where a
    # run read no clock and the time gates instead
    gemm = dataclasses.replace(entry, context=dataclasses.replace(entry.context, gate="sm_mcycles",
                                                                  bound="matmul_tflops_tf32"))
    assert noise_kind(gemm, "time") == "timed-gpu" and noise_kind(gemm, "layers_over_model") == "timed-host"
    # the warm managed launch follows the copy ceiling and gates on its kernel, timed apart: its time is the
    # host's round around it (its variance, pooled with the GPU's, once read the H100's share as 0.0)
    warm = dataclasses.replace(entry, context=dataclasses.replace(entry.context, gate="kernel_s",
                                                                  bound="copy_bandwidth_gbps"))
    assert noise_kind(warm, "time") == "timed-host"


def test_the_between_machine_term_is_each_kinds_own():
    rng = np.random.default_rng(5)
    sds = {**{f"gpu{i}": 0.005 for i in range(10)}, **{f"host{i}": 0.01 for i in range(10)}}
    machines = ["m1", "m1", "m2", "m2"]
    shifts = {"m1": 1.0, "m2": 1.12}  # the host-bound steps of m2 run 12% slower; its kernels do not
    runs = [{n: v * (shifts[m] if n.startswith("host") else 1.0) for n, v in draw.items()}
            for draw, m in zip(_draws(rng, sds, 4), machines)]
    noise = Noise.of(_baseline(runs, machines))
    gpu, host = (noise.of_figure(n, "time", current_machine="m9") for n in ("gpu0", "host0"))
    assert gpu is not None and host is not None
    assert gpu.between_sd < 0.01 and host.between_sd > 0.05  # a kernel is not given the host's shift


def test_the_between_machine_term_follows_each_figures_own_noise():
    """A host-bound figure that hardly moves between runs (a one-thread kernel, 1%) hardly moves between
    machines, while a program step that moves 10% between runs shifts as much between machines: one SD for
    the kind gave the kernel the step's 12% and a one-run MDE above 200%."""
    rng = np.random.default_rng(21)
    sds = {**{f"step{i}": 0.10 for i in range(10)}, **{f"kernel{i}": 0.01 for i in range(10)}}
    machines = ["m1", "m1", "m2", "m2", "m3", "m3"]
    shift = {"m1": 0.0, "m2": 0.1, "m3": -0.1}  # machines apart by a run-to-run SD of each figure
    runs = [{n: v * math.exp(shift[m] * sds[n] / 0.1) for n, v in draw.items()}
            for draw, m in zip(_draws(rng, sds, 6), machines)]
    noise = Noise.of(_baseline(runs, machines, within=sds))
    step, kernel = (noise.of_figure(n, "time", current_machine="m9") for n in ("step0", "kernel0"))
    assert step is not None and kernel is not None
    assert kernel.between_sd < 0.02 and step.between_sd > 0.05
    assert 5 < step.between_sd / kernel.between_sd < 20  # in proportion to their own noise


def test_each_benchmark_keeps_the_machines_of_its_own_runs_through_an_append_and_a_merge():
    rng = np.random.default_rng(11)
    sds = {f"b{i}": 0.01 for i in range(20)}
    first = _baseline(_draws(rng, sds, 2), ["m1", "m1"])
    later = [{n: v * 1.06 for n, v in draw.items()} for draw in _draws(rng, sds, 2)]  # another machine
    appended = baselines.append(first, baselines.from_runs(
        [_run(r, "m2", when=night(i, "2026-11-30")) for i, r in enumerate(later)]))
    def machines(results, name):
        return tuple(origin.machine for origin in results.origins()[name])

    assert machines(appended, "b1") == ("m1", "m1", "m2", "m2")
    assert Noise.of(appended).between_ratio > 1  # m2 runs 6% slower, beyond its 1% run-to-run spread
    merged = baselines.merge(appended, _run({"b0": 1e-3}, "m3", when="2026-12-01"))
    assert machines(merged, "b0") == ("m3",) and machines(merged, "b1") == ("m1", "m1", "m2", "m2")
    assert [origin.date for origin in merged.origins()["b1"]] == ["2026-11-20", "2026-11-21", "2026-11-30",
                                                                  "2026-12-01"]
    reread = typed(merged.to_json())
    assert reread.origins() == merged.origins()  # stored per benchmark in the file
    noise = Noise.of(reread)
    b0 = noise.of_figure("b0", "time", current_machine="m1")
    b1 = noise.of_figure("b1", "time", current_machine="m1")
    # b0's only run came from m3, so m1 is another machine for it: its shift and m3's; b1's runs include m1's,
    # and their mean holds m2's shift for half of them
    assert (noise.machine_mix("b0", "m1"), noise.machine_mix("b1", "m1")) == (2.0, 0.5)
    assert noise.machine_mix("b1", None) == 0.0 and noise.machine_mix("b0", "m3") == 0.0
    assert b0 is not None and b1 is not None and b0.between_sd > b1.between_sd > 0


def test_a_run_of_another_machine_against_a_baseline_of_one_is_judged_with_both_machines_shifts():
    """No benchmark of the baseline ran on two machines, so no share can be measured: a run of another
    machine is judged with its kind's largest share the committed baselines measured, the baseline's one
    machine's shift and its own (it was judged as if on the same machine, and falsely flagged 28% of
    simulated nights)."""
    rng = np.random.default_rng(12)
    sds = {f"b{i}": 0.01 for i in range(20)}
    noise = Noise.of(_baseline(_draws(rng, sds, 5), ["m1"] * 5))
    assert noise.between_ratio is None
    same, other = noise.of_figure("b0", "time", current_machine="m1"), noise.of_figure("b0", "time",
                                                                                         current_machine="m2")
    assert same is not None and other is not None and same.between_sd == 0
    share = UNMEASURED_BETWEEN_RATIO[noise.kinds["b0", "time"]]
    assert other.between_sd == pytest.approx(math.sqrt(2 * share) * other.sd) and other.sd == same.sd


def test_kept_runs_since_the_last_change_point_add_to_the_noise():
    rng = np.random.default_rng(4)
    sds = {f"b{i}": 0.01 for i in range(3)}
    baseline = _baseline(_draws(rng, sds, 2))
    before = _draws(rng, sds, 12, shift={"b0": 0.7})  # b0 ran 30% faster until a change 12 runs ago
    after = _draws(rng, sds, 12)
    kept = [_run(r, when=night(i)) for i, r in enumerate(before + after)]
    noise = Noise.of(baseline, kept)
    # the baseline's two runs and the kept runs since the change
    assert len(noise.runs["b0", "time"]) == 2 + 12
    assert len(noise.runs["b1", "time"]) == 2 + 24


def test_a_move_beyond_the_hosts_shift_that_no_count_of_runs_could_show_says_so():
    """Tested beyond the run's common host shift, a figure's SE holds the host shift's spread, which more runs
    of this code do not shrink: it said "more runs decide" where twenty could not."""
    rng = np.random.default_rng(8)
    sds = {**{f"gpu{i}": 0.01 for i in range(10)}, **{f"host{i}": 0.05 for i in range(12)}}
    baseline = _baseline(_draws(rng, sds, 6), within=sds)
    shift = {f"host{i}": 1.3 * math.exp(rng.normal(0, 0.08)) for i in range(12)} | {"host0": 1.3 * 1.25}
    current = _run(_draws(rng, sds, 1, shift=shift)[0], within=sds)
    row = next(r for r in judge(baseline, current, Noise.of(baseline)).rows if r.benchmark == "host0")
    assert row.verdict.value == "unknown" and "beyond the run's common host shift" in row.note
    assert "even 20 runs of this code could not show a move this size: run it on a host like" in row.note


def test_on_a_slower_host_a_host_bound_figure_is_flagged_at_its_printed_mde_as_often_as_on_a_steady_one():
    """A host-bound slowdown is tested beyond the run's common host shift, with the spread that adds; its
    MDE left that spread out, and a change of the printed MDE on a host 20% slower was flagged a quarter of
    the time."""
    sds = {**{f"gpu{i}": 0.01 for i in range(10)}, **{f"host{i}": 0.03 for i in range(12)}}
    for host in (1.0, 1.2):
        hits = 0
        for seed in range(60):
            rng = np.random.default_rng(seed)
            baseline = _baseline(_draws(rng, sds, 6), within=sds)
            noise = Noise.of(baseline)
            draw = {n: v * (host if n.startswith("host") else 1.0) for n, v in _draws(rng, sds, 1)[0].items()}
            null = judge(baseline, _run(draw, within=sds), noise)
            mde = next(r.mde for r in null.rows if r.benchmark == "host0")
            assert mde is not None
            slowed = judge(baseline, _run(draw | {"host0": draw["host0"] * (1 + mde)}, within=sds), noise)
            hits += next(r for r in slowed.rows if r.benchmark == "host0").verdict is Verdict.REGRESSED
        assert hits / 60 >= 0.75, (host, hits)
    # what keeps a weak host-bound figure so on that night is the host, which more runs do not change
    rng = np.random.default_rng(3)
    baseline = _baseline(_draws(rng, sds, 8), within=sds)
    draw = {n: v * (1.25 if n.startswith("host") else 1.0) for n, v in _draws(rng, sds, 1)[0].items()}
    cmp = judge(baseline, _run(draw, within=sds), Noise.of(baseline))
    weak = [r for r in cmp.weak() if r.benchmark.startswith("host")]
    assert weak and all("run it on a host like the baseline's" in verdicts._tighten(r) for r in weak)
    assert not cmp.beyond_runs()


def test_kept_runs_timed_at_another_sm_clock_than_the_baseline_entry_add_nothing_to_its_noise():
    rng = np.random.default_rng(5)
    sds = {f"b{i}": 0.01 for i in range(3)}
    baseline = _baseline(_draws(rng, sds, 3))  # unlocked
    locked = [_run(r, when=night(i)) for i, r in enumerate(_draws(rng, sds, 6, {"b0": 1.2}))]
    for run in locked:
        raw = run.to_json()
        raw["benchmarks"][0]["extra_info"]["clock_lock"] = {"sm_clock": "base/1980 MHz locked", "version": 1}
        locked[locked.index(run)] = typed(raw)
    noise = Noise.of(baseline, locked)
    assert len(noise.runs["b0", "time"]) == 3 and len(noise.runs["b1", "time"]) == 3 + 6


def test_the_run_judged_is_not_part_of_its_own_noise_when_history_already_keeps_it():
    rng = np.random.default_rng(8)
    sds = {f"b{i}": 0.01 for i in range(20)}
    baseline = _baseline(_draws(rng, sds, 3))
    kept = [_run(r, when=night(i)) for i, r in enumerate(_draws(rng, sds, 6))]
    current = _run({n: v * 1.10 for n, v in _draws(rng, sds, 1)[0].items()}, when="2026-10-30")
    with_itself = Noise.of(baseline, [*kept, current])
    noise = for_judging(baseline, current, earlier=[*kept, current])
    assert len(noise.runs["b0", "time"]) == 3 + 6 == len(with_itself.runs["b0", "time"]) - 1
    assert len(judge(baseline, current, noise).regressions) == 20  # every 10% slowdown seen


def test_a_confirmations_first_run_is_not_part_of_its_re_runs_noise():
    """The re-runs of a confirmation are judged without the first run the nightly kept: its values selected
    the suspects, and with them a figure at 19 kept runs would cross noise.TAIL_RUNS between the two looks."""
    rng = np.random.default_rng(8)
    sds = {f"b{i}": 0.01 for i in range(5)}
    baseline = _baseline(_draws(rng, sds, 3))
    kept = [_run(r, when=night(i)) for i, r in enumerate(_draws(rng, sds, 6))]
    first = _run({n: v * 1.10 for n, v in _draws(rng, sds, 1)[0].items()}, when="2026-10-30")
    rerun = _run(_draws(rng, sds, 1)[0], when="2026-10-31")
    earlier = [*kept, first, rerun]
    assert len(for_judging(baseline, rerun, earlier=earlier).runs["b0", "time"]) == 3 + 6 + 1
    noise = for_judging(baseline, rerun, earlier=earlier, left_out=(first.datetime,))
    assert len(noise.runs["b0", "time"]) == 3 + 6


def test_a_policy_threshold_sets_every_minimum_effect():
    assert (
        Policy.with_threshold(0.1) == Policy(0.1, 0.1, Policy.alpha, bound_threshold_shown=0.1)
        and Policy.with_threshold(None) == Policy()
    )


def test_gpu_bound_and_host_bound_figures_pool_apart():
    # an H200 nightly: GPU-bound steps repeat within 0.3%, launch-bound ones move 10% (heavy-tailed: one A/A
    # run moved a managed-memory K1 launch 53% after three runs within 2%)
    rng = np.random.default_rng(21)
    sds = {**{f"gpu{i}": 0.003 for i in range(30)}, **{f"host{i}": 0.10 for i in range(20)}}
    # a launch-bound figure's rounds say little of how far its runs move (a 0.15 slope in log-log on an H200)
    within = {**sds, **{f"host{i}": float(rng.uniform(0.02, 0.1)) for i in range(20)}, "host_tight": 0.04}
    draws = _draws(rng, sds, 3)
    for draw, value in zip(draws, (1.0e-3, 1.01e-3, 0.995e-3)):
        draw["host_tight"] = value  # three runs that happen to agree within 1%
    baseline = _baseline(draws, within=within)
    noise = Noise.of(baseline)
    assert noise.priors["timed-gpu"].s2(None) < 0.01**2 < 0.05**2 < noise.priors["timed-host"].s2(None)
    tight = noise.of_figure("host_tight", "time")
    assert tight is not None and tight.sd > 0.05  # a host figure borrows the host's spread, not the GPU's
    current = _run({**_draws(rng, sds, 1)[0], "host_tight": 1.4e-3}, within=within)
    assert judge(baseline, current, noise).benchmark_verdicts()["host_tight"] is not Verdict.REGRESSED
    # a benchmark the current code declares GPU-bound pools with the GPU's figures, even where the baseline
    # was saved before the declaration
    declared = Noise.of(baseline, gpu_bound={"host0": True})
    assert declared.kinds["host0", "time"] == "timed-gpu" and noise.kinds["host0", "time"] == "timed-host"
    # and one whose declaration the current code withdrew pools with the host's (an 8 us kernel that moved 5%
    # with the benchmark run before it), where the baseline still says GPU-bound
    withdrawn = Noise.of(baseline, gpu_bound={"gpu0": False})
    assert withdrawn.kinds["gpu0", "time"] == "timed-host" and withdrawn.kinds["gpu1", "time"] == "timed-gpu"
    assert for_judging(baseline, _run({"gpu0": 1e-3}, device="cuda")).kinds["gpu0", "time"] == "timed-gpu"


def _tail(noise: Noise, name: str) -> float:
    figure = noise.of_figure(name, "time")
    assert figure is not None
    return figure.tail_df


def _host_tails(draw, runs: int, figures: int = 8, seed: int = 5) -> dict[str, float]:
    """The tail (degrees of freedom) each host figure of a baseline of ``runs`` runs is tested with, its log
    values ``draw(rng)`` times 2%."""
    rng = np.random.default_rng(seed)
    draws = [{f"host{i}": 1e-3 * math.exp(0.02 * draw(rng)) for i in range(figures)} for _ in range(runs)]
    noise = Noise.of(_baseline(draws))
    return {f"host{i}": _tail(noise, f"host{i}") for i in range(figures)}


def test_host_figures_whose_many_runs_show_light_tails_are_tested_with_light_tails():
    """The H200's 13 host figures with 24-37 runs had excess kurtoses of -1.1 to 0.9: a t5 tail made a 1.2%
    spread a one-run MDE of 12%. Their kind's runs pooled read lighter tails from TAIL_RUNS runs a figure on;
    fewer runs, or heavy ones, keep t5, and nothing is tested with tails heavier than t5."""
    assert all(df > 10 for df in _host_tails(lambda rng: rng.normal(), 30).values())
    assert all(df > 10 for df in _host_tails(lambda rng: rng.normal(), TAIL_RUNS).values())
    assert set(_host_tails(lambda rng: rng.normal(), TAIL_RUNS - 1).values()) == {HOST_TAIL_DF}
    heavy = _host_tails(lambda rng: rng.standard_t(3), 30)
    assert all(HOST_TAIL_DF <= df < 6 for df in heavy.values()), heavy
    # a figure whose runs are all alike but one is as heavy as tails get: its kind reads t5
    alike_but_one = _host_tails(lambda rng: 0.0 if rng.random() < 0.97 else 5.0, 30, seed=2)
    assert set(alike_but_one.values()) == {HOST_TAIL_DF}


def test_a_host_figure_heavy_tailed_on_its_own_keeps_the_heavy_tail_and_weighs_on_its_kinds():
    rng = np.random.default_rng(9)
    draws = [{f"host{i}": 1e-3 * math.exp(0.02 * rng.normal()) for i in range(8)} for _ in range(30)]
    light = Noise.of(_baseline(draws))
    draws[0]["host0"] = 1e-3 * math.exp(0.02 * 5)  # one run five SDs out: its own kurtosis is far above 2
    noise = Noise.of(_baseline(draws))
    # it keeps the heavy tail, and its run makes its kind's heavier too
    assert _tail(noise, "host0") == HOST_TAIL_DF < _tail(noise, "host1") < _tail(light, "host1")


def test_a_one_run_slowdown_of_a_steady_host_figure_with_many_light_tailed_runs_regresses():
    """A 1.2% host figure with 30 runs: 10% slower in one run is flagged, its one-run MDE 7.7% (t5: 9.5%)."""
    rng = np.random.default_rng(12)
    sds = {**{f"gpu{i}": 0.003 for i in range(20)}, **{f"host{i}": 0.012 for i in range(8)}}
    baseline = _baseline(_draws(rng, sds, 30))
    noise = Noise.of(baseline)
    current = _run(_draws(rng, sds, 1, shift={"host3": 1.10})[0])
    result = judge(baseline, current, noise)
    assert {r.benchmark for r in result.regressions} == {"host3"}
    assert result.regressions[0].mde is not None and result.regressions[0].mde < 0.085
    assert not [r for r in result.rows if r.verdict is Verdict.IMPROVED]


def _gpu_noise(draw, runs: int, figures: int = 12, seed: int = 5) -> Noise:
    """The noise of a baseline of ``runs`` runs of GPU-bound figures whose log values are ``draw(rng)``
    times 0.4%."""
    rng = np.random.default_rng(seed)
    return Noise.of(_baseline([{f"gpu{i}": 1e-3 * math.exp(0.004 * draw(rng)) for i in range(figures)}
                               for _ in range(runs)]))


def test_gpu_figures_whose_many_runs_show_their_tails_are_tested_with_them_and_a_2_percent_minimum_effect():
    """With fewer than TAIL_RUNS runs a GPU-bound figure keeps normal tails and the 3% minimum effect that
    guards them; from TAIL_RUNS runs on, its kind's tails are read from the runs (Student's t4 noise reads
    about t5, normal noise much lighter) and its minimum effect narrows to 2%. A figure heavy-tailed on its
    own is tested with t5 and keeps 3%."""
    few = _gpu_noise(lambda rng: rng.normal(), TAIL_RUNS - 1).of_figure("gpu0", "time")
    assert few is not None and math.isinf(few.tail_df) and not few.tails_shown
    normal = [_gpu_noise(lambda rng: rng.normal(), 30).of_figure(f"gpu{i}", "time") for i in range(12)]
    assert all(n is not None and n.tails_shown and 8 < n.tail_df < math.inf for n in normal)
    heavy = [_gpu_noise(lambda rng: rng.standard_t(4), 30, seed=4).of_figure(f"gpu{i}", "time")
             for i in range(12)]
    assert all(n is not None and n.tail_df < 7 for n in heavy), [n and n.tail_df for n in heavy]
    rng = np.random.default_rng(9)
    draws = [{f"gpu{i}": 1e-3 * math.exp(0.004 * rng.normal()) for i in range(12)} for _ in range(30)]
    draws[0]["gpu0"] = 1e-3 * math.exp(0.004 * 6)  # one run six SDs out: heavy on its own
    wild = Noise.of(_baseline(draws)).of_figure("gpu0", "time")
    assert wild is not None and wild.tail_df == HOST_TAIL_DF and not wild.tails_shown
    # with fewer runs than TAIL_RUNS nothing changed: its own variance, normal tails, 3%
    wild_few = Noise.of(_baseline(draws[:12])).of_figure("gpu0", "time")
    assert wild_few is not None and math.isinf(wild_few.tail_df) and not wild_few.tails_shown


@pytest.mark.parametrize("runs, minimum, verdict",
                         [(30, 0.02, "regressed"), (TAIL_RUNS - 1, 0.03, "unchanged")])
def test_a_2_5_percent_slowdown_of_a_steady_gpu_figure_is_flagged_only_where_its_runs_show_its_tails(
        runs, minimum, verdict):
    """A 0.3% GPU-bound figure 2.5% slower in one run: past the 2% minimum effect of a figure with TAIL_RUNS
    runs, a regression; with fewer, inside the 3% that guards its assumed tails, and shown to be."""
    rng = np.random.default_rng(21)
    sds = {f"gpu{i}": 0.003 for i in range(20)}
    baseline = _baseline(_draws(rng, sds, runs))
    current = _run({**_draws(rng, sds, 1)[0], "gpu3": 1e-3 * 1.025})
    rows = {r.benchmark: r for r in judge(baseline, current, Noise.of(baseline)).rows if r.gating}
    assert rows["gpu3"].minimum == pytest.approx(minimum)
    assert rows["gpu3"].verdict.value == verdict
    assert all(r.verdict.value not in ("regressed", "improved") for name, r in rows.items() if name != "gpu3")


def test_a_fresh_machines_change_over_its_standard_error_spreads_as_the_test_assumes():
    """A baseline whose runs came from many machines holds their shifts in its runs' variance too: the
    between-machine term must not count them twice (a fresh machine's change over its SE then spread 0.76,
    and the H200's one-run MDEs were a third too wide), nor too few once runs of the current machine are
    kept beside the baseline's."""
    rng = np.random.default_rng(31)
    sds = {f"b{i}": 0.01 for i in range(30)}
    between = math.sqrt(3.0) * 0.01  # a machine's shift of GPU work: 3 times a run's variance (H200: 3.3)
    machines = [f"m{i // 2}" if i < 16 else f"m{i}" for i in range(32)]  # eight machines twice, 16 once
    z: dict[str, list[float]] = {"baseline alone": [], "with kept runs": []}
    for _ in range(12):
        shift = {m: {n: math.exp(rng.normal(0, between)) for n in sds} for m in sorted({*machines, "fresh"})}
        runs = [_run({n: v * shift[m][n] for n, v in draw.items()}, m, when=night(i),
                     within=sds) for i, (draw, m) in enumerate(zip(_draws(rng, sds, 32), machines))]
        baseline = baselines.from_runs(runs)
        fresh = [{n: v * shift["fresh"][n] for n, v in draw.items()} for draw in _draws(rng, sds, 5)]
        current = _run(fresh[0], "fresh", when="2026-11-10", within=sds)
        kept = [_run(f, "fresh", when=night(i, "2026-11-01"), within=sds) for i, f in enumerate(fresh[1:])]
        for case, noise in (("baseline alone", Noise.of(baseline)),
                            ("with kept runs", Noise.of(baseline, kept))):
            comparison = judge(baseline, current, noise)
            changes = {(r.benchmark, r.figure): r.change for r in comparison.rows}
            z[case] += [math.log1p(changes[key] or 0.0) / reach.se for key, reach in comparison.reach.items()]
    for case, values in z.items():
        assert len(values) == 12 * 30, case
        assert 0.88 < math.sqrt(float(np.mean(np.square(values)))) < 1.12, case  # 0.94-1.03 over 4 seeds


def test_a_variance_over_machines_is_deflated_and_its_degrees_of_freedom_counted_as_satterthwaite_does():
    """stats.spread_over_groups against the matrices it stands for: M = (I - J/n)(I + r·ZZᵀ), expected
    variance tr(M)/(n - 1), degrees of freedom tr(M)²/tr(M²)."""
    for counts, ratio in (([1] * 6, 3.3), ([6], 3.3), ([2, 2], 3.3), ([3, 1, 1], 0.2), ([4, 4, 4], 1.0)):
        n = sum(counts)
        groups = np.repeat(np.arange(len(counts)), counts)
        m = (np.eye(n) - 1.0 / n) @ (np.eye(n) + ratio * (groups[:, None] == groups[None, :]))
        expected, df = stats.spread_over_groups(counts, ratio)
        assert expected == pytest.approx(np.trace(m) / (n - 1))
        assert df == pytest.approx(np.trace(m) ** 2 / np.trace(m @ m))
    assert stats.spread_over_groups([1] * 6, 3.3)[1] == pytest.approx(5)  # a machine each: all n - 1
    assert stats.spread_over_groups([2, 2], 3.3)[1] < 2  # two machines' shifts: about one
    # a ratio read off a near-zero within-machine spread: finite, the shifts' own degrees of freedom
    assert stats.spread_over_groups([2, 2], 1e300)[1] == pytest.approx(1.0)
    assert stats.spread_over_groups([6], 1e300) == (1.0, 5)


def test_a_ratio_not_measured_never_narrows_the_variance():
    """A baseline of one machine measures no between-machine ratio; kept runs of another machine beside it
    must not have their spread taken for that machine's shift by an assumed ratio (the unmeasured one
    deflated it threefold, and a run on the baseline's machine read SEs 1.8 times too narrow)."""
    rng = np.random.default_rng(8)
    sds = {f"b{i}": 0.01 for i in range(30)}
    z = []
    for _ in range(10):
        baseline = baselines.from_runs([_run(d, "A", when=night(i), within=sds)
                                        for i, d in enumerate(_draws(rng, sds, 5))])
        kept = [_run(d, "B", when=night(i, "2026-11-01"), within=sds)
                for i, d in enumerate(_draws(rng, sds, 4))]
        comparison = judge(baseline, _run(_draws(rng, sds, 1)[0], "A", when="2026-11-10", within=sds),
                           Noise.of(baseline, kept))
        changes = {(r.benchmark, r.figure): r.change for r in comparison.rows}
        z += [math.log1p(changes[key] or 0.0) / reach.se for key, reach in comparison.reach.items()]
    assert len(z) == 300 and math.sqrt(float(np.mean(np.square(z)))) < 1.15


def test_a_figure_a_run_left_out_is_placed_on_the_machines_of_the_runs_that_have_it():
    """Runs on A, A, A and B, the B run without the gating figure: its three values came from one machine,
    so nothing of them is a machine's shift (placed on the newest runs, it was deflated to 0.29 of itself)."""
    def run(machine: str, index: int) -> Any:
        paced = {"paced": {"value": 1e-3, "unit": "s", "better": "lower", "gate": True}}
        benches = [{"fullname": f"b{i}", "name": f"b{i}",
                    "extra_info": {**COPY_BOUND, "metrics": paced if machine == "A" else {}},
                    "stats": {"median": 1e-3 * (1 + 0.002 * index + 0.02 * (machine == "B")),
                              "data": [1e-3] * 5, "iqr": 0.0, "rounds": 5}} for i in range(12)]
        info = {"schema_version": SCHEMA_VERSION, "hardware_id": "gpu-test", "device": "cuda",
                "fingerprint": {"machine": machine}}
        when = night(index - 1)
        return typed({"benchmarks": benches, "machine_info": {"perfkit": info}, "datetime": when})

    noise = Noise.of(baselines.from_runs([run(m, i + 1) for i, m in enumerate("AAAB")]))
    assert noise.run_to_run["b0", "paced"] == (1.0, 2.0)
    assert noise.run_to_run["b0", "time"][0] < 1  # the time's runs did fall on two machines


def test_replicates_of_several_machines_are_judged_with_each_machines_share_not_the_last_ones():
    """A fleet's replicates of one hardware kind, judged together, came from several hosts: the file names
    the last one's machine only, and judged as if every replicate ran there (a machine holding most of the
    baseline's runs), a new host's shift went untested: nights of no change were flagged."""
    sds = {f"b{i}": 0.01 for i in range(20)}

    def false_nights(shares_of: Any) -> int:
        flagged = 0
        for seed in range(40):
            rng = np.random.default_rng(seed)
            shift = {m: {n: math.exp(rng.normal(0, 0.03)) for n in sds} for m in ("m1", "m2", "new")}
            held = ["m1"] * 5 + ["m2"]  # the baseline: most runs on m1
            baseline = baselines.from_runs([_run(_draws(rng, sds, 1, shift[m])[0], m,
                                                 when=night(i, "2026-11-10")) for i, m in enumerate(held)])
            replicates = baselines.from_runs([_run(_draws(rng, sds, 1, shift[m])[0], m,
                                                   when=night(i, "2026-12-01"))
                                              for i, m in enumerate(("new", "m1"))])
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr("perfkit.verdict.judge.machine_shares", shares_of)
                cmp = judge(baseline, replicates, Noise.of(baseline))
            flagged += any(r.verdict in (Verdict.REGRESSED, Verdict.IMPROVED) for r in cmp.rows)
        return flagged

    assert machine_shares(baselines.from_runs([_run({"b0": 1e-3}, m, when=night(i, "2026-12-01"))
                                               for i, m in enumerate(("new", "m1", ""))])) == {
        "b0": {"new": 1 / 3, "m1": 1 / 3, "unknown run 2": 1 / 3}}  # an unknown one counts as new
    # the difference of the two sides' mean machine shifts: (5/6 - 1/2)^2 for m1, (1/6)^2 for m2, (1/2)^2
    noise = Noise.of(_baseline(_draws(np.random.default_rng(0), sds, 6), ["m1"] * 5 + ["m2"]))
    mix = noise.machine_mix("b0", {"new": 0.5, "m1": 0.5})
    assert mix == pytest.approx((5 / 6 - 0.5) ** 2 + 1 / 36 + 0.25)
    last_only = false_nights(lambda current: {name: {current.info.machine: 1.0} for name in sds})
    shared = false_nights(machine_shares)
    assert shared <= 3 < last_only, (shared, last_only)  # at most 7.5% of 40 nights, against alpha 5%


def test_a_confirmation_re_runs_no_figure_that_even_twenty_runs_could_not_show_moved():
    """A fresh H100's A/A night (2026-12-06) re-ran its two CPU references over another host's copy (+10%
    at MDEs of 34-38%, "even 20 runs of this code could not show a move this size") three times: 115 s of
    its 393 s, to leave them unknown. A suspect that re-runs could settle is still re-run, and so is one 1.5
    times worse or more, whatever runs could show."""
    steady = {f"gpu{i}": 1e-3 * (1 + 0.01 * (i % 3 - 1)) for i in range(10)}
    wild, near = [1e-3, 1.8e-3, 0.55e-3], [1e-3, 1.02e-3, 0.98e-3]
    baseline = _baseline([{**{k: v * (1 + 0.01 * (j - 1)) for k, v in steady.items()},
                           "hostwild": wild[j], "hostnear": near[j]} for j in range(3)])
    current = _run({**steady, "hostwild": 1.3e-3, "hostnear": 1.07e-3})
    rows = {r.benchmark: r for r in judge(baseline, current, Noise.of(baseline)).rows if r.gating}
    assert all(rows[n].verdict is Verdict.UNKNOWN and rows[n].worse and rows[n].beyond_minimum
               for n in ("hostwild", "hostnear"))
    wild_row = rows["hostwild"]
    assert not wild_row.decidable and "even 20 runs of this code could not show" in wild_row.note
    assert rows["hostnear"].decidable and rows["hostnear"].note.endswith("more runs decide")
    assert confirm.suspects(judge(baseline, current, Noise.of(baseline))) == ["hostnear"]
    far_worse = _run({**steady, "hostwild": 1.6e-3, "hostnear": 1.07e-3})
    row = next(r for r in judge(baseline, far_worse, Noise.of(baseline)).rows if r.benchmark == "hostwild")
    assert row.verdict is Verdict.UNKNOWN and not row.decidable and row.change > 0.5
    assert confirm.suspects(judge(baseline, far_worse, Noise.of(baseline))) == ["hostnear", "hostwild"]


def test_runs_of_unknown_machine_are_placed_where_the_most_of_the_variance_stays_run_to_run():
    """Four of the H200 baseline's 69 runs of its 100 M-element grid kernel were saved before runs named their
    machine: its whole variance (55 named machines' shifts in it) was then taken as run-to-run and the
    between-machine term added on top, a one-run SE of 1.6% where its runs spread 0.8%. A run of unknown
    machine now counts as one more run on the machine with the most (the layout that leaves the most of the
    variance run-to-run) and adds no degrees of freedom, so the shifts are counted once; where no run names
    its machine, the variance is taken whole as before."""
    rng = np.random.default_rng(3)
    sds = {f"b{i}": 0.005 for i in range(24)}
    shift = {m: {n: math.exp(rng.normal(0, 0.01)) for n in sds} for m in "ABCDE"}
    held = ["A", "A", "A", "B", "C", "D", "E"]
    runs = [_run(_draws(rng, sds, 1, shift[m])[0], m, when=night(i), within=sds) for i, m in enumerate(held)]
    # one more run, of unknown machine, of half the benchmarks (the others measure the machines' ratio)
    last = {n: v for n, v in _draws(rng, sds, 1, shift["A"])[0].items() if int(n[1:]) < 12}
    noise = Noise.of(baselines.from_runs([*runs, _run(last, "", when=night(len(held)), within=sds)]))
    ratio = noise.between_ratio_by_kind[GPU_KIND]
    assert ratio > 0
    placed = stats.spread_over_groups([4, 1, 1, 1, 1], ratio)
    known = stats.spread_over_groups([3, 1, 1, 1, 1], ratio)  # the unknown run adds no degrees of freedom
    assert noise.run_to_run["b0", "time"] == pytest.approx((1 / placed[0], min(placed[1], known[1])))
    # of every place the unknown run could have come from, this one leaves the most run-to-run
    for elsewhere in ([3, 2, 1, 1, 1], [3, 1, 1, 1, 1, 1]):
        assert 1 / stats.spread_over_groups(elsewhere, ratio)[0] < noise.run_to_run["b0", "time"][0]
    assert noise.run_to_run["b12", "time"][0] < noise.run_to_run["b0", "time"][0]  # all known: its own layout
    unnamed = Noise.of(baselines.from_runs([_run(_draws(rng, sds, 1)[0], "", when=night(i), within=sds)
                                            for i in range(6)]))
    assert ("b0", "time") not in unnamed.run_to_run  # no machine named: nothing to place them by


def test_a_fresh_machine_judged_on_a_baseline_with_runs_of_unknown_machine_reads_calibrated_errors():
    """The double count measured: a baseline of 20 runs on 16 machines (their shifts 1.8 times the run-to-run
    SD, as the H200's GPU work), a fifth of its runs saved before runs named their machine.
    Fresh machines' A/A changes over their SEs must spread as the test assumes (an RMS near 1): with the
    unknown runs' variance taken whole and the between-machine term added on top, it read 0.54 (0.99 now)."""
    sds = {f"b{i}": 0.004 for i in range(20)}
    z: list[float] = []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        machines = [f"m{i}" for i in range(17)]
        shift = {m: {n: math.exp(rng.normal(0, 1.8 * 0.004)) for n in sds} for m in machines}
        # benchmarks b10..b19 lose no machine names: they measure the between-machine ratio
        # two runs on each of four machines (the ratio is measured), one on eight more, and four runs whose
        # machine is unknown for b0..b9 (known for b10..b19)
        named = machines[:4] * 2 + machines[4:12]
        runs = [_run(_draws(rng, sds, 1, shift[m])[0], m, when=night(i), within=sds)
                for i, m in enumerate(named)]
        runs += [_run({n: v for n, v in _draws(rng, sds, 1, shift[m])[0].items() if int(n[1:]) < 10}, "",
                      when=night(16 + i), within=sds)
                 for i, m in enumerate(machines[12:16])]
        runs += [_run({n: v for n, v in _draws(rng, sds, 1, shift[m])[0].items() if int(n[1:]) >= 10}, m,
                      when=night(20 + i), within=sds)
                 for i, m in enumerate(machines[12:16])]
        baseline = baselines.from_runs(runs)
        fresh = _run(_draws(rng, sds, 1, shift["m16"])[0], "m16", when="2026-12-20", within=sds)
        comparison = judge(baseline, fresh, Noise.of(baseline))
        changes = {(r.benchmark, r.figure): r.change for r in comparison.rows}
        z += [math.log1p(changes[key] or 0.0) / reach.se for key, reach in comparison.reach.items()
              if int(key[0][1:]) < 10]
    rms = math.sqrt(float(np.mean(np.square(z))))
    assert len(z) == 120 and 0.75 < rms < 1.3, rms
