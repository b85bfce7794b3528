"""How far each machine of a committed baseline sits from the others, per GPU-bound gating figure: the machine
means of its log values (runs placed on their machines, as perfkit.verdict.noise places them), each machine's
shift from the median machine, the figure's spread within a machine, and which machines are the fastest and
slowest. A chip whose every figure runs faster is a chip, not a code change, and one a fresh-machine A/A
reads as ``improved`` where its shift passes the minimum effect (docs/findings.md, 2026-12-05: the H100
GPU-84c553c9, its explicit K100 tuned kernel -2.3%):

    python experiments/machine_shifts.py baselines/nvidia-h100-80gb-hbm3-x1.json [--machines 4]

The last line counts, per machine, the figures on which it is the fastest.
"""
from __future__ import annotations

import argparse
import math
import statistics
from collections import Counter, defaultdict

from perfkit.resultfile import load
from perfkit.resultfile.model import BenchmarkEntry, Figures, ResultSet, RunOrigin


def machine_logs(baseline: ResultSet, entry: BenchmarkEntry, figure: str, runs: dict[str, Figures],
                 origins: dict[str, tuple[RunOrigin, ...]]) -> dict[str, list[float]]:
    """The log values of ``entry``'s ``figure`` (``runs`` and ``origins``: the baseline's, read once),
    grouped by the machine each run came from (runs of an unknown machine left out)."""
    values = runs[entry.fullname].get(figure, [])
    positions = baseline.figure_positions(entry).get(figure, ())
    placed = origins.get(entry.fullname, ())
    grouped: dict[str, list[float]] = defaultdict(list)
    for value, at in zip(values, positions):
        if value > 0 and 0 <= at < len(placed) and placed[at].machine:
            grouped[placed[at].machine].append(math.log(value))
    return grouped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline")
    parser.add_argument("--machines", type=int, default=4,
                        help="figures with runs of fewer machines are left out (default 4)")
    args = parser.parse_args()
    baseline = load.load(args.baseline)
    runs, origins = baseline.runs(), baseline.origins()
    rows, fastest = [], Counter[str]()
    for entry in baseline.benchmarks:
        for figure in sorted(entry.gating_figures()) if entry.context.gpu_bound else ():
            grouped = machine_logs(baseline, entry, figure, runs, origins)
            if len(grouped) < args.machines:
                continue
            means = {m: statistics.fmean(logs) for m, logs in grouped.items()}
            middle = statistics.median(means.values())
            within = [v - means[m] for m, logs in grouped.items() for v in logs]
            shifts = sorted((math.expm1(mean - middle), m) for m, mean in means.items())
            fastest[shifts[0][1]] += 1
            rows.append((max(-shifts[0][0], shifts[-1][0]), entry.name, figure, len(grouped),
                         statistics.pstdev(within), shifts[0], shifts[-1]))
    for _, name, figure, machines, sd, low, high in sorted(rows, reverse=True):
        print(f"{name} {figure}: {machines} machines, within a machine {sd:.2%}; fastest {low[0]:+.2%} "
              f"({low[1][:6]}), slowest {high[0]:+.2%} ({high[1][:6]})")
    counts = ", ".join(f"{m[:6]} {n}" for m, n in fastest.most_common())
    print(f"fastest on how many of the {len(rows)} figures: {counts}")


if __name__ == "__main__":
    main()
