"""The adapter to pytest-benchmark's internals (perfkit.pbench)."""
from __future__ import annotations

from perfkit import pbench


def test_round_times_is_empty_when_benchmarks_are_disabled():
    class Disabled:
        stats = None

    assert pbench.round_times(Disabled()) == ()
