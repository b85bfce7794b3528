"""``perfkit compare``: a baseline and one or more result files judged as the end of a run judges them;
``judge_files`` is that judging, which ``perfkit report --baseline`` and ``perfkit fleet`` share."""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perfkit import confirm, predict
from perfkit.cli.common import DB_HELP, failed, kept_runs_options, read, work_of
from perfkit.errors import UsageError
from perfkit.explain import record as kernel_summary
from perfkit.render import tables, verdicts
from perfkit.resultfile.model import ResultSet, run_count
from perfkit.store import baselines, kept_noise, storage_folder
from perfkit.verdict.judge import Comparison, FirstLook, Policy, judge


def add_parser(sub: Any) -> None:
    cmp = sub.add_parser("compare", help="compare result files with a baseline (baseline first; several "
                                         "runs of the current code judged together)")
    cmp.add_argument("baseline", type=Path, help="the reference: a baseline in baselines/ or any result file")
    cmp.add_argument("current", type=Path, nargs="+",
                     help="the run to judge (pytest --benchmark-json's file); several: runs of the same code "
                          "in fresh processes or on replicate machines, judged together as that side's runs")
    cmp.add_argument(
        "--fail", action="store_true", help="exit 1 on a significant regression (noise never fails)"
    )
    cmp.add_argument("--threshold", default=None,
                     help="one minimum effect for every figure, e.g. 5%% or 0.05 (default: 3%% for "
                          "GPU-bound benchmarks, 2%% where 20 or more of a figure's runs let its tails be "
                          "read, 5%% for the rest)")
    kept_runs_options(cmp, "--history",
                      "pytest-benchmark storage whose kept runs of the baseline's hardware add to the noise "
                      "(default: .benchmarks, found from the current folder up, where it exists)",
                      f"instead of --history: {DB_HELP}, whose runs of the baseline's hardware add to the "
                      "noise")
    cmp.add_argument("--format", choices=verdicts.FORMATS, default="table",
                     help="the table for a terminal, markdown (a CI job summary) or json (for scripts; the "
                          "rows and counts)")
    cmp.set_defaults(func=_compare)


def parse_threshold(text: str) -> float:
    """'5%' or '0.05' -> 0.05; anything else is a usage error that shows the accepted forms."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(f"threshold {text!r} is not a number; write it as 5% or 0.05") from None
    if not raw.endswith("%") and value >= 1:
        raise UsageError(f"threshold {text!r} is ambiguous; write 5% or 0.05")
    if not math.isfinite(value):
        raise UsageError(f"threshold {text!r} is not a number; write it as 5% or 0.05")
    if value < 0:
        raise UsageError(f"threshold {text!r} is negative: a tolerance is a size, not a direction; use a "
                         "fraction such as 5% or 0.05")
    if value >= 10:
        raise UsageError(f"threshold {text!r} is out of range: a tolerance below 1000% (10) is a size worth "
                         "a verdict; use a fraction such as 5% or 0.05")
    return value


def judge_files(baseline_path: Path, current_path: Path | Sequence[Path], threshold: str | None,
                storage: Path | None = None, db: str | None = None,
                alpha_share: int = 1) -> tuple[ResultSet, ResultSet, Comparison]:
    """Both sides read by the one loader (the baseline lends the ceilings the results did not measure, where
    it is of the same machine) and judged as the end of a run judges them: the same noise (the baselines
    folder and the kept runs of ``storage``, default pytest-benchmark's ``.benchmarks``, or of the history
    database ``db``), the same policy; across hardware, a side of several GPUs is lent the launch costs of
    the one-GPU baseline of its GPU. Several current files are that side's runs (replicates of one night),
    as a baseline's runs are. ``alpha_share``: how many hardware kinds one night judges (a fleet's), each at
    that share of the policy's alpha, so that the night's chance of any false verdict stays alpha."""
    policy = Policy.with_threshold(None if threshold is None else parse_threshold(threshold))
    paths = [current_path] if isinstance(current_path, Path) else list(current_path)
    kept_reruns = confirm.kept_beside(paths[0]) if len(paths) == 1 else []
    # judged as the night was: its MDEs are those of its confirmation's two looks where it had one
    policy = dataclasses.replace(policy, alpha=policy.alpha / max(1, alpha_share),
                                 confirm_runs=len(kept_reruns))
    baseline = read(baseline_path)
    runs = [read(path, baseline) for path in paths]
    current = runs[0] if len(runs) == 1 else baselines.from_runs(runs)
    if len(runs) == 1 and _most_runs(baseline) == 1 < _most_runs(current):
        print(f"perfkit: {paths[0]} holds several runs, as a saved baseline does, and {baseline_path} one: "
              "the order is BASELINE then CURRENT; judged as given", file=sys.stderr)
    if baseline.profile != current.profile:
        same_sizes = baselines.baseline_path(baseline_path.parent, baseline.hardware_id, current.profile)
        hint = (f" (the {current.profile} profile's baseline of {baseline.hardware_id} is {same_sizes})"
                if same_sizes.exists() and same_sizes.resolve() not in {p.resolve() for p in paths} else "")
        raise UsageError(f"the baseline holds the {baseline.profile} profile's sizes, the results the "
                         f"{current.profile} profile's; compare runs of the same profile{hint}")
    kept = (storage_folder.storage_path(storage) if storage is not None
            else storage_folder.find_storage(Path.cwd()))
    store = baselines.BaselineStore.find(Path.cwd())
    judged_with = kept_noise.for_judging(baseline, current, store, kept, db)
    lenders = predict.lenders_for(baseline, current)
    first = judge(baseline, current, judged_with, policy, work_of, lenders=lenders)

    def second(again: ResultSet, look: FirstLook) -> Comparison:
        """The re-runs judged as the session judges them: the first run's values are not their noise."""
        noise = kept_noise.for_judging(baseline, again, store, kept, db, left_out=(current.datetime,))
        return judge(baseline, again, noise, policy, work_of, first_look=look, lenders=lenders)

    return baseline, current, _with_confirmation(first, paths, kept_reruns, baseline, second)


def _most_runs(results: ResultSet) -> int:
    """The most runs any benchmark of ``results`` holds: 1 for one run's file, more for a saved baseline."""
    return max((run_count(figures) for figures in results.runs().values()), default=0)


def _with_confirmation(first: Comparison, paths: Sequence[Path], kept: Sequence[Path], baseline: ResultSet,
                       again: Callable[[ResultSet, FirstLook], Comparison]) -> Comparison:
    """The night as its run ended it: one run's file judged with its confirmation's re-runs kept beside it
    (perfkit.confirm: each re-run figure tested at the night's level). A re-run file given alone is judged
    alone, its suspects at one run's level, which the night did not use: said on stderr."""
    for path in paths:
        if confirm.is_kept(path):
            print(f"perfkit: {path} is a re-run of a night's flagged benchmarks: judged alone, not at the "
                  "level the night judged it; give the night's own file to judge it with its "
                  "confirmation", file=sys.stderr)
    if not kept:
        return first
    print(f"perfkit: judged with its confirmation's {len(kept)} re-run(s) kept beside it "
          f"({', '.join(path.name for path in kept)}), as the night was", file=sys.stderr)
    reruns = [read(path, baseline) for path in kept]
    explained = confirm.kept_as(paths[0], confirm.EXPLAIN_LABEL, 0)
    if explained.is_file():  # the kernels the night read in one more, unjudged run
        reruns = [kernel_summary.with_summaries(run, read(explained, baseline)) for run in reruns]
    return confirm.second_look(first, reruns, again)


def _compare(args: argparse.Namespace) -> int:
    _, _, result = judge_files(args.baseline, args.current, args.threshold, args.history, args.db)
    print(verdicts.render(result, args.format, width=tables.terminal_width()), end="")
    return failed([r.benchmark for r in result.regressions]) if args.fail else 0
