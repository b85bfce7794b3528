"""Children run at once (perfkit.stopping.run_all): each one's output and status kept apart, and a Ctrl-C
while they run reaches every one of them, each unwinding its own cleanup before the interrupt goes on."""
from __future__ import annotations

import os
import signal
import sys
import threading

import pytest

from perfkit import stopping

UNWINDS = """
import signal, sys, time
def unwind(*_):
    open(sys.argv[1], "w").write("unwound")
    sys.exit(3)
signal.signal(signal.SIGINT, unwind)
print("ready", flush=True)
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
    timer = threading.Timer(3.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            stopping.run_all([([sys.executable, "-c", UNWINDS, str(mark)], tmp_path, os.environ)
                              for mark in marks], grace_s=10)
    finally:
        timer.cancel()
    assert [mark.read_text() for mark in marks] == ["unwound", "unwound"]
