"""What the command modules share: the exit statuses, the history database's help, the option pair that
names where kept runs are, reading a result file, and the lines every command says the same way."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from perfkit.errors import UsageError
from perfkit.resultfile import load, partial
from perfkit.resultfile.model import BenchmarkEntry, ResultSet
from perfkit.store import storage_folder
from perfkit.verdict.expected import NoModel, Work, recorded_work

EXIT_REGRESSION = 1
EXIT_USAGE = 2
#: ``perfkit bisect`` measured BAD and found it not regressed against GOOD: an answer, not a mistake
EXIT_NOTHING_TO_BISECT = 3
DB_HELP = ("a history database's URL (what `perfkit history ingest` stores into): sqlite:///history.db or "
           "postgresql://user@host/dbname")


def kept_runs_options(parser: argparse.ArgumentParser, folder: str, folder_help: str, db_help: str) -> None:
    """A storage folder (``folder``: --storage or --history) or a history database (--db), never both: the
    one pair of options of every command that reads kept runs; each command words what the runs are for."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(folder, default=None, metavar="DIR", help=folder_help)
    where.add_argument("--db", default=None, metavar="URL", help=db_help)


def say(line: str) -> None:
    """Progress of a long command (ab, bisect), on stderr as it happens: stdout holds only the result (the
    markdown a CI job summary takes)."""
    print(f"perfkit: {line}", file=sys.stderr, flush=True)


def failed(regressed: Sequence[str]) -> int:
    """``--fail``'s exit status: 1, the regressed benchmarks named on stderr, when there are any."""
    if not regressed:
        return 0
    names = sorted(set(regressed))
    print(f"perfkit: {len(names)} benchmark(s) regressed: {', '.join(names)}", file=sys.stderr)
    return EXIT_REGRESSION


def read(path: Path, lender: ResultSet | None = None) -> ResultSet:
    """A result file by the one loader (perfkit.resultfile.load); a run cut short is said on stderr, since
    what it shows covers only the benchmarks that run finished."""
    results = load.load(path, lender)
    say_partial(results)
    return results


def say_partial(results: ResultSet) -> None:
    line = partial.said(results)
    if line:
        print(f"perfkit: {line}", file=sys.stderr)


def say_skipped(kept: storage_folder.History) -> None:
    for line in kept.skipped:
        print(f"perfkit: skipped {line}", file=sys.stderr)


def out_folder(out: Path, what: str) -> None:
    """Refuse an ``--out`` that is a file before anything is read, in the words ab's check uses."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder for {what} (made where it does not exist)")


def work_of(bench: BenchmarkEntry, results: ResultSet) -> Work | NoModel:
    """A benchmark's work as the roofline model counts it, for comparisons across hardware: what its run
    recorded, else counted from its records (perfkit.workloads.benchwork: files written before runs recorded
    it), which only a comparison of two machines loads."""
    if (recorded := recorded_work(bench)) is not None:
        return recorded
    from perfkit.workloads import benchwork

    return benchwork.work_of(bench, results)
