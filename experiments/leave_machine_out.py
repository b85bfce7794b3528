"""A/A nights from a committed baseline's own runs: each host's runs judged by the real judge against a
baseline of the other hosts' runs, as a fresh machine's nightly is. How many runs a minimum effect falsely
flags (docs/findings.md, 2026-11-28: the GPU-bound minimum effect at 2% and 3%):

    python experiments/leave_machine_out.py baselines/nvidia-h200-x1.json 0.03 0.02
"""
from __future__ import annotations

import sys
from collections import Counter

from perfkit.resultfile import load
from perfkit.store import baselines
from perfkit.store.baseline_runs import unpack
from perfkit.verdict.judge import Policy, judge
from perfkit.verdict.noise import Noise

#: Runs of fewer benchmarks than this (one family re-saved alone) are left out: they are not a night.
MIN_BENCHMARKS = 3


def false_flags(path: str, gpu_floor: float) -> tuple[int, int, Counter[str]]:
    """(runs judged, runs with a regressed or improved gating figure, the flags by benchmark and figure)."""
    runs = [load.parse(doc, f"run {i}") for i, doc in enumerate(unpack(load.load(path)).runs)]
    policy = Policy(bound_threshold=gpu_floor)
    judged = flagged = 0
    flags: Counter[str] = Counter()
    for machine in sorted({r.info.machine for r in runs}):
        others = [r for r in runs if r.info.machine != machine]
        if not others:
            continue
        baseline = baselines.from_runs(others)
        noise = Noise.of(baseline)
        for run in (r for r in runs if r.info.machine == machine and len(r.benchmarks) >= MIN_BENCHMARKS):
            rows = [row for row in judge(baseline, run, noise, policy).rows
                    if row.gating and row.verdict.value in ("regressed", "improved")]
            judged, flagged = judged + 1, flagged + bool(rows)
            flags.update(f"{r.benchmark.split('::')[-1]} {r.figure} {r.verdict.value} {r.change:+.1%}"
                         for r in rows)
    return judged, flagged, flags


def main(argv: list[str]) -> None:
    path, floors = argv[0], [float(f) for f in argv[1:]] or [0.03, 0.02]
    for floor in floors:
        judged, flagged, flags = false_flags(path, floor)
        print(f"GPU-bound minimum effect {floor:.1%}: {flagged} of {judged} runs with a false flag")
        for flag, count in sorted(flags.items()):
            print(f"    {flag} ({count})")


if __name__ == "__main__":
    main(sys.argv[1:])
