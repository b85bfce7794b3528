"""The tails of a baseline's timed figures: per gating host or GPU-bound figure its runs, their SD (log),
sample excess kurtosis and the run furthest out (in SDs), and the Student's t the judge tests it with
(perfkit.verdict.noise: the tails of its kind's runs where it has noise.TAIL_RUNS or more; else t5 for host
work, normal tails for GPU work, t5 for one heavy-tailed on its own over 20 runs or more), and whether its
minimum effect narrows to 2% (GPU-bound, tails read).

    python experiments/host_tails.py baselines/nvidia-h200-x1.json
"""
from __future__ import annotations

import math
import statistics

from perfkit.resultfile import load
from perfkit.verdict.noise import GPU_KIND, HOST_KIND, KURTOSIS_RUNS, Noise, excess_kurtosis


def main(path: str) -> None:
    baseline = load.load(path)
    noise = Noise.of(baseline)
    entries = baseline.by_name()
    print(f"{'benchmark':60s} {'figure':18s} {'kind':10s} runs      SD  kurtosis  furthest  tested with")
    for (name, figure), logs in sorted(noise.runs.items()):
        kind = noise.kinds[name, figure]
        if (kind not in (HOST_KIND, GPU_KIND) or figure not in entries[name].gating_figures()
                or len(logs) < KURTOSIS_RUNS):
            continue
        mean, sd = statistics.fmean(logs), statistics.pstdev(logs)
        kurtosis = excess_kurtosis(logs)
        kurtosis = math.nan if kurtosis is None else kurtosis  # a figure whose runs never vary
        furthest = max(abs(v - mean) for v in logs) / sd if sd else math.nan
        tested = noise.of_figure(name, figure)
        tail = f"t{tested.tail_df:.1f}" if tested else "-"
        shown = " (tails read)" if tested and tested.tails_shown else ""
        print(f"{name.split('::')[-1]:60s} {figure:18s} {kind:10s} {len(logs):4d} {sd:7.2%} {kurtosis:9.2f} "
              f"{furthest:9.1f}  {tail}{shown}")


if __name__ == "__main__":
    from script_line import run

    run(__doc__, lambda args: main(args[0]), least=1, most=1)
