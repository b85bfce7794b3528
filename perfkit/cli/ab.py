"""``perfkit ab`` and ``perfkit bisect``: two git refs measured in alternating fresh processes, and a
regression bisected with such an A/B as the test."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from perfkit import stopping
from perfkit.cli.common import EXIT_NOTHING_TO_BISECT, failed, say


def add_parser(sub: Any) -> None:
    abp = sub.add_parser("ab", help="A/B two git refs: their benchmarks in alternating fresh processes, a "
                                    "paired verdict per benchmark")
    abp.add_argument("base", help="the git ref measured as A")
    abp.add_argument("head", nargs="?", default=None,
                     help="the git ref measured as B (default: the working tree as it is, uncommitted "
                          "changes included)")
    benches = _ab_options(abp, False, "pytest -k expression selecting the benchmarks (default: all)")
    benches.add_argument("--touched", action="store_true",
                         help="instead of --benches: only the bench files the change from BASE to HEAD "
                              "touches, all of them where it changes perfkit/ or the pytest configuration, "
                              "none where it changes no benchmark's code")
    abp.add_argument("--out", type=Path, default=None,
                     help="folder for base.json, head.json and ab.json (default: a new temporary folder)")
    abp.add_argument("--seed", type=int, default=None,
                     help="seed of the ABBA order (default: random, recorded)")
    abp.add_argument("--explain", action="store_true",
                     help="after the pairs, profile each regressed or improved benchmark once more on each "
                          "side (--perfkit-explain, not judged) and print which kernels moved")
    abp.add_argument("--fail", action="store_true",
                     help="exit 1 when a benchmark regressed (an unknown verdict never fails)")
    abp.add_argument("--format", choices=("table", "markdown"), default="table",
                     help="the table for a terminal, or markdown (a CI job summary); progress goes to stderr")
    abp.set_defaults(func=_ab)

    bis = sub.add_parser("bisect", help="git bisect a benchmark's regression, each commit A/B'd against GOOD")
    bis.add_argument("good", help="a git ref where the benchmark is fine")
    bis.add_argument("bad", help="a later git ref where it regressed")
    _ab_options(bis, True, "pytest -k expression selecting the benchmark")
    bis.add_argument("--out", type=Path, default=None,
                     help="folder for each step's A/B (default: a new temporary folder)")
    bis.set_defaults(func=_bisect)


def _ab_options(parser: argparse.ArgumentParser, required: bool, help_text: str) -> Any:
    """The options ab and bisect share; returns the group --benches is in, for options that replace it."""
    parser.add_argument("-k", dest="expr", required=required, metavar="EXPR", help=help_text)
    parser.add_argument("--rounds", type=int, default=10,
                        help="most pairs to run, the budget each figure's alpha is spent over; fewer when "
                             "every benchmark is decided sooner (default 10)")
    benches = parser.add_mutually_exclusive_group()
    benches.add_argument("--benches", nargs="+", default=["benches"], metavar="PATH",
                         help="the bench folders or files, relative to each checkout (default: benches)")
    return benches


def _ab(args: argparse.Namespace) -> int:
    """The table, also of the pairs finished when the A/B was stopped midway."""
    from perfkit.ab import report as ab_report
    from perfkit.ab.run import ab as run_ab

    try:
        with stopping.interruptible():
            result = run_ab(Path.cwd(), args.base, args.head, args.out, expr=args.expr, rounds=args.rounds,
                            seed=args.seed, benches=args.benches, touched=args.touched, explain=args.explain,
                            say=say)
    except stopping.Stopped as stop:
        if isinstance(stop.report, ab_report.AbReport):
            print(ab_report.render(stop.report, args.format), end="")
        raise
    print(ab_report.render(result, args.format), end="")
    return failed(result.regressed()) if args.fail else 0


def _bisect(args: argparse.Namespace) -> int:
    from perfkit.ab import report as ab_report
    from perfkit.ab.bisect import NothingToBisect
    from perfkit.ab.bisect import bisect as run_bisect

    try:
        with stopping.interruptible():
            found = run_bisect(Path.cwd(), args.good, args.bad, args.expr, args.rounds, args.out,
                               args.benches, say=say)
    except NothingToBisect as answer:
        print(f"perfkit bisect: {answer}")
        return EXIT_NOTHING_TO_BISECT
    print(f"first bad commit: {found.commit} {found.summary}")
    print(ab_report.render(found.report), end="")
    return 0
