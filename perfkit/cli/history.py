"""``perfkit history`` and ``perfkit history ingest``: the trends of kept runs, and result files stored in a
history database; ``kept_runs`` finds the runs of one machine and profile, which ``perfkit report`` shares."""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfkit.cli.common import DB_HELP, kept_runs_options, say_partial, say_skipped
from perfkit.errors import BaselineError, UsageError
from perfkit.render import report_history, tables
from perfkit.resultfile import figures, load
from perfkit.resultfile.model import PROFILES, ProfileName, ResultSet
from perfkit.store import baselines, storage_folder
from perfkit.store import kept as store_kept
from perfkit.verdict import trends


def add_parser(sub: Any) -> None:
    hist = sub.add_parser(
        "history", help="trends and change points of the runs kept by pytest --benchmark-autosave",
        usage="perfkit history [--storage DIR | --db URL] [--hardware-id ID] [--profile {quick,full}] "
              "[-k PATTERN] [--figure FIGURE] [--out DIR]\n"
              "       perfkit history ingest RESULTS.json [RESULTS.json ...] --db URL",
    )
    kept_runs_options(hist, "--storage",
                      "pytest-benchmark's storage folder, DIR or file://DIR (default: .benchmarks, found "
                      "from the current folder up)",
                      f"instead of --storage: {DB_HELP}")
    hist.add_argument("--hardware-id", default=None, metavar="ID",
                      help="only the runs of this machine (needed when there are several)")
    hist.add_argument("--profile", choices=PROFILES, default=None,
                      help="only the runs of this size profile (needed when there are both)")
    hist.add_argument(
        "-k",
        dest="pattern",
        default="*",
        metavar="PATTERN",
        help="benchmarks whose full name contains PATTERN, or matches it as a glob (default: all)",
    )
    hist.add_argument("--figure", default=figures.TIME,
                      help="time (each run's median) or a metric name, e.g. bandwidth_gbps (default: time)")
    hist.add_argument("--out", type=Path, default=None, metavar="DIR",
                      help="also write one PNG per benchmark into this folder")
    hist.set_defaults(func=_history)
    hist_sub = hist.add_subparsers(dest="history_action", title="commands", metavar="ingest")
    ingest = hist_sub.add_parser(
        "ingest", prog="perfkit history ingest",
        help="store result files in a history database, once each (several runners may at once)"
    )
    ingest.add_argument("results", type=Path, nargs="+", metavar="RESULTS.json",
                        help="result files written by pytest --benchmark-json or --benchmark-autosave")
    ingest.add_argument("--db", required=True, metavar="URL", help=f"{DB_HELP}; made where it does not exist")
    ingest.set_defaults(func=_ingest)


def _history(args: argparse.Namespace) -> int:
    """Per benchmark: first and last run value, the number of runs and each change point (e-divisive
    means)."""
    from perfkit.verdict import changepoints

    storage, kept = kept_runs(args.storage, args.hardware_id, args.db, args.profile)
    found = trends.trends(kept.runs, args.pattern, args.figure)
    if not found:
        raise UsageError(_nothing_found(kept, args.pattern, args.figure))
    print(f"{args.figure} over {len(kept)} stored run(s) of {', '.join(kept.hardware_ids())} in {storage} "
          f"(change points: e-divisive means on log values, permutation test p <= {changepoints.ALPHA})")
    print(
        tables.text_table(
            ["benchmark", "runs", "first", "last", "change points"], report_history.trend_rows(found),
            tables.terminal_width()
        )
    )
    if args.out is not None:
        charts = report_history.trend_charts(found, args.out, args.figure)
        print(f"perfkit: wrote {len(charts)} chart(s) to {args.out}")
    return 0


def _nothing_found(kept: storage_folder.History, pattern: str, figure: str) -> str:
    """Why no trend came of ``pattern`` and ``figure``, with the figures the matching benchmarks hold."""
    matching = {line.benchmark for line in trends.lines(kept.runs, pattern)}
    which = f"matching -k {pattern!r} " if pattern != "*" else ""
    if not matching:
        return f"no stored benchmark matches -k {pattern!r}; give part of a benchmark's name, or a glob"
    held = sorted({name for run in kept.runs for bench in run.benchmarks if bench.fullname in matching
                   for name in bench.metrics})
    return (f"no stored benchmark {which}has a figure {figure!r}; they hold time"
            f"{', ' + ', '.join(held) if held else ''}: pass one as --figure")


def kept_runs(storage_option: str | None, hardware_id: str | None, db: str | None = None,
              profile: ProfileName | None = None) -> tuple[str, storage_folder.History]:
    """The runs kept in pytest-benchmark's storage, or in the history database ``db``, of one machine and
    profile, and where they were; skipped files are said on stderr. A database's mix of machines or profiles
    is refused before any run is read (seconds for a few hundred runs)."""
    if db is not None:
        where, ids, profiles = store_kept.stored_kinds(db, hardware_id, profile)
        if not ids and hardware_id is not None:
            _not_held(where, hardware_id, store_kept.stored_kinds(db, None, None)[1])
        _one_kind(where, ids, profiles, hardware_id, profile, db)
    found = store_kept.kept_runs(hardware_id, profile, db=db, storage=storage_option)
    where, kept = found.where, found.history
    say_skipped(kept)
    if not kept.runs and hardware_id is not None and db is None:
        every = store_kept.kept_runs(None, storage=storage_option).history
        _not_held(where, hardware_id, every.hardware_ids())
    _one_kind(where, kept.hardware_ids(), kept.profiles(), hardware_id, profile, db)
    return where, kept


def _not_held(where: str, hardware_id: str, held: Sequence[str]) -> None:
    """Refuse a --hardware-id the kept runs do not hold, naming those they do (none, or it is held in another
    profile: _one_kind says so)."""
    if held and hardware_id not in held:
        raise UsageError(f"{where} holds no runs of {hardware_id}; it holds runs of {', '.join(held)}: "
                         "pass one of them as --hardware-id")


def _one_kind(where: str, ids: Sequence[str], profiles: Sequence[str], hardware_id: str | None,
              profile: ProfileName | None, db: str | None) -> None:
    """Refuse kept runs (their hardware ids and profiles) that hold none, or several machines or profiles."""
    of = f" of {hardware_id}" if hardware_id else ""
    if not ids and profile is not None:
        raise BaselineError(f"{where} holds no kept runs of the {profile} profile{of}")
    if not ids:
        how = "store some with `perfkit history ingest`" if db else "run pytest with --benchmark-autosave"
        raise BaselineError(f"{where} holds no perfkit runs{of}; {how} first")
    if hardware_id is None and len(ids) > 1:
        raise UsageError(f"{where} holds runs of several machines ({', '.join(ids)}); "
                         "pass --hardware-id to choose one")
    if len(profiles) > 1:
        raise UsageError(f"{where} holds runs of the {' and '.join(profiles)} profiles, whose sizes "
                         "differ; pass --profile to choose one")


def _ingest(args: argparse.Namespace) -> int:
    """Every file read by the one loader first (a bad one stops the command before anything is stored), then
    each run stored in its own transaction, once: ingesting again is safe. A baseline is stored as the runs
    it was saved from, after the files given as runs, so that a run kept both ways is stored from its own
    file (which keeps its rounds)."""
    # database: SQLAlchemy, imported only where a database is named
    from perfkit.store import baseline_runs, database

    read: list[tuple[str, dict[str, Any], ResultSet]] = []
    unpacked: dict[Path, list[tuple[str, dict[str, Any], ResultSet]]] = {}
    notes = []
    for path in args.results:
        raw = load.read_json(path)
        results = load.parse(raw, str(path))
        say_partial(results)
        _, injected = baselines.without_injected(results)
        if injected:
            raise BaselineError(f"{path}: {len(injected)} benchmark(s) carry an injected slowdown "
                                f"(e.g. {injected[0]}); a history keeps only real measurements: ingest a "
                                "run without it")
        if not baseline_runs.stands_for_runs(results):
            read.append((str(path), raw, results))
            continue
        runs = baseline_runs.unpack(results)
        of_file = unpacked.setdefault(path, [])
        for i, doc in enumerate(runs.runs, 1):
            source = f"{path} (run {i} of {len(runs.runs)})"
            of_file.append((source, doc, load.parse(doc, source)))
        for i, doc in enumerate(runs.undated_runs, 1):
            source = f"{path} (undated run {i} of {len(runs.undated_runs)})"
            of_file.append((source, doc, load.parse(doc, source)))
        if runs.undated:
            notes.append(f"perfkit: {path}: {len(runs.undated)} benchmark(s) (e.g. {runs.undated[0]}) hold "
                         f"runs the file does not date, stored as {len(runs.undated_runs)} undated run(s), "
                         "before the dated ones: `baseline save --merge` kept them from earlier saves")
    stored = 0
    with database.open_store(args.db, create=True) as db:
        for source, raw, results in read:
            done = db.ingest(raw, results, source)
            stored += done.stored
            print(f"perfkit: {source}: {'stored as' if done.stored else 'already stored:'} run "
                  f"{done.digest[:12]} of {_run_said(results)}")
        for path, runs_of in unpacked.items():  # a baseline's runs: one line for the file
            new = sum(db.ingest(raw, results, source).stored for source, raw, results in runs_of)
            stored += new
            dates = sorted(results.datetime[:10] for _, _, results in runs_of if results.datetime)
            span = f", {dates[0]} to {dates[-1]}" if dates else ""
            print(f"perfkit: {path}: its {len(runs_of)} runs of {_run_said(runs_of[0][2], span)}: {new} "
                  f"stored, {len(runs_of) - new} already there")
        for note in notes:
            print(note)
        total = len(read) + sum(map(len, unpacked.values()))
        print(f"perfkit: {stored} run(s) stored, {total - stored} already there, in {db.where}")
    return 0


def _run_said(results: ResultSet, when: str | None = None) -> str:
    """Whose run it is, of which profile and when (``when``: said instead of the run's own date)."""
    date = results.datetime[:16].replace("T", " ") or "undated"
    return f"{results.hardware_id} ({results.profile} profile{f', {date}' if when is None else when})"
