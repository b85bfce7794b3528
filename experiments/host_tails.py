"""The tails of a baseline's host figures: per gating host figure its runs, their SD (log), sample excess
kurtosis and the run furthest out (in SDs), and the Student's t the judge tests it with
(perfkit.verdict.noise: t5, or the tails of its kind's runs where it has noise.TAIL_RUNS or more).

    python experiments/host_tails.py baselines/nvidia-h200-x1.json
"""
from __future__ import annotations

import math
import statistics
import sys

from perfkit.resultfile import load
from perfkit.verdict.noise import HOST_KIND, KURTOSIS_RUNS, Noise, excess_kurtosis


def main(path: str) -> None:
    baseline = load.load(path)
    noise = Noise.of(baseline)
    entries = baseline.by_name()
    print(f"{'benchmark':60s} {'figure':18s} runs      SD  kurtosis  furthest  tested with")
    for (name, figure), logs in sorted(noise.runs.items()):
        if (noise.kinds[name, figure] != HOST_KIND or figure not in entries[name].gating_figures()
                or len(logs) < KURTOSIS_RUNS):
            continue
        mean, sd = statistics.fmean(logs), statistics.pstdev(logs)
        kurtosis = excess_kurtosis(logs)
        kurtosis = math.nan if kurtosis is None else kurtosis  # a figure whose runs never vary
        furthest = max(abs(v - mean) for v in logs) / sd if sd else math.nan
        tested = noise.of_figure(name, figure)
        tail = f"t{tested.tail_df:.1f}" if tested else "-"
        print(f"{name.split('::')[-1]:60s} {figure:18s} {len(logs):4d} {sd:7.2%} {kurtosis:9.2f} "
              f"{furthest:9.1f}  {tail}")


if __name__ == "__main__":
    main(sys.argv[1])
