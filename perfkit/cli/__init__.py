"""The ``perfkit`` command: hw, compare, baseline save|drop|list, history, dashboard, report, memory,
flops, predict, roofline, ab, bisect, fleet, tta-study.

Exit codes: 0 fine, 1 a significant regression with ``compare --fail`` or ``ab --fail`` (``fleet``: a
regression or a job that failed), 2 bad input (usage, a missing or corrupt file), 3 ``bisect``'s BAD not
shown regressed against GOOD (nothing to bisect); errors are one line, never a
traceback. ``ab`` and ``bisect`` stopped midway by Ctrl-C or SIGTERM clean up, say what they kept in one line
and exit as a shell reports the signal (130, 143); ``fleet`` stops its jobs on Ctrl-C or SIGTERM (130, 143).

Each command group is a module of this package with its ``add_parser`` and handlers, which import what is
heavy (torch, SQLAlchemy) only when they run: ``perfkit compare`` never loads torch. ``common`` holds what
they share.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from perfkit import stopping
from perfkit.cli import ab, baseline, compare, dashboard, estimates, fleet, history, hw, report
from perfkit.cli.common import EXIT_REGRESSION, EXIT_USAGE, work_of
from perfkit.cli.compare import judge_files, parse_threshold
from perfkit.errors import PerfkitError

__all__ = ["EXIT_REGRESSION", "EXIT_USAGE", "judge_files", "main", "parse_threshold", "work_of"]

#: Options whose value may look like an option (a negative number).
VALUE_OPTIONS = ("--threshold", "--ppp", "--batch")
NEGATIVE = re.compile(r"^-[0-9.]")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    given = _values_may_start_with_minus(sys.argv[1:] if argv is None else list(argv))
    args, unknown = parser.parse_known_args(given)
    if unknown:  # said by the parser of the (sub)command it was given to: its usage, not every command's
        _chosen(parser, args, given, given.index(unknown[0])).error(
            f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return int(args.func(args))
    except stopping.Stopped as stop:  # ab, bisect: their cleanup has run
        print(f"perfkit: stopped by {stop.signal_name}: {stop.kept}", file=sys.stderr)
        return stop.status
    except PerfkitError as exc:
        print(f"perfkit: error: {exc}", file=sys.stderr)
    except ModuleNotFoundError as exc:  # a package the command needs was not installed with perfkit
        top = (exc.name or "").split(".")[0]
        if top not in PIP_NAMES:  # not one of perfkit's dependencies: a bug, whose traceback says where
            raise
        print(f"perfkit: error: {_missing_package(top)}", file=sys.stderr)
    except OSError as exc:  # a folder that cannot be made, a file that cannot be written, a full disk
        where = f": {exc.filename}; choose another path" if exc.filename else ""
        print(f"perfkit: error: {exc.strerror or exc}{where}", file=sys.stderr)
    return EXIT_USAGE


#: The dependencies perfkit's commands import (pyproject.toml's), by import name: what pip installs them as.
PIP_NAMES = {"torch": "torch", "torchvision": "torchvision", "numba": "numba", "numpy": "numpy",
             "scipy": "scipy", "matplotlib": "matplotlib", "sqlalchemy": "sqlalchemy",
             "psycopg": "'psycopg[binary]'", "pytest": "pytest", "pytest_benchmark": "pytest-benchmark",
             "submitit": "submitit (perfkit[fleet])", "pynvml": "nvidia-ml-py (perfkit[cuda])"}


def _missing_package(top: str) -> str:
    """What to install where a command's package is missing (an environment that put perfkit on the path
    without its dependencies, as a GPU image with its own torch may)."""
    return (f"this command needs the Python package {top!r}, which is not installed here: pip install "
            f"{PIP_NAMES[top]}, or pip install -e . in the checkout for all of perfkit's")


def _version() -> str:
    """The installed package's version (a source tree that is not installed says so), and the commit of the
    checkout it runs from, where it runs from one: a version number alone does not say which code ran."""
    try:
        version = metadata.version("perfkit")
    except metadata.PackageNotFoundError:
        version = "(not installed: pip install -e .)"
    commit = _checkout_commit(Path(__file__).resolve().parents[2])
    return f"{version} ({commit})" if commit else version


def _checkout_commit(root: Path) -> str:
    """``commit 0123456789`` of the git checkout at ``root`` (``, with uncommitted changes`` where its tracked
    files differ); "" where ``root`` is no checkout's top folder (an installed copy) or git is missing."""
    if not (root / ".git").exists():
        return ""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=root, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f"commit {head}{', with uncommitted changes' if dirty else ''}"


class _VersionAction(argparse.Action):
    """``--version``, found only when asked: it may run git, which no other command should wait for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print perfkit's version, and its git commit where it runs from a checkout")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"perfkit {_version()}")
        parser.exit()


def _values_may_start_with_minus(argv: list[str]) -> list[str]:
    """``--threshold -5%`` as ``--threshold=-5%``: argparse would take ``-5%`` for an option and say only
    "expected one argument"; joined, the value reaches its own check, which says what is wrong with it."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in VALUE_OPTIONS and NEGATIVE.match(arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace, given: list[str],
            at: int) -> argparse.ArgumentParser:
    """The parser of the (sub)command that argument ``at`` of ``given`` went to: followed down through each
    level's choice in ``args`` (``perfkit baseline save``'s) while that choice came before it."""
    for action in parser._actions:
        choice = getattr(args, action.dest, None)
        if isinstance(action, argparse._SubParsersAction) and choice in action.choices:
            return _chosen(action.choices[choice], args, given, at) if given.index(choice) < at else parser
    return parser


def _parser() -> argparse.ArgumentParser:
    """Every command, each added by its module, listed in the order ``perfkit --help`` has always shown."""
    summary = " ".join(__doc__.split("\n\n")[0].split()).replace("``", "")  # plain text for a terminal
    parser = argparse.ArgumentParser(prog="perfkit", description=summary)
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (hw.add_parser, compare.add_parser, baseline.add_parser, history.add_parser,
                dashboard.add_parser, report.add_parser, estimates.add_parser, report.add_roofline_parser,
                ab.add_parser, fleet.add_parser):
        add(sub)
    return parser
