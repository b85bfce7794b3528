"""Older result files brought to today's shape as they load: ordered steps, one per version (as asv's
``update_to_N``), so a regression suite's stored runs stay its memory across upgrades.

Two kinds of version: the file's ``schema_version`` (perfkit's section and how figures are keyed) and each
family record's ``version`` (perfkit.resultfile.payloads; a record without one was written before the records
were typed, on 2026-11-21, and is version 0). A step takes the parsed JSON of one version to the next, in
place; a file newer than this perfkit is refused with what to do. A record a step cannot bring forward is
left as it was: its entry loses its plot (perfkit.resultfile.model), never its place in a comparison. How a
figure was measured has a version of its own (perfkit.resultfile.figures.METHODS), which files record since
schema 4; a schema step gives older files' entries theirs by the date of their runs.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

from perfkit import SCHEMA_VERSION
from perfkit.errors import BaselineError
from perfkit.resultfile import figures
from perfkit.resultfile.metrics import ABSENT_KEY, METHODS_KEY, METRICS_KEY
from perfkit.resultfile.model import BenchmarkEntry, PerfkitInfo, ResultSet, RunOrigin

Json = MutableMapping[str, Any]


def _entries(raw: Json) -> Iterator[tuple[Json, Json, Json]]:
    """Each benchmark entry with its extra_info and metrics as the steps read them ({} where absent); an
    entry of another shape is left as it is, for the loader to say what is wrong with it
    (perfkit.resultfile.model.BenchmarkEntry.from_json)."""
    for bench in raw.get("benchmarks", []):
        if isinstance(bench, dict):
            extra = bench.get("extra_info")
            extra = extra if isinstance(extra, dict) else {}
            metrics = extra.get(METRICS_KEY)
            yield bench, extra, metrics if isinstance(metrics, dict) else {}


def _rename_figures(raw: Json) -> None:
    """Figures under the names of what they hold (``pct_of_*`` held fractions; ``of_datasheet`` and
    ``of_roof`` were shares under other words) and one unit per figure, everywhere a figure is keyed: each
    benchmark's metrics and absences, a baseline's stored runs and their spread."""
    def renamed(keyed: Any) -> None:
        if isinstance(keyed, dict):
            for old, new in figures.RENAMED.items():
                if old in keyed:
                    keyed.setdefault(new, keyed.pop(old))

    for _, extra, metrics in _entries(raw):
        renamed(metrics)
        renamed(extra.get(ABSENT_KEY))
        extra.pop(
            "ceiling_used", None
        )  # the ceiling a share divided by: now one rule (perfkit.resultfile.ceilings)
        for name, metric in metrics.items():
            if name in figures.UNITS and isinstance(metric, dict):
                metric["unit"] = figures.UNITS[name]
    info = raw["machine_info"]["perfkit"]
    for section in ("runs", "noise", "figure_runs"):
        for keyed in (info.get(section) or {}).values():
            renamed(keyed)


def _share_reached(raw: Json) -> None:
    """Time to accuracy gated on ``runs_reached``, a count out of its R runs; it now gates on the share, which
    a file holds as that count over the runs its record lists (R was the same in every run of a baseline)."""
    info = raw["machine_info"]["perfkit"]
    for bench, extra, metrics in _entries(raw):
        record = extra.get("time_to_accuracy")
        reached = metrics.get(figures.RUNS_REACHED.name)
        runs = record.get("runs") if isinstance(record, dict) else None
        if not isinstance(reached, dict) or not isinstance(runs, list) or not runs:
            continue
        reached.pop("gate", None)  # as recorded today: shown, not gating
        spec = figures.SHARE_REACHED
        metrics[spec.name] = {"value": reached["value"] / len(runs), "unit": spec.unit, "better": spec.better,
                              "gate": True}
        stored = (info.get("runs") or {}).get(bench.get("fullname"))
        if isinstance(stored, dict) and isinstance(stored.get(figures.RUNS_REACHED.name), list):
            stored[spec.name] = [v / len(runs) for v in stored[figures.RUNS_REACHED.name]]


def _method_versions(raw: Json) -> None:
    """Files record the method version each figure was measured by since (figures.METHODS): an older entry of
    a benchmark a method applies to on the file's device was measured by it where its run came at or after
    the method's first run. Its run is its newest stored one (whose entry a baseline keeps whole), else the
    file's. A baseline whose stored runs of such a benchmark began before the method keeps only its entry's
    run: which value of each figure came from which run cannot always be told, and a baseline never holds
    runs measured two ways (perfkit.store.baselines.from_runs)."""
    info = raw["machine_info"]["perfkit"]
    try:
        origins = ResultSet(tuple(BenchmarkEntry.from_json(b, "") for b in raw.get("benchmarks", [])),
                            PerfkitInfo.from_json(info, ""), str(raw.get("datetime") or "")).origins()
    except BaselineError:
        return  # a damaged file: the loader says what is wrong with it
    for bench in raw["benchmarks"]:
        runs_of = origins[str(bench["fullname"])]
        newest = max(runs_of, default=RunOrigin(str(raw.get("datetime") or ""), ""))
        if not newest.date:
            newest = newest._replace(date=str(raw.get("datetime") or ""))
        for method in figures.METHODS:
            if not method.applies_to(bench["fullname"], str(info.get("device", ""))) or \
                    not method.covers(newest.date):
                continue
            extra = bench.setdefault("extra_info", {})
            extra.setdefault(METHODS_KEY, {}).update(dict.fromkeys(method.figures, method.version))
            if any(o.date and not method.covers(o.date) for o in runs_of):
                _only_entry_run(info, bench["fullname"], newest)


def _only_entry_run(info: Json, name: str, newest: RunOrigin) -> None:
    """A baseline's benchmark left with its entry's own run: no stored runs, its entry's figures stand for
    it."""
    for section in ("runs", "noise", "figure_runs"):
        (info.get(section) or {}).pop(name, None)
    info.setdefault("run_origins", {})[name] = [list(newest)]


def _declared_today(metrics: Json) -> None:
    """Each figure of figures.DIRECTIONS with the direction perfkit declares today, and each of
    figures.WITHDRAWN_GATES shown rather than gated, whatever its file said: a file of any schema (older
    perfkit versions read files of the same schema, so this is no schema step)."""
    for name, metric in metrics.items():
        if name in figures.DIRECTIONS and isinstance(metric, dict):
            metric["better"] = figures.DIRECTIONS[name]
        if name in figures.WITHDRAWN_GATES and isinstance(metric, dict):
            metric.pop("gate", None)


#: (version reached, step): applied in order to files of a lower ``schema_version``.
SCHEMA_STEPS: tuple[tuple[int, Callable[[Json], None]], ...] = (
    (2, _rename_figures), (3, _share_reached), (4, _method_versions)
)


def _roofline_points(record: Json, bench: Mapping[str, Any]) -> Json | None:
    """Version 0 stored the roofline as a bare list of points."""
    return {"points": list(record)} if isinstance(record, list) else None


_WORKLOAD = re.compile(r"^(?P<model>[a-z0-9]+)-(?P<data>cifar[a-z0-9]*|\d+)-[bB](?P<batch>\d+)")


def _scaling_named(record: Json, bench: Mapping[str, Any]) -> Json | None:
    """Version 0 held only the sizes; the method, workload and reference job were in the benchmark's id."""
    test, _, param = str(bench.get("fullname", "")).partition("[")
    method = (
        "DDP" if test.endswith("test_ddp") else "DataParallel" if test.endswith("test_dataparallel") else None
    )
    workload = re.sub(r"-gpus\d+$", "", param.rstrip("]"))
    found = _WORKLOAD.match(workload)
    if method is None or found is None or not isinstance(record, dict):
        return None
    cifar = found["data"].startswith("cifar")
    reference = (f"{found['model']}-{'cifar10' if cifar else 'random'}-{32 if cifar else found['data']}px-"
                 f"global{found['batch']}")
    # what it holds wins
    return {"method": method, "workload": workload, "reference_key": reference, **record}


#: Per family record, the steps from version 0, 1, ...: ``steps[v]`` takes a record of version v to v + 1, or
#: returns None where it cannot (the record stays unreadable). Records of a tag without steps kept their
#: shape.
PAYLOAD_STEPS: dict[str, tuple[Callable[[Any, Mapping[str, Any]], Json | None], ...]] = {
    "roofline": (_roofline_points,),
    "scaling": (_scaling_named,),
}


def _migrate_records(bench: Json, extra: Json) -> None:
    for tag, steps in PAYLOAD_STEPS.items():
        record = extra.get(tag)
        version = record.get("version", 0) if isinstance(record, dict) else 0
        while record is not None and isinstance(version, int) and version < len(steps):
            record = steps[version](record, bench)
            version += 1
            if record is not None:
                extra[tag] = {**record, "version": version}


def migrate(raw: Json, where: str) -> Json:
    """Bring a parsed result file to this perfkit's schema, in place; returns it."""
    info = raw["machine_info"]["perfkit"]
    version = info.get("schema_version")
    if not isinstance(version, int) or version < 1:
        raise BaselineError(
            f"{where}: perfkit schema {version!r} is not one perfkit ever wrote; the file is damaged"
        )
    if version > SCHEMA_VERSION:
        raise BaselineError(
            f"{where}: perfkit schema {version} is newer than this perfkit reads ({SCHEMA_VERSION}); "
            "upgrade perfkit (pip install -e .) to read it"
        )
    for reached, step in SCHEMA_STEPS:
        if version < reached:
            step(raw)
            version = reached
    for bench, extra, metrics in _entries(raw):
        _migrate_records(bench, extra)
        _declared_today(metrics)
    info["schema_version"] = SCHEMA_VERSION
    return raw
