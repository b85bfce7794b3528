"""The verdict's error rates, checked by seeded simulation through the real judge and confirmation
(perfkit.simulate): a night's chance of any false regressed/improved, and the share of true changes
of the printed MDE that are flagged. docs/verdict.md gives the larger run's table
(``python -m perfkit.simulate``)."""
from __future__ import annotations

import dataclasses
import json
import math
import statistics

import pytest
import scipy.stats

from perfkit import simulate
from perfkit.store import baselines
from perfkit.verdict import stats
from perfkit.verdict.judge import Policy, Verdict
from perfkit.workloads import kernels

FIGURES = simulate.synthetic_profile()
NIGHTS = 80


def _pooled(results: list[simulate.Rates]) -> tuple[float, float, int]:
    """Pooled false-alarm rate and power over several scenarios, and the nights behind them."""
    nights = sum(r.nights for r in results)
    alarm = sum(r.false_alarm * r.nights for r in results) / nights
    power = sum(r.power * r.nights for r in results) / nights
    return alarm, power, nights


def _slack(rate: float, nights: int) -> float:
    """Two binomial standard errors of a rate over ``nights``: the simulation's own noise."""
    return 2 * math.sqrt(rate * (1 - rate) / nights)


@pytest.mark.slow
def test_one_run_against_3_5_8_baseline_runs_and_on_a_new_machine_keeps_the_nights_false_alarms_at_alpha():
    runs = [simulate.rates(simulate.Scenario(FIGURES, n), NIGHTS, seed=100 * n) for n in (3, 5, 8)]
    runs.append(simulate.rates(simulate.Scenario(FIGURES, 5, new_machine=True), NIGHTS, seed=900))
    alarm, power, nights = _pooled(runs)
    assert alarm <= Policy.alpha
    assert all(r.false_alarm <= Policy.alpha + _slack(Policy.alpha, r.nights) for r in runs)
    # a true change of the printed MDE (the 80%-power point) is flagged about 80% of the time, not 50%
    assert power >= 0.80 - _slack(0.80, nights)


def test_a_run_of_another_machine_against_a_baseline_of_one_machine_keeps_the_false_alarms_at_alpha():
    """Every figure shifted between machines by its own run-to-run spread: against five runs of one machine,
    whose between-machine share cannot be measured, a run of another machine was judged as if on the same one
    and falsely flagged 28% of 400 nights; the baseline's mean also holds its one machine's shift."""
    figures = tuple(dataclasses.replace(f, between=f.sd) for f in FIGURES)
    for one, seed in ((True, 31), (False, 32)):
        scenario = simulate.Scenario(figures, 5, new_machine=True, one_machine_baseline=one)
        result = simulate.rates(scenario, NIGHTS, seed=seed)
        assert result.false_alarm <= Policy.alpha + _slack(Policy.alpha, NIGHTS), scenario.label
        assert result.power >= 0.80 - _slack(0.80, NIGHTS), scenario.label


def test_one_run_with_heavy_tailed_host_work_keeps_the_nights_false_alarms_at_alpha():
    """Student's t3 noise on the host-bound figures: at the normal tails' quantile one run flagged 13-16% of
    nights; host work's tests read t with at most 5 degrees of freedom (noise.HOST_TAIL_DF)."""
    result = simulate.rates(simulate.Scenario(FIGURES, 5, heavy="host"), NIGHTS, seed=11)
    assert result.false_alarm <= Policy.alpha + _slack(Policy.alpha, NIGHTS)
    assert result.power >= 0.80 - _slack(0.80, NIGHTS)


def _host_mde(runs: int, nights: int = 10) -> float:
    """The median one-run MDE of the host figures over ``nights`` normal nights against ``runs`` runs."""
    scenario = simulate.Scenario(FIGURES, runs)
    rows = [r for seed in range(nights) for r in simulate.night(scenario, seed).first.rows
            if r.gating and r.benchmark.startswith("host") and r.mde is not None]
    return statistics.median(r.mde for r in rows)


@pytest.mark.slow
def test_host_work_whose_25_runs_show_normal_tails_is_judged_sharper_and_heavy_tails_keep_alpha():
    """With 25 runs a figure, host work's tails are read from the runs (noise.TAIL_RUNS): normal host noise is
    tested with lighter tails than t5 (its MDEs about 0.6 of 8 runs'; the runs alone would give 0.97), and
    Student's t4 noise keeps the nights' false alarms at alpha, on every host figure or on one alone among
    light ones (read with their tails). Each flags the printed MDE 80% of the time."""
    assert _host_mde(25) < 0.75 * _host_mde(8)
    for heavy, seed in (("none", 25), ("host", 26), ("one", 27)):
        result = simulate.rates(simulate.Scenario(FIGURES, 25, heavy=heavy), NIGHTS, seed=seed)
        assert result.false_alarm <= Policy.alpha + _slack(Policy.alpha, NIGHTS), heavy
        assert result.power >= 0.80 - _slack(0.80, NIGHTS), heavy


def _gpu_mdes(runs: int, nights: int = 6) -> dict[str, float]:
    """The median one-run MDE of each GPU-bound figure over ``nights`` normal nights against ``runs`` runs."""
    scenario = simulate.Scenario(FIGURES, runs)
    rows = [r for seed in range(nights) for r in simulate.night(scenario, seed).first.rows
            if r.gating and r.benchmark.startswith("gpu") and r.mde is not None]
    names = {r.benchmark for r in rows}
    return {name: statistics.median(r.mde for r in rows if r.benchmark == name) for name in names}


@pytest.mark.slow
def test_gpu_work_whose_25_runs_show_its_tails_reaches_a_3_percent_mde_and_heavy_tails_keep_alpha():
    """With 25 runs a figure, GPU-bound figures' tails are read from the runs and their minimum effect narrows
    from 3% to 2%: the steadiest (0.2-0.4% between runs) reach a one-run MDE of 3%, which the 3% minimum
    effect never allows; and Student's t4 noise on every figure, which under normal tails flagged 13.0% of
    400 nights, keeps the nights' false alarms near alpha (6.0% over 400: docs/verdict.md)."""
    steady = [f"gpu{i}" for i in range(9)]  # 0.2% * 1.09**i: 0.20-0.40%
    assert all(_gpu_mdes(8)[name] > 0.03 for name in steady)
    assert all(_gpu_mdes(25)[name] <= 0.03 for name in steady)
    result = simulate.rates(simulate.Scenario(FIGURES, 25, heavy="all"), NIGHTS, seed=28)
    assert result.false_alarm <= Policy.alpha + _slack(Policy.alpha, NIGHTS)
    assert result.power >= 0.80 - _slack(0.80, NIGHTS)


@pytest.mark.slow
def test_gpu_work_of_which_a_quarter_is_heavy_tailed_keeps_the_nights_false_alarms_at_alpha():
    """Every fourth GPU-bound figure Student's t4 among light ones (more than the H200 baseline's five of its
    44 GPU-bound figures with 20 runs or more that are heavy-tailed on their own): the case any rule for
    reading a kind's tails must hold, as the judge reads them today (docs/findings.md, 2026-12-07 late
    morning)."""
    assert simulate._heavy_tailed(FIGURES, "gpu_quarter") == {f"gpu{i}" for i in range(3, 24, 4)}
    result = simulate.rates(simulate.Scenario(FIGURES, 25, heavy="gpu_quarter"), NIGHTS, seed=29)
    assert result.false_alarm <= Policy.alpha + _slack(Policy.alpha, NIGHTS)
    assert result.power >= 0.80 - _slack(0.80, NIGHTS)


@pytest.mark.parametrize("heavy", ["none", "host", "all"])
def test_a_confirmation_keeps_the_false_alarms_at_alpha_and_every_true_regression(heavy):
    """The re-runs are tested at Bonferroni's alpha/m over the whole night, whatever the first look chose:
    before, at Holm's level over the suspects against the mean that selected them, a night's false alarms
    rose from 2.7% to 10.7%."""
    result = simulate.rates(simulate.Scenario(FIGURES, 5, heavy=heavy, confirm=3), NIGHTS, seed=7)
    assert result.false_alarm <= Policy.alpha
    assert result.power >= 0.80 - _slack(0.80, NIGHTS)


@pytest.mark.parametrize("heavy", ["none", "all"])
def test_a_confirmation_cut_after_its_first_re_run_still_keeps_the_false_alarms_at_alpha(heavy):
    """A deadline that stops a --perfkit-confirm 3 after one re-run (confirm.CutShort) leaves a second look
    of one re-run, judged at the same Bonferroni level: the night still keeps alpha."""
    result = simulate.rates(simulate.Scenario(FIGURES, 5, heavy=heavy, confirm=1), NIGHTS, seed=8)
    assert result.false_alarm <= Policy.alpha


def test_the_mde_of_two_looks_is_where_the_first_picks_and_the_second_confirms_80_percent_of_the_time():
    """The first look picks a figure beyond its minimum effect the worse way, significant or not
    (confirm.suspects); the second must flag it at the night's level."""
    level = Policy.alpha / 67
    for first, second in (((0.03, 0.008, 30.0), (0.03, 0.006, 33.0)), ((0.05, 0.08, 5.0), (0.05, 0.06, 5.0)),
                          ((0.03, 0.004, math.inf), (0.03, 0.01, 12.0))):
        alone = [stats.detectable_at_power(*look, level) for look in (first, second)]
        assert [stats.power_at(math.log1p(m), *look, level) for m, look in zip(alone, (first, second))] == [
            pytest.approx(0.8), pytest.approx(0.8)]
        both = math.log1p(stats.detectable_in_two_looks(first, second, level))
        assert both >= math.log1p(alone[1])  # never below the re-runs' own point
        picked = scipy.stats.t.cdf((both - first[0]) / first[1], first[2])
        assert picked * stats.power_at(both, *second, level) == pytest.approx(0.8)
    # a noisy first look need not reach its own 80% point: picking asks less than flagging
    noisy = (0.05, 0.08, 5.0)
    assert stats.detectable_in_two_looks(noisy, (0.05, 0.06, 5.0), level) < stats.detectable_at_power(*noisy,
                                                                                                      level)


@pytest.mark.slow
def test_a_confirmed_night_on_a_new_machine_flags_a_gpu_change_of_its_printed_mde_80_percent_of_the_time():
    """The first look printed its one-run 80% point, where the night flags a change only once the run picks
    it and the re-runs on the same new machine confirm it: GPU-bound figures slowed by it were flagged 74.5%
    of the time with the H100's spreads (docs/findings.md, 2026-12-07). It prints both looks' now."""
    gpu = tuple(f for f in FIGURES if f.gpu_bound)
    result = simulate.rates(simulate.Scenario(gpu, 5, new_machine=True, confirm=3), NIGHTS, seed=11)
    assert result.false_alarm <= Policy.alpha
    assert result.power >= 0.80 - _slack(0.80, NIGHTS)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["gpu5", "host2"])
def test_after_a_confirmation_a_change_of_a_printed_mde_is_flagged_80_percent_of_the_time(target):
    """The re-run rows printed the second look's MDE alone: a change of it was flagged 70% of the time, as the
    first look must pick the figure too (pooled over every figure, the power hid it)."""
    scenario = simulate.Scenario(FIGURES, 5, confirm=3)
    hits, under = 0, 0
    for seed in range(NIGHTS):
        picked = simulate.night(scenario, 500 + seed, {target: 1.5})  # surely a suspect: its re-run row
        mde = next(r.mde for r in picked.final.rows if r.benchmark == target and r.gating)
        assert mde is not None
        for factor in (1.0, 0.8):
            slowed = simulate.night(scenario, 500 + seed, {target: 1 + factor * mde})
            flagged = target in slowed.flagged((Verdict.REGRESSED,))
            hits, under = (hits + flagged, under) if factor == 1.0 else (hits, under + flagged)
    assert hits / NIGHTS >= 0.80 - _slack(0.80, NIGHTS)
    # and not far above it: taken as the first look's own 80% point too, a host figure's MDE read 29% where
    # 0.6 of it was flagged 85% of the time
    assert under / NIGHTS < 0.80


def test_a_slowdown_of_a_figure_is_flagged_in_the_simulated_night_and_nothing_else():
    scenario = simulate.Scenario(FIGURES, 5)
    night = simulate.night(scenario, seed=3, slowed={"gpu5": 1.10, "host2": 1.60})
    assert night.flagged((Verdict.REGRESSED,)) == {"gpu5", "host2"}
    assert not night.flagged((Verdict.IMPROVED,))


@pytest.mark.parametrize("new_machine", [False, True])
def test_the_runs_a_weak_figure_is_sent_to_see_its_goal_and_twenty_do_not_where_it_says_so(new_machine):
    """The weak-figure table sends a figure to "about n runs of this code judged together" where n of them
    bring its MDE to 10%, and to a less noisy measurement where by the baseline's noise even 20 would not.
    Checked night by night through the real judge (each night's advice, then that night's baseline against n
    runs of a 10% slowdown): flagged at least 80% of the time, on this machine and on a new one (the noise
    between machines in the way); where it says 20 would not, 20 are flagged no more than 80% of the time."""
    figures = (simulate.Figure("host", 0.02, False, between=0.01),
               simulate.Figure("edge", 0.03, False, between=0.01),
               simulate.Figure("noisy", 0.25, False), *simulate.synthetic_profile(gpu=8, host=2))
    scenario = simulate.Scenario(figures, 5, new_machine=new_machine)

    def flagged(name: str, runs: int, seed: int) -> bool:
        slowed = simulate.night(dataclasses.replace(scenario, current_runs=runs), seed, {name: 1.10})
        return name in slowed.flagged((Verdict.REGRESSED,))

    advised, hits, beyond, beyond_hits = 0, 0, 0, 0
    for seed in range(40):
        rows = {r.benchmark: r for r in simulate.night(scenario, seed).first.rows if r.gating}
        assert rows["noisy"].runs_to_see is None
        runs = rows["host"].runs_to_see
        if runs is not None and runs <= 10:
            advised, hits = advised + 1, hits + flagged("host", runs, seed)
        if rows["edge"].runs_to_see is None:
            beyond, beyond_hits = beyond + 1, beyond_hits + flagged("edge", 20, seed)
    assert advised >= 20 and beyond >= 5, (advised, beyond)
    assert hits / advised >= 0.80 - _slack(0.80, advised)
    assert beyond_hits / beyond <= 0.80 + _slack(0.80, beyond)


def test_the_table_names_each_scenario():
    figures = simulate.synthetic_profile(gpu=6, host=3)
    measured = simulate.rates(simulate.Scenario(figures, 3, heavy="host", confirm=2), 4)
    text = simulate.table(simulate.rows([measured]))
    assert "| 3 baseline runs, host work heavy-tailed, --perfkit-confirm 2 | 4 |" in text


def test_a_night_selects_the_figures_it_judged_and_a_saved_simulation_selects_them_again(tmp_path, capsys):
    figures = simulate.synthetic_profile(gpu=4, host=2)
    runs = [simulate._run(figures, {f.name: 1e-3 for f in figures}, "m1", f"2026-11-0{i + 1}")
            for i in range(3)]
    baseline = tmp_path / "baseline.json"
    baselines.write_atomically(baseline, baselines.from_runs(runs))
    night = tmp_path / "night.json"  # a night without the weekly gpu3 and host1
    baselines.write_atomically(night, baselines.select(runs[0], ["gpu0", "gpu1", "gpu2", "host0"]))
    saved = tmp_path / "simulated.json"
    common = ["--baseline", str(baseline), "--nights", "1", "--only", "3 baseline runs, normal"]
    simulate.main([*common, "--night", str(night), "--save", str(saved)])
    kept = json.loads(saved.read_text())
    assert kept["gating_figures"] == 4 and kept["night_benchmarks"] == ["gpu0", "gpu1", "gpu2", "host0"]
    assert kept["night"] == "the night of 2026-11-01 on sim-gpu m1"
    assert capsys.readouterr().out.startswith("4 gating figures of the 4 benchmarks of the night of 2026-11")
    simulate.main([*common, "--night", str(saved)])
    assert capsys.readouterr().out.startswith("4 gating figures of the 4 benchmarks of the night")
    simulate.main(common)
    assert capsys.readouterr().out.startswith("6 gating figures;")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(SystemExit):
        simulate.main([*common, "--night", str(tmp_path / "broken.json")])
    assert "not a readable JSON file" in capsys.readouterr().err


def test_a_baselines_figures_are_simulated_with_todays_declaration_of_their_noise_between_hosts():
    """A baseline's entries keep the declaration of the day they ran: the simulation of its spreads judges
    the vector add's figures as today's code declares them."""
    runs = [simulate._run(simulate.synthetic_profile(gpu=1, host=0), {"gpu0": 1e-3 * (1 + i / 100)}, "m1",
                          f"2026-11-0{i + 1}") for i in range(3)]
    for run in runs:
        run.benchmarks[0].extra["vector_add"] = {"scenario": "grid", "mode": "explicit", "k": 1}
    (figure,) = simulate.profile_of(baselines.from_runs(runs))
    assert figure.between_hosts == kernels.SHORT_KERNEL_BETWEEN_HOSTS
