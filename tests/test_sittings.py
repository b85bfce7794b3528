"""A baseline of one sitting: runs taken back to back on the very machine a later run is judged on leave out
how far that machine drifts between sittings, and the verdicts say so beside them (perfkit.verdict.sittings).
"""
from __future__ import annotations

import json
from typing import Any

from perfkit import SCHEMA_VERSION
from perfkit.render import verdicts
from perfkit.store import baselines
from perfkit.verdict.judge import judge
from perfkit.verdict.noise import Noise
from tests.conftest import typed

TIMES = {"host_a": 0.010, "host_b": 0.0025, "host_c": 0.0011}


def _run(when: str, machine: str = "laptop", scale: float = 1.0) -> Any:
    benches = [{"fullname": name, "name": name, "extra_info": {},
                "stats": {"median": t * scale, "data": [t * scale * f for f in (0.99, 1.0, 1.01)], "iqr": 0.0,
                          "rounds": 3}}
               for name, t in TIMES.items()]
    info = {"schema_version": SCHEMA_VERSION, "hardware_id": "cpu-test-2cpu", "device": "cpu",
            "fingerprint": {"machine": machine}}
    return typed({"benchmarks": benches, "machine_info": {"perfkit": info}, "datetime": when})


def _baseline(*dates: str) -> Any:
    return baselines.from_runs([_run(d, scale=1 + i / 100) for i, d in enumerate(dates)])


BACK_TO_BACK = ("2026-12-06T08:00:18+00:00", "2026-12-06T08:00:38+00:00", "2026-12-06T08:01:01+00:00")


def test_a_later_run_against_a_baseline_of_one_sitting_of_its_machine_is_told_so_in_every_surface():
    """The newcomer's case of 2026-12-06: `--perfkit-save-baseline=local` (three runs in a minute), then a
    run a few minutes later on the same VM read every figure 15-25% faster and one `improved`."""
    baseline = _baseline(*BACK_TO_BACK)
    cmp = judge(baseline, _run("2026-12-06T08:05:00+00:00", scale=0.8), Noise.of(baseline))
    said = ("the baseline's runs were all taken back to back in one sitting of this machine (2026-12-06 "
            "08:00-08:01 UTC), so their spread leaves out how far a later run drifts with the machine's "
            "state")
    assert cmp.sitting.startswith(said) and "--append" in cmp.sitting
    assert any(cmp.sitting in line for line in verdicts.summary_lines(cmp, "the local baseline"))
    assert cmp.sitting in verdicts.render(cmp, "table").replace("\n", " ")
    assert cmp.sitting in verdicts.render(cmp, "markdown")
    assert json.loads(verdicts.render(cmp, "json"))["sitting"] == cmp.sitting


def test_runs_of_several_sittings_another_machine_or_an_ab_s_interleaved_sides_get_no_caution():
    later = _run("2026-12-06T12:00:00+00:00")
    spread = _baseline(*BACK_TO_BACK[:2], "2026-12-06T10:30:00+00:00")  # a second sitting appended
    assert judge(spread, later, Noise.of(spread)).sitting == ""
    one = _baseline(*BACK_TO_BACK)
    assert judge(one, _run("2026-12-06T12:00:00+00:00", machine="another"), Noise.of(one)).sitting == ""
    # an A/B's head runs among its base's runs, in the same sitting
    assert judge(one, _run("2026-12-06T08:00:50+00:00"), Noise.of(one)).sitting == ""
    undated = _baseline("", "", "")
    assert judge(undated, later, Noise.of(undated)).sitting == ""
