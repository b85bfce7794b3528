"""How much of each GPU-bound gating figure's spread over a baseline's runs its machine's memory speed
explains: per figure, its runs matched to the device copy of the same run (`test_copy_bandwidth`, by run date
and machine), the SD of its log values, the SD of its log ratio over that copy, the SD left after the copy's
least-squares share is taken out (a reference judged by regression, as CUPED does), and their correlation.
On a fresh machine a GPU-bound figure's one-run MDE is 4.5 (normal tails) to 7 (the H200's t7.45) times the
first SD (its machine's shift dominates: 48 H200s' bf16 GEMM cycles spread 0.7%), so a figure the copy
explains could be judged over it:

    python experiments/device_reference.py baselines/nvidia-h200-x1.json

The column "in class" splits the runs in two classes by the copy's values (the split with the least squares
within), as machines of two memory speeds would fall (2026-12-07: the H200's do), and gives the figure's SD
within those classes, pooled. The last three columns hold each machine out in turn, as a fresh machine's
night is: its newest run's change from the other machines' runs, as a root mean square over the machines
(what one fresh run's SE would have to be; "-" where no machine has LEAST_RUNS runs of others to fit on):
raw; read over its copy by the slope the other machines' runs give; and against the other machines' runs of
its own class (split on their copies alone).
"""
from __future__ import annotations

import math
import statistics

from perfkit.resultfile import load
from perfkit.resultfile.figures import TIME
from perfkit.resultfile.model import ResultSet, RunOrigin
from perfkit.verdict.noise import GPU_KIND, Noise

#: The reference: a 4 GiB device-to-device copy, timed in the same run as the figures.
REFERENCE = "test_copy_bandwidth"
#: Fewer matched runs say nothing of a correlation.
LEAST_RUNS = 10


def by_run(baseline: ResultSet, name: str, figure: str) -> dict[RunOrigin, float]:
    """``name``'s ``figure`` per run (log values), keyed by where each run came from (runs of unknown machine
    left out: their date alone may be another run's)."""
    entry = baseline.by_name()[name]
    values = baseline.runs()[name].get(figure, [])
    positions = baseline.figure_positions(entry).get(figure, ())
    origins = baseline.origins().get(name, ())
    return {origins[at]: math.log(v) for v, at in zip(values, positions)
            if v > 0 and 0 <= at < len(origins) and origins[at].machine}


def _percent(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2%}"


def _rms(values: list[float]) -> float:
    return math.sqrt(statistics.fmean(v * v for v in values)) if values else math.nan


def held_out(matched: list[RunOrigin], copy: dict[RunOrigin, float], own: dict[RunOrigin, float],
             ) -> tuple[float, float, float]:
    """The root mean square over machines of one held-out machine's newest run's change from the other
    machines' runs: raw; read over its copy by the other machines' least-squares slope; and against the
    other machines' runs of its class, the classes split on the other machines' copies alone."""
    raw, read_over, in_class = [], [], []
    for machine in {run.machine for run in matched}:
        others = [run for run in matched if run.machine != machine]
        newest = max((run for run in matched if run.machine == machine), key=lambda run: run.date)
        if len(others) < LEAST_RUNS:
            continue
        x, y = [copy[run] for run in others], [own[run] for run in others]
        slope = statistics.linear_regression(x, y).slope if statistics.stdev(x) else 0.0
        change = own[newest] - statistics.fmean(y)
        raw.append(change)
        read_over.append(change - slope * (copy[newest] - statistics.fmean(x)))
        split, _ = split_in_two({run: copy[run] for run in others})
        alike = [own[run] for run in others if (copy[run] > split) == (copy[newest] > split)]
        in_class.append(own[newest] - statistics.fmean(alike))  # each class holds two runs or more
    return _rms(raw), _rms(read_over), _rms(in_class)


def split_in_two(copy: dict[RunOrigin, float]) -> tuple[float, float]:
    """The split of the copy's sorted values into two classes with the least squares within them (Otsu's),
    as the midpoint between the classes, and how far apart their means are (log units); with fewer than four
    values, one class (the split above them all)."""
    values = sorted(copy.values())
    if len(values) < 4:
        return math.inf, math.nan

    def within(at: int) -> float:
        return sum(statistics.pvariance(part) * len(part) for part in (values[:at], values[at:]))

    at = min(range(2, len(values) - 1), key=within)
    return (values[at - 1] + values[at]) / 2, statistics.fmean(values[at:]) - statistics.fmean(values[:at])


def within_classes(matched: list[RunOrigin], copy: dict[RunOrigin, float], own: dict[RunOrigin, float],
                   split: float) -> float:
    """The figure's SD within the two classes of runs either side of ``split``, pooled."""
    classes = [[own[run] for run in matched if (copy[run] > split) == upper] for upper in (False, True)]
    squares = sum((v - statistics.fmean(c)) ** 2 for c in classes if c for v in c)
    df = sum(len(c) - 1 for c in classes if c)
    return math.sqrt(squares / df) if df > 0 else math.nan


def main(path: str) -> None:
    """One line per GPU-bound gating figure with LEAST_RUNS runs matched to the copy's."""
    baseline = load.load(path)
    noise = Noise.of(baseline)
    reference = next((n for n in baseline.by_name() if n.endswith(f"::{REFERENCE}")), None)
    if reference is None:
        raise SystemExit(f"{path} holds no {REFERENCE}: nothing to read the figures over")
    copy = by_run(baseline, reference, TIME)
    split, apart = split_in_two(copy)
    upper = sum(value > split for value in copy.values())
    print(f"the copy's runs in two classes: {len(copy) - upper} and {upper} runs, "
          f"their means {apart:.2%} apart")
    print(f"{'benchmark':58s} {'figure':18s} runs   SD  over copy  regressed  corr  in class  held out: raw  "
          "read over  in class")
    for (name, figure), kind in sorted(noise.kinds.items()):
        if kind != GPU_KIND or name == reference or figure not in baseline.by_name()[name].gating_figures():
            continue
        own = by_run(baseline, name, figure)
        matched = [run for run in own if run in copy]
        if len(matched) < LEAST_RUNS:
            continue
        x, y = [copy[run] for run in matched], [own[run] for run in matched]
        sd, ratio = statistics.stdev(y), statistics.stdev([b - a for a, b in zip(x, y)])
        corr = statistics.correlation(x, y) if statistics.stdev(x) and sd else 0.0
        left = sd * math.sqrt((1 - corr**2) * (len(y) - 1) / (len(y) - 2))
        raw, read_over, held_in_class = held_out(matched, copy, own)
        in_class = within_classes(matched, copy, own, split)
        print(f"{name.split('::')[-1][:58]:58s} {figure[:18]:18s} {len(matched):4d} {sd:5.2%} {ratio:9.2%} "
              f"{left:10.2%} {corr:+5.2f} {_percent(in_class):>9s} {_percent(raw):>14s} "
              f"{_percent(read_over):>10s} {_percent(held_in_class):>9s}")


if __name__ == "__main__":
    from script_line import run

    run(__doc__, lambda args: main(args[0]), least=1, most=1)
