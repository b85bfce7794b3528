"""A/A nights from a committed baseline's own runs: each host's runs judged by the real judge against a
baseline of the other hosts' runs, as a fresh machine's nightly is. How many runs a minimum effect falsely
flags (docs/findings.md, 2026-11-28: the GPU-bound minimum effect at 2% and 3%):

    python experiments/leave_machine_out.py baselines/nvidia-h200-x1.json 0.03 0.02

and, with ``--mde LIMIT``, each gating figure whose one-run MDE on a fresh machine (the median over the
machines of their newest run's, judged so) is above LIMIT, the blind figures of issue 44's part 6:

    python experiments/leave_machine_out.py baselines/nvidia-h200-x1.json --mde 0.10
"""
from __future__ import annotations

import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator

from perfkit.resultfile import load
from perfkit.store import baselines
from perfkit.store.baseline_runs import unpack
from perfkit.verdict.comparison import Row
from perfkit.verdict.judge import Policy, judge
from perfkit.verdict.noise import Noise

#: Runs of fewer benchmarks than this (one family re-saved alone) are left out: they are not a night.
MIN_BENCHMARKS = 3


def _judged(path: str, policy: Policy, newest_only: bool = False) -> Iterator[list[Row]]:
    """The gating rows of each night of the baseline at ``path`` (runs of at least MIN_BENCHMARKS benchmarks)
    judged against the other machines' runs; only each machine's newest night where ``newest_only``."""
    runs = [load.parse(doc, f"run {i}") for i, doc in enumerate(unpack(load.load(path)).runs)]
    for machine in sorted({r.info.machine for r in runs}, key=str):
        others = [r for r in runs if r.info.machine != machine]
        nights = [r for r in runs if r.info.machine == machine and len(r.benchmarks) >= MIN_BENCHMARKS]
        if not others or not nights:
            continue
        baseline = baselines.from_runs(others)
        noise = Noise.of(baseline)
        for run in nights[-1:] if newest_only else nights:
            yield [row for row in judge(baseline, run, noise, policy).rows if row.gating]


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
    gates = {(b.fullname, f) for b in load.load(path).benchmarks for f in b.gating_figures()}
    mdes: dict[tuple[str, str], list[float]] = defaultdict(list)
    for rows in _judged(path, Policy(), newest_only=True):
        for row in rows:
            if (row.benchmark, row.figure) in gates and row.mde is not None:
                mdes[(row.benchmark, row.figure)].append(row.mde)
    return mdes


def main(argv: list[str]) -> None:
    if argv[1:2] == ["--mde"]:
        limit = float(argv[2])
        mdes = fresh_machine_mdes(argv[0])
        blind = sorted(((statistics.median(v), k, len(v)) for k, v in mdes.items()), reverse=True)
        print(f"{sum(m > limit for m, _, _ in blind)} of {len(blind)} gating figures have a fresh machine's "
              f"one-run MDE above {limit:.0%} (the median over machines):")
        for mde, (bench, figure), machines in (b for b in blind if b[0] > limit):
            print(f"    {mde:7.1%}  {bench.split('::')[-1]} {figure} ({machines} machines)")
        return
    path, floors = argv[0], [float(f) for f in argv[1:]] or [0.03, 0.02]
    for floor in floors:
        judged, flagged, flags = false_flags(path, floor)
        print(f"GPU-bound minimum effect {floor:.1%}: {flagged} of {judged} runs with a false flag")
        for flag, count in sorted(flags.items()):
            print(f"    {flag} ({count})")


if __name__ == "__main__":
    main(sys.argv[1:])
