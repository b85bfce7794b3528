"""The adapter to pytest-benchmark's internals (perfkit.pbench)."""
from __future__ import annotations

import json

from perfkit import pbench


def test_round_times_is_empty_when_benchmarks_are_disabled():
    class Disabled:
        stats = None

    assert pbench.round_times(Disabled()) == ()


SLEEPY = """
import time
def test_sleep(benchmark):
    benchmark.pedantic(time.sleep, args=(0.001,), rounds=4)
"""

SEE_RUN_JSON = """
import json
import pytest
from perfkit import pbench

def pytest_benchmark_update_json(config, benchmarks, output_json):
    output_json["updated"] = output_json.get("updated", 0) + 1

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    with open("seen.json", "w") as fh:
        json.dump(pbench.run_json(session.config), fh)
"""


def test_the_timer_is_perfkits_unless_another_was_asked_for(pytester):
    pytester.makepyfile(SLEEPY)
    pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu", "--benchmark-json=a.json")
    pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu", "--benchmark-json=b.json",
                       "--benchmark-timer=time.process_time")
    timers = [json.loads((pytester.path / f"{n}.json").read_text())["benchmarks"][0]["options"]["timer"]
              for n in "ab"]
    assert timers == ["synchronized_clock", "process_time"]


def test_run_json_keeps_raw_samples_and_runs_the_update_hooks_without_benchmark_json(pytester):
    pytester.makeconftest(SEE_RUN_JSON)
    pytester.makepyfile(SLEEPY)
    pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu").assert_outcomes(passed=1)
    seen = json.loads((pytester.path / "seen.json").read_text())
    assert seen["updated"] == 1
    assert len(seen["benchmarks"][0]["stats"]["data"]) == 4
    assert seen["machine_info"]["perfkit"]["device"] == "cpu"
    assert "commit_info" in seen


def test_run_json_is_none_when_no_benchmark_ran(pytester):
    pytester.makeconftest(SEE_RUN_JSON)
    pytester.makepyfile("def test_plain(): pass")
    pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu").assert_outcomes(passed=1)
    assert json.loads((pytester.path / "seen.json").read_text()) is None


def test_inject_samples_makes_external_times_the_benchmarks_stats(pytester):
    pytester.makeconftest(SEE_RUN_JSON)
    pytester.makepyfile("""
        from perfkit.pbench import inject_samples, round_times
        def test_external(benchmark):
            inject_samples(benchmark, [0.25, 0.5, 0.75])
            assert round_times(benchmark) == (0.25, 0.5, 0.75)
    """)
    pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu").assert_outcomes(passed=1)
    stats = json.loads((pytester.path / "seen.json").read_text())["benchmarks"][0]["stats"]
    assert stats["median"] == 0.5 and stats["rounds"] == 3


def test_the_json_path_is_the_whole_path_in_either_pytest_benchmark(tmp_path):
    class Config:
        def __init__(self, value):
            self.value = value

        def getoption(self, name, default=None):
            return self.value

    target = tmp_path / "out" / "results.json"
    assert pbench.json_path(Config(target)) == target  # 5.3: a Path (whose .name is only the base name)
    with open(tmp_path / "r.json", "wb") as handle:  # 5.2: an open file
        assert pbench.json_path(Config(handle)) == tmp_path / "r.json"
    assert pbench.json_path(Config(None)) is None


TWO_FUNCTIONS = """
import time
import pytest

@pytest.mark.parametrize("seconds", [0.0005, 0.02])
def test_sleep(benchmark, seconds):
    benchmark.pedantic(time.sleep, args=(seconds,), rounds=3)

def test_tiny(benchmark):
    benchmark.pedantic(sum, args=((1, 2),), rounds=3)
"""


def test_the_table_is_one_per_function_with_the_columns_a_reader_compares(pytester):
    pytester.makepyfile(TWO_FUNCTIONS)
    out = pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu", "--perfkit-baseline=none")
    out.assert_outcomes(passed=3)
    text = out.stdout.str()
    assert "benchmark 'test_sleep': 2 tests" in text and "benchmark 'test_tiny': 1 tests" in text
    header = next(line for line in text.splitlines() if line.startswith("Name (time in"))
    assert header.split()[4:] == ["Min", "Median", "IQR", "Rounds"]
    # what the user asks for wins
    chosen = pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu", "--perfkit-baseline=none",
                                "--benchmark-columns=max", "--benchmark-group-by=fullfunc")
    chosen_text = chosen.stdout.str()
    assert "benchmark 'test_tiny'" not in chosen_text and "::test_tiny'" in chosen_text
    assert any(line.startswith("Name (time in") and line.split()[4:] == ["Max"]
               for line in chosen_text.splitlines())
