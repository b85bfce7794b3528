"""The runs a baseline file was saved from, each as a result file of its own, for a history that keeps runs.

A baseline (perfkit.store.baselines.from_runs) keeps every run's value of every figure
(``machine_info["perfkit"]["runs"]``), the runs' dates and, where known, their machines, but only the
newest run's entries whole. ``perfkit history ingest`` stores it as those runs, so that a trend shows each
run at its date. Each benchmark's runs are placed by their date and machine (``ResultSet.origins``: stored
per benchmark since baselines keep them, else the file's run dates where the benchmark holds one value per
date), so the run of a date holds every benchmark that has a value of that date.

What the file does not keep per run is not made up: an older run's entry has its median and metric values
but no rounds (samples and their statistics are the newest run's), no record of what disturbed it (host load,
heat), and no machine where the file does not list one per run. The commit and the rest of the fingerprint
are the file's: a baseline's runs are runs of the same code on the same kind of machine.

In a file saved before baselines kept each benchmark's dates, a benchmark with another number of values was
kept by ``baseline save --merge`` from an earlier save whose dates the file does not hold. Those runs cannot
be placed in time, but they are measurements of the committed code all the same, and a history that leaves
them out never shows them: they become *undated* runs (an empty datetime, which sorts before every dated run:
the save they came from is older than the file). Undated run ``k`` holds the ``k``-th newest undated value of
every benchmark that has one, so the last undated run holds the newest entry whole of each benchmark the file
dates nothing of; that their values of one position were measured together is not known, and they are judged
only against each other. A benchmark whose later runs are dated keeps them in their dated runs, with their
machines: rebuilt whole into undated runs, the H100 file's explicit K100 tuned kernel kept 3 of its 36
machines, and its noise was read without them (docs/findings.md, 2026-12-05, night). An earlier save of as
many runs as the newest cannot be told apart from it, and is placed at the newest save's dates.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from perfkit.resultfile.figures import TIME
from perfkit.resultfile.metrics import METRICS_KEY
from perfkit.resultfile.model import BenchmarkEntry, Figures, ResultSet, RunOrigin, run_count
from perfkit.resultfile.payloads import DISTURBANCES
from perfkit.resultfile.run_positions import Positions

#: What a baseline's perfkit section holds about its runs as a whole; a single run holds none of it.
RUN_KEYS = ("runs", "noise", "run_dates", "run_machines", "run_origins", "figure_runs")


@dataclass(frozen=True)
class Unpacked:
    """Each dated run's JSON, oldest first; the undated runs' (see the module docstring), oldest first; and
    the benchmarks they hold (their values are not one per dated run)."""

    runs: tuple[dict[str, Any], ...]
    undated: tuple[str, ...]
    undated_runs: tuple[dict[str, Any], ...] = ()


def stands_for_runs(results: ResultSet) -> bool:
    """A file that holds several dated runs (a baseline saved from them), rather than being one."""
    return len(results.dates()) > 1


def unpack(baseline: ResultSet) -> Unpacked:
    """The runs ``baseline`` was saved from (see the module docstring), oldest first: the dated ones (none
    where no benchmark is dated), and the undated runs of the values the file holds no dates of. A benchmark
    whose oldest values are undated and the rest dated goes into both: its dated values to their runs, with
    their machines, its undated ones to the undated runs; one whose undated values are not its oldest (never
    saved so) goes into the undated runs whole."""
    stored = baseline.runs()
    origins = baseline.origins()
    positions = {b.fullname: baseline.figure_positions(b) for b in baseline.benchmarks}
    whole = baseline.to_json()
    undated = {b.fullname: at for b in baseline.benchmarks
               if (at := _undated_values(stored[b.fullname], origins[b.fullname]))}
    dated = [(b, i, origin) for b in baseline.benchmarks for i, origin in enumerate(origins[b.fullname])
             if origin.date and i not in undated.get(b.fullname, ())]
    machine_of = {origin.date: origin.machine for _, _, origin in dated}
    newest_date = max(machine_of, default="")
    runs = []
    for when in sorted(machine_of):
        doc = _run_doc(whole, when, machine_of[when] or ("" if when != newest_date else None))
        doc["benchmarks"] = [_entry(b, stored[b.fullname], positions[b.fullname], i,
                                    i == run_count(stored[b.fullname]) - 1)
                             for b, i, origin in dated if origin.date == when]
        runs.append(doc)
    return Unpacked(tuple(runs), tuple(sorted(undated)),
                    _undated_runs(whole, baseline, undated, stored, origins, positions))


def _undated_values(values: Figures, origins: tuple[RunOrigin, ...]) -> list[int]:
    """The positions of a benchmark's values the file holds no date of (a value past its origins has none):
    its oldest ones, or every one where those are not its oldest."""
    count = run_count(values)
    at = [i for i in range(count) if i >= len(origins) or not origins[i].date]
    return at if at == list(range(len(at))) else list(range(count))


def _undated_runs(whole: dict[str, Any], baseline: ResultSet, undated: dict[str, list[int]],
                  stored: dict[str, Figures], origins: dict[str, tuple[RunOrigin, ...]],
                  positions: dict[str, dict[str, Positions]]) -> tuple[dict[str, Any], ...]:
    """The undated runs of the ``undated`` values (positions per benchmark), aligned on each benchmark's
    newest undated value (the module docstring); a run names a machine only where every value it holds
    names the same one."""
    benches = [b for b in baseline.benchmarks if b.fullname in undated]
    most = max((len(undated[b.fullname]) for b in benches), default=0)
    out = []
    for k in range(most):
        held = [(b, undated[b.fullname][j]) for b in benches
                if (j := k - most + len(undated[b.fullname])) >= 0]
        machines = {origins[b.fullname][i].machine if i < len(origins[b.fullname]) else "" for b, i in held}
        doc = _run_doc(whole, "", machines.pop() if len(machines) == 1 and "" not in machines else "")
        doc["benchmarks"] = [_entry(b, stored[b.fullname], positions[b.fullname], i,
                                    i == run_count(stored[b.fullname]) - 1) for b, i in held]
        out.append(doc)
    return tuple(out)


def _run_doc(whole: dict[str, Any], when: str, machine: str | None) -> dict[str, Any]:
    """A run's JSON without its benchmarks: the file's, less what it holds of its runs as a whole, at ``when``
    on ``machine`` (None: the file's own; "": unknown)."""
    doc = copy.deepcopy({key: value for key, value in whole.items() if key != "benchmarks"})
    perfkit = doc["machine_info"]["perfkit"]
    for key in RUN_KEYS:
        perfkit.pop(key, None)
    fingerprint = perfkit.setdefault("fingerprint", {})
    if machine:
        fingerprint["machine"] = machine
    elif machine is not None:
        fingerprint.pop("machine", None)
    doc["datetime"] = when
    return doc


def _entry(bench: BenchmarkEntry, values: Figures, positions: dict[str, Positions], i: int,
           newest: bool) -> dict[str, Any]:
    """Run ``i``'s entry: the newest run's, whose rounds and records stay with the newest run only, with run
    ``i``'s value of every figure that run measured (``positions``: the runs each figure's values came from,
    ResultSet.figure_positions; the figures derived from them are derived again when the run is read). A
    figure the newest entry lacks has no unit or direction to be written with, and stays out."""
    entry = bench.to_json()
    extra = entry["extra_info"]
    extra[METRICS_KEY] = {
        name: metric | {"value": values[name][positions[name].index(i)]}
        for name, metric in extra.get(METRICS_KEY, {}).items() if i in positions.get(name, ())
    }
    if newest:
        return entry
    entry["stats"] = {"median": values[TIME][i]}
    for metric in extra[METRICS_KEY].values():
        metric.pop("samples", None)
    for kind in DISTURBANCES:
        extra.pop(kind.TAG, None)
    return entry
