"""A fresh machine's nightly judged as it came, and again with slowdowns written into chosen benchmarks,
against the committed baseline without that machine's runs (issue 44's done-when, from a device run).

The slowdowns are written the way ``PERFKIT_INJECT_SLOWDOWN`` writes them while a run saves its results
(perfkit.resultfile.inject: every measured time of the benchmark times the factor, every rate over it), so a
night judged here is the night the variable would have given, the machine's real noise around it; what this
does not redo is ``--perfkit-confirm``'s re-runs. Any of the baseline's runs made on the night's machine (a
baseline re-saved from that very night) are left out, so the night meets the baseline as a fresh machine does.

    python experiments/injected_nights.py baselines/nvidia-h100-80gb-hbm3-x1.json night.json \\
        '*test_layer[conv-forward]=1.10' '*test_cpu_loop[K1]=1.10' ...
"""
from __future__ import annotations

import argparse
import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from perfkit.cli.compare import judge_files
from perfkit.resultfile import inject, load
from perfkit.resultfile.model import name_matches
from perfkit.store import baselines
from perfkit.store.baseline_runs import unpack
from perfkit.verdict.comparison import Comparison, Verdict


def without_machine(baseline: Path, machine: str) -> dict[str, Any]:
    """The baseline rebuilt from its runs but those made on ``machine``; as committed where it holds none (a
    rebuild drops the figures only its newer runs hold, perfkit.store.baseline_runs: launches_per_step)."""
    committed = load.load(baseline)
    if machine not in {o.machine for origins in committed.origins().values() for o in origins}:
        return json.loads(baseline.read_text())
    whole = unpack(committed)
    docs = [*whole.undated_runs, *whole.runs]  # undated runs are older than every dated one
    kept = [run for run in (load.parse(doc, f"run {i}") for i, doc in enumerate(docs))
            if machine not in {o.machine for origins in run.origins().values() for o in origins}]
    return baselines.from_runs(kept).to_json()


def judged(baseline: dict[str, Any], night: dict[str, Any], rules: list[str], folder: Path) -> Comparison:
    """``night`` with ``rules`` (PATTERN=FACTOR) written into it, judged against ``baseline`` as
    ``perfkit compare`` judges two files (no kept runs)."""
    scaled = copy.deepcopy(night)
    environ = {inject.ENV: ",".join(rules)}
    for bench in scaled["benchmarks"]:
        inject.apply(bench, environ)
    (folder / "baseline.json").write_text(json.dumps(baseline))
    (folder / "night.json").write_text(json.dumps(scaled))
    return judge_files(folder / "baseline.json", folder / "night.json", None, storage=folder / "none")[2]


def _table(result: Comparison, rules: list[str]) -> list[str]:
    """Each benchmark a slowdown was written into, and every other one flagged: its verdict, and the gating
    figure that decided it (the worst), with its change and one-run MDE."""
    factors = [(pattern, factor) for pattern, _, factor in (rule.rpartition("=") for rule in rules)]
    verdicts = result.benchmark_verdicts()
    lines = []
    for benchmark, verdict in verdicts.items():
        written = next((f"x{f}" for pattern, f in factors if name_matches(benchmark, pattern)), "")
        if not written and verdict not in (Verdict.REGRESSED, Verdict.IMPROVED):
            continue
        rows = [r for r in result.rows if r.benchmark == benchmark and r.gating and r.verdict is verdict]
        row = max(rows, key=lambda r: abs(r.change or 0.0), default=None)
        change = "" if row is None or row.change is None else f"{row.change:+.1%}"
        mde = "" if row is None or row.mde is None else f"{row.mde:.1%}"
        lines.append(f"| {written or '-'} | `{benchmark.split('::')[-1]}` | {verdict} | "
                     f"{row.figure if row else ''} | {change} | {mde} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("baseline", type=Path)
    parser.add_argument("night", type=Path)
    parser.add_argument("rules", nargs="*", help="PATTERN=FACTOR, as PERFKIT_INJECT_SLOWDOWN takes them")
    args = parser.parse_args()
    night = json.loads(args.night.read_text())
    machine = next(o.machine for origins in load.load(args.night).origins().values() for o in origins)
    with tempfile.TemporaryDirectory() as tmp:
        baseline = without_machine(args.baseline, machine)
        for label, rules in (("as measured (A/A)", []), ("slowdowns written", args.rules)):
            result = judged(baseline, night, rules, Path(tmp))
            counts = ", ".join(f"{n} {verdict}" for verdict, n in result.counts().items())
            print(f"\n{label}: {counts}\n\n| written | benchmark | verdict | figure | change | MDE |\n"
                  f"| --- | --- | --- | --- | --- | --- |")
            print("\n".join(_table(result, rules)))


if __name__ == "__main__":
    main()
