"""Confirmation by re-run: benchmarks flagged against the baseline run again, each time in a fresh process.

A nightly fails only on a regression that holds over several runs (Perfherder's retriggers, Chromium
Pinpoint's repeats): ``--perfkit-confirm N`` re-runs every benchmark whose verdict was ``regressed``,
or ``unknown`` in the worse direction (a figure 1.5 times worse is always one of them: beyond any minimum
effect it is regressed or unknown), N times with ``python -m pytest NODEID...`` in fresh processes (new CUDA
context, new allocator, clocks re-settled), then judges them on the new runs alone: the run that flagged
them was chosen for being extreme and would bias the second look (perfkit.session). The baseline's code is
not at hand in a run, so re-runs are not interleaved with it; interleaving (RMIT, duet benchmarking) needs
two checkouts and is the A/B command's job.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from perfkit.errors import PerfkitError
from perfkit.results import load
from perfkit.results.judge import Comparison, Verdict
from perfkit.results.model import ResultSet


def suspects(comparison: Comparison) -> list[str]:
    """Benchmarks worth re-running: regressed, or beyond their minimum effect in the worse direction without
    proof."""
    return sorted({row.benchmark for row in comparison.rows if row.gating and (
        row.verdict is Verdict.REGRESSED or (row.verdict is Verdict.UNKNOWN and row.worse))})


def rerun(nodeids: Sequence[str], times: int, options: Sequence[str], root: Path,
          timeout_s: float | None = None) -> list[ResultSet]:
    """The result sets of ``times`` fresh-process runs of ``nodeids``; a re-run that crashed, timed out or
    wrote nothing raises PerfkitError with the end of its output (the caller keeps the first run's
    verdicts)."""
    results = []
    with tempfile.TemporaryDirectory(prefix="perfkit-confirm-") as folder:
        for i in range(times):
            out = Path(folder) / f"confirm-{i}.json"
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
                done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False,
                                      timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise PerfkitError(f"re-run {i + 1} ran past {timeout_s:.0f} s and was stopped") from None
            if not out.exists() or not out.stat().st_size:
                tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
                raise PerfkitError(f"re-run {i + 1} wrote no results (exit {done.returncode}): {tail}")
            results.append(load.load(out))
    return results
