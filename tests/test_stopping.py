"""Children run at once (perfkit.stopping.run_all): each one's output and status kept apart, and a Ctrl-C
while they run reaches every one of them, each unwinding its own cleanup before the interrupt goes on."""
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
