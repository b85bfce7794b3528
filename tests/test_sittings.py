"""Baseline runs of too few sittings of the very machine a later run is judged on leave out how far that
machine drifts between sittings, and the verdicts say so beside them (perfkit.verdict.sittings)."""
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
DAY = "2026-12-06T"


def _run(when: str, machine: str = "laptop", scale: float = 1.0,
         names: tuple[str, ...] = tuple(TIMES)) -> Any:
    benches = [{"fullname": name, "name": name, "extra_info": {},
                "stats": {"median": TIMES[name] * scale, "iqr": 0.0, "rounds": 3,
                          "data": [TIMES[name] * scale * f for f in (0.99, 1.0, 1.01)]}}
               for name in names]
    info = {"schema_version": SCHEMA_VERSION, "hardware_id": "cpu-test-2cpu", "device": "cpu",
            "fingerprint": {"machine": machine}}
    return typed({"benchmarks": benches, "machine_info": {"perfkit": info}, "datetime": when})


def _baseline(*times: str, names: tuple[str, ...] = tuple(TIMES)) -> Any:
    return baselines.from_runs([_run(f"{DAY}{t}+00:00" if t else "", scale=1 + i / 100, names=names)
                                for i, t in enumerate(times)])


def _caution(baseline: Any, at: str = "12:00", machine: str = "laptop") -> str:
    return judge(baseline, _run(f"{DAY}{at}:00+00:00", machine), Noise.of(baseline)).sitting


BACK_TO_BACK = ("08:00:18", "08:00:38", "08:01:01")


def test_a_later_run_against_baseline_runs_of_one_sitting_of_its_machine_is_told_so_in_every_surface():
    """The newcomer's case of 2026-12-06: `--perfkit-save-baseline=local` (three runs in a minute), then a
    run a few minutes later on the same VM read every figure 15-25% faster and one `improved`."""
    baseline = _baseline(*BACK_TO_BACK)
    cmp = judge(baseline, _run(f"{DAY}08:05:00+00:00", scale=0.8), Noise.of(baseline))
    assert cmp.sitting.startswith("3 of 3 benchmarks are judged against baseline runs of one sitting of this "
                                  "machine (runs less than an hour apart)")
    assert "a regressed or improved there may be that drift" in cmp.sitting and "--append" in cmp.sitting
    assert any(cmp.sitting in line for line in verdicts.summary_lines(cmp, "the local baseline"))
    assert cmp.sitting in verdicts.render(cmp, "table").replace("\n", " ")
    assert cmp.sitting in verdicts.render(cmp, "markdown")
    assert json.loads(verdicts.render(cmp, "json"))["sitting"] == cmp.sitting


def test_the_caution_holds_until_runs_of_three_sittings_each_an_hour_or_more_apart():
    two = _baseline(*BACK_TO_BACK, "09:02:00")  # one run appended 61 minutes later: two sittings
    assert _caution(two).startswith("3 of 3 benchmarks are judged against baseline runs of fewer than 3 "
                                    "sittings")
    assert _caution(_baseline(*BACK_TO_BACK, "09:02:00", "10:30:00")) == ""
    # a slow suite's three runs back to back over 70 minutes are still one sitting
    assert "of one sitting" in _caution(_baseline("08:00:00", "08:35:00", "09:10:00"))


def test_each_benchmark_is_placed_by_its_own_runs_as_a_merged_baseline_holds_them():
    """A family re-saved with --merge later in the day: every benchmark's runs are still of one sitting."""
    morning = [_run(f"{DAY}{t}+00:00", names=("host_a",)) for t in BACK_TO_BACK]
    afternoon = [_run(f"{DAY}14:0{i}:00+00:00", names=("host_b", "host_c")) for i in range(3)]
    merged = baselines.merge(baselines.from_runs(morning), baselines.from_runs(afternoon))
    assert _caution(merged, at="15:00").startswith("3 of 3 benchmarks are judged against baseline runs of "
                                                   "one sitting")


def test_runs_of_another_machine_an_ab_s_interleaved_sides_or_unknown_dates_get_no_caution():
    one = _baseline(*BACK_TO_BACK)
    assert _caution(one, machine="another") == ""
    ab_head = judge(one, _run(f"{DAY}08:00:50+00:00"), Noise.of(one))  # an A/B: head among base's runs
    assert ab_head.sitting == ""
    assert _caution(_baseline("", "", "08:01:01")) == ""  # two runs of unknown date: no sitting to place
