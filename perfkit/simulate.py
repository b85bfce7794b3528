"""Seeded simulations of the verdict's error rates, through the project's own judge and confirmation.

A regression suite is trusted for its words, and a claim about an error rate (a night's false alarms, the
power at the printed MDE) is checked here, not argued: synthetic nights are built as result sets, judged by
perfkit.verdict.judge with the noise of perfkit.verdict.noise, and confirmed by perfkit.confirm's second
look, exactly as a nightly run is. Each gating figure's run values are log-normal (or heavy-tailed: Student's
t with HEAVY_DF degrees of freedom, scaled to the same SD) around its own level, with its own between-run SD
and its rounds spread as much within a run (the covariate the prior's trend reads). Heavy tails are where the
committed baselines show them, in host work (a launch that lands in one of two modes per process, a
neighbour's burst): the host-bound figures' residuals have an excess kurtosis of 1.5-3 on the H200, H100
and CPU baselines; a night where every figure, GPU-bound too, is that heavy-tailed is shown as well.

The CPU test suite runs a small version (tests/test_simulate.py); ``python -m perfkit.simulate``
runs the larger one (on the spreads of a committed baseline with ``--baseline``) and prints its table;
``--save`` keeps it in docs/data/, whose files the docs' tables are made from (perfkit.docnumbers).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from perfkit import SCHEMA_VERSION
from perfkit.confirm import second_look, suspects
from perfkit.errors import PerfkitError, UsageError
from perfkit.resultfile import load
from perfkit.resultfile.figures import TIME
from perfkit.resultfile.model import ResultSet
from perfkit.store import baselines
from perfkit.verdict.judge import DEFAULT_POLICY, Comparison, FirstLook, Policy, Verdict, judge
from perfkit.verdict.noise import HOST_KIND, TAIL_RUNS, Noise, noise_kind
from perfkit.workloads.kernels import between_hosts_now

#: Student's t with this many degrees of freedom is the heavy-tailed noise: infinite kurtosis, heavier than
#: the judge's own assumption for host work (noise.HOST_TAIL_DF) and than any committed baseline's host
#: residuals (an excess kurtosis of 1.5-3, Student's t with 6-8 degrees of freedom, on 2026-11-27). With 3, a
#: tail no baseline showed, one run of the H100's spreads flagged 5.0-7.5% of nights (docs/findings.md).
HEAVY_DF = 4
#: The noise kinds (perfkit.verdict.noise.noise_kind) of gating figures that are not timed: an allocator peak
#: or a count repeats exactly or nearly, and is not what a night's false alarms come from.
UNTIMED_KINDS = ("memory", "count")


@dataclass(frozen=True)
class Figure:
    """One gating time: its between-run SD (log), whether it is GPU-bound (a 3% minimum effect, 2% where its
    tails are read from its runs) or holds host work (5%), its own tolerance where it declares one, its
    between-machine SD (log), and why its noise lies between hosts where it declares so."""

    name: str
    sd: float
    gpu_bound: bool
    tolerance: float | None = None
    between: float = 0.0
    between_hosts: str | None = None


@dataclass(frozen=True)
class Scenario:
    """A night: ``baseline_runs`` runs of every figure, one current run (or ``confirm`` re-runs of the
    suspects after it); ``new_machine``: the baseline's runs came from ``hosts`` machines in turn (one where
    ``one_machine_baseline``) and this run from another; ``heavy``: whose noise is heavy-tailed ("host":
    the host-bound figures', "all": every one's, "one": the first host-bound figure's alone, among light
    ones whose tails the judge pools with its own; "gpu_quarter": every fourth GPU-bound figure's, more than
    the H200 baseline's five of its 44 GPU-bound figures with 20 runs or more that are heavy-tailed on their
    own)."""

    figures: tuple[Figure, ...]
    baseline_runs: int
    new_machine: bool = False
    one_machine_baseline: bool = False
    heavy: Literal["none", "host", "all", "one", "gpu_quarter"] = "none"
    confirm: int = 0
    policy: Policy = DEFAULT_POLICY  # the minimum effects and alpha the nights are judged by
    current_runs: int = 1  # runs of this code judged together (replicates), each night's draws the same
    hosts: int = 2  # the machines a new machine's baseline ran on, in turn
    current_host: str = ""  # the machine this run ran on, where not the scenario's (m1, or a new one)

    @property
    def label(self) -> str:
        tails = {"none": "normal", "host": "host work heavy-tailed", "all": "every figure heavy-tailed",
                 "one": "one host figure heavy-tailed",
                 "gpu_quarter": "a quarter of GPU-bound figures heavy-tailed"}
        parts = [f"{self.baseline_runs} baseline runs", tails[self.heavy]]
        parts += ["new machine"] if self.new_machine else []
        parts += ["baseline of one machine"] if self.new_machine and self.one_machine_baseline else []
        parts += [f"--perfkit-confirm {self.confirm}"] if self.confirm else []
        parts += [f"{self.current_runs} runs of this code"] if self.current_runs > 1 else []
        return ", ".join(parts)


@dataclass
class _Draws:
    """The random draws of one night: a machine effect per figure and machine, and each run's noise."""

    rng: random.Random
    heavy: frozenset[str]  # the names of the figures whose noise is heavy-tailed
    machines: dict[tuple[str, str], float] = field(default_factory=dict)

    def noise(self, fig: Figure) -> float:
        if fig.name not in self.heavy:
            return self.rng.gauss(0.0, 1.0)
        chi2 = sum(self.rng.gauss(0.0, 1.0) ** 2 for _ in range(HEAVY_DF))
        return self.rng.gauss(0.0, 1.0) / math.sqrt(chi2 / HEAVY_DF) / math.sqrt(HEAVY_DF / (HEAVY_DF - 2))

    def value(self, fig: Figure, machine: str, factor: float = 1.0) -> float:
        key = (fig.name, machine)
        if key not in self.machines:
            self.machines[key] = self.rng.gauss(0.0, fig.between) if fig.between else 0.0
        return 1e-3 * factor * math.exp(self.machines[key] + fig.sd * self.noise(fig))


def _run(figures: Sequence[Figure], values: dict[str, float], machine: str, when: str) -> ResultSet:
    """One run as perfkit reads it: each figure's time over five rounds that spread as its runs do."""
    def rounds(fig: Figure, t: float) -> list[float]:
        return [t * math.exp(fig.sd * z) for z in (-1.0, -0.5, 0.0, 0.5, 1.0)]

    def extra(fig: Figure) -> dict[str, Any]:
        out: dict[str, Any] = {"gpu_bound": True} if fig.gpu_bound else {}
        out |= {"between_hosts": fig.between_hosts} if fig.between_hosts else {}
        return out | ({"tolerance": fig.tolerance} if fig.tolerance is not None else {})

    benches = [{"fullname": f.name, "name": f.name, "extra_info": extra(f),
                "stats": {"median": t, "data": rounds(f, t), "iqr": 0.0, "rounds": 5}}
               for f in figures if (t := values.get(f.name)) is not None]
    info = {"schema_version": SCHEMA_VERSION, "hardware_id": "sim-gpu", "device": "cuda",
            "fingerprint": {"machine": machine}}
    return load.parse({"benchmarks": benches, "machine_info": {"perfkit": info}, "datetime": when}, "sim")


@dataclass(frozen=True)
class Night:
    """One simulated night's verdicts: the first look's and, with a confirmation, the final ones."""

    first: Comparison
    final: Comparison

    def flagged(self, verdicts: tuple[Verdict, ...] = (Verdict.REGRESSED, Verdict.IMPROVED)) -> set[str]:
        return {r.benchmark for r in self.final.rows if r.gating and r.verdict in verdicts}


def _heavy_tailed(figures: Sequence[Figure], which: str) -> frozenset[str]:
    """The names of the figures whose noise is heavy-tailed in a scenario whose ``heavy`` is ``which``."""
    gpu = [f.name for f in figures if f.gpu_bound]
    host = [f.name for f in figures if not f.gpu_bound]
    chosen = {"none": [], "host": host, "all": gpu + host, "one": host[:1], "gpu_quarter": gpu[3::4]}
    return frozenset(chosen[which])


def night(scenario: Scenario, seed: int, slowed: dict[str, float] | None = None) -> Night:
    """A night of ``scenario`` with the draws of ``seed``; ``slowed``: figures made that many times slower
    in this run and its re-runs (the same draws otherwise, so a slowed night is its null night shifted)."""
    figs = scenario.figures
    draws = _Draws(random.Random(seed), _heavy_tailed(figs, scenario.heavy))
    hosts = scenario.hosts if scenario.new_machine and not scenario.one_machine_baseline else 1
    machines = [f"m{i + 1}" for i in range(hosts)]
    base = baselines.from_runs([
        _run(figs, {f.name: draws.value(f, machines[i % len(machines)]) for f in figs},
             machines[i % len(machines)], (date(2026, 11, 1) + timedelta(days=i)).isoformat())
        for i in range(scenario.baseline_runs)])
    here = scenario.current_host or (f"m{scenario.hosts + 1}" if scenario.new_machine else "m1")
    factor = slowed or {}
    runs = [_run(figs, {f.name: draws.value(f, here, factor.get(f.name, 1.0)) for f in figs}, here,
                 "2026-12-01" if scenario.current_runs == 1
                 else (datetime(2026, 12, 1, 10) + timedelta(minutes=i)).isoformat(timespec="minutes"))
            for i in range(scenario.current_runs)]
    current = runs[0] if len(runs) == 1 else baselines.from_runs(runs)
    noise = Noise.of(base)
    policy = replace(scenario.policy, confirm_runs=scenario.confirm)  # as the session judges a night

    def judged(results: ResultSet, first_look: FirstLook | None = None) -> Comparison:
        return judge(base, results, noise, policy, None, first_look)

    first = judged(current)
    names = set(suspects(first)) if scenario.confirm else set()
    if not names:
        return Night(first, first)
    chosen = [f for f in figs if f.name in names]
    reruns = [_run(chosen, {f.name: draws.value(f, here, factor.get(f.name, 1.0)) for f in chosen}, here,
                   (datetime(2026, 12, 1) + timedelta(hours=i + 1)).isoformat(timespec="hours"))
              for i in range(scenario.confirm)]
    return Night(first, second_look(first, reruns, judged))


@dataclass(frozen=True)
class Rates:
    """What many nights of one scenario showed."""

    scenario: Scenario
    nights: int
    false_alarm: float  # nights with any regressed or improved verdict, no change made
    power: float  # share of slowed figures (each by its printed MDE) flagged regressed
    median_mde: float


def rates(scenario: Scenario, nights: int, seed: int = 0) -> Rates:
    """The per-night false-alarm rate of ``scenario`` over ``nights`` null nights, and the power at the
    printed MDE: in each night one figure (in turn) is slowed by the MDE its null night printed, and the
    same draws judged again."""
    alarms, hits, mdes = 0, 0, []
    for i in range(nights):
        null = night(scenario, seed + i)
        alarms += bool(null.flagged())
        rows = {r.benchmark: r for r in null.first.rows if r.gating and r.mde is not None}
        target = scenario.figures[i % len(scenario.figures)].name
        mde = rows[target].mde if target in rows else None
        if mde is None:
            continue
        mdes.append(mde)
        slowed = night(scenario, seed + i, {target: 1.0 + mde})
        hits += target in slowed.flagged((Verdict.REGRESSED,))
    return Rates(scenario, nights, alarms / nights, hits / max(1, len(mdes)),
                 statistics.median(mdes) if mdes else math.nan)


def profile_of(baseline: ResultSet, night: Collection[str] | None = None) -> tuple[Figure, ...]:
    """The timed gating figures of a committed baseline (a time, a time over a reference, a GPU's time alone;
    not an allocator peak or a count) as simulation figures: each one's own between-run SD (its runs' log
    values; a figure with fewer than three runs is left out), kind and tolerance, and a between-machine SD as
    large as its own for host work (host-bound steps shift 5-15% between machines of one kind) and 0.3 times
    its own for GPU work, and where today's code declares its noise lies between hosts, why (the entries keep
    the declaration of the day they ran). ``night``: only these benchmarks' (the selection a nightly run
    judges; a baseline also holds the weekly ones)."""
    out, runs = [], baseline.runs()
    for entry in baseline.benchmarks:
        if night is not None and entry.fullname not in night:
            continue
        for figure in sorted(entry.gating_figures()):
            kind = noise_kind(entry, figure)
            values = [v for v in runs[entry.fullname].get(figure, []) if v > 0]
            if len(values) < 3 or kind in UNTIMED_KINDS:
                continue
            sd = statistics.stdev(math.log(v) for v in values)
            gpu = kind != HOST_KIND
            name = entry.fullname if figure == TIME else f"{entry.fullname} {figure}"
            out.append(Figure(name, max(sd, 1e-4), gpu, entry.context.tolerance, sd * (0.3 if gpu else 1.0),
                              between_hosts_now(entry.extra)))
    return tuple(out)


def night_selection(path: Path) -> tuple[str, frozenset[str]]:
    """The benchmarks a nightly run judged, and where they came from: the ids of a results file (a night
    on the baseline's hardware), or those a saved simulation kept (``--save`` keeps them, so that its
    table can be made again without the night's file)."""
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--night {path}: not a readable JSON file ({exc}); give a results file of a "
                         "nightly run (pytest --benchmark-json) or a simulation saved with --night") from None
    if isinstance(kept, dict) and "night" in kept and "night_benchmarks" in kept:
        return kept["night"], frozenset(kept["night_benchmarks"])
    results = load.load(path)
    where = results.info.fingerprint.machine or "an unnamed machine"
    return (f"the night of {results.datetime[:10] or 'an undated run'} on {results.info.hardware_id} {where}",
            frozenset(b.fullname for b in results.benchmarks))


def synthetic_profile(gpu: int = 24, host: int = 12) -> tuple[Figure, ...]:
    """A machine's figures as the committed baselines show them: GPU-bound ones repeating within 0.2-1.5%,
    host-bound ones within 2-20% (a few of them with a tolerance of their own); between machines of one kind
    a GPU-bound figure shifts 0.3 times its own SD, a host-bound one as much as its own."""
    figs = [Figure(f"gpu{i}", 0.002 * 1.09**i, True, between=0.3 * 0.002 * 1.09**i) for i in range(gpu)]
    figs += [Figure(f"host{i}", 0.02 * 1.22**i, False, 0.15 if i % 4 == 3 else None, 0.02 * 1.22**i)
             for i in range(host)]
    return tuple(figs)


def scenarios(figures: tuple[Figure, ...], confirm: int = 3,
              policy: Policy = DEFAULT_POLICY) -> list[Scenario]:
    """The configurations the issue names: 3, 5 and 8 baseline runs, a run on a new machine (against a
    baseline of two machines, and of one, whose between-machine share cannot be measured), normal and
    heavy-tailed noise, with and without a confirmation; and 25 runs, where the judge reads each kind's
    tails from the runs and narrows the GPU-bound minimum effect to 2% (noise.TAIL_RUNS: the committed H200
    baseline's nightly entries hold 24-40), also where one host figure alone is heavy-tailed and read with
    the light ones' tails, where every fourth GPU-bound figure is (its kind's tails read with theirs), and
    where every figure is."""
    out: list[Scenario] = []
    for heavy in ("none", "host"):
        out += [Scenario(figures, runs, heavy=heavy, policy=policy) for runs in (3, 5, 8, 25)]
        out += [Scenario(figures, 5, new_machine=True, one_machine_baseline=one, heavy=heavy, policy=policy)
                for one in (False, True)]
    out += [Scenario(figures, 25, heavy=heavy, policy=policy) for heavy in ("one", "gpu_quarter")]
    out += [Scenario(figures, runs, heavy="all", policy=policy) for runs in (3, 5, 8, 25)]
    return out + [replace(s, confirm=confirm) for s in out]


def rows(results: Sequence[Rates]) -> list[dict[str, Any]]:
    """The rates as plain rows, as ``--save`` keeps them (docs/data/, the docs' tables read them)."""
    return [{"scenario": r.scenario.label, "nights": r.nights, "false_alarm": r.false_alarm, "power": r.power,
             "median_mde": r.median_mde} for r in results]


def table(kept: Sequence[Mapping[str, Any]]) -> str:
    """Rows of :func:`rows` as a markdown table."""
    lines = [("| scenario | nights | P(any false regressed/improved) | flagged at the printed MDE | "
             "median MDE |"), "|---|---|---|---|---|"]
    lines += [f"| {r['scenario']} | {r['nights']} | {r['false_alarm']:.1%} | {r['power']:.0%} | "
              f"{r['median_mde']:.1%} |" for r in kept]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m perfkit.simulate", description=__doc__)
    parser.add_argument("--baseline", type=Path, help="take the figures' spreads from this baseline file "
                        "(default: a synthetic machine of 24 GPU-bound and 12 host-bound figures)")
    parser.add_argument("--nights", type=int, default=400, help="nights per scenario (default 400)")
    parser.add_argument("--seed", type=int, default=0, help="the first night's seed (default 0)")
    parser.add_argument("--save", type=Path, help="also keep the table as JSON here, with the date, the seed "
                        "and the spreads' source (docs/data/simulation*.json, which the docs' tables read)")
    parser.add_argument("--bound-threshold", type=float, default=Policy.bound_threshold, metavar="FRACTION",
                        help="the GPU-bound minimum effect the nights are judged by, to try another "
                        f"(default: the judge's, {Policy.bound_threshold:g}; the narrower one where "
                        "tails are read is never wider)")
    parser.add_argument("--night", type=Path, metavar="RESULTS", help="simulate only the benchmarks this "
                        "nightly run judged (its results file, or a simulation saved with --night): without "
                        "it every entry of the baseline counts, the weekly ones too")
    parser.add_argument("--only", default="", metavar="TEXT",
                        help="only the scenarios whose label holds TEXT, e.g. 'every figure heavy-tailed'")
    args = parser.parse_args(argv)
    if args.night and not args.baseline:
        parser.error("--night selects figures of a --baseline; give the baseline too")
    try:
        night = night_selection(args.night) if args.night else None
    except PerfkitError as exc:
        parser.error(str(exc))
    figures = (profile_of(load.load(args.baseline), night[1] if night else None) if args.baseline
               else synthetic_profile())
    policy = Policy.with_gpu_floor(args.bound_threshold)
    chosen_by = f" of the {len(night[1])} benchmarks of {night[0]}" if night else ""
    print(f"{len(figures)} gating figures{chosen_by}; alpha {policy.alpha:.0%}; GPU-bound minimum effect "
          f"{policy.bound_threshold:.1%} ({policy.bound_threshold_shown:.1%} where {TAIL_RUNS}+ runs let its "
          "tails be read)")
    chosen = [s for s in scenarios(figures, policy=policy) if args.only in s.label]
    kept = rows([rates(s, args.nights, args.seed) for s in chosen])
    print(table(kept))
    if args.save:
        source = args.baseline.name if args.baseline else "synthetic: 24 GPU-bound and 12 host-bound figures"
        saved = {"date": date.today().isoformat(), "seed": args.seed, "spreads": source,
                 "gating_figures": len(figures), "rows": kept}
        if args.baseline:  # the docs check that the table is of the baseline committed now
            saved["spreads_sha256"] = hashlib.sha256(args.baseline.read_bytes()).hexdigest()
        if night:
            saved |= {"night": night[0], "night_benchmarks": sorted(night[1])}
        args.save.write_text(json.dumps(saved, indent=1) + "\n")


if __name__ == "__main__":
    main()
