"""``perfkit fleet``: the nightly (or the weekly, a ``-k`` selection, or the time-to-accuracy study) on one
or more Slurm partitions or ``--gres`` kinds through submitit, R replicates each as a job array, or on this
host's GPUs at once (``--on-host N``); progress per job; the results stored in the history database, judged
per hardware with the replicates as the night's runs, and the dashboard built. ``perfkit tta-study`` draws
the time-to-accuracy study from any result files."""
from __future__ import annotations

import argparse
import datetime
import signal
from pathlib import Path
from typing import Any

from perfkit import stopping
from perfkit.cli.common import DB_HELP, EXIT_REGRESSION, out_folder
from perfkit.errors import UsageError
from perfkit.fleet import host, slurm
from perfkit.fleet.slurm import Target
from perfkit.resultfile.model import PROFILES


def add_parser(sub: Any) -> None:
    fleet = sub.add_parser(
        "fleet", help="run the suite on Slurm partitions through submitit, or on this host's GPUs at once, R "
                      "replicates each: stored, judged per hardware with the replicates as the night's runs, "
                      "and the dashboard built")
    fleet.add_argument("--partition", action="append", default=[], metavar="NAME",
                       help="a partition to run on (repeat for several: each a hardware kind of the night)")
    fleet.add_argument("--gres", action="append", default=[], metavar="KIND",
                       help="a generic resource to ask for, e.g. gpu:h100:1 (repeat for several; given as "
                            "many times as --partition, the two pair up in order)")
    fleet.add_argument("--on-host", type=int, default=None, metavar="N",
                       help="no Slurm: N replicates at once on this host, one per GPU (pinned to its NUMA "
                            "node's CPUs; on a CPU host, each on its share of the cores); the benchmarks a "
                            "neighbour disturbs run afterwards, one replicate at a time (--serial)")
    fleet.add_argument("--serial", default=host.SERIAL, metavar="EXPRESSION",
                       help=f"with --on-host: the benchmarks (a -k expression) that run alone after the "
                            f"concurrent replicates (default: {host.SERIAL})")
    fleet.add_argument("--replicas", type=int, default=3, metavar="R",
                       help="runs of the selection per target, each its own job of the array (default: 3)")
    chosen = fleet.add_mutually_exclusive_group()
    chosen.add_argument("--weekly", action="store_true", help="the weekly selection instead of the nightly")
    chosen.add_argument("-k", dest="keyword", default=None, metavar="EXPRESSION",
                        help="only the benchmarks pytest's -k EXPRESSION selects (of the nightly)")
    chosen.add_argument("--tta", action="store_true",
                        help="seed 002 Problem 2: the time-to-accuracy benchmark of the study (ResNet-50, "
                             "batch 128, the naive loop), R replicates per hardware kind, and the study "
                             "drawn: TTA CoV and held-out accuracy per kind (--out/tta-study/)")
    fleet.add_argument("--profile", choices=PROFILES, default=None,
                       help="the size profile (default: full on a GPU node, quick on a CPU one)")
    fleet.add_argument("--db", default=None, metavar="URL",
                       help=f"{DB_HELP} (default: a SQLite file in --out, this night's alone)")
    fleet.add_argument("--out", type=Path, default=None, metavar="DIR",
                       help="folder for the jobs' logs, results and the dashboard (default: fleet-<date>)")
    fleet.add_argument("--timeout-min", type=int, default=120, metavar="MINUTES",
                       help="Slurm's time limit of each job (default: 120)")
    fleet.add_argument("--queue-limit-min", type=float, default=slurm.QUEUE_LIMIT_S / 60,
                       metavar="MINUTES", help="cancel a job still queued after this long, and say why Slurm "
                       f"kept it (default: {slurm.QUEUE_LIMIT_S / 60:g})")
    fleet.set_defaults(func=_fleet)
    study = sub.add_parser(
        "tta-study", help="seed 002 Problem 2 from result files of several machines: each hardware "
                          "kind's time-to-accuracy CoV and its trained models' held-out accuracy, a table "
                          "and a plot")
    study.add_argument("results", nargs="+", type=Path, metavar="RESULTS.json",
                       help="result files holding the time-to-accuracy benchmark (any hardware, any number)")
    study.add_argument("--out", type=Path, default=Path("tta-study"), metavar="DIR",
                       help="folder for tta_study.txt and tta_study.png (default: tta-study)")
    study.set_defaults(func=_tta_study)


def _fleet(args: argparse.Namespace) -> int:
    """Run, then store, judge and build the pages from whatever results came back: a failed, cancelled or
    timed-out job is named with its log's last lines, and the others are kept and judged. Exit 1 where a job
    failed or a hardware regressed, 2 where storing or building failed; Ctrl-C or SIGTERM stops every job
    still queued or running (exit 130 or 143)."""
    from perfkit.cli import main as perfkit  # the same commands a user would run, one after the other
    from perfkit.fleet import night

    if not Path("benches").is_dir():
        raise UsageError(f"run perfkit fleet from the checkout every node sees (it holds benches/); "
                         f"{Path.cwd()} does not")
    if args.replicas < 1:
        raise UsageError(f"--replicas takes how many runs of the selection (1 or more), not {args.replicas}")
    if args.on_host is not None and (args.partition or args.gres):
        raise UsageError("--on-host runs on this host, --partition and --gres on Slurm: give one or the "
                         "other")
    out = (args.out or Path(f"fleet-{datetime.datetime.now():%Y%m%d-%H%M%S}")).resolve()
    out_folder(out, "the fleet's logs, results and pages")
    db = args.db or f"sqlite:///{out / 'history.db'}"
    host_gpus = host.gpus() if args.on_host is not None else []  # asked before the night, not after it
    try:
        with stopping.interruptible():
            ran = _on_host(args, out, host_gpus) if args.on_host is not None else _on_slurm(args, out)
    except KeyboardInterrupt as exc:
        _say(f"perfkit fleet: stopped by {signal.Signals(stopping.signum_of(exc)).name}; every job still "
             "queued or running was stopped")
        return 128 + stopping.signum_of(exc)
    results, failed, jobs = ran
    _say(f"perfkit fleet: {len(results)} result file(s) from {jobs} job(s)"
         + (f"; failed: {', '.join(failed)}" if failed else ""))
    if not results:
        return EXIT_REGRESSION
    stored = perfkit(["history", "ingest", *map(str, results), "--db", db])
    judged = night.judge_night(results, Path.cwd(), out, len(host_gpus))
    night.say_verdicts(judged, _say)
    built = perfkit(["dashboard", "--db", db, "--out", str(out / "dashboard")])
    studied = perfkit(["tta-study", *map(str, results), "--out", str(out / "tta-study")]) if args.tta else 0
    if stored or built or studied:
        return max(stored, built, studied)
    regressed = any(j.comparison is not None and j.comparison.regressions for j in judged)
    return EXIT_REGRESSION if failed or regressed else 0


def _on_slurm(args: argparse.Namespace, out: Path) -> tuple[list[Path], list[str], int]:
    """The replicates as Slurm job arrays, watched to their end (Ctrl-C cancels them): the results files, the
    failed jobs' labels, and how many jobs ran."""
    args_of, keyword = _selection(args)
    fleet = slurm.submit(_targets(args.partition, args.gres), args.replicas, Path.cwd(),
                         [*args_of, *(["-k", keyword] if keyword else [])], out, args.timeout_min)
    try:
        slurm.watch(fleet, _say, queue_limit_s=60 * args.queue_limit_min)
    except KeyboardInterrupt:
        slurm.cancel(fleet)
        raise
    results = [r.results for r in fleet.done]
    return results, [r.label for r in fleet.failed], len(fleet.replicates)


def _on_host(args: argparse.Namespace, out: Path, gpus: list[host.Gpu]) -> tuple[list[Path], list[str], int]:
    """The replicates as processes of this host, N at once (on ``gpus``, what :func:`host.gpus` found), then
    the serial part one at a time."""
    places = host.runners(args.on_host, gpus)
    args_of, keyword = _selection(args)
    _say(f"perfkit fleet: {args.replicas} replicate(s) on this host, {len(places)} at once: "
         + "; ".join(p.name for p in places))
    done = host.run(places, args.replicas, Path.cwd(), args_of, keyword, args.serial, out, _say)
    results = [path for replicate in done for path in replicate.results]
    ran = sum(len(r.outcomes) + len(r.failures) for r in done)  # a part that selected nothing did not run
    return results, [r.label for r in done if r.failures], ran


def _say(line: str) -> None:
    print(line, flush=True)  # a CI log shows each job's progress as it comes


def _targets(partitions: list[str], gres: list[str]) -> list[Target]:
    if partitions and gres and len(partitions) != len(gres):
        raise UsageError(f"{len(partitions)} --partition and {len(gres)} --gres: give one of them, or as "
                         "many of each (they pair up in order)")
    if partitions and gres:
        return [Target(p, g) for p, g in zip(partitions, gres)]
    return [Target(partition=p) for p in partitions] + [Target(gres=g) for g in gres]


def _selection(args: argparse.Namespace) -> tuple[list[str], str | None]:
    """pytest's arguments for the selection (the nightly by default), and its -k expression apart, which
    ``--on-host`` splits into the concurrent and the serial part."""
    if args.tta:
        from perfkit.fleet import tta_study

        marks, keyword = ["-m", tta_study.MARKS], tta_study.KEYWORD
    else:
        marks, keyword = (["-m", "weekly"] if args.weekly else []), args.keyword
    return marks + ([f"--perfkit-profile={args.profile}"] if args.profile else []), keyword


def _tta_study(args: argparse.Namespace) -> int:
    from perfkit.fleet import tta_study
    from perfkit.resultfile import load

    text, written, drawn = tta_study.write([load.load(p) for p in args.results], args.out)
    _say(f"{text}\nperfkit tta-study: the table in {written}, the plot in {drawn}")
    return 0
