"""Part 6 levers of issue 44 tried offline, on a committed baseline's own runs and the real judge, before a
device run: each rebuilds the baseline from its stored runs with one change and prints, as committed and
changed, each fresh machine's one-run MDE (the median over machines) and the false flags of leave-one-machine-
out A/A nights (experiments/leave_machine_out.py). docs/findings.md, 2026-12-05, "Two levers tried offline".

A GPU-bound gate over its own run's HBM copy time (``test_copy_bandwidth``, the same night on the same
machine): first, per nightly GPU-bound timed gate, over each machine's newest night that holds the copy,
the SD of the log of the figure and of the figure over the copy, and their correlation; then chosen
benchmarks (names as ``test_layer[relu-forward]``) re-gated so in every run that holds the copy:

    python experiments/offline_levers.py spreads baselines/nvidia-h200-x1.json
    python experiments/offline_levers.py over-copy baselines/nvidia-h200-x1.json \\
        'test_training_memory[b512-resnet18]' ...

Another declared minimum effect (``none``: the judge's own) for the benchmarks whose names hold a pattern:

    python experiments/offline_levers.py tolerance baselines/nvidia-h200-x1.json none '-warm]'
"""
from __future__ import annotations

import copy
import json
import math
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from leave_machine_out import false_flags, fresh_machine_mdes

from perfkit.resultfile import load
from perfkit.resultfile.model import ResultSet
from perfkit.store import baselines
from perfkit.store.baseline_runs import unpack
from perfkit.verdict.noise import GPU_KIND, Noise

COPY = "benches/test_ceilings.py::test_copy_bandwidth"
#: The figure a re-gated benchmark gates on: its gate over the run's copy median.
OVER_COPY = "over_copy"
#: Fewer machines than this give no SD worth printing.
MIN_MACHINES = 6


def newest_nights(path: str) -> list[ResultSet]:
    """Each machine's newest run of the baseline at ``path`` that measured the copy."""
    runs = [load.parse(doc, f"run {i}") for i, doc in enumerate(unpack(load.load(path)).runs)]
    newest: dict[str, ResultSet] = {}
    for run in runs:
        if run.info.machine and any(b.fullname == COPY for b in run.benchmarks):
            newest[run.info.machine] = run
    return list(newest.values())


def paced(path: str) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """Per GPU-bound timed gate, (log figure, log copy time) of each machine's newest night."""
    baseline = load.load(path)
    kinds = Noise.of(baseline).kinds
    gates = {(b.fullname, f) for b in baseline.benchmarks for f in b.gating_figures()
             if kinds.get((b.fullname, f)) == GPU_KIND}
    out: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for night in newest_nights(path):
        copy_s = next(b for b in night.benchmarks if b.fullname == COPY).median
        for bench in night.benchmarks:
            for figure in bench.gating_figures():
                value = bench.figures().get(figure)
                if (bench.fullname, figure) in gates and value and copy_s:
                    out[(bench.fullname, figure)].append((math.log(value), math.log(copy_s)))
    return out


def print_spreads(path: str) -> None:
    print("SD between machines of log figure -> of log figure/copy, correlation with the copy, machines")
    rows = []
    for (bench, figure), pairs in paced(path).items():
        if len(pairs) < MIN_MACHINES or bench == COPY:
            continue
        logs, copies = [p[0] for p in pairs], [p[1] for p in pairs]
        rows.append((statistics.stdev(logs), statistics.stdev([v - c for v, c in pairs]),
                     statistics.correlation(logs, copies), len(pairs), f"{bench.split('::')[-1]} {figure}"))
    for raw, over, corr, machines, name in sorted(rows, key=lambda r: r[1] / r[0]):
        print(f"{raw:6.2%} -> {over:6.2%}  r={corr:+.2f}  {machines:3d}  {name}")


def regated(doc: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """One run's JSON with the benchmarks ``names`` gated on their gate over its copy median (as it was where
    the run holds no copy, or not the gate)."""
    doc = copy.deepcopy(doc)
    copy_s = next((b["stats"]["median"] for b in doc["benchmarks"] if b["fullname"] == COPY), None)
    for bench in doc["benchmarks"]:
        if copy_s is None or bench["name"] not in names:
            continue
        extra = bench["extra_info"]
        gate = extra.get("gate") or "time"
        value = bench["stats"]["median"] if gate == "time" else extra["metrics"].get(gate, {}).get("value")
        if value:
            extra["metrics"][OVER_COPY] = {"value": value / copy_s, "unit": "ratio", "better": "lower"}
            extra["gate"] = OVER_COPY
    return doc


def declared(doc: dict[str, Any], tolerance: float | None, patterns: Sequence[str]) -> dict[str, Any]:
    """One run's JSON with the benchmarks whose names hold one of ``patterns`` declaring ``tolerance``."""
    doc = copy.deepcopy(doc)
    for bench in doc["benchmarks"]:
        if any(p in bench["name"] for p in patterns):
            bench["extra_info"].pop("tolerance", None)
            if tolerance is not None:
                bench["extra_info"]["tolerance"] = tolerance
    return doc


def print_lever(path: str, edit: Callable[[dict[str, Any]], dict[str, Any]], label: str,
                patterns: Sequence[str]) -> None:
    """The MDEs of the benchmarks whose names hold one of ``patterns``, and the night's false flags, judged
    against the baseline as committed and rebuilt from its runs each changed by ``edit``."""
    docs = [edit(doc) for doc in unpack(load.load(path)).runs]
    rebuilt = baselines.from_runs([load.parse(doc, f"run {i}") for i, doc in enumerate(docs)])
    with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
        json.dump(rebuilt.to_json(), file)
        file.flush()
        for said, baseline in (("as committed", path), (label, file.name)):
            print(f"{said}: a fresh machine's one-run MDE (median over machines)")
            for (bench, figure), values in sorted(fresh_machine_mdes(baseline).items()):
                name = bench.split("::")[-1]
                if any(p in name for p in patterns) and figure not in UNMOVED:
                    print(f"    {statistics.median(values):6.2%}  {name} {figure}")
            judged, flagged, flags = false_flags(baseline, 0.03)
            print(f"    leave one machine out: {flagged} of {judged} runs with a false flag {dict(flags)}")


#: Gating figures neither lever touches (the allocator's peak, a share of runs that reached the target).
UNMOVED = ("peak_allocated_mib", "share_reached")


def main(argv: Sequence[str]) -> None:
    what, path, rest = argv[0], argv[1], list(argv[2:])
    if what == "spreads":
        print_spreads(path)
    elif what == "over-copy":
        print_lever(path, lambda doc: regated(doc, rest), "re-gated on the copy", rest)
    elif what == "tolerance":
        tolerance = None if rest[0] == "none" else float(rest[0])
        print_lever(path, lambda doc: declared(doc, tolerance, rest[1:]), f"declaring {rest[0]}", rest[1:])
    else:
        sys.exit("offline_levers.py: spreads, over-copy or tolerance (see its docstring)")


if __name__ == "__main__":
    from script_line import run

    run(__doc__, main, least=2)
