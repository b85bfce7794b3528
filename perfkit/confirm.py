"""Confirmation by re-run: benchmarks flagged against the baseline run again, each time in a fresh process.

A nightly fails only on a regression that holds over several runs (Perfherder's retriggers, Chromium
Pinpoint's repeats): ``--perfkit-confirm N`` re-runs every benchmark whose verdict was ``regressed`` or
``improved`` (an improvement is confirmed before it is reported too), or ``unknown`` beyond its minimum
effect in the worse direction where runs of this code could show it (a figure 1.5 times worse is always one of
them), N times with ``python -m
pytest NODEID...`` in fresh processes (new CUDA context, new allocator, clocks re-settled), then judges them
on the new runs alone (the first run was chosen for being extreme).

The two stages together keep the night's family-wise false-alarm rate at alpha (perfkit.verdict.judge's
FirstLook): each re-run figure is tested at Bonferroni's ``alpha / m`` over the ``m`` gating figures of the
whole night, not Holm over the few suspects, so whatever the first look selected, a figure ends ``regressed``
with chance ``alpha / m`` at most under no change, and the night with ``alpha`` at most. Judging the
suspects again at Holm's level over themselves, against the same baseline mean that selected them, raised a
night's false alarms from 2.7% to 10.7% in the audit's simulation. The baseline's code is not at hand in a
run, so re-runs are not interleaved with it; interleaving (RMIT, duet benchmarking) is the A/B command's job.
"""
from __future__ import annotations

import dataclasses
import math
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from perfkit.errors import PerfkitError
from perfkit.resultfile import load, partial
from perfkit.resultfile.model import ResultSet
from perfkit.store import baselines
from perfkit.verdict.evidence import ALWAYS_RE_RUN
from perfkit.verdict.judge import Comparison, FirstLook, Row, Verdict


def suspects(comparison: Comparison) -> list[str]:
    """Benchmarks worth re-running: regressed or improved, or beyond their minimum effect in the worse
    direction without proof where runs of this code could give it, or 1.5 times worse or more (not a figure
    that even 20 runs could not show moved by less: a fresh H100's two CPU references 10% over another host's
    copy took 115 s of re-runs to stay unknown)."""
    return sorted({row.benchmark for row in comparison.rows if row.gating and (
        row.verdict in (Verdict.REGRESSED, Verdict.IMPROVED)
        or (row.verdict is Verdict.UNKNOWN and row.worse and row.beyond_minimum
            and (row.decidable or abs(math.log1p(row.change or 0.0)) >= math.log(ALWAYS_RE_RUN))))})


def second_look(first: Comparison, reruns: Sequence[ResultSet],
                judge: Callable[[ResultSet, FirstLook], Comparison]) -> Comparison:
    """The night's verdict once the ``reruns`` of its suspects are judged (``judge``: the run's own judge,
    given the first look): their rows replace the first run's, and a suspect the re-runs did not measure
    keeps no decision of the first look (only a second test may say regressed or improved), nor its reading
    of why it moved."""
    again = judge(baselines.from_runs(list(reruns)), FirstLook.of(first))
    measured = {b.fullname for run in reruns for b in run.benchmarks}
    missed = set(suspects(first)) - measured
    confirmed = first.replacing(again, measured)
    return dataclasses.replace(confirmed, rows=tuple(_unconfirmed(r) if r.benchmark in missed else r
                                                     for r in confirmed.rows),
                               why=tuple(w for w in confirmed.why if w.benchmark not in missed))


def _unconfirmed(row: Row) -> Row:
    """A first-look decision that no re-run measured (deselected, a collection error): unknown."""
    if not row.gating or row.verdict not in (Verdict.REGRESSED, Verdict.IMPROVED):
        return row
    return dataclasses.replace(row, verdict=Verdict.UNKNOWN,
                               note=f"flagged {row.verdict}; the confirmation's re-runs did not measure it")


#: The labels of the re-run files a run keeps beside its JSON (:func:`kept_as`): the confirmation's judged
#: re-runs, and the one unjudged re-run that reads the flagged benchmarks' kernels.
CONFIRM_LABEL, EXPLAIN_LABEL = "confirm", "explain"
#: What :func:`kept_as` adds to a run's file name, as a pattern.
KEPT_SUFFIX = rf"\.({CONFIRM_LABEL}|{EXPLAIN_LABEL})-[0-9]+\.json"


def kept_as(results_path: Path, label: str, i: int) -> Path:
    """Where re-run ``i`` (from 0) of a run that writes ``results_path`` keeps its JSON: beside it, named for
    it and for what the re-run was for (``results.confirm-1.json``, ``results.explain-1.json``), so a night's
    verdict can be judged again from its files (``perfkit compare``) after the run."""
    return results_path.with_name(f"{results_path.stem}.{label}-{i + 1}.json")


def kept_beside(results_path: Path) -> list[Path]:
    """The confirmation's re-run files a run writing ``results_path`` kept beside it (:func:`kept_as`, from
    the first on, as many as follow one another): what ``perfkit compare`` judges that night again with."""
    kept: list[Path] = []
    while (path := kept_as(results_path, CONFIRM_LABEL, len(kept))).is_file():
        kept.append(path)
    return kept


def is_kept(path: Path) -> bool:
    """Whether ``path`` names a re-run file of a confirmation or an explanation (:func:`kept_as`)."""
    return re.fullmatch(rf".+{KEPT_SUFFIX}", path.name) is not None


def forget_kept(results_path: Path | None) -> None:
    """Remove the re-run files an earlier run writing ``results_path`` kept (:func:`kept_as`, and the partial
    file of one that crashed), so that those beside it are this run's alone (a night that flagged nothing
    keeps none); nothing where the run writes no JSON (None)."""
    if results_path is None:
        return
    pattern = re.compile(re.escape(results_path.stem) + rf"{KEPT_SUFFIX}(\.partial)?")
    if not results_path.parent.is_dir():
        return
    for path in results_path.parent.iterdir():
        if pattern.fullmatch(path.name):
            path.unlink(missing_ok=True)


class CutShort(KeyboardInterrupt):
    """Ctrl-C (or a deadline's SIGINT) after some re-runs had finished: ``finished``, their result sets, to
    be judged (their files stay beside the night's). The second look's level holds on however many re-runs
    it gets, where the signal does not depend on their values (a deadline ties them only through how long
    the re-runs took); fewer re-runs hold fewer real regressions."""

    def __init__(self, finished: list[ResultSet]) -> None:
        super().__init__(f"{len(finished)} re-run(s) finished")
        self.finished = finished


def rerun(nodeids: Sequence[str], times: int, options: Sequence[str], root: Path,
          timeout_s: float | None = None, keep: Path | None = None,
          label: str | None = None) -> list[ResultSet]:
    """The result sets of ``times`` fresh-process runs of ``nodeids``; a re-run that crashed, timed out or
    wrote nothing raises PerfkitError with the end of its output (the caller keeps the first run's
    verdicts); Ctrl-C raises KeyboardInterrupt, or :class:`CutShort` with the re-runs that had finished.
    ``keep`` and ``label``: the run's own JSON, beside which each re-run's file stays under that
    label (:func:`kept_as`); without them they are written to a temporary folder and go with it."""
    results = []
    with tempfile.TemporaryDirectory(prefix="perfkit-confirm-") as folder:
        for i in range(times):
            out = (kept_as(keep.absolute(), label, i) if keep is not None and label
                   else Path(folder) / f"run-{i + 1}.json")
            command = [
                sys.executable,
                "-m",
                "pytest",
                *nodeids,
                "-q",
                "-p",
                "perfkit.plugin",
                "-p",
                "no:cacheprovider",
                "--perfkit-baseline=none",
                "-m",
                "weekly or not weekly",
                f"--benchmark-json={out}",
                *options,
            ]
            try:
                results.append(_run_once(command, root, timeout_s, out, i))
            except KeyboardInterrupt as exc:
                # the stopped re-run's empty JSON goes; the finished ones stay and are judged (CutShort)
                for left in (out, partial.path_for(out)):
                    left.unlink(missing_ok=True)
                if results:
                    raise CutShort(results) from exc
                raise
            except PerfkitError:
                # the night keeps its first look's verdicts: no finished re-run may stay beside it for
                # `perfkit compare` to judge the night with
                for left in [kept_as(keep.absolute(), label, j) for j in range(i) if keep and label] + [
                        out, partial.path_for(out)]:
                    left.unlink(missing_ok=True)
                raise
    return results


def _run_once(command: Sequence[str], root: Path, timeout_s: float | None, out: Path, i: int) -> ResultSet:
    """Re-run ``i`` (from 0): ``command`` in a fresh process, its results read from ``out``."""
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise PerfkitError(f"re-run {i + 1} ran past {timeout_s:.0f} s and was stopped") from None
    if not out.exists() or not out.stat().st_size:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        raise PerfkitError(f"re-run {i + 1} wrote no results (exit {done.returncode}): {tail}")
    return load.load(out)
