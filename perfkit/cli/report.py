"""``perfkit report`` and ``perfkit roofline``: the files drawn from one result file, a report (markdown,
HTML and plots) and the roofline chart."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from perfkit.cli.common import DB_HELP, kept_runs_options, out_folder, read
from perfkit.cli.compare import judge_files
from perfkit.cli.history import kept_runs
from perfkit.errors import BaselineError, UsageError
from perfkit.render.report import write_report


def add_parser(sub: Any) -> None:
    rep = sub.add_parser(
        "report", help="markdown report, PNG plots and one self-contained HTML page of a results JSON"
    )
    rep.add_argument("results", type=Path, metavar="RESULTS.json",
                     help="the run to report: pytest --benchmark-json's file, a baseline or a .partial file")
    rep.add_argument("--out", type=Path, required=True, metavar="DIR",
                     help="folder for report.md, report.html and the plots (made where it does not exist)")
    rep.add_argument("--baseline", type=Path, help="also compare with this baseline")
    rep.add_argument("--threshold", default=None, help="with --baseline: the minimum effect, as for compare")
    kept_runs_options(rep, "--history",
                      "also the trends and change points of the runs kept in this pytest-benchmark storage "
                      "(runs of the results' hardware); with --baseline they add to the noise, as for "
                      "compare",
                      f"as --history, from {DB_HELP}")
    rep.set_defaults(func=_report)


def add_roofline_parser(sub: Any) -> None:
    """Its own adder: ``roofline`` is listed after the model commands, where it always was."""
    roof = sub.add_parser("roofline", help="draw the roofline chart of a results JSON's PPP benchmarks")
    roof.add_argument("results", type=Path, metavar="RESULTS.json",
                      help="a result file holding PPP benchmarks (benches/test_ppp.py, run on a GPU)")
    roof.add_argument("--out", type=Path, required=True, help="PNG file to write")
    roof.set_defaults(func=_roofline)


def _report(args: argparse.Namespace) -> int:
    out_folder(args.out, "the report")
    comparison = None
    if args.baseline:
        _, results, comparison = judge_files(args.baseline, args.results, args.threshold, args.history,
                                             args.db)
    else:
        results = read(args.results)
    kept = None
    if args.history or args.db:
        try:
            kept = kept_runs(args.history, results.hardware_id, args.db, results.profile)[1]
        except BaselineError as exc:  # no runs of this machine: the report is still worth writing, said why
            print(f"perfkit: report without history: {exc}", file=sys.stderr)
    from perfkit.ab import report as ab_report

    beside = args.results.parent / "ab.json"  # perfkit ab's folder: its table comes first
    first = [ab_report.section(ab_report.read(beside))] if beside.is_file() else []
    path = write_report(results, args.out, comparison, str(args.baseline or ""), kept, first)
    print(f"perfkit: wrote {path} and {path.with_suffix('.html')} (self-contained: opens offline)")
    return 0


def _roofline(args: argparse.Namespace) -> int:
    from perfkit.render import plots_models

    if args.out.suffix.lower() != ".png":
        raise UsageError(f"--out {args.out}: the roofline is drawn as PNG; give a path ending in .png")
    path = plots_models.roofline_chart(read(args.results), args.out)
    if path is None:
        raise UsageError(f"{args.results} holds no roofline points; run benches/test_ppp.py on a GPU first")
    print(f"perfkit: wrote {path}")
    return 0
