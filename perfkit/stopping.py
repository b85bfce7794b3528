"""Stopping a long command (perfkit ab, perfkit bisect) midway, by Ctrl-C or by SIGTERM, the signal a CI
runner sends a job past its time limit, without leaving anything behind.

SIGTERM's default action ends a process at once: its git worktrees stay registered, a git bisect stays
started, its child keeps running. Under :func:`interruptible` SIGTERM raises :class:`Interrupted`, a
KeyboardInterrupt, so both signals unwind through the same ``finally`` blocks; a second signal while those
run is ignored, so that the cleanup the first one started finishes. :func:`run` is ``subprocess.run`` for a
child that must be stopped the same way: its whole session gets the signal this process got, and time to
unwind its own cleanup, before anything is killed.
"""
from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

#: How long a child gets to unwind (pytest its fixtures, a bisect probe its worktrees) before SIGKILL.
GRACE_S = 15.0


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM, received under :func:`interruptible`."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Stopped(KeyboardInterrupt):
    """A command stopped midway, its cleanup done: ``kept`` says what it leaves, ``report`` what it had
    measured by then (perfkit ab's AbReport of its finished pairs), if anything."""

    def __init__(self, signum: int, kept: str, report: object = None) -> None:
        super().__init__(kept)
        self.signum, self.kept, self.report = signum, kept, report

    @property
    def status(self) -> int:
        """The exit status a shell gives a process this signal ended: 130 for Ctrl-C, 143 for SIGTERM."""
        return 128 + self.signum

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name


def signum_of(exc: KeyboardInterrupt) -> int:
    """The signal behind ``exc``: a KeyboardInterrupt raised outside :func:`interruptible` is Ctrl-C's."""
    return exc.signum if isinstance(exc, Interrupted | Stopped) else signal.SIGINT


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM (and SIGINT, unless this process was started with it ignored) raise :class:`Interrupted`,
    the first one only; the previous handlers come back on the way out."""
    received: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        if not received:
            received.append(signum)
            raise Interrupted(signum)

    caught = [signal.SIGTERM] + ([signal.SIGINT] if signal.getsignal(signal.SIGINT) != signal.SIG_IGN else [])
    previous = {signum: signal.signal(signum, handler) for signum in caught}
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)


def run(command: Sequence[str], cwd: Path, env: Mapping[str, str], grace_s: float = GRACE_S,
        echo: Callable[[str], None] | None = None) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(command, capture_output=True, text=True)`` in a session of its own; ``echo``: each
    line of its output passed on as it comes too (a long bisect's progress). Stopped midway (a
    KeyboardInterrupt while it waits), the child's session gets the same signal and ``grace_s`` to end, its
    output read meanwhile (a child blocked on a full pipe would never end), before SIGKILL; then the interrupt
    goes on. The grace lasts until every process holding the child's output has ended, grandchildren included
    (a bisect probe under ``git bisect run``, which outlives git)."""
    output = _Output(echo)
    with subprocess.Popen(list(command), cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, start_new_session=True) as child:
        try:
            output.watch(child)
            output.drain()  # to the end of both pipes: every process holding them has ended
            child.wait()
        except KeyboardInterrupt as exc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signum_of(exc))
            deadline = time.monotonic() + grace_s
            if not (output.drain(deadline) and _ended(child, deadline)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                output.drain(time.monotonic() + 1.0)  # what the killed processes left in the pipes
            raise
        finally:
            output.close()
    return subprocess.CompletedProcess(list(command), child.returncode, output.text(0), output.text(1))


def _ended(child: subprocess.Popen[bytes], deadline: float) -> bool:
    try:
        child.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    return True


class _Output:
    """A child's stdout and stderr read together in this thread, so neither pipe fills while the other is
    waited on, and kept; each whole line passed to ``echo`` as it comes (undecodable bytes replaced)."""

    def __init__(self, echo: Callable[[str], None] | None) -> None:
        self.echo = echo
        self.selector = selectors.DefaultSelector()
        self.kept: list[bytearray] = []
        self.echoed: list[int] = []  # per pipe, how many of its bytes were passed to echo

    def watch(self, child: subprocess.Popen[bytes]) -> None:
        for index, stream in enumerate((child.stdout, child.stderr)):
            assert stream is not None  # Popen was given PIPE
            self.selector.register(stream.fileno(), selectors.EVENT_READ, index)
            self.kept.append(bytearray())
            self.echoed.append(0)

    def drain(self, deadline: float | None = None) -> bool:
        """Read until both pipes end (True) or ``deadline`` (time.monotonic) passes (False)."""
        while self.selector.get_map():
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                return False
            for key, _ in self.selector.select(wait):
                data = os.read(key.fd, 1 << 16)
                if data:
                    self.kept[key.data] += data
                else:
                    self.selector.unregister(key.fd)
                self._pass_on(key.data, ended=not data)
        return True

    def _pass_on(self, index: int, ended: bool) -> None:
        kept = self.kept[index]
        last = len(kept) if ended else kept.rfind(b"\n", self.echoed[index]) + 1
        if self.echo is None or last <= self.echoed[index]:
            return
        lines = kept[self.echoed[index]:last].decode(errors="replace").splitlines()
        self.echoed[index] = last
        try:
            for line in lines:
                self.echo(line)
        except Exception:  # noqa: BLE001 - a closed terminal must not stop the reading: the output is kept
            self.echo = None

    def text(self, index: int) -> str:
        return self.kept[index].decode(errors="replace") if index < len(self.kept) else ""

    def close(self) -> None:
        self.selector.close()


def run_all(commands: Sequence[tuple[Sequence[str], Path, Mapping[str, str]]],
            grace_s: float = GRACE_S) -> list[subprocess.CompletedProcess[str]]:
    """:func:`run` for several children at once (``(command, cwd, env)`` each), their output in files (no
    child waits on a full pipe while another is read). Stopped midway, or failing to start one, every child
    started by then gets the signal (SIGTERM for a failed start) in its session and ``grace_s`` in all to
    end before SIGKILL; then the exception goes on."""
    with contextlib.ExitStack() as files:
        started: list[tuple[subprocess.Popen[str], Any, Any]] = []
        try:
            for command, cwd, env in commands:
                out, err = (files.enter_context(tempfile.TemporaryFile("w+")) for _ in range(2))
                started.append((subprocess.Popen(list(command), cwd=cwd, env=dict(env), stdout=out,
                                                 stderr=err, text=True, start_new_session=True), out, err))
            for child, _, _ in started:
                child.wait()
        except BaseException as exc:
            signum = signum_of(exc) if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM
            stop_all([child for child, _, _ in started], signum, grace_s)
            raise
        done = []
        for child, out, err in started:
            out.seek(0)
            err.seek(0)
            done.append(subprocess.CompletedProcess(child.args, child.returncode, out.read(), err.read()))
        return done


def stop_all(children: Sequence[subprocess.Popen[str]], signum: int, grace_s: float) -> None:
    """``signum`` to every child's session at once (each started with ``start_new_session``), one ``grace_s``
    for all of them, then SIGKILL."""
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signum)
    deadline = time.monotonic() + grace_s
    for child in children:
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()


def stop_session(child: subprocess.Popen[Any], signum: int, grace_s: float) -> None:
    """``signum`` to the session of ``child`` (started with ``start_new_session``), ``grace_s`` for it to
    end (its output read meanwhile, where it goes to pipes), then SIGKILL to what is left of the session."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signum)
    try:
        child.communicate(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
