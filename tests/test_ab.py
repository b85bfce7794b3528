"""The paired A/B test (perfkit.results.paired)."""
from __future__ import annotations

import math
import random

import pytest

from perfkit.results.judge import Verdict
from perfkit.results.paired import verdicts


def _pairs(shift: float, count: int, seed: int = 0) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        base = 1e-3 * math.exp(rng.gauss(0, 0.05))  # the machine drifts between rounds: both sides move
        out.append((base * math.exp(rng.gauss(0, 0.01)), base * math.exp(shift + rng.gauss(0, 0.01))))
    return out


def test_the_paired_test_decides_a_known_shift_and_leaves_identical_sides_unchanged():
    rows = verdicts({"slower": _pairs(math.log(1.2), 6), "faster": _pairs(math.log(0.8), 6, 1),
                     "same": [(1e-3 * (1 + i / 10),) * 2 for i in range(6)]},
                    {"slower": 0.05, "faster": 0.05, "same": 0.05}, 0.05)
    by = {r.benchmark: r for r in rows}
    assert by["slower"].verdict is Verdict.REGRESSED and by["slower"].change == pytest.approx(0.2, abs=0.02)
    assert by["faster"].verdict is Verdict.IMPROVED and by["slower"].settled and by["faster"].settled
    assert by["same"].verdict is Verdict.UNCHANGED and by["same"].change == 0 and by["same"].settled
    assert all(r.pairs == 6 and r.mde is not None for r in rows)


def test_drift_between_rounds_cancels_in_the_pairs_and_too_few_pairs_stay_unknown():
    # the rounds drift by 5% SD, the pairs by 1%: a 10% change is decided, though each side alone is noisy
    assert verdicts({"b": _pairs(math.log(1.1), 5, 2)}, {"b": 0.05}, 0.05)[0].verdict is Verdict.REGRESSED
    one = verdicts({"b": _pairs(math.log(1.1), 1)}, {"b": 0.05}, 0.05)[0]
    assert one.verdict is Verdict.UNKNOWN and not one.settled and "needs 2 pairs" in one.note
    noisy = verdicts({"b": [(1.0, 1.3), (1.0, 0.95)]}, {"b": 0.05}, 0.05)[0]  # beyond 5%, 1 df
    assert noisy.verdict is Verdict.UNKNOWN and "more pairs decide" in noisy.note and not noisy.settled
