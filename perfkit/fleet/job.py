"""What one fleet job runs on its node: the selection in the checkout, its results written beside the others.

Module-level and picklable, so submitit can send it: the node imports perfkit from the same checkout (a
shared filesystem, as on every Slurm cluster the course used)."""
from __future__ import annotations

import collections
import socket
import subprocess
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from perfkit import stopping

#: Lines of the job's own output a failure shows
TAIL_LINES = 8
#: pytest's exit status where the selection holds no test
NOTHING_SELECTED = 5


@dataclass(frozen=True)
class JobOutcome:
    """Where one replicate ran and what it left: its results file (None where pytest wrote none), pytest's
    exit code (1: a benchmark failed, its results still written), and the end of its output."""

    node: str
    results: Path | None
    exit_code: int
    tail: str

    @property
    def exit_note(self) -> str:
        """What a results file left by a failing pytest means, or "" where pytest passed."""
        return f", pytest exit {self.exit_code} (a benchmark failed or erred)" if self.exit_code else ""


def pytest_command(pytest_args: Sequence[str], results: str) -> list[str]:
    """The benchmarks of the selection, judged by no baseline here (the fleet judges the replicates
    together)."""
    return [sys.executable, "-m", "pytest", "benches/", *pytest_args, "-p", "no:cacheprovider",
            "--perfkit-baseline=none", f"--benchmark-json={results}"]


def run_selection(checkout: str, pytest_args: tuple[str, ...], results: str, log: TextIO | None = None,
                  env: Mapping[str, str] | None = None, cpus: Collection[int] = (),
                  started: Callable[[subprocess.Popen[str]], None] | None = None) -> JobOutcome:
    """``pytest benches/ <pytest_args> --benchmark-json=<results>`` in ``checkout``. pytest's output goes to
    ``log`` (default: this process's output, a Slurm job's own log) as it comes; ``env`` and ``cpus`` (an
    affinity, set with taskset: the fleet starts several of these from threads) are the process's, where
    given; with ``started``, pytest runs in a session of its own, handed to ``started`` so that the caller
    can stop it, and an interrupt here stops it too (perfkit.stopping). A file left by an earlier night at
    ``results`` is removed first: only this run's results count."""
    written = Path(results)
    written.unlink(missing_ok=True)
    command = pytest_command(pytest_args, results)
    if cpus:
        command = ["taskset", "--cpu-list", ",".join(map(str, sorted(cpus))), *command]
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    run = subprocess.Popen(command, cwd=checkout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=None if env is None else dict(env), start_new_session=started is not None)
    if started is not None:
        started(run)
    try:
        for line in run.stdout or ():
            print(line, end="", flush=True, file=log or sys.stdout)
            tail.append(line.rstrip())
        run.wait()
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the session gets it too, then the interrupt goes on
        if started is not None:
            stopping.stop_session(run, stopping.signum_of(exc), stopping.GRACE_S)
        raise
    finally:
        if run.stdout is not None:
            run.stdout.close()
    found = written if written.exists() and written.stat().st_size else None
    return JobOutcome(socket.gethostname(), found, run.returncode, "\n".join(tail))
