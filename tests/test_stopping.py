"""Children run at once (perfkit.stopping.run_all): each one's output and status kept apart, and a Ctrl-C
while they run reaches every one of them, each unwinding its own cleanup before the interrupt goes on; one
child (perfkit.stopping.run) with its output passed on line by line as it comes (a bisect's progress)."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from perfkit import stopping

UNWINDS = """
import signal, sys, time
def unwind(*_):
    open(sys.argv[1], "w").write("unwound")
    sys.exit(3)
signal.signal(signal.SIGINT, unwind)
open(sys.argv[1], "w").write("ready")
time.sleep(60)
"""


def test_children_at_once_keep_their_own_output_and_status(tmp_path):
    done = stopping.run_all([
        ([sys.executable, "-c", "print('one'); import sys; sys.exit(5)"], tmp_path, os.environ),
        ([sys.executable, "-c", "import sys; print('two', file=sys.stderr)"], tmp_path, os.environ),
    ])
    assert [(d.returncode, d.stdout, d.stderr) for d in done] == [(5, "one\n", ""), (0, "", "two\n")]
    assert stopping.run_all([]) == []


def test_a_ctrl_c_while_children_run_reaches_each_one_before_it_goes_on(tmp_path):
    marks = [tmp_path / "a", tmp_path / "b"]

    def interrupt_once_both_listen() -> None:  # however slowly a busy host starts them
        deadline = time.monotonic() + 60
        while not all(m.exists() and m.read_text() == "ready" for m in marks) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_both_listen, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        stopping.run_all([([sys.executable, "-c", UNWINDS, str(m)], tmp_path, os.environ) for m in marks],
                         grace_s=10)
    assert [mark.read_text() for mark in marks] == ["unwound", "unwound"]


def test_a_child_that_cannot_start_stops_those_started_before_it(tmp_path):
    """The first child sleeps a minute; before, a failed start of the second one waited for the first."""
    start = time.monotonic()
    with pytest.raises(FileNotFoundError):
        stopping.run_all([([sys.executable, "-c", UNWINDS, str(tmp_path / "a")], tmp_path, os.environ),
                          (["/no/such/program"], tmp_path, os.environ)], grace_s=10)
    assert time.monotonic() - start < 30  # SIGTERM ended it at once (SIGKILL at the latest after 10 s)


#: Says one line, then waits for the file its first argument names before it says the last and ends.
WAITS_FOR_ECHO = """
import os, sys, time
print("first", file=sys.stderr, flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.05)
print("last")
"""


def test_a_childs_lines_are_passed_on_as_they_come_and_kept(tmp_path):
    """The child ends only once the echo of its first line made the file: an echo after the end never would
    (it would wait out its minute)."""
    seen: list[str] = []

    def echo(line: str) -> None:
        seen.append(line)
        (tmp_path / "seen").touch()

    start = time.monotonic()
    done = stopping.run([sys.executable, "-c", WAITS_FOR_ECHO, str(tmp_path / "seen")], tmp_path, os.environ,
                        echo=echo)
    assert time.monotonic() - start < 30
    assert (done.returncode, done.stdout, done.stderr) == (0, "last\n", "first\n")
    assert seen == ["first", "last"]


def test_a_ctrl_c_reaches_the_one_child_and_its_cleanup_ends_before_the_interrupt_goes_on(tmp_path):
    mark = tmp_path / "a"

    def interrupt_once_it_listens() -> None:
        deadline = time.monotonic() + 60
        while not (mark.exists() and mark.read_text() == "ready") and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_it_listens, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        stopping.run([sys.executable, "-c", UNWINDS, str(mark)], tmp_path, os.environ, grace_s=10, echo=print)
    assert mark.read_text() == "unwound"


def test_an_echo_that_fails_and_bytes_that_are_not_text_lose_nothing_and_hang_nothing(tmp_path):
    """An echo raising (a closed terminal) stops the echo, not the reading: the child's half megabyte on
    stderr, more than a pipe holds, still reaches the end; a byte that is not UTF-8 is replaced."""
    def closed(line: str) -> None:
        raise BrokenPipeError(line)

    child = ("import sys; sys.stderr.write('x' * 99 + '\\n') ; sys.stderr.write(('y' * 99 + '\\n') * 5000); "
             "sys.stdout.buffer.write(b'caf\\xe9\\n')")
    done = stopping.run([sys.executable, "-c", child], tmp_path, os.environ, echo=closed)
    assert done.returncode == 0 and done.stdout == "caf\ufffd\n" and len(done.stderr) == 100 * 5001
