"""Which nightly entries of a committed baseline hold too few runs of the figures today's code gates on: a
fresh machine's nightly reads each of them ``not judged: a gating figure only this run has`` until the entry
is re-saved from runs of today's code (issue 44 part 6: at least 5 runs from 2 machines a nightly entry).

Today's gates are read off a reference baseline re-saved from today's code (the H200's: its entries' newest
runs), since a benchmark declares its gate only while it runs on a GPU; the nightly ids are the full
profile's collection without ``weekly``:

    python experiments/stale_gates.py baselines/nvidia-h200-x1.json baselines/nvidia-h*-x?.json
"""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

from perfkit.resultfile import load
from perfkit.verdict.judge import MIN_BASELINE_RUNS


def nightly_ids() -> set[str]:
    """The nightly selection's benchmark ids (collected on this machine; GPU-only ones collect and skip)."""
    command = [sys.executable, "-m", "pytest", "benches/", "--collect-only", "-q", "-m", "not weekly",
               "--perfkit-profile=full", "-p", "no:cacheprovider"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return {line.strip() for line in done.stdout.splitlines() if "::" in line}


def stale(reference: str, path: str, ids: set[str]) -> list[tuple[str, list[str]]]:
    """Per nightly entry of the baseline at ``path``, today's gates it holds fewer than MIN_BASELINE_RUNS runs
    of (entries the reference does not hold are read by their own gates)."""
    today = {b.fullname: b.gating_figures() for b in load.load(reference).benchmarks}
    baseline = load.load(path)
    runs = baseline.runs()
    out = []
    for bench in baseline.benchmarks:
        if bench.fullname not in ids:
            continue
        gates = today.get(bench.fullname, bench.gating_figures())
        short = [f for f in sorted(gates) if len(runs[bench.fullname].get(f, ())) < MIN_BASELINE_RUNS]
        if short:
            out.append((bench.name, short))
    return out


def main(reference: str, paths: Sequence[str]) -> None:
    ids = nightly_ids()
    for path in paths:
        entries = stale(reference, path, ids)
        nightly = sum(b.fullname in ids for b in load.load(path).benchmarks)
        print(f"{path}: {len(entries)} of {nightly} nightly entries hold fewer than {MIN_BASELINE_RUNS} "
              "runs of today's gates")
        for name, figures in entries:
            print(f"    {name}: {', '.join(figures)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
