"""``perfkit bisect GOOD BAD -k BENCHMARK``: ``git bisect run`` with an A/B of each commit against GOOD as
the test, so a commit is bad only when the paired test says the benchmark regressed against GOOD itself,
re-measured beside it, never against a stored number.

First BAD is A/B'd against GOOD: the figures it regressed are the hunt (none: nothing to bisect, said before
git bisect starts), and each step is asked about those alone, at half the hunted change in logs as its
minimum effect (never less than the figure's own): a step is bad when it regressed significantly with its
change beyond that half (nearer BAD's than GOOD's), good when its interval lies inside the half. A
regression made in one commit is all or nothing at each step; one spread over several commits is not, and a
step carrying part of it may read either way or be skipped. So a 10x regression is found on a host whose runs
wander 1.7x between processes (a shared 2-core runner, 2026-11-28), where the suite's own minimum effect
left every good step unknown and git bisect skipped its way to "cannot bisect more".

git bisect runs with ``--no-checkout``: it moves BISECT_HEAD, not the working tree, and each probe A/Bs
GOOD against BISECT_HEAD in checkouts of their own; the working tree, dirty or not, is never touched.
The probe (:func:`main`) answers git bisect's way: 0 good (unchanged or improved), 1 bad
(a hunted figure regressed), 125 skip (the commit does not build, lacks the benchmark, or a hunted figure
stays unknown after the rounds), 128 abort (anything else: a crash must not read as "bad").

Stopped midway (Ctrl-C, or SIGTERM under perfkit.stopping.interruptible), ``git bisect run``'s session gets
the signal: the probe under way stops its benchmark run and removes its checkouts (perfkit ab's own
cleanup), then ``git bisect reset`` runs as always, and the steps finished by then stay under ``out``.

The answer names the first bad commit with its A/B against GOOD, and which kernels moved: the benchmark run
once more on each side with ``--perfkit-explain`` (perfkit.ab.explain).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import perfkit
from perfkit import stopping
from perfkit.ab import report as ab_report
from perfkit.ab import run as ab
from perfkit.ab.explain import explained
from perfkit.ab.report import AbReport
from perfkit.errors import BuildError, PerfkitError, UsageError
from perfkit.verdict.judge import Verdict
from perfkit.verdict.paired_test import Key

Hunt = dict[Key, float]  # the figures BAD regressed, each with the minimum effect a step is judged at

GOOD, BAD, SKIP, ABORT = 0, 1, 125, 128
#: The probe's command: sys.path[0] is the repository (git bisect runs it there), dropped so that a perfkit
#: inside it does not shadow the one driving (``python -P`` does that from 3.11 only).
PROBE = "import sys; del sys.path[0]; from perfkit.ab.bisect import main; sys.exit(main())"
FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.MULTILINE)
#: git bisect's answer when skipped steps lie next to the change: the commits it could be, one a line.
COULD_BE = re.compile(r"^The first bad commit could be any of:\n((?:[0-9a-f]{40}\n)+)", re.MULTILINE)
#: How a probe's progress line begins on its stderr: bisect passes those on as they come, with git bisect's
#: "Bisecting: N revisions left to test after this (roughly K steps)".
STEP = "perfkit bisect step: "
LEFT = "Bisecting: "
HUNT = "hunt.json"  # in the steps' folder: the probes read it
#: A hunted figure's verdicts that answer a step: regressed is bad, these good.
DECIDED = (Verdict.UNCHANGED, Verdict.IMPROVED, Verdict.REGRESSED)


@dataclass(frozen=True)
class Found:
    commit: str
    summary: str  # the commit's subject line
    report: AbReport  # the A/B of that commit against GOOD (ab.json)


class NothingToBisect(PerfkitError):
    """BAD measured against GOOD regressed none of the figures bisected: an answer, which the command says
    with an exit status of its own."""


def bisect(path: Path, good: str, bad: str, expr: str, rounds: int, out: Path | None,
           benches: Sequence[str] = ("benches",), say: Callable[[str], None] = lambda _: None) -> Found:
    """The first commit between ``good`` and ``bad`` nearer ``bad`` than ``good`` in the figures of the
    benchmarks ``expr`` that ``bad`` regressed; ``git bisect reset`` always follows. ``out`` None: a new
    temporary folder, said."""
    ab.check_input(rounds, benches)
    repo = ab.repository(path)
    good_commit, bad_commit = ab.resolve(repo, good), ab.resolve(repo, bad)
    if good_commit == bad_commit:
        raise UsageError(f"{good} and {bad} are the same commit ({good_commit[:10]}), so there is nothing "
                         "between them to bisect; give a GOOD commit older than the BAD one")
    if subprocess.run(["git", "merge-base", "--is-ancestor", good_commit, bad_commit], cwd=repo,
                      capture_output=True, check=False).returncode != 0:
        raise UsageError(f"{good} is not an ancestor of {bad}: git bisect looks for a regression between an "
                         f"older GOOD and a newer BAD; were they swapped? (perfkit bisect {bad} {good} ...)")
    if (repo / ab.git(repo, "rev-parse", "--git-path", "BISECT_START")).exists():
        raise UsageError(f"{repo} is in the middle of a git bisect; finish it with `git bisect reset` first")
    ab.refuse_absent(repo, [(good, good_commit), (bad, bad_commit)], benches)
    try:
        nothing = ab.selects_nothing(repo, [good_commit, bad_commit], benches, expr)
    except KeyboardInterrupt as exc:
        raise stopping.Stopped(stopping.signum_of(exc), "stopped while collecting the benchmarks -k selects, "
                               "before git bisect started: nothing written") from None
    if nothing:
        raise UsageError(f"-k {expr!r} selects no benchmark in {' '.join(benches)} at {good} or at {bad}")
    steps = ab.output_folder(out, "perfkit-bisect-out-", "steps") / "steps"
    say(f"each step's A/B in {steps}")
    say(f"measuring {bad} against {good} first: the figures it regressed are what each step is asked about")
    (steps / HUNT).write_text(json.dumps(_to_json(hunt(repo, good, good_commit, bad, bad_commit, expr, rounds,
                                                       steps, benches, say))))
    probe = [sys.executable, "-c", PROBE, good_commit, "-k", expr, "--rounds", str(rounds),
             "--out", str(steps), "--hunt", str(steps / HUNT), "--benches", *benches]
    here = str(Path(perfkit.__file__).resolve().parent.parent)  # this perfkit, not the commit's, drives
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])}
    try:
        ab.git(repo, "bisect", "start", "--no-checkout", bad_commit, good_commit)
        # the probe's own grace for its benchmark run, then time to remove its checkouts
        done = stopping.run(["git", "bisect", "run", *probe], repo, env, grace_s=2 * stopping.GRACE_S,
                            echo=lambda line: _pass_on(line, say))
    except KeyboardInterrupt as exc:
        raise stopping.Stopped(stopping.signum_of(exc), f"git bisect is reset and the steps' A/B results so "
                               f"far kept in {steps}") from None
    finally:
        subprocess.run(["git", "bisect", "reset"], cwd=repo, capture_output=True, check=False)
    found = FIRST_BAD.search(done.stdout)
    if found is None:
        raise PerfkitError(_no_answer(repo, good, bad, done, steps))
    commit = found.group(1)
    report = ab_report.read(steps / commit / ab.AB_JSON)  # BAD's own is the hunt's: git bisect never tests it
    summary = ab.git(repo, "log", "-1", "--format=%s", commit)
    if report.flagged():
        try:
            report = _explained(repo, good, good_commit, commit, report, steps / commit, say)
        except KeyboardInterrupt as exc:
            raise stopping.Stopped(stopping.signum_of(exc), f"stopped while profiling the answer: the first "
                                   f"bad commit is {commit} {summary}; its A/B is in {steps / commit}",
                                   report) from None
    return Found(commit, summary, report)


def _no_answer(repo: Path, good: str, bad: str, done: subprocess.CompletedProcess[str], steps: Path) -> str:
    """Why git bisect named no first bad commit: the commits it could be, where skipped steps lie next to
    the change, else its last words."""
    could_be = COULD_BE.search(done.stdout)
    if could_be is None:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        return f"git bisect named no first bad commit between {good} and {bad}: {tail}"
    named = [ab.git(repo, "log", "-1", "--format=%h %s", commit) for commit in could_be.group(1).split()]
    return (f"the first bad commit is one of {', '.join(named)}: the steps between them were skipped (each "
            f"step's answer is above, its A/B in {steps}); more --rounds or a quieter host settle them")


def hunt(repo: Path, good: str, good_commit: str, bad: str, bad_commit: str, expr: str, rounds: int,
         steps: Path, benches: Sequence[str], say: Callable[[str], None] = lambda _: None) -> Hunt:
    """BAD A/B'd against GOOD (its A/B kept as the step of BAD): the figures it regressed, each with half
    the regression in logs as a step's minimum effect, never less than the figure's own."""
    try:
        report = ab.ab(repo, good_commit, bad_commit, steps / bad_commit, expr=expr, rounds=rounds,
                       benches=benches, say=lambda line: say(f"{bad} against {good}: {line}"))
    except stopping.Stopped as exc:
        raise stopping.Stopped(exc.signum, f"stopped while measuring {bad} against {good}, before git bisect "
                               f"started: {exc.kept}", exc.report) from None
    found = hunted(report)
    if not found:
        said = "; ".join(f"{row.benchmark} {row.figure} {row.verdict.value}" + (f" ({row.note})" if row.note
                                                                                   else "")
                         for row in report.benchmarks) or "no benchmark compared"
        settle = ("; an unknown settles with more --rounds or on a quieter host"
                  if any(row.verdict is Verdict.UNKNOWN for row in report.benchmarks) else "")
        raise NothingToBisect(f"{bad} is not shown regressed against {good} ({said}), so there is nothing to "
                              f"bisect{settle}; its A/B is in {steps / bad_commit}")
    for row in report.benchmarks:
        if (row.benchmark, row.figure) in found:
            say(f"hunting {row.benchmark} {row.figure}, {row.change:+.1%} at {bad}: a step is bad beyond "
                f"{found[row.benchmark, row.figure]:+.1%}")
    return found


def hunted(report: AbReport) -> Hunt:
    """The figures ``report`` (BAD against GOOD) regressed, each with half its change in logs as a step's
    minimum effect, never less than the figure's own."""
    return {(row.benchmark, row.figure): max(row.minimum, math.expm1(abs(math.log1p(row.change)) / 2))
            for row in report.benchmarks if row.verdict is Verdict.REGRESSED and row.change is not None}


def _pass_on(line: str, say: Callable[[str], None]) -> None:
    """A probe's progress line and git bisect's count of what is left, said; the rest of their output kept."""
    if line.startswith(STEP):
        say(line.removeprefix(STEP))
    elif line.startswith(LEFT):
        say(line)


def _to_json(found: Hunt) -> list[list[object]]:
    return [[benchmark, figure, floor] for (benchmark, figure), floor in sorted(found.items())]


def _read_hunt(path: Path) -> Hunt:
    return {(benchmark, figure): floor for benchmark, figure, floor in json.loads(path.read_text())}


def _explained(repo: Path, good: str, good_commit: str, commit: str, report: AbReport, out: Path,
               say: Callable[[str], None]) -> AbReport:
    """The first bad commit's A/B against GOOD with its explanation (perfkit.ab.explain), each side in a
    checkout of its own again."""
    with ExitStack() as stack:
        base = ab.Side("base", good, good_commit, stack.enter_context(ab.worktree(repo, good_commit)))
        head = ab.Side("head", commit[:10], commit, stack.enter_context(ab.worktree(repo, commit)))
        return explained(report, base, head, out, say)


def probe(good: str, expr: str, rounds: int, out: Path, hunted: Hunt, benches: Sequence[str]) -> int:
    """git bisect's test of BISECT_HEAD: an A/B against ``good`` judged on the ``hunted`` figures alone,
    at their minimum effects, its answer as git bisect's exit status."""
    repo = ab.repository(Path.cwd())
    commit = ab.resolve(repo, "BISECT_HEAD")
    subject = ab.git(repo, "log", "-1", "--format=%s", commit)

    def say(line: str) -> None:
        print(f"{STEP}{commit[:10]} {subject}: {line}", file=sys.stderr, flush=True)

    try:
        report = ab.ab(repo, good, commit, out / commit, expr=expr, rounds=rounds, benches=benches,
                       floors=hunted, say=say)
    except BuildError as exc:
        say(f"skipped: {exc}")
        return SKIP
    print(ab_report.render(report))
    answer = step_answer(report, hunted)
    say(answer_said(report, hunted, answer))
    return answer


def step_answer(report: AbReport, hunted: Hunt) -> int:
    """BAD where a hunted figure regressed; GOOD where every one was compared and none moved beyond its
    minimum effect the worse way (unchanged or improved); SKIP otherwise (missing, or still unknown)."""
    verdicts = {(row.benchmark, row.figure): row.verdict for row in report.benchmarks}
    found = [verdicts.get(key) for key in hunted]
    if Verdict.REGRESSED in found:
        return BAD
    return GOOD if all(v in DECIDED for v in found) else SKIP


def answer_said(report: AbReport, hunted: Hunt, answer: int) -> str:
    """A step's answer in words; a skip names each hunted figure it could not decide, and why."""
    if answer != SKIP:
        return {BAD: "bad (a hunted figure regressed)", GOOD: "good"}[answer]
    rows = {(row.benchmark, row.figure): row for row in report.benchmarks}
    why = []
    for benchmark, figure in hunted:
        row = rows.get((benchmark, figure))
        if row is None:
            why.append(f"{benchmark} {figure} missing")
        elif row.verdict not in DECIDED:
            why.append(f"{benchmark} {figure} {row.verdict.value}: {row.note}")
    return f"skipped ({'; '.join(why)})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="perfkit bisect probe", description=probe.__doc__)
    parser.add_argument("good")
    parser.add_argument("-k", dest="expr", required=True)
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--hunt", type=Path, required=True)
    parser.add_argument("--benches", nargs="+", required=True)
    args = parser.parse_args(argv)
    try:
        with stopping.interruptible():
            return probe(args.good, args.expr, args.rounds, args.out, _read_hunt(args.hunt), args.benches)
    except KeyboardInterrupt:  # perfkit bisect is stopping and says so: this probe's checkouts are removed
        return ABORT
    except Exception as exc:  # noqa: BLE001 - git bisect would read a traceback's exit 1 as "bad"
        print(f"{STEP}aborted: {exc}", file=sys.stderr)
        return ABORT
