"""A committed baseline with one machine's runs held out, written to a file: a night whose run was saved into
the baseline afterwards is judged again as the fresh machine it was, with today's judge and the
confirmation's re-run files kept beside it (docs/findings.md, 2026-12-07, late evening: a fresh H100's A/A
and injected nights of that afternoon, whose A/A run the baseline holds since):

    python experiments/without_machine.py baselines/nvidia-h100-80gb-hbm3-x1.json NIGHT/results.json held.json
    perfkit compare held.json NIGHT/results.json

The machine is the night's own (its results file names it); every run of it is left out, the others are kept
as the baseline stored them.
"""
from __future__ import annotations

import json
from pathlib import Path

from perfkit.errors import UsageError
from perfkit.resultfile import load
from perfkit.resultfile.model import ResultSet
from perfkit.store import baselines
from perfkit.store.baseline_runs import unpack


def without_machine(baseline: ResultSet, machine: str) -> tuple[ResultSet, int]:
    """``baseline`` rebuilt from its runs not made on ``machine``, and how many runs were left out."""
    runs = [load.parse(doc, f"run {i}") for i, doc in enumerate(unpack(baseline).runs)]
    kept = [run for run in runs if run.info.machine != machine]
    if not kept:
        raise UsageError(f"every run of the baseline was made on {machine}: nothing is left to judge against")
    return baselines.from_runs(kept), len(runs) - len(kept)


def main(argv: list[str]) -> None:
    baseline_path, night_path, out = argv
    machine = load.load(night_path).info.machine
    if not machine:
        raise UsageError(f"{night_path} does not name its machine (a run saved before runs did): nothing to "
                         "hold out")
    held, left_out = without_machine(load.load(baseline_path), machine)
    Path(out).write_text(json.dumps(held.to_json()))
    print(f"{out}: {baseline_path} without the {left_out} run(s) of machine {machine}")


if __name__ == "__main__":
    from script_line import run

    run(__doc__, main, least=3, most=3)
