"""``perfkit baseline save``, ``drop`` and ``list``: baselines/<hardware-id>.json made from runs, benchmarks
retired from one, and what each baseline of the folder holds."""
from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfkit.cli.common import DB_HELP, kept_runs_options, read, say_skipped
from perfkit.errors import PerfkitError, UsageError
from perfkit.resultfile import load, partial
from perfkit.resultfile.model import PROFILES, ResultSet
from perfkit.store import baselines, kept, kept_noise, storage_folder
from perfkit.verdict.comparison import Verdict
from perfkit.verdict.judge import MIN_BASELINE_RUNS, counted, judge


def add_parser(sub: Any) -> None:
    base = sub.add_parser("baseline", help="manage baselines/<hardware-id>.json")
    base_sub = base.add_subparsers(dest="action", required=True)
    _add_save(base_sub)
    drop = base_sub.add_parser(
        "drop", help="retire benchmarks from a baseline: an id renamed or removed on purpose"
    )
    drop.add_argument("baseline", type=Path, help="the baseline file, e.g. baselines/nvidia-h200-x1.json")
    drop.add_argument("names", nargs="+", metavar="NAME",
                      help="a benchmark's full name as the verdict lists it, or a glob of full names")
    drop.set_defaults(func=_drop)
    listed = base_sub.add_parser("list", help="one line per baseline: benchmarks, runs, machines, the newest "
                                              "run's date; this machine's marked")
    _where(listed, "list this machine's own baselines, in the project's .perfkit/baselines/")
    listed.set_defaults(func=_list)


def _add_save(base_sub: Any) -> None:
    save = base_sub.add_parser("save", help="store a results JSON as the baseline of its hardware")
    save.add_argument(
        "results",
        type=Path,
        nargs="*",
        help="the JSON of one run, or of several runs of the same code (fresh processes): their spread "
        "sets each figure's noise band",
    )
    _where(save, "save it as this machine's own baseline, in the project's .perfkit/baselines/ (not "
                 "committed), which later runs here are judged against before baselines/")
    mode = save.add_mutually_exclusive_group()
    mode.add_argument(
        "--force", action="store_const", dest="mode", const="force", help="replace an existing one"
    )
    mode.add_argument("--merge", action="store_const", dest="mode", const="merge",
                      help="update an existing one: same-named benchmarks replaced, others kept")
    mode.add_argument("--append", action="store_const", dest="mode", const="append",
                      help="add these runs to an existing one's: same-named benchmarks keep every run of "
                           "both (more runs, a sharper noise estimate), others kept")
    save.set_defaults(func=_save, mode="new")
    save.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="save only these benchmarks (full names, * and ? as wildcards): with --merge, re-save one "
        "family whose measurement changed and keep the rest",
    )
    save.add_argument(
        "--from-history",
        type=int,
        metavar="N",
        help="build it from the last N runs kept by pytest --benchmark-autosave instead of files",
    )
    kept_runs_options(save, "--storage",
                      "with --from-history: pytest-benchmark's storage folder (default: .benchmarks, found "
                      "from the current folder up)",
                      f"with --from-history, instead of --storage: {DB_HELP}")
    save.add_argument(
        "--hardware-id",
        default=None,
        help="with --from-history: the machine whose runs to use (needed when the storage holds several)",
    )
    save.add_argument("--profile", choices=PROFILES, default=None,
                      help="with --from-history: the size profile whose runs to use (needed when "
                           "there are both)")


def _where(parser: argparse.ArgumentParser, local_help: str) -> None:
    """--dir or --local: the baselines folder, for save and list alike (:func:`_store`)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--dir", type=Path, default=None,
                       help="baseline folder (default: the project's baselines/, found from the current "
                            "folder up)")
    where.add_argument("--local", action="store_true", help=local_help)


def _store(args: argparse.Namespace) -> baselines.BaselineStore:
    """The folder --dir names, else the project's baselines/ found from the current folder up; with --local,
    this machine's own beside it: where save writes is where list reads."""
    store = baselines.BaselineStore(args.dir) if args.dir else baselines.BaselineStore.find(Path.cwd())
    return store.local if args.local else store


def _save(args: argparse.Namespace) -> int:
    store = _store(args)
    if args.from_history is not None:
        return _save_from_history(args, store)
    if args.db or args.profile:
        raise UsageError("--db and --profile choose the runs of --from-history N; pass it too")
    if not args.results:
        raise UsageError("baseline save needs the result JSON of one or more runs, or --from-history N")
    if args.only and args.mode not in ("merge", "append"):
        raise UsageError("--only keeps the rest of an existing baseline: use it with --merge or --append")
    results = []
    for path in args.results:
        kept, injected = baselines.without_injected(read(path))
        if injected:
            print(f"perfkit: left out {len(injected)} benchmark(s) of {path} that carry an injected slowdown")
        results.append(baselines.select(kept, args.only) if args.only else kept)
    joined = store.load(results[0].hardware_id, results[0].profile) if args.mode == "append" else None
    if joined is not None:
        settled = [_settled(joined, run, path, store.is_local)
                   for run, path in zip(results, args.results, strict=True)]
        if not any(run.benchmarks for run in settled):
            target = store.path_for(results[0].hardware_id, results[0].profile)
            print(f"perfkit: nothing appended to {target}")
            return 0
        results = [run for run in settled if run.benchmarks]
    path = store.save(baselines.from_runs(results) if len(results) > 1 else results[0], args.mode)
    held = baselines.held_runs(store, results)
    said = baselines.appended_said(results, held) if joined is not None else baselines.held_said(held)
    print(f"perfkit: saved {path} ({said})")
    _say_busy(results)
    if joined is not None:
        _say_flagged(joined, results, store, path)
    if (thin := sum(n < MIN_BASELINE_RUNS for n in held)) and joined is None:
        where = " --local" if args.local else f" --dir {shlex.quote(str(args.dir))}" if args.dir else ""
        only = f" --only {shlex.join(args.only)}" if args.only else ""
        rerun = (f", or save with `pytest benches/ --perfkit-save-baseline={baselines.LOCAL_SAVE}`, which "
                 "re-runs them" if args.local else "")
        which = "the benchmark saved" if len(held) == 1 else f"{thin} of the {len(held)} benchmarks saved"
        holds, does = ("holds", "it does") if thin == 1 else ("hold", "they do")
        print(f"perfkit: {which} {holds} fewer than {MIN_BASELINE_RUNS} runs: not judged until {does}; add "
              f"runs with `perfkit baseline save RUN.json{where}{only} --append`{rerun}")
    return 0


def _settled(joined: ResultSet, run: ResultSet, path: Path, local: bool) -> ResultSet:
    """``run`` less its benchmarks whose rounds did not settle against the baseline it joins, each said."""
    kept, left_out = baselines.without_unsettled(joined, run)
    for line in baselines.unsettled_lines(str(path), left_out, local):
        print(line, file=sys.stderr)
    return kept


def _say_busy(runs: Sequence[ResultSet]) -> None:
    """Warn, without refusing, of each saved run recorded on a busy host (baselines.busy_warning)."""
    for run in runs:
        warning = baselines.busy_warning(run)
        if warning:
            print(f"perfkit: {warning}", file=sys.stderr)


def _say_flagged(joined: ResultSet, runs: Sequence[ResultSet], store: baselines.BaselineStore,
                 path: Path) -> None:
    """Warn, without refusing, of each appended run that ``perfkit compare`` would flag against the baseline
    it joined (the same noise: the baseline's runs and the kept ones): a disturbed host's run, or one of other
    code, widens every later verdict's noise (one weekly run of the CPU loop at K = 5 M read 2.1 times the
    others and left that figure's MDE near 1000%)."""
    undo = ("re-save it from clean runs (`perfkit baseline save --local --force RUN.json ...`)"
            if store.is_local
            else f"`git checkout -- {path}` restores the committed file (every run appended since goes too)")
    storage = storage_folder.find_storage(Path.cwd())
    for run in runs:
        noise = kept_noise.for_judging(joined, run, store, storage)
        flagged = [row for row in judge(joined, run, noise).rows
                   if row.gating and row.verdict in (Verdict.REGRESSED, Verdict.IMPROVED)]
        if flagged:
            first = flagged[0]
            change = "" if first.change is None else f" {first.change:+.1%}"
            example = f"{first.benchmark} {first.figure} {first.verdict.value}{change}"
            print(f"perfkit: {run.source} reads {len(flagged)} figure(s) regressed or improved against the "
                  f"baseline it joined (e.g. {example}); if that run was disturbed or of other code, {undo}",
                  file=sys.stderr)


def _save_from_history(args: argparse.Namespace, store: baselines.BaselineStore) -> int:
    if args.results:
        raise UsageError("pass result files or --from-history N, not both")
    if args.only:
        raise UsageError("--only selects from result files; --from-history saves every benchmark of the runs")
    storage_folder.enough_runs(args.from_history)
    found = kept.kept_runs(args.hardware_id, args.profile, db=args.db, storage=args.storage)
    say_skipped(found.history)
    baseline = storage_folder.baseline_of(found.history, found.where, args.hardware_id, args.from_history)
    path = store.save(baseline, args.mode)
    print(f"perfkit: saved {path} (the last {args.from_history} runs in {found.where})")
    _say_busy([baseline])
    return 0


def _drop(args: argparse.Namespace) -> int:
    if args.baseline.name.endswith(partial.SUFFIX):
        raise UsageError(f"{args.baseline} holds a run cut short; drop from a baseline file, which "
                         "`perfkit baseline save` writes")
    kept, dropped = baselines.drop(load.load(args.baseline), args.names)
    baselines.write_atomically(args.baseline, kept)
    print(f"perfkit: dropped {len(dropped)} benchmark(s) from {args.baseline}; {len(kept.benchmarks)} kept")
    for name in dropped:
        print(f"  {name}")
    return 0


def _list(args: argparse.Namespace) -> int:
    """One line per baseline file of the folder save writes to, this machine's marked; a file that cannot be
    read says why in its row and the others still list. Loads no torch: a CPU's id is read without it
    (hardware.hardware_id_here; a GPU's needs torch, as for ``perfkit hw --id``)."""
    from perfkit.measure import hardware

    store = _store(args)
    if args.dir and not store.directory.is_dir():
        raise UsageError(f"baseline list --dir {args.dir}: no such folder; give the folder `perfkit baseline "
                         "save --dir` wrote to, or leave --dir out for the project's baselines/")
    # a hardware id's quick profile after its full one (a plain sort put "-quick" before ".json")
    paths = sorted(store.directory.glob("*.json"), key=lambda path: (path.stem.removesuffix("-quick"),
                                                                     path.stem))
    if not paths:
        where = " --local" if args.local else f" --dir {shlex.quote(str(args.dir))}" if args.dir else ""
        print(f"perfkit: no baselines in {store.directory}; save one from a run's results (`pytest benches/ "
              f"--benchmark-json=RUN.json`) with `perfkit baseline save{where} RUN.json`")
        return 0
    here = hardware.hardware_id_here("auto")
    mine = {store.path_for(here, profile).name for profile in PROFILES}
    width = max(len(path.stem) for path in paths)
    print(f"perfkit: {counted(len(paths), 'baseline')} in {store.directory} (this machine: {here})")
    for path in paths:
        print(f"{path.stem:<{width}}  {_held(path)}{'  <- this machine' if path.name in mine else ''}")
    return 0


def _held(path: Path) -> str:
    """What the baseline at ``path`` holds, in a row's words, or why it cannot be read."""
    try:
        held = baselines.held_in(load.load(path))
    except PerfkitError as exc:
        return f"unreadable: {str(exc).removeprefix(f'{path}: ')}"
    machines = f" from {counted(held.machines, 'machine')}" if held.machines else ""
    newest = f"newest run {held.dates[-1]}" if held.dates else "runs undated"
    thin = sum(runs < MIN_BASELINE_RUNS for runs in held.runs)
    # a run's own results dropped in the folder read so too: each of its benchmarks holds one run
    few = f"; {thin} with fewer than {MIN_BASELINE_RUNS} runs, not judged" if thin else ""
    return (f"{counted(held.benchmarks, 'benchmark')}, {baselines.held_said(held.runs)}{machines}, "
            f"{newest}{few}")
