"""Fresh machines judged from their own result files: each machine's files against a baseline with the other
machines' files appended, by the real judge, as that machine's nightly would be; per gating figure, the
verdicts, changes and one-run MDEs. Unlike leave_machine_out.py it reads result files, not a baseline's
stored runs, so a figure only the newer runs hold (launches_per_step) is judged too (docs/findings.md,
2026-12-02: the one-GPU CIFAR steps' time against their launches per step):

    git show ccbb5c7:baselines/nvidia-h200-x1.json > before.json   # the baseline without those files
    python experiments/held_out_machines.py before.json m1/*.json m2/*.json m3/*.json \\
        --only '*cifar-b128-weak-gpus1]' --gate launches_per_step

``--gate`` marks a figure gating in files recorded before its spec gated (as the current code records it).
"""
from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from perfkit.resultfile import load
from perfkit.resultfile.model import ResultSet, name_matches
from perfkit.store import baselines
from perfkit.verdict.judge import judge
from perfkit.verdict.noise import Noise


def read(path: Path, gates: list[str]) -> ResultSet:
    """A result file, its ``gates`` figures marked gating."""
    doc = load.read_json(path)
    for bench in doc["benchmarks"]:
        for name in gates:
            metric = bench.get("extra_info", {}).get("metrics", {}).get(name)
            if metric is not None:
                metric["gate"] = True
    return load.parse(doc, str(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("baseline", type=Path, help="a baseline that holds none of the files' runs")
    parser.add_argument("files", type=Path, nargs="+", help="result files of several machines")
    parser.add_argument("--only", default="*", help="benchmarks to report (full names, * and ? as wildcards)")
    parser.add_argument("--gate", action="append", default=[], help="a figure to mark gating")
    args = parser.parse_args()
    by_machine: dict[str, list[ResultSet]] = defaultdict(list)
    for path in args.files:
        run = read(path, args.gate)
        by_machine[run.info.machine or str(path)].append(run)
    committed = load.load(args.baseline)
    merged = {machine: baselines.from_runs(runs) if len(runs) > 1 else runs[0]
              for machine, runs in by_machine.items()}
    rows = defaultdict(list)
    for machine, own in by_machine.items():
        baseline = committed
        for other in sorted(merged.keys() - {machine}):
            baseline = baselines.append(baseline, merged[other])
        noise = Noise.of(baseline)
        for run in own:
            for row in judge(baseline, run, noise).rows:
                if row.gating and row.mde is not None and name_matches(row.benchmark, args.only):
                    rows[row.benchmark.split("::")[-1], row.figure].append((machine, run.source, row))
    for (benchmark, figure), judged in sorted(rows.items()):
        print(f"{benchmark} {figure}: median one-run MDE {statistics.median(r.mde for *_, r in judged):.0%}")
        for machine, source, row in judged:
            change = "" if row.change is None else f"{row.change:+.1%}"
            where = f"{Path(source).parent.name}/{Path(source).name}"
            print(f"    {machine} {where}: {row.verdict.value} {change} MDE {row.mde:.0%}")


if __name__ == "__main__":
    main()
