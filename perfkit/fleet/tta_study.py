"""Seed 002 Problem 2 across hardware: every training run of the time-to-accuracy benchmark, gathered from the
result files of several machines (a fleet night's replicates, or runs made by hand), per hardware kind and
case: the time-to-accuracy CoV (Coleman et al.'s stability) and each trained model's accuracy on the held-out
set (mean and standard deviation, the seed's generalisation question), as a table and a plot.

A replicate trains seeds 0 to 2 of its case (the benchmark's three runs), so R replicates repeat each seed R
times: what varies between them is the hardware's nondeterminism and the host, not the initialisation."""
from __future__ import annotations

import statistics
import textwrap
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfkit.errors import UsageError
from perfkit.render.plotting import pyplot, save_figure
from perfkit.render.tables import text_table
from perfkit.resultfile.model import ResultSet
from perfkit.resultfile.payloads import TimeToAccuracy
from perfkit.workloads import tta_variants

#: The benchmark of the seed's study: ResNet-50 at batch 128, trained by the naive loop (the quick profile's
#: tiny CNN in its place), selected with pytest's -k; weekly in the full profile, so -m takes every marker
KEYWORD = "test_time_to_accuracy and naive and not resnet18"
MARKS = "weekly or not weekly"


@dataclass(frozen=True)
class KindRuns:
    """Every run of one case on one hardware kind, over all its machines and replicates."""

    hardware_id: str
    case: str  # the benchmark's parameter id: model, data, target, variant
    target: float
    machines: int  # distinct machines the runs came from
    replicates: int  # result files
    tta_s: tuple[float, ...]  # the runs that reached the target
    runs: int  # every run, reached or not
    held_out: tuple[float, ...]  # each trained model's accuracy on the held-out (distribution-shifted) set
    held_out_data: str

    @property
    def cov(self) -> float | None:
        return tta_variants.cov(list(self.tta_s)) if len(self.tta_s) >= 2 else None


def gather(results: Sequence[ResultSet]) -> list[KindRuns]:
    """The runs of every time-to-accuracy benchmark in ``results``, per hardware id and case."""
    found: dict[tuple[str, str], list[tuple[ResultSet, TimeToAccuracy]]] = defaultdict(list)
    for result in results:
        for bench, record in result.family(TimeToAccuracy):
            case = bench.name.partition("[")[2].rstrip("]") or bench.name
            found[result.hardware_id, case].append((result, record))
    if not found:
        raise UsageError("no time-to-accuracy runs in these result files: run the study's benchmark "
                         f'(pytest benches/ -m "{MARKS}" -k "{KEYWORD}"), or perfkit fleet --tta')
    kinds = []
    for (hardware_id, case), pairs in sorted(found.items()):
        runs = [run for _, record in pairs for run in record.runs]
        kinds.append(KindRuns(
            hardware_id, case, pairs[0][1].target,
            machines=len({result.info.machine or result.hardware_id for result, _ in pairs}),
            replicates=len(pairs),
            tta_s=tuple(r.tta_s for r in runs if r.reached and r.tta_s is not None),
            runs=len(runs),
            held_out=tuple(r.shifted_accuracy for r in runs if r.shifted_accuracy is not None),
            held_out_data=pairs[0][1].shifted_data))
    return kinds


def table(kinds: Sequence[KindRuns]) -> str:
    """One row per hardware kind and case: runs, how many reached, TTA mean and CoV, held-out accuracy."""
    head = ["hardware", "case", "runs (machines, replicates)", "reached", "TTA mean", "TTA CoV",
            "held-out accuracy (mean ± SD)"]
    rows = []
    for k in kinds:
        models = f" ({len(k.held_out)} model{'s' if len(k.held_out) > 1 else ''})"
        accuracy = (f"{statistics.fmean(k.held_out):.1%}"
                    + (f" ± {statistics.stdev(k.held_out):.1%}" if len(k.held_out) >= 2 else "")
                    + models) if k.held_out else "no held-out set"
        rows.append([k.hardware_id, k.case, f"{k.runs} ({k.machines}, {k.replicates})",
                     f"{len(k.tta_s)} of {k.runs} to {k.target:.0%}",
                     f"{statistics.fmean(k.tta_s):.1f} s" if k.tta_s else "-",
                     f"{k.cov:.1%}" if k.cov is not None else "needs two runs that reached", accuracy])
    return text_table(head, rows)


def plot(kinds: Sequence[KindRuns], out: Path) -> Path:
    """A row per case: each run's time to accuracy per hardware kind (a dot each, the mean as a bar, the CoV
    above), and each trained model's held-out accuracy beside it."""
    from matplotlib.ticker import PercentFormatter

    plt = pyplot()
    cases = sorted({k.case for k in kinds})
    machines = sorted({k.hardware_id for k in kinds})  # one colour a machine in every row
    fig, axes = plt.subplots(len(cases), 2, figsize=(11, 1.2 + 2.8 * len(cases)), squeeze=False,
                             layout="constrained")
    for (left, right), case in zip(axes, cases):
        of_case = [k for k in kinds if k.case == case]
        for x, k in enumerate(of_case):
            for ax, values in ((left, k.tta_s), (right, k.held_out)):
                if values:
                    ax.scatter([x] * len(values), values, color=f"C{machines.index(k.hardware_id)}",
                               alpha=0.7, zorder=3)
                    ax.hlines(statistics.fmean(values), x - 0.3, x + 0.3, color="black", zorder=4)
            if k.cov is not None:
                left.annotate(f"CoV {k.cov:.1%}", (x, max(k.tta_s)), textcoords="offset points",
                              xytext=(0, 6), ha="center", fontsize=8)
        for ax in (left, right):
            ax.set_xticks(range(len(of_case)), [k.hardware_id for k in of_case], fontsize=8)
            ax.set_xlim(-0.6, len(of_case) - 0.4)
        top = max((max(k.tta_s) for k in of_case if k.tta_s), default=1.0)
        left.set(ylabel="time to accuracy (s)", ylim=(0, 1.2 * top))
        # a long case name wrapped: one line ran past the figure's left edge
        left.set_title(textwrap.fill(f"{case}: each run to the target", 55), fontsize=9)
        right.set_ylabel("held-out accuracy")
        right.set_title("each trained model on the held-out set", fontsize=9)
        right.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))
    fig.suptitle("Time to accuracy across hardware (seed 002 Problem 2): a dot per run, the bar its mean")
    return save_figure(fig, out / "tta_study.png")


def write(results: Sequence[ResultSet], out: Path) -> tuple[str, Path, Path]:
    """The study's table (returned and written as ``tta_study.txt``) and its plot, in ``out``."""
    kinds = gather(results)
    out.mkdir(parents=True, exist_ok=True)
    text = table(kinds)
    written = out / "tta_study.txt"
    written.write_text(text + "\n")
    return text, written, plot(kinds, out)
