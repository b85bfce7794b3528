"""A/A nights from a committed baseline's own runs: each host's runs judged by the real judge against a
baseline of the other hosts' runs, as a fresh machine's nightly is. How many runs a minimum effect falsely
flags (docs/findings.md, 2026-11-28: the GPU-bound minimum effect at 2% and 3%):

    python experiments/leave_machine_out.py baselines/nvidia-h200-x1.json 0.03 0.02

and, with ``--mde LIMIT``, each gating figure whose one-run MDE on a fresh machine (the median over the
machines of their newest run's, judged so) is above LIMIT, the blind figures of issue 44's part 6:

    python experiments/leave_machine_out.py baselines/nvidia-h200-x1.json --mde 0.10

and, with ``--calibration``, whether the judge's standard errors are the spread a fresh machine shows: per
kind of timed gating figure and how its tails were read, each held-out night's change over its SE (a z that
should spread as Student's t with the test's degrees of freedom; SEs too wide read an SD below 1, too narrow
above); each machine's newest night, or every night with ``all``:

    python experiments/leave_machine_out.py baselines/nvidia-h200-x1.json --calibration [all]

Each run is judged with today's declarations, as a fresh machine's nightly of today's code is: a vector add
whose noise lies between hosts (perfkit.workloads.kernels.between_hosts_now) says so on runs saved before
it did.
"""
from __future__ import annotations

import argparse
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterator

from perfkit.resultfile import load
from perfkit.store import baselines
from perfkit.store.baseline_runs import unpack
from perfkit.verdict.comparison import Comparison, Row, sharp_goal
from perfkit.verdict.judge import Policy, judge
from perfkit.verdict.noise import TAIL_RUNS, Noise
from perfkit.workloads.kernels import between_hosts_now

#: Runs of fewer benchmarks than this (one family re-saved alone) are left out: they are not a night.
MIN_BENCHMARKS = 3


def _judged(path: str, policy: Policy, newest_only: bool = False) -> Iterator[list[Row]]:
    """The gating rows of each night of the baseline at ``path`` (runs of at least MIN_BENCHMARKS benchmarks)
    judged against the other machines' runs; only each machine's newest night where ``newest_only``."""
    for comparison, _ in _comparisons(path, policy, newest_only):
        yield [row for row in comparison.rows if row.gating]


def _comparisons(path: str, policy: Policy, newest_only: bool = False) -> Iterator[tuple[Comparison, Noise]]:
    """Each night of the baseline at ``path`` judged against the other machines' runs (:func:`_judged`),
    with the noise it was judged with."""
    runs = [load.parse(_declared_now(doc), f"run {i}") for i, doc in enumerate(unpack(load.load(path)).runs)]
    for machine in sorted({r.info.machine for r in runs}, key=str):
        others = [r for r in runs if r.info.machine != machine]
        nights = [r for r in runs if r.info.machine == machine and len(r.benchmarks) >= MIN_BENCHMARKS]
        if not others or not nights:
            continue
        baseline = baselines.from_runs(others)
        noise = Noise.of(baseline)
        for run in nights[-1:] if newest_only else nights:
            yield judge(baseline, run, noise, policy), noise


def _declared_now(doc: dict) -> dict:
    """A run's document with today's declaration of each entry's noise between hosts
    (perfkit.workloads.kernels.between_hosts_now)."""
    for bench in doc.get("benchmarks", []):
        extra = bench.get("extra_info") or {}
        if reason := between_hosts_now(extra):
            extra["between_hosts"] = reason
        else:
            extra.pop("between_hosts", None)
    return doc


def false_flags(path: str, gpu_floor: float) -> tuple[int, int, Counter[str]]:
    """(runs judged, runs with a regressed or improved gating figure, the flags by benchmark and figure)."""
    judged = flagged = 0
    flags: Counter[str] = Counter()
    for rows in _judged(path, Policy.with_gpu_floor(gpu_floor)):
        rows = [row for row in rows if row.verdict.value in ("regressed", "improved")]
        judged, flagged = judged + 1, flagged + bool(rows)
        flags.update(f"{r.benchmark.split('::')[-1]} {r.figure} {r.verdict.value} {r.change:+.1%}"
                     for r in rows)
    return judged, flagged, flags


def fresh_machine_mdes(path: str) -> dict[tuple[str, str], list[float]]:
    """Per figure the baseline gates on today (its newest runs' gates), the one-run MDE of each machine's
    newest night judged against the other machines' runs, where the judge gives one."""
    return {key: [mde for mde, _ in reads] for key, reads in fresh_machine_reads(path).items()}


def fresh_machine_reads(path: str) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """As :func:`fresh_machine_mdes`, each MDE with the minimum effect it was judged at (a figure whose
    noise lies between hosts widens it: perfkit.verdict.machine_spread)."""
    gates = {(b.fullname, f) for b in load.load(path).benchmarks for f in b.gating_figures()}
    reads: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for rows in _judged(path, Policy(), newest_only=True):
        for row in rows:
            if (row.benchmark, row.figure) in gates and row.mde is not None and row.minimum is not None:
                reads[(row.benchmark, row.figure)].append((row.mde, row.minimum))
    return reads


def calibration(path: str, newest_only: bool = True) -> dict[str, list[tuple[float, float]]]:
    """Per kind of timed gating figure and the tails it was tested with (:func:`_tails_read`), (change over
    SE, degrees of freedom) of each machine's newest night (every night, where not ``newest_only``) judged
    against the other machines' runs (logs, as the judge tests them)."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for comparison, noise in _comparisons(path, Policy(), newest_only):
        for row in comparison.rows:
            key = (row.benchmark, row.figure)
            kind = noise.kinds.get(key, "")
            reach = comparison.reach.get(key)
            if row.gating and kind.startswith("timed") and reach and reach.se > 0 and row.change is not None:
                z = math.log1p(row.change) / reach.se
                out[f"{kind}, {_tails_read(noise, key)}"].append((z, reach.df))
    return out


def _tails_read(noise: Noise, key: tuple[str, str]) -> str:
    """How the judge read a figure's tails, in Noise.of_figure's order: its kind's (read from the runs of the
    kind's figures with TAIL_RUNS runs or more), its own heavy ones, or its kind's default: where it has
    fewer runs, or declares its own tolerance (a GPU-bound figure's tails are then not read)."""
    if key in noise.tails:
        return "the kind's tails read"
    runs = len(noise.runs.get(key, ()))
    if key in noise.heavy and runs >= TAIL_RUNS:
        return "heavy on its own"
    return f"{TAIL_RUNS}+ runs, its own tolerance" if runs >= TAIL_RUNS else f"under {TAIL_RUNS} runs"


def _print_calibration(path: str, newest_only: bool) -> None:
    """The bulk (the median |z| over Student's t's, 1.0 where the SEs are right) and the tails (how often |z|
    passes 2, 3 and 4 against t's chance)."""
    from scipy.special import stdtr, stdtrit

    for kind, zs in sorted(calibration(path, newest_only).items()):
        scale = statistics.median(abs(z) for z, _ in zs) / statistics.median(float(stdtrit(df, 0.75))
                                                                            for _, df in zs)
        tails = ", ".join(f"|z| > {cut}: {sum(abs(z) > cut for z, _ in zs) / len(zs):.1%} "
                          f"(t {statistics.fmean(2 * float(stdtr(df, -cut)) for _, df in zs):.1%})"
                          for cut in (2, 3, 4))
        print(f"{kind}: {len(zs)} figures; median |change/SE| over t's {scale:.2f}; {tails}")


def _print_mdes(path: str, limit: float) -> None:
    """The gating figures whose fresh machine's one-run MDE is above ``limit`` and above its goal (``limit``,
    or 1.5 times a wider minimum effect, comparison.sharp_goal: 0.10 for host work, 0.03 for GPU work) on the
    median machine; then the others above ``limit``,
    each with its minimum effects over the machines (widened where its noise lies between hosts)."""
    reads = sorted(((statistics.median(m for m, _ in v), k, v) for k, v in fresh_machine_reads(path).items()),
                   reverse=True)
    # each machine's MDE over its own goal: the machines' minimum effects differ where they widen
    blind = [r for r in reads if statistics.median(m / sharp_goal(e, limit) for m, e in r[2]) > 1]
    wide = [r for r in reads if r[0] > limit and r not in blind]
    above = (f"{len(blind)} of {len(reads)} gating figures have a fresh machine's one-run MDE above "
             f"{limit:.0%} and above 1.5 times a minimum effect wider than it (medians over machines)")
    within = f"{len(wide)} more are above {limit:.0%} and within 1.5 times a wider minimum effect"
    for said, rows in ((above, blind), (within, wide)):
        print(f"{said}:")
        for mde, (bench, figure), machines in rows:
            effects = sorted(e for _, e in machines)
            span = f"{effects[0]:.0%}" + (f"-{effects[-1]:.0%}" if effects[-1] > effects[0] else "")
            print(f"    {mde:7.1%}  {bench.split('::')[-1]} {figure}, minimum effect {span} ({len(machines)} "
                  "machines)")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="leave_machine_out.py")
    parser.add_argument("baseline")
    parser.add_argument("floors", nargs="*", type=float, default=[0.03, 0.02])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--mde", type=float)
    mode.add_argument("--calibration", nargs="?", const="newest", choices=("newest", "all"))
    args = parser.parse_args(argv)
    if args.calibration:
        _print_calibration(args.baseline, newest_only=args.calibration == "newest")
    elif args.mde is not None:
        _print_mdes(args.baseline, args.mde)
    else:
        for floor in args.floors:
            judged, flagged, flags = false_flags(args.baseline, floor)
            print(f"GPU-bound minimum effect {floor:.1%}: {flagged} of {judged} runs with a false flag")
            for flag, count in sorted(flags.items()):
                print(f"    {flag} ({count})")


if __name__ == "__main__":
    from script_line import run

    run(__doc__, main, least=1)
