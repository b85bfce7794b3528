"""Kernel summaries by default only where the nightly keeps its five minutes with them: decided from the
committed baselines' family wall times (an H200's nightly leaves room, an H100's does not)."""
from __future__ import annotations

import pytest

from perfkit.explain import budget
from perfkit.options import RunOptions
from perfkit.resultfile.load import load
from tests.conftest import ROOT

BASELINES = ROOT / "baselines"


@pytest.fixture(scope="module")
def h200():
    return load(BASELINES / "nvidia-h200-x1.json")


def test_auto_profiles_an_h200_nightly_and_not_an_h100s(h200):
    on = budget.choose("auto", "cuda", 1, h200)
    took = sum(h200.info.family_wall_s.values())
    assert on.on and budget.START_UP_S + took * (1 + budget.SHARE) <= budget.BUDGET_S
    off = budget.choose("auto", "cuda", 1, load(BASELINES / "nvidia-h100-80gb-hbm3-x1.json"))
    assert not off.on and "past the nightly's 300 s" in off.why


def test_auto_is_off_on_a_cpu_on_several_gpus_and_without_a_baseline_and_the_user_decides_otherwise(h200):
    assert not budget.choose("auto", "cpu", 0, h200).on
    assert not budget.choose("auto", "cuda", 1, None).on
    assert budget.choose("on", "cpu", 0, None).on and not budget.choose("off", "cuda", 1, h200).on
    # a pair's baseline times the data-parallel family alone, not the nightly it runs
    assert not budget.choose("auto", "cuda", 2, load(BASELINES / "nvidia-h200-x2.json")).on


def test_a_judged_rerun_runs_no_profiler_and_the_explaining_one_turns_it_on(pytester):
    args = RunOptions().rerun_args("cuda", "full")
    assert "--perfkit-no-explain" in args
    for given, meant in (([], "auto"), (args, "off"), ([*args, "--perfkit-explain"], "on"),
                         (["--perfkit-explain", "benches"], "on")):  # a path after it stays a path
        explain = [a for a in given if "explain" in a or a == "benches"]  # the rest needs a GPU to parse
        config = pytester.parseconfig("-p", "perfkit.plugin", *explain)
        assert config.getoption("perfkit_explain") == meant
        assert config.args == (["benches"] if "benches" in given else [str(pytester.path)])
