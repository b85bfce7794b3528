"""Which nightly entries of a committed baseline hold too few runs of the figures today's code gates on, or
hold them measured by an older method: a fresh machine's nightly reads each of them ``not judged`` or
``measured differently`` until the entry is re-saved from runs of today's code; and which entries hold fewer
runs than issue 44's part 6 asks (a nightly entry 5 runs from 2 fresh machines, a weekly one 3).

Today's gates are read off a reference baseline re-saved from today's code (the H200's: its entries' newest
runs), since a benchmark declares its gate only while it runs on a GPU; the nightly ids are the full
profile's collection without ``weekly`` on a machine of the baseline's GPU count:

    python experiments/stale_gates.py baselines/nvidia-h200-x1.json baselines/nvidia-h*-x?.json

and, with ``--ids``, only the node ids of one baseline's stale entries, one a line, for the re-runs that
re-save them (``pytest $(python experiments/stale_gates.py --ids REF BASELINE) -m "weekly or not weekly"
--benchmark-json=run-1.json``, then ``perfkit baseline save --append run-*.json``).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
from collections.abc import Sequence

from perfkit.resultfile import figures, load
from perfkit.resultfile.model import BenchmarkEntry, ResultSet


def nightly_ids(gpus: int = 1) -> set[str]:
    """The nightly selection's benchmark ids on a machine of ``gpus`` GPUs: the collection where no GPU is
    visible (GPU-only ones collect and skip), plus the DDP cases that ``gpus`` makes nightly
    (benches/test_data_parallel.py's own rule decides)."""
    return _collected_without_gpus() | _ddp_nightly(gpus)


@functools.cache
def _collected_without_gpus() -> frozenset[str]:
    command = [sys.executable, "-m", "pytest", "benches/", "--collect-only", "-q", "-m", "not weekly",
               "--perfkit-profile=full", "-p", "no:cacheprovider"]
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    return frozenset(line.strip() for line in done.stdout.splitlines() if "::" in line)


def _ddp_nightly(gpus: int) -> set[str]:
    """The DDP cases benches/test_data_parallel.py selects nightly where ``gpus`` GPUs are visible."""
    spec = importlib.util.spec_from_file_location("data_parallel_bench", "benches/test_data_parallel.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    cases = bench._cases(bench.FULL, gpus, ddp=True)
    return {f"benches/test_data_parallel.py::test_ddp[{case.id}]" for case in cases
            if not any(mark.name == "weekly" for mark in case.marks)}


#: Issue 44 part 6: a nightly entry holds at least this many runs of each gate, from at least NIGHTLY_MACHINES
#: fresh machines; a weekly entry at least WEEKLY_RUNS
NIGHTLY_RUNS, NIGHTLY_MACHINES, WEEKLY_RUNS = 5, 2, 3


def stale(today: dict[str, set[str]], baseline: ResultSet,
          ids: set[str]) -> list[tuple[BenchmarkEntry, list[str]]]:
    """Per entry of ``baseline`` that gates (``ids``: the nightly ones, the others weekly), what
    it lacks: today's gates it holds fewer runs of than part 6 asks (NIGHTLY_RUNS, WEEKLY_RUNS), too few
    machines behind a nightly entry, or a gate measured by an older method than today's (entries the
    reference does not hold are read by their own gates; ``today``: the reference's gates per benchmark)."""
    runs, origins = baseline.runs(), baseline.origins()
    out = []
    for bench in baseline.benchmarks:
        gates = sorted(today.get(bench.fullname, bench.gating_figures()))
        nightly = bench.fullname in ids
        wanted = NIGHTLY_RUNS if nightly else WEEKLY_RUNS
        held = {f: len(runs[bench.fullname].get(f, ())) for f in gates}
        reasons = [f"{f} ({n} of {wanted} runs)" for f, n in held.items() if n < wanted]
        reasons += [f"{f} (method {bench.method(f)}, today {now})" for f in gates
                    if held[f] >= wanted and bench.method(f) < (now := _newest_version(bench.fullname, f))]
        runs_of, positions = origins.get(bench.fullname, ()), baseline.figure_positions(bench)
        machines = min((len({runs_of[i].machine for i in positions.get(f, ()) if 0 <= i < len(runs_of)
                             and runs_of[i].machine}) for f in gates), default=0)
        if nightly and gates and machines < NIGHTLY_MACHINES:
            reasons.append(f"a gate's runs from {machines} known machine(s) of {NIGHTLY_MACHINES}")
        if reasons:
            out.append((bench, reasons))
    return out


def _newest_version(benchmark: str, figure: str) -> int:
    """The version of the newest method today's code measures ``figure`` by (1: the first way)."""
    method = figures.newest_method(benchmark, figure)
    return method.version if method is not None else 1


def main(argv: Sequence[str]) -> None:
    only_ids = "--ids" in argv
    reference, *paths = [a for a in argv if a != "--ids"]
    today = {b.fullname: b.gating_figures() for b in load.load(reference).benchmarks}
    for path in paths:
        baseline = load.load(path)
        ids = nightly_ids(baseline.info.fingerprint.gpu_count or 1)
        entries = stale(today, baseline, ids)
        if only_ids:
            print("\n".join(bench.fullname for bench, _ in entries))
            continue
        gating = [b for b in baseline.benchmarks if b.gating_figures()]
        wants = {"nightly": f"{NIGHTLY_RUNS} runs of today's gates from {NIGHTLY_MACHINES} machines",
                 "weekly": f"{WEEKLY_RUNS} runs of today's gates"}
        for selection, wanted in wants.items():
            chosen = [(b, r) for b, r in entries if (b.fullname in ids) == (selection == "nightly")]
            of = sum((b.fullname in ids) == (selection == "nightly") for b in gating)
            print(f"{path}: {len(chosen)} of {of} {selection} entries that gate lack {wanted}, or hold a "
                  "gate measured by an older method")
            for bench, reasons in chosen:
                print(f"    {bench.name}: {', '.join(reasons)}")


if __name__ == "__main__":
    from script_line import run

    run(__doc__, main, least=2)
