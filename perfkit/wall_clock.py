"""The run's wall time as the nightly's five-minute limit counts it: from the process's start, with how much
of it went outside the tests (the interpreter, imports, collection, judging, and the re-runs in fresh
processes named apart: a confirmation's, or those of this machine's own baseline) and each family's share."""
from __future__ import annotations

import os
import time
from collections.abc import Mapping


def process_started() -> float:
    """``time.monotonic()`` at this process's start where Linux's /proc says when that was, else now: the
    nightly's limit counts from start-up, and the interpreter, pytest's plugins and the imports before
    perfkit's session began are part of it."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime, in clock ticks
            age = float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.monotonic()
    return time.monotonic() - max(age, 0.0)


def line(started: float, family_seconds: Mapping[str, float], reruns: Mapping[str, float]) -> str | None:
    """The end-of-run line (None before any test ran): the wall time since ``started``, the part outside
    the tests' phases, the seconds of it each kind of re-run took (``reruns``: "the confirmation's re-runs"
    to seconds) where it re-ran anything, and each family's seconds, the longest first."""
    if not family_seconds:
        return None
    longest_first = sorted(family_seconds.items(), key=lambda kv: -kv[1])
    families = ", ".join(f"{name} {s:.0f} s" for name, s in longest_first if s >= 0.5)
    wall = time.monotonic() - started
    outside = wall - sum(family_seconds.values())
    spent = "".join(f"; {s:.0f} s of it {what}" for what, s in reruns.items() if s >= 0.5)
    return (f"perfkit: wall time {wall:.0f} s from start-up ({outside:.0f} s outside the tests: interpreter, "
            f"imports, collection, judging{spent})" + (f"; per family: {families}" if families else ""))
