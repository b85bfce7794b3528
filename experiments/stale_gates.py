"""Which nightly entries of a committed baseline hold too few runs of the figures today's code gates on, or
hold them measured by an older method: a fresh machine's nightly reads each of them ``not judged`` or
``measured differently`` until the entry is re-saved from runs of today's code (issue 44 part 6: at least 5
runs from 2 machines a nightly entry).

Today's gates are read off a reference baseline re-saved from today's code (the H200's: its entries' newest
runs), since a benchmark declares its gate only while it runs on a GPU; the nightly ids are the full
profile's collection without ``weekly`` on a machine of the baseline's GPU count:

    python experiments/stale_gates.py baselines/nvidia-h200-x1.json baselines/nvidia-h*-x?.json

and, with ``--ids``, only the node ids of one baseline's stale entries, one a line, for the re-runs that
re-save them (``pytest $(python experiments/stale_gates.py --ids REF BASELINE) --benchmark-json=run-1.json``,
then ``perfkit baseline save --append run-*.json``).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
from collections.abc import Sequence

from perfkit.resultfile import figures, load
from perfkit.resultfile.model import BenchmarkEntry
from perfkit.verdict.judge import MIN_BASELINE_RUNS


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


def stale(reference: str, path: str, ids: set[str]) -> list[tuple[BenchmarkEntry, list[str]]]:
    """Per nightly entry of the baseline at ``path``, today's gates it holds fewer than MIN_BASELINE_RUNS runs
    of, or holds measured by an older method than today's (entries the reference does not hold are read by
    their own gates)."""
    today = {b.fullname: b.gating_figures() for b in load.load(reference).benchmarks}
    baseline = load.load(path)
    runs = baseline.runs()
    out = []
    for bench in baseline.benchmarks:
        if bench.fullname not in ids:
            continue
        gates = sorted(today.get(bench.fullname, bench.gating_figures()))
        short = [f for f in gates if len(runs[bench.fullname].get(f, ())) < MIN_BASELINE_RUNS]
        older = [f"{f} (method {bench.method(f)}, today {now})" for f in gates
                 if f not in short and bench.method(f) < (now := _newest_version(bench.fullname, f))]
        if short or older:
            out.append((bench, short + older))
    return out


def _newest_version(benchmark: str, figure: str) -> int:
    """The version of the newest method today's code measures ``figure`` by (1: the first way)."""
    method = figures.newest_method(benchmark, figure)
    return method.version if method is not None else 1


def main(argv: Sequence[str]) -> None:
    only_ids = "--ids" in argv
    reference, *paths = [a for a in argv if a != "--ids"]
    for path in paths:
        ids = nightly_ids(load.load(path).info.fingerprint.gpu_count or 1)
        entries = stale(reference, path, ids)
        if only_ids:
            print("\n".join(bench.fullname for bench, _ in entries))
            continue
        nightly = sum(b.fullname in ids for b in load.load(path).benchmarks)
        print(f"{path}: {len(entries)} of {nightly} nightly entries hold fewer than {MIN_BASELINE_RUNS} "
              "runs of today's gates, or hold them measured by an older method")
        for bench, reasons in entries:
            print(f"    {bench.name}: {', '.join(reasons)}")


if __name__ == "__main__":
    main(sys.argv[1:])
